package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

func tcp(s string) net.Addr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }

func TestGuard_CheckURL(t *testing.T) {
	own := func(allow ...string) *Guard {
		g, err := New(allow)
		if err != nil {
			t.Fatal(err)
		}
		g.SetListeners(tcp("0.0.0.0:8080"), tcp("[::]:8081"))
		return g
	}
	bound := func() *Guard {
		g, _ := New(nil)
		g.SetListeners(tcp("10.1.2.3:8080"), tcp("10.1.2.3:8081"))
		return g
	}
	resolve := func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "relay.internal":
			return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
		case "meta.example":
			return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
		case "api.openai.com":
			return []netip.Addr{netip.MustParseAddr("162.159.140.245")}, nil
		}
		return nil, errors.New("no such host")
	}
	for _, tc := range []struct {
		g     *Guard
		url   string
		ok    bool
		cause string
	}{
		{own(), "http://127.0.0.1:8081/api", false, "Relay's own"},
		{own(), "http://127.0.0.1:8080/v1", false, "Relay's own"},
		{own(), "http://localhost:8081", false, "Relay's own"},
		{own(), "http://[::1]:8080", false, "Relay's own"},
		{own(), "http://0.0.0.0:8081", false, "Relay's own"},
		{own(), "http://[::ffff:127.0.0.1]:8081", false, "Relay's own"},
		{own(), "http://127.0.0.1:9999/mock", true, ""}, // a loopback mock on another port
		{bound(), "http://relay.internal:8081", false, "Relay's own"},
		{bound(), "http://10.1.2.3:8080", false, "Relay's own"},
		{bound(), "http://127.0.0.1:8081", true, ""}, // nothing of Relay's listens there
		{own(), "http://169.254.169.254/latest/meta-data", false, "metadata"},
		{own(), "http://[fd00:ec2::254]/", false, "metadata"},
		{own(), "http://[fe80::1]/", false, "metadata"},
		{own(), "http://metadata.google.internal/computeMetadata/v1", false, "metadata"},
		{own(), "http://METADATA.google.internal./", false, "metadata"},
		{own(), "http://meta.example/", false, "metadata"},
		{own("169.254.0.0/16"), "http://169.254.169.254/", true, ""},
		{own(), "https://api.openai.com/v1", true, ""},
		{own("api.openai.com"), "https://api.openai.com/v1", true, ""},
		{own("api.openai.com"), "https://api.anthropic.com", false, "RELAY_UPSTREAM_ALLOW"},
		{own("*.openai.azure.com"), "https://x.openai.azure.com", true, ""},
		{own("*.openai.azure.com"), "https://openai.azure.com.evil.example", false, "RELAY_UPSTREAM_ALLOW"},
		{own("10.0.0.0/8"), "http://10.9.9.9:11434", true, ""},
		{own("10.0.0.0/8"), "http://192.168.1.1", false, "RELAY_UPSTREAM_ALLOW"},
		{own("10.0.0.0/8"), "https://api.openai.com", false, "RELAY_UPSTREAM_ALLOW"},
		{own("127.0.0.0/8"), "http://127.0.0.1:8081", false, "Relay's own"}, // never, whatever the list
		{own("api.openai.com"), "ftp://api.openai.com", false, "not an http"},
	} {
		err := tc.g.CheckURL(context.Background(), tc.url, resolve)
		if tc.ok != (err == nil) || (err != nil && (!strings.Contains(err.Error(), tc.cause) || !errors.Is(err, ErrRefused))) {
			t.Errorf("CheckURL(%s) = %v, want ok=%v (%s)", tc.url, err, tc.ok, tc.cause)
		}
	}
}

func TestNew_RefusesMalformedEntries(t *testing.T) {
	for _, e := range []string{"10.0.0.0/33", "a b", "user@host", "*.*.x", "http://x"} {
		if _, err := New([]string{e}); err == nil {
			t.Errorf("New(%q) accepted it", e)
		}
	}
}

func FuzzGuard_CheckURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:8081", "https://api.openai.com/v1", "http://[fd00:ec2::254]/", "http://%31%32%37.0.0.1:8081"} {
		f.Add(s)
	}
	g, _ := New([]string{"10.0.0.0/8", "*.example.com"})
	g.SetListeners(tcp("0.0.0.0:8081"))
	f.Fuzz(func(t *testing.T, raw string) {
		err := g.CheckURL(context.Background(), raw, nil)
		if err != nil {
			return
		}
		// Whatever passed must not be a literal address of Relay's own port.
		u := strings.ToLower(raw)
		for _, bad := range []string{"//127.0.0.1:8081", "//[::1]:8081", "//localhost:8081", "//0.0.0.0:8081"} {
			if strings.HasPrefix(strings.TrimPrefix(strings.TrimPrefix(u, "http:"), "https:"), bad) {
				t.Fatalf("CheckURL(%q) passed", raw)
			}
		}
	})
}

// BenchmarkGuard_Dial is what the dialer adds to a new upstream
// connection: the name check and the address check.
func BenchmarkGuard_Dial(b *testing.B) {
	g, _ := New([]string{"10.0.0.0/8", "*.openai.azure.com", "api.openai.com"})
	g.SetListeners(tcp("0.0.0.0:8080"), tcp("0.0.0.0:8081"))
	ap := netip.MustParseAddrPort("162.159.140.245:443")
	b.ReportAllocs()
	for b.Loop() {
		listed, err := g.CheckName("api.openai.com")
		if err != nil || g.CheckAddr(ap, listed) != nil {
			b.Fatal(err)
		}
	}
}
