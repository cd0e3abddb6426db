package gate

import (
	"errors"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"code.dny.dev/ssrf"
)

// classOf names the special-purpose range an address falls in, for the
// refusal's class label, or "" for an ordinary public address. It decides
// nothing: whether an address may be
// dialled is the ssrf Guardian's call (see Client.check); this only says why
// in words a metric can count. An address the Guardian refused that matches
// no named range is "reserved".
func classOf(a netip.Addr) string {
	a = a.Unmap()
	if a.Is4() {
		return class4(a)
	}
	b := a.As16()
	switch {
	case a.IsUnspecified():
		return ClassUnspecified
	case a.IsLoopback():
		return ClassLoopback
	case nat64.Contains(a) || nat64Local.Contains(a), ipv4Compatible.Contains(a):
		// NAT64 (64:ff9b::/96, 64:ff9b:1::/48) and the deprecated
		// IPv4-compatible form carry an IPv4 address in their last 32 bits.
		return embedded(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	case sixToFour.Contains(a):
		return embedded(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	case a.IsLinkLocalUnicast():
		return ClassLinkLocal
	case a.IsPrivate():
		return ClassUniqueLocal
	case a.IsMulticast():
		return ClassMulticast
	case ssrf.IPv6GlobalUnicast.Contains(a) && !slices.ContainsFunc(ssrf.IPv6DeniedPrefixes, func(p netip.Prefix) bool { return p.Contains(a) }):
		return ""
	}
	return ClassReserved
}

var (
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local     = netip.MustParsePrefix("64:ff9b:1::/48")
	ipv4Compatible = netip.MustParsePrefix("::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	cgnat          = netip.MustParsePrefix("100.64.0.0/10")
	thisNetwork    = netip.MustParsePrefix("0.0.0.0/8")
)

// embedded labels a translated IPv6 address by the IPv4 address inside it
// when that one is special, else as reserved (the translated form itself is
// outside global unicast).
func embedded(v4 netip.Addr) string {
	if c := class4(v4); c != "" {
		return c
	}
	return ClassReserved
}

// class4 labels an IPv4 address, or "" for an ordinary unicast one.
func class4(a netip.Addr) string {
	switch {
	case thisNetwork.Contains(a):
		return ClassUnspecified
	case a.IsLoopback():
		return ClassLoopback
	case a.IsPrivate():
		return ClassPrivate
	case a.IsLinkLocalUnicast():
		return ClassLinkLocal
	case cgnat.Contains(a):
		return ClassCGNAT
	case a.IsMulticast():
		return ClassMulticast
	}
	for _, p := range reserved4 {
		if p.Contains(a) {
			return ClassReserved
		}
	}
	return ""
}

// The other IPv4 special-purpose ranges, named so that a translated form of
// one of them is labelled reserved rather than passed over.
var reserved4 = []netip.Prefix{
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("192.31.196.0/24"),
	netip.MustParsePrefix("192.52.193.0/24"),
	netip.MustParsePrefix("192.88.99.0/24"),
	netip.MustParsePrefix("192.175.48.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
}

// parseHostIP reads a URL host the way a browser's URL parser (WHATWG) does:
// an IPv6 literal, or, when the last dot-separated label looks like a number,
// an IPv4 address in any of the legacy forms (127.1, 2130706433, 0x7f000001,
// 0177.0.0.1). numeric reports that the host is an address rather than a
// name; canonical that it is written the standard way (dotted decimal IPv4,
// or an IPv6 literal). A numeric host that does not parse returns ok false.
func parseHostIP(host string) (addr netip.Addr, numeric, canonical, ok bool) {
	if strings.Contains(host, ":") {
		a, err := netip.ParseAddr(host)
		if err != nil {
			return netip.Addr{}, true, false, false
		}
		return a, true, true, true
	}
	labels := strings.Split(host, ".")
	if len(labels) > 1 && labels[len(labels)-1] == "" {
		labels = labels[:len(labels)-1]
	}
	last := labels[len(labels)-1]
	if !allDigits(last) {
		if _, valid := parseIPv4Number(last); !valid {
			return netip.Addr{}, false, false, true
		}
	}
	// From here on the host is an IPv4 address or invalid, as in a browser.
	if len(labels) > 4 {
		return netip.Addr{}, true, false, false
	}
	nums := make([]uint64, len(labels))
	for i, l := range labels {
		n, valid := parseIPv4Number(l)
		if !valid {
			return netip.Addr{}, true, false, false
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, true, false, false
		}
	}
	if nums[len(nums)-1] >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, true, false, false
	}
	v := nums[len(nums)-1]
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	a := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	return a, true, a.String() == host, true
}

// parseIPv4Number parses one label of a WHATWG IPv4 host: 0x-prefixed hex,
// 0-prefixed octal or decimal.
func parseIPv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
		if s == "" {
			return 0, true
		}
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	for _, c := range s {
		if c == '+' || c == '-' || c == '_' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, base, 64)
	if errors.Is(err, strconv.ErrRange) {
		// Well-formed but huge: still a number, which the range check refuses.
		return math.MaxUint64, true
	}
	if err != nil {
		return 0, false
	}
	return n, true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
