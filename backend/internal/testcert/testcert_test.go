package testcert_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/testcert"
)

// startTLS serves "ok" over real TLS on loopback with cfg.
func startTLS(t *testing.T, cfg *tls.Config) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	srv.TLS = cfg
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// get fetches rawURL but dials the server's loopback address whatever the
// URL's host, so a name like cdn.test is verified by TLS without any DNS.
func get(t *testing.T, srv *httptest.Server, pool *x509.CertPool, rawURL string) (string, error) {
	t.Helper()
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", srv.Listener.Addr().String())
		},
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(rawURL)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestLeafIsTrustedForItsNamesAndIPs(t *testing.T) {
	t.Parallel()
	cfg, pool := testcert.New(t, "cdn.test", "*.img.test", "93.184.216.34", "2001:4860::1")
	srv := startTLS(t, cfg)

	for _, u := range []string{
		"https://cdn.test/",
		"https://a.img.test/",
		"https://93.184.216.34/",
		"https://[2001:4860::1]/",
	} {
		body, err := get(t, srv, pool, u)
		require.NoError(t, err, u)
		require.Equal(t, "ok", body, u)
	}
}

func TestLeafIsRefusedForOtherNamesAndOtherAuthorities(t *testing.T) {
	t.Parallel()
	cfg, pool := testcert.New(t, "cdn.test")
	srv := startTLS(t, cfg)

	_, err := get(t, srv, pool, "https://evil.test/")
	var hostErr x509.HostnameError
	require.ErrorAs(t, err, &hostErr)

	_, otherPool := testcert.New(t, "cdn.test")
	_, err = get(t, srv, otherPool, "https://cdn.test/")
	var authErr x509.UnknownAuthorityError
	require.ErrorAs(t, err, &authErr)

	_, err = get(t, srv, nil, "https://cdn.test/")
	require.Error(t, err, "the system roots must not trust a throwaway authority")
}

func TestPEMAndSPKIDescribeTheCertificates(t *testing.T) {
	t.Parallel()
	ca, err := testcert.NewAuthority()
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca.CertPEM()))

	leaf, err := ca.Leaf("cdn.test")
	require.NoError(t, err)
	_, err = leaf.Leaf.Verify(x509.VerifyOptions{DNSName: "cdn.test", Roots: pool})
	require.NoError(t, err, "a pool built from CertPEM verifies the leaf")

	h1, err := testcert.SPKIHash(leaf)
	require.NoError(t, err)
	other, err := ca.Leaf("cdn.test")
	require.NoError(t, err)
	h2, err := testcert.SPKIHash(other)
	require.NoError(t, err)
	require.Len(t, h1, 44)
	require.NotEqual(t, h1, h2, "each leaf has its own key")

	_, err = ca.Leaf()
	require.Error(t, err)
}
