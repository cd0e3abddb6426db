// Package clientaddr finds the address of the client behind a request: the
// peer, or, when the peer is a reverse proxy the Owner named in
// TRUSTED_PROXIES, the address that proxy saw, read from X-Forwarded-For.
//
// The login limiter keys on this address. Without it, every Reader behind
// a proxy shares the proxy's address, and one guesser locks everyone out;
// with the header believed from anyone, a guesser claims a fresh address
// per attempt. So the header is read from the right, and only across hops
// that are trusted proxies: the first address a trusted proxy did not
// write itself is the client.
package clientaddr

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Trusted are the reverse proxies whose X-Forwarded-For is believed; the
// zero value believes none.
type Trusted []netip.Prefix

// Parse reads TRUSTED_PROXIES: addresses or CIDR prefixes separated by
// commas, e.g. "127.0.0.1, 10.0.0.0/8, fd00::/8".
func Parse(s string) (Trusted, error) {
	var t Trusted
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			t = append(t, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("TRUSTED_PROXIES is malformed: %q is neither an IP address nor a CIDR prefix", part)
		}
		a = a.Unmap()
		t = append(t, netip.PrefixFrom(a, a.BitLen()))
	}
	return t, nil
}

func (t Trusted) trusts(a netip.Addr) bool {
	for _, p := range t {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Of is the client's address. The peer is the client unless it is a
// trusted proxy; then X-Forwarded-For is walked from its end (the hop the
// peer added) towards its start, and the first address that is not a
// trusted proxy is the client. An element that does not parse ends the
// walk at the last trusted hop: what came before it was written by someone
// no trusted proxy vouches for. The result is invalid only when the peer
// address itself does not parse (a test's fake RemoteAddr).
func (t Trusted) Of(r *http.Request) netip.Addr {
	peer := parse(r.RemoteAddr)
	if !peer.IsValid() || len(t) == 0 || !t.trusts(peer) {
		return peer
	}
	hops := r.Header.Values("X-Forwarded-For")
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		elems := strings.Split(hops[i], ",")
		for j := len(elems) - 1; j >= 0; j-- {
			a := parse(strings.TrimSpace(elems[j]))
			if !a.IsValid() {
				return client
			}
			client = a
			if !t.trusts(a) {
				return a
			}
		}
	}
	return client
}

// parse reads "ip", "ip:port" or "[ipv6]:port"; zones are dropped and
// IPv4-mapped IPv6 addresses read as IPv4.
func parse(s string) netip.Addr {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.WithZone("").Unmap()
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		if a, err := netip.ParseAddr(host); err == nil {
			return a.WithZone("").Unmap()
		}
	}
	return netip.Addr{}
}
