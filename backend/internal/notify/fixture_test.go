package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fakenet"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/notify"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const base = "https://lectern.example.net"

// received is one request the stub answered.
type received struct {
	Path   string
	Header http.Header
	Body   []byte
	Status int
}

// stub is ntfy.test and hooks.test on the fake network, reached through the
// destination gate's injected resolver and dialer.
type stub struct {
	*fakenet.Net

	mu   sync.Mutex
	fail map[string]int // path → how many more requests answer fail status
	code map[string]int // path → the failing status
}

func newStub(t testing.TB) *stub {
	t.Helper()
	s := &stub{Net: fakenet.New(t), fail: map[string]int{}, code: map[string]int{}}
	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		status := http.StatusOK
		if s.fail[r.URL.Path] > 0 {
			s.fail[r.URL.Path]--
			status = s.code[r.URL.Path]
		}
		s.mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"id":"ok"}`))
	})
	s.HandleHost("ntfy.test", receiver)
	s.HandleHost("hooks.test", receiver)
	return s
}

// gate is the destination gate as production builds it, with only the
// resolver, dialer and trust store injected: no AllowAddrs, so private and
// loopback addresses are refused as in a normal deployment.
func (s *stub) gate() *gate.Client {
	return notify.NewGate(gate.Options{Timeout: 10 * time.Second, RootCAs: s.RootCAs(), Resolver: s, Dial: s.DialContext})
}

func (s *stub) resolve(host string, a netip.Addr) { s.Resolve(host, a) }

func (s *stub) failNext(path string, n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[path], s.code[path] = n, status
}

func (s *stub) requests(path string) []received {
	var out []received
	for _, r := range s.Requests() {
		if path == "" || r.Path == path {
			out = append(out, received{Path: r.Path, Header: r.Header, Body: r.Body, Status: r.Status})
		}
	}
	return out
}

func (s *stub) dialed() []string { return s.Dials() }

// world is a database with Readers holding Series, and the Poll's own
// write path to record Latest Chapters.
type world struct {
	t  testing.TB
	st *store.Store
}

func newWorld(t testing.TB) *world {
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
