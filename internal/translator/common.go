package translator

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
)

// What every shape shares: tool-call id mapping, argument normalisation
// and data URIs. Reading a caller's body is common_caller.go; checking a
// request against the matrix and reading an upstream's errors is
// common_upstream.go.

// --- tool-call ids ---
//
// Ids must survive a round trip through the caller: the id a caller sees on
// a tool call comes back on the next request, as the call in the assistant
// turn and as the result's reference, and must then mean the same call to
// the upstream. Each caller shape gets its own prefix (call_ for Chat,
// toolu_ for Messages) put in front of the upstream's id; an id that comes
// back with that prefix in front of a recognisable upstream id loses it
// again. Gemini's ids are synthesized (see gemini_types.go) and carry the
// call's thought signature.

const (
	chatCallPrefix      = "call_"
	anthropicCallPrefix = "toolu_"
)

// callerID is the id a caller sees for an upstream call id.
func callerID(prefix, id string) string {
	if strings.HasPrefix(id, prefix) {
		return id
	}
	return prefix + id
}

// canonicalID is the upstream id behind an id a caller sent back: the
// caller's prefix comes off when what follows is another shape's id.
func canonicalID(prefix, id string) string {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok {
		return id
	}
	for _, p := range []string{chatCallPrefix, anthropicCallPrefix, geminiIDPrefix, converseCallPrefix} {
		if strings.HasPrefix(rest, p) && p != prefix {
			return rest
		}
	}
	return id
}

// anthropicID makes id acceptable to Anthropic (^[a-zA-Z0-9_-]+$). Ids
// that already are pass unchanged; others map, deterministically, to a
// hash, so a call and its result keep matching.
func anthropicID(id string) string {
	ok := id != ""
	for i := 0; i < len(id) && ok; i++ {
		c := id[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	if ok && len(id) <= 256 {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "toolu_rx" + hex.EncodeToString(sum[:12])
}

// openaiID keeps an id within OpenAI's 40 characters: longer ones (Relay's
// Gemini ids carry signatures) map, deterministically, to a hash, so a
// call and its result keep matching.
func openaiID(id string) string {
	if len(id) <= 40 {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "call_rx" + hex.EncodeToString(sum[:16])
}

// --- arguments ---

// argsObject turns a tool call's argument text into the JSON object
// Anthropic and Gemini want: "" (a call without arguments) is {}; anything
// that is not one JSON object is refused.
func argsObject(args string) (json.RawMessage, bool) {
	s := strings.TrimSpace(args)
	if s == "" {
		return json.RawMessage("{}"), true
	}
	if s[0] != '{' || !json.Valid([]byte(s)) {
		return nil, false
	}
	return json.RawMessage(s), true
}

// argsText is the argument string Chat and Responses want for an object
// the upstream sent: compact JSON, {} when there was none.
func argsText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// --- media ---

// parseDataURI splits data:<media type>;base64,<data>.
func parseDataURI(uri string) (mediaType, data string, ok bool) {
	rest, ok := strings.CutPrefix(uri, "data:")
	if !ok {
		return "", "", false
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", false
	}
	mediaType, enc, _ := strings.Cut(meta, ";")
	if enc != "base64" || mediaType == "" {
		return "", "", false
	}
	return mediaType, data, true
}

func dataURI(mediaType, data string) string { return "data:" + mediaType + ";base64," + data }

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// unb64 decodes standard base64, giving s back when it is not.
func unb64(s string) string {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return s
	}
	return string(b)
}

func appendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }
