// Package egress decides where Relay may send upstream requests: a host's
// base URL may not point at Relay's own listeners (either plane, any of
// their addresses), nor at link-local and cloud metadata addresses unless
// the operator lists them, and, when the operator sets an allow-list
// (RELAY_UPSTREAM_ALLOW), only at the hosts and CIDRs it names. The control
// API checks a base URL on write; the inference plane's dialer checks every
// address it connects to, so a DNS name that resolves to Relay's own
// listener is refused too. It is a leaf package: no I/O but an optional DNS
// look-up on write.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
)

// ErrRefused is wrapped by every refusal.
var ErrRefused = errors.New("upstream address refused")

// metadataNames are the cloud metadata services' names, refused unless listed.
func metadataNames() [4]string {
	return [...]string{"metadata.google.internal", "metadata", "instance-data", "metadata.azure.internal"}
}

// metadataPrefixes are the link-local ranges the metadata services live in
// (169.254.169.254, AWS's fd00:ec2::254, Alibaba's 100.100.100.200),
// refused unless an allow-list CIDR covers them.
func metadataPrefixes() [4]netip.Prefix {
	return [...]netip.Prefix{
		netip.PrefixFrom(netip.AddrFrom4([4]byte{169, 254}), 16),
		netip.PrefixFrom(netip.AddrFrom16([16]byte{0xfe, 0x80}), 10),
		netip.PrefixFrom(netip.AddrFrom16([16]byte{0xfd, 0x00, 0x0e, 0xc2, 15: 0x54, 14: 0x02}), 128),
		netip.PrefixFrom(netip.AddrFrom4([4]byte{100, 100, 100, 200}), 32),
	}
}

// Guard is the rule. Its allow-list is fixed at start; Relay's own
// listeners are set once they are bound.
type Guard struct {
	hosts []string       // exact names, or "*.suffix"
	cidrs []netip.Prefix // addresses
	own   atomic.Pointer[listeners]
}

// listeners are Relay's own: a dial to one of these ports on one of these
// addresses (or, with any set, on any local address) would reach Relay.
type listeners struct {
	ports map[uint16]bool
	addrs map[netip.Addr]bool // specific bind addresses
	any   bool                // a plane listens on every interface
	local map[netip.Addr]bool // the machine's interface addresses, when any
}

// New makes a guard from the operator's allow-list: host names (exact, or
// "*.example.com" for its subdomains) and CIDRs or single addresses. An
// empty list allows any host but Relay's own listeners and the metadata
// addresses.
func New(allow []string) (*Guard, error) {
	g := &Guard{}
	for _, a := range allow {
		a = strings.ToLower(strings.TrimSpace(a))
		switch {
		case a == "":
		case strings.Contains(a, "/"):
			p, err := netip.ParsePrefix(a)
			if err != nil {
				return nil, fmt.Errorf("parse %q: not a CIDR", a)
			}
			g.cidrs = append(g.cidrs, p.Masked())
		default:
			if ip, err := netip.ParseAddr(strings.Trim(a, "[]")); err == nil {
				g.cidrs = append(g.cidrs, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
				continue
			}
			if strings.ContainsAny(a, ":@ ") || strings.Contains(strings.TrimPrefix(a, "*."), "*") {
				return nil, fmt.Errorf("parse %q: not a host name or CIDR", a)
			}
			g.hosts = append(g.hosts, strings.TrimSuffix(a, "."))
		}
	}
	return g, nil
}

// SetListeners records Relay's own listener addresses (both planes), once
// they are bound. A listener on an unspecified address (all interfaces)
// makes every address of this machine Relay's on that port.
func (g *Guard) SetListeners(addrs ...net.Addr) {
	l := &listeners{ports: map[uint16]bool{}, addrs: map[netip.Addr]bool{}}
	for _, a := range addrs {
		ap, err := netip.ParseAddrPort(a.String())
		if err != nil {
			continue
		}
		l.ports[ap.Port()] = true
		ip := ap.Addr().Unmap()
		if ip.IsUnspecified() {
			l.any = true
		} else {
			l.addrs[ip] = true
		}
	}
	if l.any {
		l.local = map[netip.Addr]bool{}
		if ifs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range ifs {
				if p, err := netip.ParsePrefix(a.String()); err == nil {
					l.local[p.Addr().Unmap()] = true
				}
			}
		}
	}
	g.own.Store(l)
}

