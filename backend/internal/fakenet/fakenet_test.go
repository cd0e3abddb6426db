package fakenet_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fakenet"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
)

// The fake network is reached here as Lectern reaches it: through the
// destination gate with the network's resolver and dialer as its seams.

type seams interface {
	gate.Resolver
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

func do(t *testing.T, s seams, n *fakenet.Net, method, rawURL, body string) (*http.Response, string, error) {
	t.Helper()
	c := gate.New(gate.Options{Resolver: s, Dial: s.DialContext, RootCAs: n.RootCAs(), Timeout: 10 * time.Second})
	req, err := http.NewRequest(method, rawURL, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b), nil
}

func TestAnswersAreWhatTheTestSet(t *testing.T) {
	t.Parallel()
	n := fakenet.New(t)
	n.Set("https://cdn.test/a.png", http.StatusOK, "image/png", []byte("png"))
	n.Set("https://cdn.test/q?x=1", http.StatusOK, "text/plain", []byte("one"))
	n.HandleFunc("https://Site.test/page", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "page for "+r.Header.Get("User-Agent"))
	})
	n.HandleHost("hooks.test", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write(append([]byte(r.URL.Path+" got "), b...))
	}))

	resp, body, err := do(t, n, n, http.MethodGet, "https://cdn.test/a.png?cache=no", "")
	require.NoError(t, err)
	require.Equal(t, "png", body, "a URL set without a query answers any query")
	require.Equal(t, "image/png", resp.Header.Get("Content-Type"))
	_, body, err = do(t, n, n, http.MethodGet, "https://cdn.test/q?x=1", "")
	require.NoError(t, err)
	require.Equal(t, "one", body)
	resp, body, err = do(t, n, n, http.MethodGet, "https://cdn.test/q?x=2", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "a URL set with a query answers that query only")
	require.Contains(t, body, "fakenet: no answer set for https://cdn.test/q?x=2")
	_, body, err = do(t, n, n, http.MethodGet, "https://site.test/page", "")
	require.NoError(t, err)
	require.Equal(t, "page for Go-http-client/2.0", body, "names are case-insensitive")
	resp, body, err = do(t, n, n, http.MethodPost, "https://hooks.test/ann", "news")
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	require.Equal(t, "/ann got news", body, "a host's handler answers every path, and reads the body the record kept")

	n.Set("https://cdn.test/a.png", http.StatusGone, "text/plain", []byte("gone"))
	resp, _, err = do(t, n, n, http.MethodGet, "https://cdn.test/a.png", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusGone, resp.StatusCode, "setting a URL again replaces its answer")

	require.Equal(t, 2, n.Hits("https://cdn.test/a.png"))
	require.Equal(t, 1, n.Hits("https://cdn.test/q?x=1"))
	require.Equal(t, 1, n.Hits("https://hooks.test/ann"))
	reqs := n.Requests()
	require.Len(t, reqs, 6)
	require.Equal(t, http.MethodPost, reqs[4].Method)
	require.Equal(t, "news", string(reqs[4].Body))
	require.Equal(t, http.StatusAccepted, reqs[4].Status)
	require.Equal(t, http.StatusNotFound, reqs[2].Status)
	require.Equal(t, "https://cdn.test/q?x=2", reqs[2].URL())
	for _, d := range n.Dials() {
		require.Equal(t, "93.184.216.34:443", d)
	}
	require.Equal(t, []string{"cdn.test", "hooks.test", "site.test"}, n.Names())
}

func TestNothingUnsetGetsThrough(t *testing.T) {
	t.Parallel()
	n := fakenet.New(t)
	n.Set("https://cdn.test/a.png", http.StatusOK, "image/png", []byte("png"))
	ctx := context.Background()

	_, err := n.LookupNetIP(ctx, "ip", "example.com")
	var dnsErr *net.DNSError
	require.ErrorAs(t, err, &dnsErr)
	require.True(t, dnsErr.IsNotFound)
	addrs, err := n.LookupNetIP(ctx, "ip", "CDN.test.")
	require.NoError(t, err)
	require.Equal(t, []netip.Addr{fakenet.StandIn}, addrs)

	for _, addr := range []string{"1.1.1.1:443", fakenet.StandIn.String() + ":80", "127.0.0.1:443", "cdn.test:443"} {
		_, err := n.DialContext(ctx, "tcp", addr)
		require.ErrorContains(t, err, "only the fake network's stand-in addresses are reachable", addr)
	}
	conn, err := n.DialContext(ctx, "tcp", netip.AddrPortFrom(fakenet.StandIn6, 443).String())
	require.NoError(t, err)
	require.NoError(t, conn.Close())

	// A name a test resolves elsewhere is refused by the gate, never dialled.
	n.Resolve("cdn.test", netip.MustParseAddr("10.0.0.7"))
	before := len(n.Dials())
	_, _, err = do(t, n, n, http.MethodGet, "https://cdn.test/a.png", "")
	require.Equal(t, gate.ClassPrivate, gate.Class(err), "%v", err)
	require.Len(t, n.Dials(), before)
	n.Resolve("cdn.test")
	_, body, err := do(t, n, n, http.MethodGet, "https://cdn.test/a.png", "")
	require.NoError(t, err)
	require.Equal(t, "png", body)
	require.Zero(t, n.Hits("https://example.com/"))
}

