package authn

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// ClientAddr is the address of r's client, which the throttles count by
// (docs/accounts.md, Throttling): the connection's address, or, only when
// the connection comes from a trusted proxy, the last hop of
// X-Forwarded-For that is not trusted. The hops of every X-Forwarded-For
// header, in order, are walked from the right, where the proxies errata
// trusts appended them; whatever a client wrote to their left is never
// reached. A malformed hop ends the walk at the last good address before
// it; when every hop is trusted, the answer is the connection's address.
// A hop is an address, or an address and a port. The answer is the zero
// Addr when r.RemoteAddr is no address (never so for TCP connections).
func ClientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	remote := parseHop(r.RemoteAddr)
	if !remote.IsValid() || !isTrusted(remote, trusted) {
		return remote
	}
	last := remote
	values := r.Header.Values("X-Forwarded-For")
	for i := len(values) - 1; i >= 0; i-- {
		hops := values[i]
		for {
			comma := strings.LastIndexByte(hops, ',')
			hop := parseHop(hops[comma+1:])
			if !hop.IsValid() {
				return last
			}
			if !isTrusted(hop, trusted) {
				return hop
			}
			last = hop
			if comma < 0 {
				break
			}
			hops = hops[:comma]
		}
	}
	return remote
}

// parseHop reads an address, or an address and a port, with space around,
// as an IPv4 address when it is one mapped into IPv6 and without an IPv6
// zone; the zero Addr when it is neither.
func parseHop(s string) netip.Addr {
	s = strings.TrimSpace(s)
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return netip.Addr{}
		}
		a = ap.Addr()
	}
	return a.Unmap().WithZone("")
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	return slices.ContainsFunc(trusted, func(p netip.Prefix) bool { return p.Contains(a) })
}

// ParseTrustedProxies reads the setting TRUSTED_PROXIES: CIDRs or bare
// addresses (a /32 or /128), separated by commas; empty trusts none. A
// CIDR's host bits are cleared (10.1.2.3/8 is 10.0.0.0/8), and an IPv4
// address mapped into IPv6 is taken as IPv4.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var prefixes []netip.Prefix
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		var p netip.Prefix
		if strings.Contains(item, "/") {
			var err error
			if p, err = netip.ParsePrefix(item); err != nil {
				return nil, fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8", item)
			}
			if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
			}
		} else {
			a, err := netip.ParseAddr(item)
			if err != nil || a.Zone() != "" {
				return nil, fmt.Errorf("%q is not an address or a CIDR such as 10.0.0.0/8", item)
			}
			a = a.Unmap()
			p = netip.PrefixFrom(a, a.BitLen())
		}
		prefixes = append(prefixes, p.Masked())
	}
	return prefixes, nil
}
