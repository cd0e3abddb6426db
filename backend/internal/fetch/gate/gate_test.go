package gate_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/testcert"
)

// TestHostileDestinationsAreRefusedWithoutAConnection is the battery of
// issue 5: every destination here is refused before the dial seam is ever
// called, and nothing reaches the store.
func TestHostileDestinationsAreRefusedWithoutAConnection(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		url   string
		names map[string][]netip.Addr
		class string
	}{
		{"loopback", "https://127.0.0.1/c.jpg", nil, gate.ClassLoopback},
		{"short loopback 127.1", "https://127.1/c.jpg", nil, gate.ClassLoopback},
		{"decimal loopback", "https://2130706433/c.jpg", nil, gate.ClassLoopback},
		{"hex loopback", "https://0x7f000001/c.jpg", nil, gate.ClassLoopback},
		{"octal loopback", "https://0177.0.0.1/c.jpg", nil, gate.ClassLoopback},
		{"loopback trailing dot", "https://127.0.0.1./c.jpg", nil, gate.ClassLoopback},
		{"ipv6 loopback", "https://[::1]/c.jpg", nil, gate.ClassLoopback},
		{"mapped loopback dotted", "https://[::ffff:127.0.0.1]/c.jpg", nil, gate.ClassLoopback},
		{"mapped loopback hex", "https://[::ffff:7f00:1]/c.jpg", nil, gate.ClassLoopback},
		{"private 10", "https://10.0.0.1/c.jpg", nil, gate.ClassPrivate},
		{"private 172.16", "https://172.16.0.1/c.jpg", nil, gate.ClassPrivate},
		{"private 192.168", "https://192.168.1.1/c.jpg", nil, gate.ClassPrivate},
		{"cloud metadata", "https://169.254.169.254/latest/meta-data/", nil, gate.ClassLinkLocal},
		{"cgnat", "https://100.64.0.1/c.jpg", nil, gate.ClassCGNAT},
		{"unspecified v4", "https://0.0.0.0/c.jpg", nil, gate.ClassUnspecified},
		{"unspecified v6", "https://[::]/c.jpg", nil, gate.ClassUnspecified},
		{"unique local", "https://[fc00::1]/c.jpg", nil, gate.ClassUniqueLocal},
		{"link local v6", "https://[fe80::1]/c.jpg", nil, gate.ClassLinkLocal},
		{"link local v6 with zone", "https://[fe80::1%25eth0]/c.jpg", nil, gate.ClassLinkLocal},
		{"multicast", "https://224.0.0.1/c.jpg", nil, gate.ClassMulticast},
		{"broadcast", "https://255.255.255.255/c.jpg", nil, gate.ClassReserved},
		{"benchmarking", "https://198.18.0.1/c.jpg", nil, gate.ClassReserved},
		{"ietf protocol assignments", "https://192.0.0.1/c.jpg", nil, gate.ClassReserved},
		{"nat64 of a private address", "https://[64:ff9b::a00:1]/c.jpg", nil, gate.ClassPrivate},
		{"6to4 of loopback", "https://[2002:7f00:1::1]/c.jpg", nil, gate.ClassLoopback},
		{"name resolving to private", "https://internal.test/c.jpg",
			map[string][]netip.Addr{"internal.test": {netip.MustParseAddr("10.0.0.1")}}, gate.ClassPrivate},
		{"name resolving to loopback", "https://localhost.test/c.jpg",
			map[string][]netip.Addr{"localhost.test": {netip.MustParseAddr("127.0.0.1")}}, gate.ClassLoopback},
		{"name resolving to public and private", "https://mixed.test/c.jpg",
			map[string][]netip.Addr{"mixed.test": {publicV4, netip.MustParseAddr("192.168.1.1")}}, gate.ClassPrivate},
		{"name resolving to a mapped private address", "https://mapped.test/c.jpg",
			map[string][]netip.Addr{"mapped.test": {netip.MustParseAddr("::ffff:10.0.0.1")}}, gate.ClassPrivate},
		{"name resolving to link-local v6", "https://ll.test/c.jpg",
			map[string][]netip.Addr{"ll.test": {publicV6, netip.MustParseAddr("fe80::1")}}, gate.ClassLinkLocal},
		{"public host on another port", "https://cdn.test:8443/c.jpg", nil, gate.ClassPort},
		{"public literal on port 80", "https://93.184.216.34:80/c.jpg", nil, gate.ClassPort},
		{"non-canonical public literal", "https://0x5db8d822/c.jpg", nil, gate.ClassMalformed},
		{"five-part numeric host", "https://1.2.3.4.5/c.jpg", nil, gate.ClassMalformed},
		{"out-of-range numeric host", "https://256.0.0.1/c.jpg", nil, gate.ClassMalformed},
		{"http to a public host", "http://cdn.test/cover.jpg", nil, gate.ClassScheme},
		{"ftp", "ftp://cdn.test/cover.jpg", nil, gate.ClassScheme},
		{"file", "file:///etc/passwd", nil, gate.ClassScheme},
		{"data", "data:image/png;base64,iVBORw0KGgo=", nil, gate.ClassScheme},
		{"scheme-relative", "//cdn.test/cover.jpg", nil, gate.ClassScheme},
		{"userinfo", "https://user:pass@cdn.test/cover.jpg", nil, gate.ClassUserinfo},
		{"user only", "https://user@cdn.test/cover.jpg", nil, gate.ClassUserinfo},
		{"no host", "https:///cover.jpg", nil, gate.ClassMalformed},
		{"opaque", "https:cdn.test/cover.jpg", nil, gate.ClassMalformed},
		{"unparseable", "https://cdn.test/%zz", nil, gate.ClassMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, fixtureOpts{})
			for name, addrs := range tc.names {
				f.net.Resolve(name, addrs...)
			}
			c := f.client(gate.Options{})
			store := &blob.FS{Dir: t.TempDir()}

			addr, err := acquire(context.Background(), c, store, tc.url)
			require.ErrorIs(t, err, gate.ErrRefused)
			require.Equal(t, tc.class, gate.Class(err), "%v", err)
			require.Empty(t, addr)
			require.Empty(t, f.net.Dials(), "no connection may be attempted")
			require.Zero(t, f.requests())
			require.Empty(t, storedFiles(t, store.Dir))
		})
	}
}

