package proxy

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/relay-llm/relay/internal/snapshot"
)

// The upstream's error text goes into the log: a host key the upstream
// echoes back is redacted wherever it sits, and the cut never splits a
// character.
func TestUpstreamMessage_RedactsBeforeCutting(t *testing.T) {
	const key = "sk-up-0123456789abcdefghij"
	secret := snapshot.NewSecret(key)
	for _, pad := range []int{0, 150, 185, 190, 199, 200} {
		body := `{"error":{"message":"` + strings.Repeat("x", pad) + "bad key " + key + ` given"}}`
		got := upstreamMessage([]byte(body), secret)
		for i := len(key); i >= 3; i-- {
			if strings.Contains(got, key[:i]) {
				t.Errorf("pad %d: %q keeps %q of the key", pad, got, key[:i])
				break
			}
		}
		if len(got) > maxUpstreamMessage {
			t.Errorf("pad %d: %d bytes", pad, len(got))
		}
	}
	long := `{"message":"` + strings.Repeat("é", 150) + `"}` // 300 bytes of two-byte runes
	if got := upstreamMessage([]byte(long), secret); !utf8.ValidString(got) || len(got) > maxUpstreamMessage || len(got) < maxUpstreamMessage-1 {
		t.Errorf("cut %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
}
