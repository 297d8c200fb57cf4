package ui

import (
	"net/url"
	"strings"
	"testing"
)

// browserResolve resolves a Location as a browser would on the console at
// https://console.example/sign-in: it drops tabs and newlines, trims C0
// controls and spaces, and reads backslashes as slashes.
func browserResolve(t *testing.T, loc string) *url.URL {
	t.Helper()
	loc = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(loc)
	loc = strings.TrimFunc(loc, func(r rune) bool { return r <= ' ' })
	loc = strings.ReplaceAll(loc, `\`, "/")
	base, _ := url.Parse("https://console.example/sign-in")
	ref, err := url.Parse(loc)
	if err != nil {
		return base
	}
	return base.ResolveReference(ref)
}

func TestSafeNext_RefusesEveryFormOfAnotherOrigin(t *testing.T) {
	for _, tc := range []struct {
		next, want string
	}{
		// Kept: the console's own addresses.
		{"/", "/"},
		{"/hosts", "/hosts"},
		{"/usage?project=a%2Fb&from=2026-01-01", "/usage?project=a%2Fb&from=2026-01-01"},
		{"/hosts/9a6b?x=//evil.example", "/hosts/9a6b?x=//evil.example"},
		{"/a//b", "/a//b"},
		{"/%2e%2e/hosts", "/%2e%2e/hosts"},
		// Refused: another host, however spelt.
		{"//evil.example", "/"},
		{"///evil.example", "/"},
		{`/\evil.example`, "/"},
		{`\/evil.example`, "/"},
		{`\\evil.example`, "/"},
		{"/\t/evil.example", "/"},
		{"/\n/evil.example", "/"},
		{"/\r\n/evil.example", "/"},
		{"\t//evil.example", "/"},
		{" //evil.example", "/"},
		{"/ /evil.example", "/"},
		{"/\x00/evil.example", "/"},
		{"/\x0b/evil.example", "/"},
		{"/\x7f/evil.example", "/"},
		{"/\u00a0/evil.example", "/"},
		{"/\uff0f/evil.example", "/"},
		{"/%2F/evil.example", "/"},
		{"/%2f%2fevil.example", "/"},
		{"/%5C/evil.example", "/"},
		{`/hosts\..\..\evil`, "/"},
		// Refused: schemes and what is not a path.
		{"https://evil.example/", "/"},
		{"HTTPS://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"data:text/html,x", "/"},
		{"evil.example", "/"},
		{"", "/"},
		{"?next=//evil", "/"},
		{"#//evil", "/"},
		{"/" + strings.Repeat("a", 3000), "/"},
	} {
		got := safeNext(tc.next)
		if got != tc.want {
			t.Errorf("safeNext(%q) = %q, want %q", tc.next, got, tc.want)
		}
		if u := browserResolve(t, got); u.Host != "console.example" || u.Scheme != "https" {
			t.Errorf("safeNext(%q) = %q, which a browser takes to %s", tc.next, got, u)
		}
	}
}

func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"/", "/hosts?x=1", "//evil", "/\t/evil", `/\evil`, "https://evil", "/%2F/evil"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) {
		got := safeNext(next)
		if u := browserResolve(t, got); u.Host != "console.example" || u.Scheme != "https" {
			t.Fatalf("safeNext(%q) = %q, which a browser takes to %s", next, got, u)
		}
		if got != "/" && got != next {
			t.Fatalf("safeNext(%q) = %q: kept, but changed", next, got)
		}
	})
}