// TestHostileAnswersAreRefusedAndNothingStored covers destinations that are
// public but answer with something the gate must not take.
func TestHostileAnswersAreRefusedAndNothingStored(t *testing.T) {
	t.Parallel()
	const public = "93.184.216.34:443"
	cases := []struct {
		name      string
		url       string
		opts      gate.Options
		class     string
		wantDials []string
	}{
		{"public host redirecting to a private name", "https://cdn.test/redirect?to=https://internal.test/c.jpg",
			gate.Options{}, gate.ClassPrivate, []string{public}},
		{"public host redirecting to a private literal", "https://cdn.test/redirect?to=https://10.0.0.1/c.jpg",
			gate.Options{}, gate.ClassPrivate, []string{public}},
		{"public host redirecting to metadata", "https://cdn.test/redirect?to=https://169.254.169.254/",
			gate.Options{}, gate.ClassLinkLocal, []string{public}},
		{"redirect to http", "https://cdn.test/redirect?to=http://cdn.test/cover.jpg",
			gate.Options{}, gate.ClassScheme, []string{public}},
		{"redirect to file", "https://cdn.test/redirect?to=file:///etc/passwd",
			gate.Options{}, gate.ClassScheme, []string{public}},
		{"redirect with userinfo", "https://cdn.test/redirect?to=https://u:p@cdn.test/cover.jpg",
			gate.Options{}, gate.ClassUserinfo, []string{public}},
		{"six redirects", "https://cdn.test/chain/6",
			gate.Options{}, gate.ClassRedirects, []string{public, public}},
		{"endless body", "https://cdn.test/endless",
			gate.Options{}, gate.ClassTooLarge, []string{public}},
		{"one byte over the cap, streamed", "https://cdn.test/size?n=4097",
			gate.Options{MaxBytes: 4096}, gate.ClassTooLarge, []string{public}},
		{"declared length over the cap", "https://cdn.test/declared-huge",
			gate.Options{}, gate.ClassTooLarge, []string{public}},
		{"non-image type", "https://cdn.test/page.html",
			gate.Options{}, gate.ClassNotImage, []string{public}},
		{"image bytes under a non-image type", "https://cdn.test/jpeg-as-html",
			gate.Options{}, gate.ClassNotImage, []string{public}},
		{"image bytes as octet-stream", "https://cdn.test/jpeg-as-octets",
			gate.Options{}, gate.ClassNotImage, []string{public}},
		{"svg", "https://cdn.test/svg",
			gate.Options{}, gate.ClassNotImage, []string{public}},
		{"image type whose bytes are HTML", "https://cdn.test/html-as-png.png",
			gate.Options{}, gate.ClassNotImage, []string{public}},
		{"image type with an empty body", "https://cdn.test/empty-png",
			gate.Options{}, gate.ClassNotImage, []string{public}},
		{"body dripping slower than the deadline", "https://cdn.test/drip",
			gate.Options{Timeout: 500 * time.Millisecond}, gate.ClassTimeout, []string{public}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, fixtureOpts{})
			f.net.Resolve("internal.test", netip.MustParseAddr("192.168.0.10"))
			c := f.client(tc.opts)
			store := &blob.FS{Dir: t.TempDir()}

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			addr, err := acquire(ctx, c, store, tc.url)
			require.ErrorIs(t, err, gate.ErrRefused)
			require.Equal(t, tc.class, gate.Class(err), "%v", err)
			require.Empty(t, addr)
			require.Equal(t, tc.wantDials, f.net.Dials())
			require.Empty(t, storedFiles(t, store.Dir))
		})
	}
}

