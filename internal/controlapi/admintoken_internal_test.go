package controlapi

import (
	"strings"
	"testing"
	"time"
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
