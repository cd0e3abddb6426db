package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// password is every test Reader's.
const password = apptest.Password

// testBundle is the composed server (apptest) of one test.
type testBundle struct {
	*apptest.App
	lib *bookmark.Service
}

// setup starts the real router (server.New) over a fresh database on a
// loopback HTTP server. PUBLIC_BASE_URL is the server's own URL, as in a
// deployment, so Cover URLs and the CSP's image origin point at it.
func setup(t testing.TB, o ...apptest.Options) *testBundle {
	t.Helper()
	a := apptest.New(t, o...)
	return &testBundle{App: a, lib: a.Server.Library()}
}

// text is the whitespace-collapsed text of the first match.
func text(p apptest.Page, sel string) string {
	return strings.Join(strings.Fields(p.Doc.Find(sel).First().Text()), " ")
}

func texts(p apptest.Page, sel string) []string {
	var out []string
	p.Doc.Find(sel).Each(func(_ int, s *goquery.Selection) {
		out = append(out, strings.Join(strings.Fields(s.Text()), " "))
	})
	return out
}

// bookmark records Progress through the Library, as the panel's PUT does.
func (b *testBundle) bookmark(readerID int64, seriesURL, title, chapter, chapterURL string) bookmark.Bookmark {
	b.T.Helper()
	ref, err := latest.Default().Resolve(seriesURL)
	require.NoError(b.T, err)
	req := bookmark.PutRequest{Site: ref.Site, SeriesURL: seriesURL, Title: title, Chapter: chapter, ChapterURL: chapterURL}
	got, _, err := b.lib.Put(context.Background(), readerID, ref.Key, req)
	require.NoError(b.T, err)
	return got
}

// setLatest writes a Series' Latest Chapter as the Poll would.
func (b *testBundle) setLatest(key, label string, number float64, chapterURL string, at time.Time) {
	b.T.Helper()
	_, err := b.Store.Pool.Exec(context.Background(), `
		UPDATE series SET latest_label = $2, latest_number = $3, latest_url = $4, latest_at = $5, updated_at = now()
		WHERE key = $1`, key, label, number, chapterURL, at)
	require.NoError(b.T, err)
}

func (b *testBundle) setTitle(key, title string) {
	b.T.Helper()
	_, err := b.Store.Pool.Exec(context.Background(), `UPDATE series SET title = $2, updated_at = now() WHERE key = $1`, key, title)
	require.NoError(b.T, err)
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
