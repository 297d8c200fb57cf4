package guardrail

import (
	"slices"
	"strings"
	"testing"
)

// oracle is the built-in detectors as they were: each expression over the
// whole text. The fast scanners must find exactly what they find.
func oracle(k Kind) Detector {
	switch k {
	case Email:
		return &reDetector{kind: k, re: emailRE}
	case Card:
		return &reDetector{kind: k, re: cardRE, valid: luhn}
	case IBAN:
		return &reDetector{kind: k, re: ibanRE, valid: ibanValid}
	case NationalID:
		return &reDetector{kind: k, re: dniRE, valid: dniValid}
	case Phone:
		return &reDetector{kind: k, re: phoneRE, valid: phoneValid}
	case Secret:
		return &reDetector{kind: k, re: secretRE}
	}
	return nil
}

func differ(t *testing.T, text string) {
	t.Helper()
	for _, k := range Builtins {
		fast, _ := Builtin(k)
		got, want := fast.Find(nil, text), oracle(k).Find(nil, text)
		if !slices.Equal(got, want) {
			t.Fatalf("%s in %q: scanner %+v, expression %+v", k, text, got, want)
		}
	}
}

func TestScanners_MatchTheExpressions(t *testing.T) {
	for _, text := range []string{
		"jane@example.com", "a@b.co x@y", "4111 1111 1111 1111", "4111-1111-1111-11114", "x4111111111111111",
		"GB82 WEST 1234 5698 7654 32", "DE89370400440532013000.", "12345678Z", "X1234567L", "+44 20 7946 0958",
		"(555) 123-4567", "555-123-4567", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "sk-proj-abcdefghijklmnopqrstuvwxyz0123",
		"AKIAIOSFODNN7EXAMPLE", "-----BEGIN RSA PRIVATE KEY-----", "ghp_" + strings.Repeat("a", 40), "xoxb-1234567890-abc",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
		"sk-" + strings.Repeat("x", 300), "thought high ghost sky-blue", "«EMAIL_1» +1 (800) 555-0199 ext",
	} {
		differ(t, text)
		differ(t, "prefix "+text+" suffix")
	}
}

// FuzzScanDifferential holds the fast scanners to the expressions they
// replace, on any text.
func FuzzScanDifferential(f *testing.F) {
	for _, s := range []string{"jane@example.com", "4111 1111 1111 1111", "GB82 WEST 1234 5698 7654 32", "12345678Z",
		"+44 20 7946 0958", "(555) 123-4567", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "-----BEGIN PRIVATE KEY-----",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "\xff@a.io 1234567890123", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) { differ(t, text) })
}
