package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/testcert"
)

// The fixture network: one loopback HTTPS server answers for the real Site
// hostnames and image CDNs (its certificate names them, signed by a
// throwaway CA). The resolver gives every known name a public address
// (93.184.216.34), so the destination gate judges it as it would in
// production, and the dial seam then connects that checked address to the
// loopback server. No test touches the live network: an unknown name does
// not resolve and any other address is refused.

const fixtureIP = "93.184.216.34"

var fixtureNames = []string{
	"asurascans.com", "cdn.asurascans.com", "lightnovelworld.com", "www.lightnovelworld.com", "static.lightnovelworld.com",
	"comix.to", "static.comix.to", "demonicscans.org", "readermc.org", "novelfull.com", "kagane.to",
}

type route struct {
	status int
	ctype  string
	body   []byte
}

type fixtureNet struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	routes   map[string]route // "host/path"
	handlers map[string]http.HandlerFunc
	hits     map[string]int
}

func newFixtureNet(t *testing.T) (*fixtureNet, *Seams) {
	t.Helper()
	n := &fixtureNet{t: t, routes: map[string]route{}, handlers: map[string]http.HandlerFunc{}, hits: map[string]int{}}
	tlsCfg, pool := testcert.New(t, fixtureNames...)
	n.srv = httptest.NewUnstartedServer(http.HandlerFunc(n.serve))
	n.srv.TLS = tlsCfg
	n.srv.StartTLS()
	t.Cleanup(n.srv.Close)
	known := map[string]bool{}
	for _, h := range fixtureNames {
		known[h] = true
	}
	seams := &Seams{
		Resolver: resolverFunc(func(_ context.Context, _, host string) ([]netip.Addr, error) {
			if !known[strings.ToLower(host)] {
				return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
			}
			return []netip.Addr{netip.MustParseAddr(fixtureIP)}, nil
		}),
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr != fixtureIP+":443" {
				return nil, fmt.Errorf("fixture network: no route to %s", addr)
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", n.srv.Listener.Addr().String())
		},
		RootCAs:           pool,
		RiverPollInterval: 50 * time.Millisecond,
	}
	return n, seams
}

type resolverFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

func (f resolverFunc) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return f(ctx, network, host)
}

func (n *fixtureNet) serve(w http.ResponseWriter, r *http.Request) {
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	key := host + r.URL.EscapedPath()
	n.mu.Lock()
	n.hits[key]++
	rt, ok := n.routes[key]
	h := n.handlers[key]
	n.mu.Unlock()
	if h != nil {
		h(w, r)
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	if rt.ctype != "" {
		w.Header().Set("Content-Type", rt.ctype)
	}
	w.WriteHeader(rt.status)
	_, _ = w.Write(rt.body)
}

// set answers GET https://<rawURL> with body.
func (n *fixtureNet) set(rawURL string, status int, ctype string, body []byte) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.routes[routeKey(n.t, rawURL)] = route{status: status, ctype: ctype, body: body}
}

// handle answers GET https://<rawURL> with h.
func (n *fixtureNet) handle(rawURL string, h http.HandlerFunc) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.handlers[routeKey(n.t, rawURL)] = h
}

func (n *fixtureNet) count(rawURL string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hits[routeKey(n.t, rawURL)]
}

func routeKey(t *testing.T, rawURL string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	require.NoError(t, err)
	return strings.ToLower(req.URL.Hostname()) + req.URL.EscapedPath()
}

func readSiteFixture(t *testing.T, site, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "sites", site, file))
	require.NoError(t, err)
	return b
}

// pngBytes is a small real PNG, different for each seed.
func pngBytes(t *testing.T, seed uint8) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 20, 28))
	for x := range 20 {
		for y := range 28 {
			img.Set(x, y, color.RGBA{R: seed, G: uint8(x * 12), B: uint8(y * 9), A: 255})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// jobsBundle is a composed server with its background jobs running on the
// fixture network.
type jobsBundle struct {
	*testBundle
	net   *fixtureNet
	seams *Seams
	url   string // database URL, for a second server on the same database
	cfg   config.Config
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func setupJobs(t *testing.T) *jobsBundle {
	t.Helper()
	n, seams := newFixtureNet(t)
	b := &jobsBundle{net: n, seams: seams, url: newDatabaseURL(t), cfg: jobsConfig(t.TempDir())}
	b.testBundle = b.start(t, seams)
	return b
}

func newDatabaseURL(t *testing.T) string { return pgtest.NewURL(t) }

// jobsConfig is a replica with four workers and an hour's poll interval.
func jobsConfig(dataDir string) config.Config {
	return config.Config{PublicBaseURL: testBase, DataDir: dataDir, CoverDir: filepath.Join(dataDir, "covers"),
		Workers: 4, PollInterval: time.Hour, UserAgent: "LecternTest/1"}
}

// start builds and starts a server on the bundle's database and volume.
func (b *jobsBundle) start(t *testing.T, seams *Seams) *testBundle {
	t.Helper()
	st, err := store.Open(context.Background(), b.url)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	srv, err := New(context.Background(), Deps{Config: b.cfg, Store: st, Version: "test", Logger: quiet(), Seams: seams})
	require.NoError(t, err)
	require.NoError(t, srv.StartJobs(context.Background()))
	t.Cleanup(func() { _ = srv.StopJobs(context.Background()) })
	return &testBundle{t: t, store: st, server: srv, h: srv.Handler()}
}

// eventually waits with a generous deadline: a slow machine never fails the
// test, a broken build never hangs it.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 30*time.Second, 25*time.Millisecond, what)
}

func (b *testBundle) bookmark(token, key string) wireBookmark {
	b.t.Helper()
	r := b.do("GET", "/api/bookmarks/"+key, token, nil)
	require.Equal(b.t, http.StatusOK, r.Code, "%s", r.Body)
	var w wireBookmark
	r.json(b.t, &w)
	return w
}

// jobsDone reports whether no job of kind is queued or running.
func (b *testBundle) jobsDone(kind string) bool {
	b.t.Helper()
	var n int
	require.NoError(b.t, b.store.Pool.QueryRow(context.Background(), `
		SELECT count(*) FROM river_job WHERE kind = $1 AND state IN ('available', 'pending', 'running', 'retryable')`, kind).Scan(&n))
	return n == 0
}

func (b *testBundle) jobCount(kind, state string) int {
	b.t.Helper()
	var n int
	require.NoError(b.t, b.store.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM river_job WHERE kind = $1 AND state = $2`, kind, state).Scan(&n))
	return n
}

func mustResolve(t *testing.T, raw string) latest.Ref {
	t.Helper()
	ref, err := latest.Default().Resolve(raw)
	require.NoError(t, err)
	return ref
}

// storedFiles counts the regular files under dir (none when it is absent).
func storedFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.SkipAll
		}
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			n++
		}
		return nil
	})
	require.NoError(t, err)
	return n
}