func TestPublicImagesArrive(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		url      string
		wantType string
		want     []byte
		final    string
	}{
		{"jpeg by name", "https://cdn.test/cover.jpg", imagetype.TypeJPEG, jpegCover, ""},
		{"png", "https://cdn.test/cover.png", imagetype.TypePNG, pngCover, ""},
		{"gif", "https://cdn.test/cover.gif", imagetype.TypeGIF, gifCover, ""},
		{"webp", "https://cdn.test/cover.webp", imagetype.TypeWebP, webpCover, ""},
		{"avif", "https://cdn.test/cover.avif", imagetype.TypeAVIF, avifCover, ""},
		{"image/jpg mislabel", "https://cdn.test/jpg-alias.jpg", imagetype.TypeJPEG, jpegCover, ""},
		// asura: the header wins over the .webp extension ...
		{"jpeg bytes behind a .webp name", "https://cdn.test/asura-jpeg-bytes.webp", imagetype.TypeJPEG, jpegCover, ""},
		// ... and when header and bytes name two image types, the bytes win.
		{"webp bytes labelled image/jpeg", "https://cdn.test/asura-webp-bytes.webp", imagetype.TypeWebP, webpCover, ""},
		{"public IPv4 literal", "https://93.184.216.34/cover.png", imagetype.TypePNG, pngCover, ""},
		{"public IPv6 literal", "https://[2606:2800:220:1:248:1893:25c8:1946]/cover.gif", imagetype.TypeGIF, gifCover, ""},
		{"name with a public IPv6 address", "https://v6.test/cover.jpg", imagetype.TypeJPEG, jpegCover, ""},
		{"five redirects", "https://cdn.test/chain/5", imagetype.TypeJPEG, jpegCover, "https://hop.test/chain/0"},
		{"raw space in the path", "https://cdn.test/spaced/Some Title.jpg", imagetype.TypeJPEG, jpegCover, "https://cdn.test/spaced/Some%20Title.jpg"},
		{"exactly the cap, streamed", "https://cdn.test/size?n=4096", imagetype.TypeJPEG, jpegOfSize(4096), ""},
	}
	for _, h2 := range []bool{false, true} {
		for _, tc := range cases {
			name := tc.name + map[bool]string{false: " http1", true: " h2"}[h2]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, fixtureOpts{http2: h2})
				c := f.client(gate.Options{MaxBytes: 4096, UserAgent: "lectern-test/1"})
				store := &blob.FS{Dir: t.TempDir()}

				img, err := c.FetchImage(context.Background(), tc.url, "https://site.test/series/x")
				require.NoError(t, err)
				require.Equal(t, tc.wantType, img.ContentType)
				require.True(t, bytes.Equal(tc.want, img.Bytes), "bytes differ")
				final := tc.final
				if final == "" {
					final = tc.url
				}
				require.Equal(t, final, img.URL)
				require.Equal(t, "https://site.test/series/x", f.lastReferer())
				require.Equal(t, "lectern-test/1", f.lastAgent())
				for _, d := range f.net.Dials() {
					ap := netip.MustParseAddrPort(d)
					require.Contains(t, []netip.Addr{publicV4, publicV6}, ap.Addr(), "only public addresses are dialled")
				}

				addr, err := store.Put(context.Background(), img.Bytes, img.ContentType)
				require.NoError(t, err)
				require.Len(t, storedFiles(t, store.Dir), 1)
				require.True(t, blob.ValidAddress(addr))
			})
		}
	}
}

func TestDefaultMaxBytesIsTwoMiB(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{})
	c := f.client(gate.Options{})
	require.EqualValues(t, 2<<20, c.MaxBytes())

	img, err := c.FetchImage(context.Background(), "https://cdn.test/size?n=2097152", "")
	require.NoError(t, err)
	require.Len(t, img.Bytes, 2<<20)

	_, err = c.FetchImage(context.Background(), "https://cdn.test/size?n=2097153", "")
	require.Equal(t, gate.ClassTooLarge, gate.Class(err), "%v", err)
}

