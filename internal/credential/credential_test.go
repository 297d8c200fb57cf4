package credential

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestNewRelayKey_Shape(t *testing.T) {
	a, b := NewRelayKey(), NewRelayKey()
	if a.Plaintext == b.Plaintext {
		t.Fatal("two keys are equal")
	}
	body, ok := strings.CutPrefix(a.Plaintext, "sk-wr-")
	if !ok {
		t.Fatalf("missing prefix: %s", a.Plaintext)
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) != 48 {
		t.Fatalf("body is not 48 bytes of base64url: %v %d", err, len(raw))
	}
	if a.Hash != Hash(a.Plaintext) || !strings.HasPrefix(a.Plaintext, a.DisplayPrefix) || len(a.DisplayPrefix) != DisplayLen {
		t.Fatal("hash or display prefix inconsistent")
	}
	if !strings.HasPrefix(NewInferenceToken().Plaintext, "rt-wr-") {
		t.Fatal("token prefix")
	}
}
