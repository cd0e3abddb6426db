package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/server"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const password = "correct horse battery"

type testBundle struct {
	t     *testing.T
	store *store.Store
	srv   *server.Server
	lib   *bookmark.Service
	ts    *httptest.Server
	cfg   config.Config
}

// setup starts the real router (server.New) over a fresh database on a
// loopback HTTP server. PUBLIC_BASE_URL is the server's own URL, as in a
// deployment, so Cover URLs and the CSP's image origin point at it.
func setup(t *testing.T) *testBundle {
	t.Helper()
	st := store.New(pgtest.New(t))
	var h http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	cfg := config.Config{PublicBaseURL: ts.URL, DataDir: t.TempDir()}
	cfg.CoverDir = cfg.DataDir + "/covers"
	srv, err := server.New(context.Background(), server.Deps{Config: cfg, Store: st, Version: "test"})
	require.NoError(t, err)
	h = srv.Handler()
	return &testBundle{t: t, store: st, srv: srv, lib: srv.Library(), ts: ts, cfg: cfg}
}

// reader creates a Reader with the test password.
func (b *testBundle) reader(name string, owner bool) store.Reader {
	b.t.Helper()
	hash, err := credential.HashPassword(password)
	require.NoError(b.t, err)
	r, err := b.store.CreateReader(context.Background(), name, hash, owner)
	require.NoError(b.t, err)
	return r
}

// client is a browser stand-in: a cookie jar, no redirect following (tests
// assert where a response sends them).
type client struct {
	t    *testing.T
	base string
	c    *http.Client
}

func (b *testBundle) client() *client {
	jar, err := cookiejar.New(nil)
	require.NoError(b.t, err)
	return &client{t: b.t, base: b.ts.URL, c: &http.Client{
		Jar:           jar,
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type page struct {
	Code   int
	Header http.Header
	Body   string
	Doc    *goquery.Document
}

func (p page) location() string { return p.Header.Get("Location") }

func (c *client) do(req *http.Request) page {
	c.t.Helper()
	resp, err := c.c.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	p := page{Code: resp.StatusCode, Header: resp.Header, Body: string(body)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		p.Doc, err = goquery.NewDocumentFromReader(strings.NewReader(p.Body))
		require.NoError(c.t, err)
	}
	return p
}

func (c *client) get(path string) page {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	require.NoError(c.t, err)
	return c.do(req)
}

func (c *client) post(path string, form url.Values, hdr ...string) page {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return c.do(req)
}

// csrf reads the CSRF token a page's forms carry.
func csrf(t *testing.T, p page) string {
	t.Helper()
	require.NotNil(t, p.Doc, "not an HTML page: %d %s", p.Code, p.Body)
	v, ok := p.Doc.Find(`input[name="csrf"]`).First().Attr("value")
	require.True(t, ok, "page has no CSRF field: %s", p.Body)
	require.NotEmpty(t, v)
	return v
}

// postForm posts form from the page at from, with that page's CSRF token.
func (c *client) postForm(from, path string, form url.Values) page {
	c.t.Helper()
	p := c.get(from)
	require.Equal(c.t, http.StatusOK, p.Code, "GET %s: %s", from, p.Body)
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", csrf(c.t, p))
	return c.post(path, form)
}

// signIn signs name in through the login form.
func (c *client) signIn(name, pw string) {
	c.t.Helper()
	p := c.get("/login")
	require.Equal(c.t, http.StatusOK, p.Code, p.Body)
	r := c.post("/login", url.Values{"csrf": {csrf(c.t, p)}, "name": {name}, "password": {pw}})
	require.Equal(c.t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(c.t, "/library/manga", r.location())
}

// text is the whitespace-collapsed text of the first match.
func text(p page, sel string) string {
	return strings.Join(strings.Fields(p.Doc.Find(sel).First().Text()), " ")
}

func texts(p page, sel string) []string {
	var out []string
	p.Doc.Find(sel).Each(func(_ int, s *goquery.Selection) {
		out = append(out, strings.Join(strings.Fields(s.Text()), " "))
	})
	return out
}

// bookmark records Progress through the Library, as the panel's PUT does.
func (b *testBundle) bookmark(readerID int64, seriesURL, title, chapter, chapterURL string) bookmark.Bookmark {
	b.t.Helper()
	ref, err := latest.Default().Resolve(seriesURL)
	require.NoError(b.t, err)
	req := bookmark.PutRequest{Site: ref.Site, SeriesURL: seriesURL, Title: title, Chapter: chapter, ChapterURL: chapterURL}
	got, _, err := b.lib.Put(context.Background(), readerID, ref.Key, req)
	require.NoError(b.t, err)
	return got
}

// setLatest writes a Series' Latest Chapter as the Poll would.
func (b *testBundle) setLatest(key, label string, number float64, chapterURL string, at time.Time) {
	b.t.Helper()
	_, err := b.store.Pool.Exec(context.Background(), `
		UPDATE series SET latest_label = $2, latest_number = $3, latest_url = $4, latest_at = $5, updated_at = now()
		WHERE key = $1`, key, label, number, chapterURL, at)
	require.NoError(b.t, err)
}

func (b *testBundle) setTitle(key, title string) {
	b.t.Helper()
	_, err := b.store.Pool.Exec(context.Background(), `UPDATE series SET title = $2, updated_at = now() WHERE key = $1`, key, title)
	require.NoError(b.t, err)
}

func (b *testBundle) count(sql string, args ...any) int {
	b.t.Helper()
	var n int
	require.NoError(b.t, b.store.Pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// Series used across tests: two Sites of the manga Library, one novel Site.
const (
	soloURL  = "https://asurascans.com/comics/solo-leveling-1a2b3c4d"
	soloKey  = "asura:solo-leveling"
	omniURL  = "https://asurascans.com/comics/omniscient-reader-9f8e7d6c"
	omniKey  = "asura:omniscient-reader"
	lockURL  = "https://demonicscans.org/manga/Blue-Lock"
	lockKey  = "demonic:Blue-Lock"
	slaveURL = "https://novelfull.com/shadow-slave.html"
	slaveKey = "novelfull:shadow-slave"
)

func asuraChapter(series string, n int) string { return fmt.Sprintf("%s/chapter/%d", series, n) }

// serve runs one request through h in process, for tests that need a
// chosen client address or raw Set-Cookie attributes.
func serve(h http.Handler, method, path string, form url.Values, cookies []*http.Cookie, remoteAddr ...string) *httptest.ResponseRecorder {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, c := range cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	if len(remoteAddr) > 0 {
		req.RemoteAddr = remoteAddr[0]
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func findCookie(t *testing.T, cookies []*http.Cookie, name string) *http.Cookie {
	t.Helper()
	for _, c := range cookies {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no cookie %q set (got %v)", name, cookies)
	return nil
}

func parse(t *testing.T, body string) *goquery.Document {
	t.Helper()
	d, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	return d
}
