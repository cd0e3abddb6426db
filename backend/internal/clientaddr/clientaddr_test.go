package clientaddr

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOf(t *testing.T) {
	t.Parallel()
	proxies, err := Parse("127.0.0.1, 10.0.0.0/8 ,fd00::/8")
	require.NoError(t, err)
	for _, c := range []struct {
		name    string
		trusted Trusted
		peer    string
		xff     []string
		want    string
	}{
		{"no proxies trusted: the header is ignored", nil, "198.51.100.9:5000", []string{"203.0.113.7"}, "198.51.100.9"},
		{"an untrusted peer's header is ignored", proxies, "198.51.100.9:5000", []string{"203.0.113.7"}, "198.51.100.9"},
		{"a trusted proxy's client", proxies, "127.0.0.1:5000", []string{"203.0.113.7"}, "203.0.113.7"},
		{"what the client wrote before its own address is ignored", proxies, "127.0.0.1:5000", []string{"1.2.3.4, 203.0.113.7"}, "203.0.113.7"},
		{"a chain of trusted proxies", proxies, "10.0.0.2:5000", []string{"6.6.6.6, 203.0.113.7, 10.0.0.5"}, "203.0.113.7"},
		{"header lines are one list", proxies, "10.0.0.2:5000", []string{"6.6.6.6", "203.0.113.7", "10.0.0.5"}, "203.0.113.7"},
		{"no header: the proxy itself", proxies, "127.0.0.1:5000", nil, "127.0.0.1"},
		{"only proxies: the farthest one", proxies, "10.0.0.2:5000", []string{"10.0.0.9"}, "10.0.0.9"},
		{"garbage a trusted proxy forwarded stops the walk", proxies, "127.0.0.1:5000", []string{"203.0.113.7, not-an-ip"}, "127.0.0.1"},
		{"garbage from the client is never reached", proxies, "127.0.0.1:5000", []string{"<script>, 203.0.113.7"}, "203.0.113.7"},
		{"IPv6 with port", proxies, "[fd00::1]:443", []string{"[2001:db8::1]:4711"}, "2001:db8::1"},
		{"IPv4-mapped peer", proxies, "[::ffff:127.0.0.1]:80", []string{"203.0.113.7"}, "203.0.113.7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = c.peer
			for _, v := range c.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			require.Equal(t, netip.MustParseAddr(c.want), c.trusted.Of(r))
		})
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "pipe"
	require.False(t, proxies.Of(r).IsValid(), "an unparseable peer is reported as such")
}

func TestParseRefusesWhatIsNotAnAddress(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"10.0.0.0/33", "proxy.example", "fe80::1%eth0", "10.0.0.1:80"} {
		_, err := Parse("127.0.0.1," + bad)
		require.ErrorContains(t, err, "TRUSTED_PROXIES is malformed", bad)
		require.ErrorContains(t, err, bad)
	}
	got, err := Parse(" ")
	require.NoError(t, err)
	require.Empty(t, got)
	got, err = Parse("10.1.2.3/8")
	require.NoError(t, err)
	require.Equal(t, Trusted{netip.MustParsePrefix("10.0.0.0/8")}, got)
}
