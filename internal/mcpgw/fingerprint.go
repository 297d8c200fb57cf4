package mcpgw

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Fingerprint is the hex SHA-256 of what an agent reads of a tool and acts
// on: its name, its description and its input schema (as JSON with sorted
// object keys, so the order a server writes members in does not matter).
// An approval holds a fingerprint; a tool whose fingerprint differs is
// withheld until approved again.
func Fingerprint(t *mcp.Tool) string {
	h := sha256.New()
	h.Write([]byte(t.Name))
	h.Write([]byte{0})
	h.Write([]byte(t.Description))
	h.Write([]byte{0})
	h.Write(canonicalJSON(t.InputSchema))
	return hex.EncodeToString(h.Sum(nil))
}

// canonicalJSON re-encodes v through any, whose maps encoding/json writes
// with sorted keys.
func canonicalJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		return b
	}
	out, err := json.Marshal(generic)
	if err != nil {
		return b
	}
	return out
}