// nameAllowed reports whether the host name is one the allow-list names.
func (g *Guard) nameAllowed(name string) bool {
	for _, h := range g.hosts {
		if suffix, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(name, "."+suffix) {
				return true
			}
		} else if name == h {
			return true
		}
	}
	return false
}

func (g *Guard) cidrAllowed(ip netip.Addr) bool {
	for _, p := range g.cidrs {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// CheckName is the check on a host name (or literal address) before any
// look-up: a metadata name is refused unless listed; with an allow-list,
// the name must be listed or be an address it covers. It reports whether
// the name itself was listed (then the addresses it resolves to need only
// pass CheckAddr's own-listener and metadata checks).
func (g *Guard) CheckName(host string) (listed bool, err error) {
	name := strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if name == "" {
		return false, fmt.Errorf("%w: no host", ErrRefused)
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		ip = ip.Unmap()
		if len(g.hosts)+len(g.cidrs) > 0 && !g.cidrAllowed(ip) {
			return false, fmt.Errorf("%w: %s is not in RELAY_UPSTREAM_ALLOW", ErrRefused, name)
		}
		return false, nil
	}
	listed = g.nameAllowed(name)
	for _, m := range metadataNames() {
		if name == m && !listed {
			return false, fmt.Errorf("%w: %s is a cloud metadata service (list it in RELAY_UPSTREAM_ALLOW to allow it)", ErrRefused, name)
		}
	}
	if len(g.hosts)+len(g.cidrs) > 0 && !listed && len(g.cidrs) == 0 {
		return false, fmt.Errorf("%w: %s is not in RELAY_UPSTREAM_ALLOW", ErrRefused, name)
	}
	return listed, nil
}

// CheckAddr is the check on an address about to be dialed: never one of
// Relay's own listeners; a link-local or metadata address only when an
// allow-list CIDR covers it; with an allow-list, an address its CIDRs cover
// unless the name dialed was itself listed.
func (g *Guard) CheckAddr(ap netip.AddrPort, nameListed bool) error {
	ip := ap.Addr().Unmap()
	if l := g.own.Load(); l != nil && l.ports[ap.Port()] {
		if l.addrs[ip] || ip.IsUnspecified() || (l.any && (ip.IsLoopback() || l.local[ip])) {
			return fmt.Errorf("%w: %s is Relay's own listener", ErrRefused, ap)
		}
	}
	listedCIDR := g.cidrAllowed(ip)
	for _, p := range metadataPrefixes() {
		if p.Contains(ip) && !listedCIDR {
			return fmt.Errorf("%w: %s is a link-local or metadata address (list it in RELAY_UPSTREAM_ALLOW to allow it)", ErrRefused, ip)
		}
	}
	if len(g.hosts)+len(g.cidrs) > 0 && !nameListed && !listedCIDR {
		return fmt.Errorf("%w: %s is not in RELAY_UPSTREAM_ALLOW", ErrRefused, ip)
	}
	return nil
}

// CheckURL is the check on a host's base URL when it is written: the name,
// then every address it resolves to now (resolve may be nil: literal
// addresses only; a name that does not resolve yet is not refused for
// that, the dialer checks it again).
func (g *Guard) CheckURL(ctx context.Context, raw string, resolve func(ctx context.Context, host string) ([]netip.Addr, error)) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: %q is not an http(s) URL", ErrRefused, raw)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	p, err := netip.ParseAddrPort(net.JoinHostPort("0.0.0.0", port))
	if err != nil {
		return fmt.Errorf("%w: port %q", ErrRefused, port)
	}
	host := u.Hostname()
	listed, err := g.CheckName(host)
	if err != nil {
		return err
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		ips = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
	} else if resolve != nil {
		ips, _ = resolve(ctx, host)
	}
	for _, ip := range ips {
		if err := g.CheckAddr(netip.AddrPortFrom(ip, p.Port()), listed); err != nil {
			return err
		}
	}
	return nil
}