func TestLiteralsAndHTTPVersions(t *testing.T) {
	t.Parallel()
	for _, h1 := range []bool{false, true} {
		n := fakenet.New(t, fakenet.Options{HTTP1Only: h1})
		n.HandleFunc("https://93.184.216.34/v", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.Proto) })
		n.HandleFunc("https://[2606:2800:220:1:248:1893:25c8:1946]/v", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.Proto) })
		tr := &http.Transport{ForceAttemptHTTP2: true, DialContext: n.DialContext, TLSClientConfig: &tls.Config{RootCAs: n.RootCAs()}}
		t.Cleanup(tr.CloseIdleConnections)
		for _, u := range []string{"https://93.184.216.34/v", "https://[2606:2800:220:1:248:1893:25c8:1946]/v"} {
			resp, err := (&http.Client{Transport: tr}).Get(u)
			require.NoError(t, err, "an IP literal gets the stand-ins' certificate")
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := "HTTP/2.0"
			if h1 {
				want = "HTTP/1.1"
			}
			require.Equal(t, want, string(b))
		}
	}
}

func TestAChildProcessReachesTheNetworkFromItsEnvironment(t *testing.T) {
	t.Parallel()
	n := fakenet.New(t)
	n.Set("https://cdn.test/a.png", http.StatusOK, "image/png", []byte("png"))
	env := map[string]string{}
	for _, kv := range n.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	c, err := fakenet.FromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	gc := gate.New(gate.Options{Resolver: c, Dial: c.DialContext, RootCAs: c.RootCAs(), Timeout: 10 * time.Second})
	_, err = gc.FetchImage(context.Background(), "https://cdn.test/a.png", "")
	require.Equal(t, gate.ClassNotImage, gate.Class(err), "not image bytes, but the request arrived: %v", err)
	require.Equal(t, 1, n.Hits("https://cdn.test/a.png"))
	_, err = c.LookupNetIP(context.Background(), "ip", "example.com")
	require.Error(t, err)
	_, err = c.DialContext(context.Background(), "tcp", "1.1.1.1:443")
	require.Error(t, err)

	_, err = fakenet.FromEnv(os.Getenv)
	require.ErrorContains(t, err, "LECTERN_FAKENET_ADDR is not set")
}

func TestChromiumFlagsMapTheNamesAndPinOneKey(t *testing.T) {
	t.Parallel()
	n := fakenet.New(t)
	n.Set("https://cdn.test/a.png", http.StatusOK, "image/png", nil)
	n.HandleHost("site.test", http.NotFoundHandler())
	rules := n.HostResolverRules()
	require.Contains(t, rules, "MAP cdn.test "+n.Addr()+",")
	require.Contains(t, rules, "MAP site.test "+n.Addr()+",")
	require.True(t, strings.Index(rules, "MAP * ~NOTFOUND") > strings.LastIndex(rules, n.Addr()), "the catch-all comes last")
	require.Equal(t, n.SPKIHash(), n.ChromiumFlags()["ignore-certificate-errors-spki-list"])
	require.Len(t, n.SPKIHash(), 44)

	// Every name's leaf carries the one key the hash pins.
	var keys [][]byte
	for _, name := range []string{"cdn.test", "site.test", ""} {
		conn, err := tls.Dial("tcp", n.Addr(), &tls.Config{ServerName: name, InsecureSkipVerify: true}) //nolint:gosec // only the key is read
		require.NoError(t, err)
		keys = append(keys, conn.ConnectionState().PeerCertificates[0].RawSubjectPublicKeyInfo)
		require.NoError(t, conn.Close())
	}
	require.Equal(t, keys[0], keys[1])
	require.Equal(t, keys[0], keys[2])
}
