package server

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestForwarded_BelievesOnlyTrustedProxies(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	for _, tc := range []struct {
		name       string
		remote     string
		tls        bool
		xff, proto []string
		wantAddr   string
		wantTLS    bool
	}{
		{"direct, plain", "203.0.113.5:4000", false, nil, nil, "203.0.113.5:4000", false},
		{"direct, TLS", "203.0.113.5:4000", true, nil, nil, "203.0.113.5:4000", true},
		{"untrusted peer's headers mean nothing", "203.0.113.5:4000", false, []string{"198.51.100.7"}, []string{"https"}, "203.0.113.5:4000", false},
		{"trusted proxy", "10.1.2.3:5000", false, []string{"198.51.100.7"}, []string{"https"}, "198.51.100.7:0", true},
		{"trusted proxy, plain", "10.1.2.3:5000", false, []string{"198.51.100.7"}, []string{"http"}, "198.51.100.7:0", false},
		{"trusted proxy over TLS says http", "10.1.2.3:5000", true, nil, []string{"http"}, "10.1.2.3:5000", false},
		{"a spoofed left entry is skipped", "10.1.2.3:5000", false, []string{"1.2.3.4, 198.51.100.7"}, nil, "198.51.100.7:0", false},
		{"chain of trusted proxies", "10.1.2.3:5000", false, []string{"198.51.100.7, 10.9.9.9", "10.8.8.8"}, nil, "198.51.100.7:0", false},
		{"all trusted: the left-most", "10.1.2.3:5000", false, []string{"10.4.4.4, 10.5.5.5"}, nil, "10.4.4.4:0", false},
		{"garbage ends the walk", "10.1.2.3:5000", false, []string{"198.51.100.7, nonsense, 10.5.5.5"}, nil, "10.5.5.5:0", false},
		{"IPv6 trusted proxy", "[::1]:5000", false, []string{"2001:db8::1"}, []string{"https"}, "[2001:db8::1]:0", true},
		{"last proto wins", "10.1.2.3:5000", false, nil, []string{"https, http"}, "10.1.2.3:5000", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gotAddr string
			var gotTLS bool
			h := Forwarded(trusted, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotAddr, gotTLS = r.RemoteAddr, OverTLS(r.Context())
			}))
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tc.remote
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			for _, v := range tc.proto {
				r.Header.Add("X-Forwarded-Proto", v)
			}
			h.ServeHTTP(httptest.NewRecorder(), r)
			if gotAddr != tc.wantAddr || gotTLS != tc.wantTLS {
				t.Errorf("RemoteAddr %q, OverTLS %v; want %q, %v", gotAddr, gotTLS, tc.wantAddr, tc.wantTLS)
			}
		})
	}
}

func FuzzForwardedClient(f *testing.F) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	f.Add("1.2.3.4, 10.0.0.1")
	f.Add("[::1]:80,,garbage")
	f.Fuzz(func(t *testing.T, xff string) {
		a, ok := forwardedClient(trusted, []string{xff})
		if ok && !a.IsValid() {
			t.Fatalf("ok with an invalid address for %q", xff)
		}
	})
}

func TestForwarded_LeavesAPlainRequestUntouched(t *testing.T) {
	h := Forwarded(nil, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	w := httptest.NewRecorder()
	if n := testing.AllocsPerRun(100, func() { h.ServeHTTP(w, r) }); n != 0 {
		t.Errorf("%v allocations per plain request, want 0", n)
	}
}
