package fetch

import (
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// The words a person reads for each way a plain fetch fails, from real
// failures of the fetcher: a name that does not resolve, a port nobody
// listens on, a certificate no trusted CA signed, and the Site's own 404.
func TestDescribeNamesTheProblemInWords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	site := asuraSite(t)

	noHost := NewPlainFetcher(PlainOptions{Dial: func(ctx context.Context, _, addr string) (net.Conn, error) {
		h, _, _ := net.SplitHostPort(addr)
		return nil, &net.DNSError{Err: "no such host", Name: h, IsNotFound: true}
	}})
	_, err := noHost.Fetch(ctx, site, orv, Conditional{})
	require.Error(t, err)
	require.Equal(t, "Could not reach asurascans.com (DNS lookup failed)", Describe(err), "%v", err)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	refused := NewPlainFetcher(PlainOptions{Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, closed)
	}})
	_, err = refused.Fetch(ctx, site, orv, Conditional{})
	require.Equal(t, "Could not reach asurascans.com (connection refused)", Describe(err), "%v", err)

	s := newSiteServer(t, func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, PlainOptions{})
	_, err = s.fetch.Fetch(ctx, site, orv, Conditional{})
	require.Equal(t, "asurascans.com answered HTTP 404 (Not Found)", Describe(err), "%v", err)

	untrusted := newSiteServer(t, func(w http.ResponseWriter, r *http.Request) {}, PlainOptions{})
	untrusted.fetch.opts.RootCAs = nil // the system's roots, which never signed the test CA
	untrusted.fetch = NewPlainFetcher(untrusted.fetch.opts)
	_, err = untrusted.fetch.Fetch(ctx, site, orv, Conditional{})
	require.Equal(t, "Could not reach asurascans.com (its TLS certificate is not trusted)", Describe(err), "%v", err)

	require.Empty(t, Describe(nil))
}
