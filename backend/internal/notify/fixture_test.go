package notify_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/notify"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/testcert"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const base = "https://lectern.example.net"

// publicIP is the address the test names resolve to; the dial seam sends
// it to the loopback stub. Nothing leaves the machine.
var publicIP = netip.MustParseAddr("93.184.216.34")

// received is one request the stub answered.
type received struct {
	Path   string
	Header http.Header
	Body   []byte
	Status int
}

// stub is a loopback HTTPS receiver for ntfy.test and hooks.test, reached
// through the destination gate's injected resolver and dialer.
type stub struct {
	srv  *httptest.Server
	pool *x509.CertPool

	mu    sync.Mutex
	got   []received
	fail  map[string]int // path → how many more requests answer fail status
	code  map[string]int // path → the failing status
	names map[string][]netip.Addr
	dials []string
}

func newStub(t *testing.T) *stub {
	t.Helper()
	s := &stub{fail: map[string]int{}, code: map[string]int{}, names: map[string][]netip.Addr{
		"ntfy.test":  {publicIP},
		"hooks.test": {publicIP},
	}}
	cfg, pool := testcert.New(t, "ntfy.test", "hooks.test", "internal.test")
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		status := http.StatusOK
		if s.fail[r.URL.Path] > 0 {
			s.fail[r.URL.Path]--
			status = s.code[r.URL.Path]
		}
		s.got = append(s.got, received{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Status: status})
		s.mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"id":"ok"}`))
	}))
	s.srv.TLS = cfg
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	s.pool = pool
	return s
}

// gate is the destination gate as production builds it, with only the
// resolver, dialer and trust store injected: no AllowAddrs, so private and
// loopback addresses are refused as in a normal deployment.
func (s *stub) gate() *gate.Client {
	return notify.NewGate(gate.Options{
		Timeout:  10 * time.Second,
		RootCAs:  s.pool,
		Resolver: s,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			s.mu.Lock()
			s.dials = append(s.dials, addr)
			s.mu.Unlock()
			if addr != netip.AddrPortFrom(publicIP, 443).String() {
				return nil, fmt.Errorf("stub: no route to %s", addr)
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", s.srv.Listener.Addr().String())
		},
	})
}

// LookupNetIP implements gate.Resolver.
func (s *stub) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.names[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (s *stub) resolve(host string, a netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names[host] = []netip.Addr{a}
}

func (s *stub) failNext(path string, n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[path], s.code[path] = n, status
}

func (s *stub) requests(path string) []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []received
	for _, r := range s.got {
		if path == "" || r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

func (s *stub) dialed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.dials...)
}

// world is a database with Readers holding Series, and the Poll's own
// write path to record Latest Chapters.
type world struct {
	t  *testing.T
	st *store.Store
}

func newWorld(t *testing.T) *world {
	t.Helper()
	return &world{t: t, st: store.New(pgtest.New(t))}
}

func (w *world) reader(name string) store.Reader {
	w.t.Helper()
	r, err := w.st.CreateReader(context.Background(), name, "x", false)
	require.NoError(w.t, err)
	return r
}

// hold gives a Reader a Bookmark, with Progress when chapter is set.
func (w *world) hold(r store.Reader, seriesURL, chapter string) string {
	w.t.Helper()
	ref, err := latest.Default().Resolve(seriesURL)
	require.NoError(w.t, err)
	ns := store.NewSeries{Key: ref.Key, Site: ref.Site, Kind: string(ref.Kind), SeriesURL: ref.SeriesURL}
	if chapter == "" {
		_, err = w.st.PutBookmarkKeepProgress(context.Background(), r.ID, ns, "")
	} else {
		n, _ := latest.ParseChapterNumber(chapter)
		_, err = w.st.PutBookmark(context.Background(), r.ID, ns, "", store.Progress{Chapter: chapter, ChapterNumber: &n})
	}
	require.NoError(w.t, err)
	return ref.Key
}

// poll records a successful poll that found label, as the Poll does.
func (w *world) poll(key, title, label string, number float64, locked bool) {
	w.t.Helper()
	n := number
	_, err := w.st.RecordPoll(context.Background(), key, store.PollResult{
		Status: store.PollOK, Success: true, Title: title,
		Latest: &store.LatestChapter{Label: label, Number: &n, URL: chapterURL(key, number), Locked: locked},
	})
	require.NoError(w.t, err)
}

func chapterURL(key string, n float64) string {
	switch site, slug, _ := latest.SplitKey(key); site {
	case "asura":
		return fmt.Sprintf("https://asurascans.com/comics/%s/chapter/%g", slug, n)
	case "demonic":
		return fmt.Sprintf("https://demonicscans.org/title/%s/chapter/%g/1", slug, n)
	default:
		return fmt.Sprintf("https://novelfull.com/%s/chapter-%g.html", slug, n)
	}
}

func (w *world) count(sql string, args ...any) int {
	w.t.Helper()
	var n int
	require.NoError(w.t, w.st.Pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(b, &v), "%s", b)
	return v
}
