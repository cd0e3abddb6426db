package browser

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func startTestProxy(t *testing.T, n *testNet) (*proxy, *syncBuffer) {
	t.Helper()
	log := &syncBuffer{}
	p, err := startProxy("127.0.0.1:0", n.Dial, 5*time.Second, slogTo(log))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.close() })
	return p, log
}

func clientVia(p *proxy, user *url.Userinfo) *http.Client {
	pu := &url.URL{Scheme: "http", Host: p.addr(), User: user}
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			Proxy:           http.ProxyURL(pu),
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		},
	}
}

func TestProxyListensOnLoopbackByDefault(t *testing.T) {
	t.Parallel()
	p, _ := startTestProxy(t, newTestNet())
	host, _, err := net.SplitHostPort(p.addr())
	require.NoError(t, err)
	require.True(t, net.ParseIP(host).IsLoopback(), host)
}

func TestProxyRequiresItsSecret(t *testing.T) {
	t.Parallel()
	n := newTestNet()
	s := newSite(t, n, "secret")
	p, _ := startTestProxy(t, n)

	for name, user := range map[string]*url.Userinfo{
		"none":           nil,
		"wrong password": url.UserPassword(p.user, "not-the-secret"),
		"wrong user":     url.UserPassword("admin", p.pass),
	} {
		t.Run(name, func(t *testing.T) {
			// Plain HTTP: the proxy answers 407 itself.
			resp, err := clientVia(p, user).Get("http://" + s.host + ":" + s.port() + "/plain")
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusProxyAuthRequired, resp.StatusCode)
			require.Contains(t, resp.Header.Get("Proxy-Authenticate"), `realm="`+proxyRealm+`"`)
			// CONNECT: refused before any tunnel.
			_, err = clientVia(p, user).Get(s.url("/plain"))
			require.Error(t, err)
		})
	}
	require.Empty(t, s.requests(), "nothing reached the Site without the secret")
	require.Empty(t, n.refusedAddrs(), "nothing was even dialed")
}

func TestProxyTunnelsThroughTheGate(t *testing.T) {
	t.Parallel()
	n := newTestNet()
	s := newSite(t, n, "tunnel")
	priv := newPrivateServer(t)
	p, log := startTestProxy(t, n)
	c := clientVia(p, url.UserPassword(p.user, p.pass))

	resp, err := c.Get(s.url("/plain"))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), realMarker)

	_, err = c.Get("https://" + priv.addr() + "/pixel.png")
	require.Error(t, err)
	require.Empty(t, priv.requests())
	require.Contains(t, n.refusedAddrs(), priv.addr())
	require.Contains(t, log.String(), "tunnel refused")
}

func TestProxyForwardsPlainHTTP(t *testing.T) {
	t.Parallel()
	n := newTestNet()
	var mu sync.Mutex
	var seen http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.Header.Clone()
		mu.Unlock()
		_, _ = io.WriteString(w, "plain ok")
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	n.allow("plain.test")
	p, _ := startTestProxy(t, n)
	c := clientVia(p, url.UserPassword(p.user, p.pass))

	resp, err := c.Get("http://plain.test:" + port + "/x")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, "plain ok", string(body))
	mu.Lock()
	require.Empty(t, seen.Get("Proxy-Authorization"), "the proxy secret is not forwarded")
	mu.Unlock()

	// A private address over plain HTTP is refused too.
	resp, err = c.Get("http://" + srv.Listener.Addr().String() + "/x")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadGateway, resp.StatusCode)
	require.Contains(t, n.refusedAddrs(), srv.Listener.Addr().String())
}