// TestEveryConnectionIsCheckedAgain: a name that was public for one
// connection and private for the next (DNS rebinding) is refused on the
// second, which is never dialled.
func TestEveryConnectionIsCheckedAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{closeConns: true})
	c := f.client(gate.Options{})

	_, err := c.FetchImage(context.Background(), "https://rebind.test/cover.jpg", "")
	require.NoError(t, err)
	require.Len(t, f.net.Dials(), 1)

	f.net.Resolve("rebind.test", netip.MustParseAddr("127.0.0.1"))
	_, err = c.FetchImage(context.Background(), "https://rebind.test/cover.jpg", "")
	require.Equal(t, gate.ClassLoopback, gate.Class(err), "%v", err)
	require.Len(t, f.net.Dials(), 1, "the rebound address is never dialled")
	require.EqualValues(t, 1, f.requests())
}

func TestFailuresThatAreNotRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{})
	c := f.client(gate.Options{})

	_, err := c.FetchImage(context.Background(), "https://cdn.test/missing.jpg", "")
	require.ErrorIs(t, err, gate.ErrStatus)
	require.NotErrorIs(t, err, gate.ErrRefused)
	require.Contains(t, err.Error(), "404")
	var se *gate.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, http.StatusNotFound, se.Status)

	_, err = c.FetchImage(context.Background(), "https://nowhere.test/c.jpg", "")
	var dnsErr *net.DNSError
	require.ErrorAs(t, err, &dnsErr)
	require.Empty(t, gate.Class(err))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.FetchImage(ctx, "https://cdn.test/cover.jpg", "")
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, gate.Class(err))

	// Cancelled mid-body (a shutdown) is not a timeout either.
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err = c.FetchImage(ctx, "https://cdn.test/drip", "")
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, gate.Class(err), "%v", err)
}

func TestTruncatedBodiesAreFailures(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/truncated-length", "/truncated-chunked"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, fixtureOpts{})
			c := f.client(gate.Options{})
			store := &blob.FS{Dir: t.TempDir()}
			_, err := acquire(context.Background(), c, store, "https://cdn.test"+path)
			require.ErrorIs(t, err, io.ErrUnexpectedEOF)
			require.Empty(t, gate.Class(err), "a cut connection is a failure, not a refusal")
			require.Empty(t, storedFiles(t, store.Dir))
		})
	}
}

func TestUntrustedCertificateIsAFailure(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{})
	_, otherPool := testcert.New(t, "cdn.test")
	c := gate.New(gate.Options{Resolver: f.net, Dial: f.net.DialContext, RootCAs: otherPool})
	_, err := c.FetchImage(context.Background(), "https://cdn.test/cover.jpg", "")
	require.Error(t, err)
	require.Zero(t, f.requests())
}

func TestDoGatesWebhooks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{})
	f.net.Resolve("internal.test", netip.MustParseAddr("10.1.2.3"))
	c := f.client(gate.Options{MaxBytes: 4096, UserAgent: "lectern-test/1"})

	req, err := http.NewRequest(http.MethodPost, "https://hooks.test/hook", strings.NewReader("chapter 12"))
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, "got chapter 12", string(body))
	require.Equal(t, "lectern-test/1", f.lastAgent())
	require.Empty(t, req.Header.Get("User-Agent"), "the caller's request is not modified")

	for _, tc := range []struct{ url, class string }{
		{"https://internal.test/hook", gate.ClassPrivate},
		{"http://hooks.test/hook", gate.ClassScheme},
		{"https://[::1]/hook", gate.ClassLoopback},
		{"https://hooks.test/redirect?to=https://internal.test/", gate.ClassPrivate},
	} {
		req, err := http.NewRequest(http.MethodGet, tc.url, nil)
		require.NoError(t, err)
		_, err = c.Do(req)
		require.Equal(t, tc.class, gate.Class(err), "%s: %v", tc.url, err)
	}

	req, err = http.NewRequest(http.MethodGet, "https://hooks.test/endless", nil)
	require.NoError(t, err)
	resp, err = c.Do(req)
	require.NoError(t, err)
	n, err := io.Copy(io.Discard, resp.Body)
	require.Equal(t, gate.ClassTooLarge, gate.Class(err), "%v", err)
	require.EqualValues(t, 4096, n, "exactly the cap passes through")
	require.NoError(t, resp.Body.Close())

	req, err = http.NewRequest(http.MethodGet, "https://hooks.test/declared-huge", nil)
	require.NoError(t, err)
	_, err = c.Do(req)
	require.Equal(t, gate.ClassTooLarge, gate.Class(err), "%v", err)

	for _, d := range f.net.Dials() {
		require.Equal(t, "93.184.216.34:443", d)
	}
}

