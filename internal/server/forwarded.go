package server

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Behind a proxy: X-Forwarded-For and X-Forwarded-Proto are believed only
// from a peer in Options.TrustedProxies. From one, the client address is the
// right-most X-Forwarded-For entry that is not itself a trusted proxy (what
// the outermost trusted proxy saw), and it replaces r.RemoteAddr, so the
// logs, the audit trail and the sign-in throttle name the client, not the
// proxy. From anyone else both headers mean nothing here.

type overTLSKey struct{}

// OverTLS reports whether the request that ctx belongs to reached Relay over
// TLS: on a TLS listener, or from a trusted proxy that says
// X-Forwarded-Proto: https. The session cookie is Secure when it holds.
func OverTLS(ctx context.Context) bool {
	v, _ := ctx.Value(overTLSKey{}).(bool)
	return v
}

// Forwarded wraps h with the trusted-proxy rule above; it marks the request's
// context for OverTLS. A plain request from a peer that is not trusted passes
// untouched (no copy of the request, no allocation): the inference plane's.
func Forwarded(trusted []netip.Prefix, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		overTLS := r.TLS != nil
		var client netip.Addr
		if len(trusted) > 0 {
			if peer, ok := addrOf(r.RemoteAddr); ok && isTrusted(trusted, peer) {
				if proto := lastValue(r.Header.Values("X-Forwarded-Proto")); proto != "" {
					overTLS = strings.EqualFold(proto, "https")
				}
				client, _ = forwardedClient(trusted, r.Header.Values("X-Forwarded-For"))
			}
		}
		if overTLS {
			r = r.WithContext(context.WithValue(r.Context(), overTLSKey{}, true))
		}
		if client.IsValid() {
			if !overTLS {
				r2 := *r
				r = &r2
			}
			r.RemoteAddr = net.JoinHostPort(client.String(), "0")
		}
		h.ServeHTTP(w, r)
	})
}

func addrOf(remote string) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

func isTrusted(trusted []netip.Prefix, a netip.Addr) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// forwardedClient walks X-Forwarded-For (every field, in order) from the
// right, past trusted proxies, to the first address that is not one. An
// entry that is not an address ends the walk: what lies left of it was
// written by whoever the proxy did not check. All trusted: the left-most.
func forwardedClient(trusted []netip.Prefix, fields []string) (netip.Addr, bool) {
	var hops []string
	for _, f := range fields {
		hops = append(hops, strings.Split(f, ",")...)
	}
	var last netip.Addr
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := addrOf(strings.TrimSpace(hops[i]))
		if !ok {
			break
		}
		if !isTrusted(trusted, a) {
			return a, true
		}
		last = a
	}
	return last, last.IsValid()
}

// lastValue is the value the nearest proxy added: the last entry of the
// last field.
func lastValue(fields []string) string {
	if len(fields) == 0 {
		return ""
	}
	f := fields[len(fields)-1]
	if i := strings.LastIndexByte(f, ','); i >= 0 {
		f = f[i+1:]
	}
	return strings.TrimSpace(f)
}
