package gate

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseHostIPReadsHostsLikeABrowser pins the WHATWG reading of numeric
// hosts, so an odd spelling of an address can never pass for a name.
func TestParseHostIPReadsHostsLikeABrowser(t *testing.T) {
	t.Parallel()
	cases := []struct {
		host      string
		want      string // "" for a name
		canonical bool
		ok        bool
	}{
		{"127.0.0.1", "127.0.0.1", true, true},
		{"127.1", "127.0.0.1", false, true},
		{"127.0.1", "127.0.0.1", false, true},
		{"2130706433", "127.0.0.1", false, true},
		{"0x7f000001", "127.0.0.1", false, true},
		{"0X7F000001", "127.0.0.1", false, true},
		{"0177.0.0.1", "127.0.0.1", false, true},
		{"0x7f.0.0.1", "127.0.0.1", false, true},
		{"0x7f.1", "127.0.0.1", false, true},
		{"127.0.0.1.", "127.0.0.1", false, true},
		{"0", "0.0.0.0", false, true},
		{"0x", "0.0.0.0", false, true},
		{"10.0.0.1", "10.0.0.1", true, true},
		{"017700000001", "127.0.0.1", false, true},
		{"0xa9fea9fe", "169.254.169.254", false, true},
		{"4294967295", "255.255.255.255", false, true},
		{"::1", "::1", true, true},
		{"::ffff:127.0.0.1", "::ffff:127.0.0.1", true, true},
		{"fe80::1%eth0", "fe80::1%eth0", true, true},
		// Names, including ones that merely contain digits or hex letters.
		{"cdn.test", "", false, true},
		{"1.2.3.cdn", "", false, true},
		{"0x7f.example", "", false, true},
		{"123abc", "", false, true},
		{"0xg1", "", false, true},
		// Numeric, but no address: refused.
		{"4294967296", "", false, false},
		{"1.2.3.4.5", "", false, false},
		{"256.0.0.1", "", false, false},
		{"1.2.65536", "", false, false},
		{"08.0.0.1", "", false, false},
		{"cdn.09", "", false, false},
		{"99999999999999999999999", "", false, false},
		{"0xffffffffffffffffffffff", "", false, false},
		{"1..1", "", false, false},
		{":::", "", false, false},
	}
	for _, tc := range cases {
		a, numeric, canonical, ok := parseHostIP(tc.host)
		require.Equal(t, tc.ok, ok, tc.host)
		if !ok {
			continue
		}
		require.Equal(t, tc.want != "", numeric, tc.host)
		if tc.want != "" {
			require.Equal(t, tc.want, a.String(), tc.host)
			require.Equal(t, tc.canonical, canonical, tc.host)
		}
	}
}

func TestClassOfNamesEveryRange(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"127.0.0.1":               ClassLoopback,
		"127.255.255.254":         ClassLoopback,
		"::1":                     ClassLoopback,
		"::ffff:127.0.0.1":        ClassLoopback,
		"10.255.0.1":              ClassPrivate,
		"172.31.255.255":          ClassPrivate,
		"192.168.0.1":             ClassPrivate,
		"::ffff:192.168.0.1":      ClassPrivate,
		"64:ff9b::c0a8:1":         ClassPrivate,
		"64:ff9b:1::a00:1":        ClassPrivate,
		"::10.0.0.1":              ClassPrivate,
		"2002:a00:1::":            ClassPrivate,
		"169.254.169.254":         ClassLinkLocal,
		"fe80::1":                 ClassLinkLocal,
		"fc00::1":                 ClassUniqueLocal,
		"fd12:3456::1":            ClassUniqueLocal,
		"100.64.0.1":              ClassCGNAT,
		"100.127.255.255":         ClassCGNAT,
		"0.0.0.0":                 ClassUnspecified,
		"0.1.2.3":                 ClassUnspecified,
		"::":                      ClassUnspecified,
		"224.0.0.1":               ClassMulticast,
		"239.255.255.250":         ClassMulticast,
		"ff02::1":                 ClassMulticast,
		"255.255.255.255":         ClassReserved,
		"240.0.0.1":               ClassReserved,
		"198.18.0.1":              ClassReserved,
		"192.0.0.1":               ClassReserved,
		"192.0.2.1":               ClassReserved,
		"2001:db8::1":             ClassReserved,
		"64:ff9b::5db8:d822":      ClassReserved,
		"2002:5db8:d822::":        ClassReserved,
		"93.184.216.34":           "",
		"2606:2800:220:1::1":      "",
		"::ffff:93.184.216.34":    "",
		"100.128.0.1":             "",
		"172.32.0.1":              "",
		"2001:4860:4860::8888%en": ClassReserved, // a zone: no prefix contains it, the Guardian refuses it
	}
	for s, want := range cases {
		require.Equal(t, want, classOf(netip.MustParseAddr(s)), s)
	}
}

// TestCheckIsTheGuardiansVerdict: every address the label calls special is
// refused by check, public ones pass, and a refusal's class is the label.
func TestCheckIsTheGuardiansVerdict(t *testing.T) {
	t.Parallel()
	c := New(Options{})
	for _, s := range []string{
		"127.0.0.1", "10.0.0.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1",
		"255.255.255.255", "198.18.0.1", "192.0.0.1", "::1", "::", "fc00::1", "fe80::1",
		"ff02::1", "64:ff9b::a00:1", "64:ff9b::5db8:d822", "2002:7f00:1::", "2001:db8::1",
		"::ffff:10.0.0.1", "::10.0.0.1", "2001:4860:4860::8888%eth0",
	} {
		a := netip.MustParseAddr(s)
		err := c.check(netip.AddrPortFrom(a, 443))
		require.ErrorIs(t, err, ErrRefused, s)
		require.Equal(t, labelOf(a), Class(err), s)
		require.NotEqual(t, ClassPort, Class(err), s)
	}
	for _, s := range []string{"93.184.216.34", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8"} {
		require.NoError(t, c.check(netip.AddrPortFrom(netip.MustParseAddr(s), 443)), s)
		require.Equal(t, ClassPort, Class(c.check(netip.AddrPortFrom(netip.MustParseAddr(s), 80))), s)
	}
}

// TestControlHookRefusesWhatTheGateRefuses: the default dialer's socket hook
// applies the same Guardian to the peer address, with AllowAddrs honoured.
func TestControlHookRefusesWhatTheGateRefuses(t *testing.T) {
	t.Parallel()
	allowed := netip.MustParseAddrPort("127.0.0.1:8443")
	c := New(Options{AllowAddrs: []netip.AddrPort{allowed}})
	for _, tc := range []struct{ network, address, class string }{
		{"tcp4", "127.0.0.1:443", ClassLoopback},
		{"tcp4", "127.0.0.1:8444", ClassLoopback},
		{"tcp6", "[fd00::1]:443", ClassUniqueLocal},
		{"tcp4", "169.254.169.254:443", ClassLinkLocal},
		{"tcp4", "93.184.216.34:80", ClassPort},
		{"udp4", "93.184.216.34:443", ClassMalformed},
		{"tcp4", "not-an-address", ClassMalformed},
	} {
		err := c.control(tc.network, tc.address, nil)
		require.ErrorIs(t, err, ErrRefused, tc.address)
		require.Equal(t, tc.class, Class(err), tc.address)
	}
	require.NoError(t, c.control("tcp4", "93.184.216.34:443", nil))
	require.NoError(t, c.control("tcp4", "127.0.0.1:8443", nil))
}