func TestDialContextIsGuarded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{})
	f.net.Resolve("internal.test", netip.MustParseAddr("172.20.0.5"))
	c := f.client(gate.Options{})
	ctx := context.Background()

	for _, tc := range []struct{ network, addr, class string }{
		{"tcp", "internal.test:443", gate.ClassPrivate},
		{"tcp", "127.0.0.1:443", gate.ClassLoopback},
		{"tcp", "[::1]:443", gate.ClassLoopback},
		{"tcp", "2130706433:443", gate.ClassLoopback},
		{"tcp", "cdn.test:22", gate.ClassPort},
		{"udp", "cdn.test:443", gate.ClassMalformed},
		{"tcp", "cdn.test", gate.ClassMalformed},
	} {
		_, err := c.DialContext(ctx, tc.network, tc.addr)
		require.ErrorIs(t, err, gate.ErrRefused, tc.addr)
		require.Equal(t, tc.class, gate.Class(err), "%s: %v", tc.addr, err)
	}
	require.Empty(t, f.net.Dials())

	// A Resolver that answers the zero Addr or an unspecified address (the
	// standard one never does) is refused as malformed, alone or next to a
	// public address, and nothing is dialled.
	f.net.Resolve("zero.test", netip.Addr{})
	f.net.Resolve("any4.test", netip.IPv4Unspecified())
	f.net.Resolve("any6.test", netip.IPv6Unspecified())
	f.net.Resolve("mixed.test", publicV4, netip.Addr{})
	for _, addr := range []string{"zero.test:443", "any4.test:443", "any6.test:443", "mixed.test:443"} {
		_, err := c.DialContext(ctx, "tcp", addr)
		require.ErrorIs(t, err, gate.ErrRefused, addr)
		require.Equal(t, gate.ClassMalformed, gate.Class(err), "%s: %v", addr, err)
	}
	_, err := c.FetchImage(ctx, "https://zero.test/cover.png", "")
	require.Equal(t, gate.ClassMalformed, gate.Class(err), "%v", err)
	require.Empty(t, f.net.Dials(), "no answer naming no destination was dialled")

	conn, err := c.DialContext(ctx, "tcp", "cdn.test:443")
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	require.Equal(t, []string{"93.184.216.34:443"}, f.net.Dials())
}

// TestDefaultDialerAndAllowAddrs runs the production dialer (net.Dialer with
// the ssrf Control hook) against a real loopback server: refused by default,
// reachable only at the exact address listed in AllowAddrs.
func TestDefaultDialerAndAllowAddrs(t *testing.T) {
	t.Parallel()
	cfg, pool := testcert.New(t, "127.0.0.1")
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pngCover)
	}))
	srv.TLS = cfg
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	rawURL := "https://" + ap.String() + "/cover.png"

	closed := gate.New(gate.Options{RootCAs: pool})
	_, err := closed.FetchImage(context.Background(), rawURL, "")
	require.Equal(t, gate.ClassLoopback, gate.Class(err), "%v", err)

	otherPort := netip.AddrPortFrom(ap.Addr(), ap.Port()+1)
	elsewhere := gate.New(gate.Options{RootCAs: pool, AllowAddrs: []netip.AddrPort{otherPort}})
	_, err = elsewhere.FetchImage(context.Background(), rawURL, "")
	require.Equal(t, gate.ClassLoopback, gate.Class(err), "%v", err)
	require.Zero(t, hits.Load())

	open := gate.New(gate.Options{RootCAs: pool, AllowAddrs: []netip.AddrPort{ap}})
	img, err := open.FetchImage(context.Background(), rawURL, "")
	require.NoError(t, err)
	require.Equal(t, pngCover, img.Bytes)
	require.EqualValues(t, 1, hits.Load())
}

func TestRefusedErrorShape(t *testing.T) {
	t.Parallel()
	c := gate.New(gate.Options{})
	_, err := c.FetchImage(context.Background(), "https://u:secret@cdn.test/x.jpg", "")
	var refused *gate.RefusedError
	require.True(t, errors.As(err, &refused))
	require.Equal(t, gate.ClassUserinfo, refused.Class)
	require.NotContains(t, err.Error(), "secret", "credentials never reach logs")
	require.Empty(t, gate.Class(errors.New("plain")))
	require.Empty(t, gate.Class(nil))
}
