package controlapi

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/openapi/models"
)

func TestParseAdminTokenFile(t *testing.T) {
	exp := time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want adminToken
		ok   bool
	}{
		{"0123456789abcdef\n", adminToken{value: "0123456789abcdef"}, true},
		{"  0123456789abcdef  \r\n", adminToken{value: "0123456789abcdef"}, true},
		{"0123456789abcdef\n2027-01-31T00:00:00Z\n", adminToken{value: "0123456789abcdef", expires: exp}, true},
		{"short\n", adminToken{}, false},
		{"0123456789 abcdef\n", adminToken{}, false},
		{"0123456789abcdef\ntomorrow\n", adminToken{}, false},
		{"0123456789abcdef\n2027-01-31T00:00:00Z\nmore\n", adminToken{}, false},
		{"", adminToken{}, false},
	} {
		got, err := parseAdminTokenFile([]byte(tc.in))
		if tc.ok != (err == nil) || (tc.ok && (got.value != tc.want.value || !got.expires.Equal(tc.want.expires))) {
			t.Errorf("parse(%q) = %+v, %v", tc.in, got, err)
		}
	}
}

func FuzzParseAdminTokenFile(f *testing.F) {
	for _, s := range []string{"0123456789abcdef\n", "0123456789abcdef\n2027-01-31T00:00:00Z\n", "x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseAdminTokenFile(b)
		if err != nil {
			if len(b) >= 16 && strings.Contains(err.Error(), strings.TrimSpace(string(b))) {
				t.Fatalf("the error %q quotes the file", err)
			}
			return
		}
		if len(got.value) < 16 || strings.ContainsAny(got.value, " \t\r\n") {
			t.Fatalf("accepted token %q", got.value)
		}
	})
}

// FuzzStoredEmail: what the write check stores is what every read parses
// back: the response's Email type marshals it and unmarshals it to itself.
func FuzzStoredEmail(f *testing.F) {
	for _, s := range []string{`ada@example.com`, `"<img src=x>"@example.com`, `Ada <ada@example.com>`, `"ada"@example.com`, `a@[::1]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := storedEmail(raw)
		if err != nil {
			return
		}
		b, err := json.Marshal(models.Email(v))
		if err != nil {
			t.Fatalf("stored %q (from %q) does not marshal: %v", v, raw, err)
		}
		var back models.Email
		if err := json.Unmarshal(b, &back); err != nil || string(back) != v {
			t.Fatalf("stored %q reads back as %q, %v", v, back, err)
		}
		if again, err := storedEmail(v); err != nil || again != v {
			t.Fatalf("stored %q is not stored as itself: %q, %v", v, again, err)
		}
	})
}
