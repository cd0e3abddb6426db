package latest

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

// The browser Sites' reads run in real headless Chromium against a loopback
// HTTPS server that answers for kagane.to, novelfull.com and a foreign host:
// Chromium's host resolver maps those names to the server, so the tab's
// location carries the real hostnames the reads pin.

const towerID = "0199a4c2-7d1e-7b3a-9f21-4be0c6d1a2f3"

// fakeSite serves the fixtures as the browser Sites would, and records the
// requests that reached it.
type fakeSite struct {
	t    *testing.T
	mu   sync.Mutex
	seen []string
}

func (f *fakeSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, _, _ := net.SplitHostPort(r.Host)
	if host == "" {
		host = r.Host
	}
	f.mu.Lock()
	f.seen = append(f.seen, host+r.URL.RequestURI())
	f.mu.Unlock()
	switch {
	case strings.HasPrefix(r.URL.Path, "/api/v2/series/"):
		// The API answers only a request that carries the clearance cookie,
		// as behind Cloudflare; otherwise the interstitial.
		if c, err := r.Cookie("cf_clearance"); err != nil || c.Value != "ok" {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write(readFixture(f.t, "kagane", "challenge.html"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(readFixture(f.t, "kagane", "series.json"))
	case strings.HasPrefix(r.URL.Path, "/series/"):
		if r.URL.Query().Get("cleared") == "1" {
			http.SetCookie(w, &http.Cookie{Name: "cf_clearance", Value: "ok", Path: "/", Secure: true})
		}
		w.Header().Set("Content-Type", "text/html")
		if strings.Contains(r.URL.Path, "/reader/") {
			_, _ = w.Write(readFixture(f.t, "kagane", "chapter.html"))
			return
		}
		_, _ = w.Write([]byte(`<!doctype html><html><head><title>The Tower of Nine Gates | Kagane</title></head><body><div id="__next"></div></body></html>`))
	case r.URL.Path == "/the-legendary-mechanic.html":
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write(readFixture(f.t, "novelfull", "series.html"))
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeSite) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

func newBrowser(t *testing.T) (context.Context, *fakeSite) {
	t.Helper()
	path := testenv.ChromiumPath(t)
	site := &fakeSite{t: t}
	srv := httptest.NewTLSServer(site)
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	rules := "MAP kagane.to " + addr + ", MAP novelfull.com " + addr + ", MAP evil.example " + addr
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.IgnoreCertErrors,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("host-resolver-rules", rules),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelTab)
	return tab, site
}

// read navigates the tab and runs a Site's read, as the browser fetcher does.
func read(t *testing.T, tab context.Context, b *Browser, navigate, pageURL string) (string, error) {
	t.Helper()
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(navigate)))
	var payload string
	_, err := chromedp.Run(tab, b.Read(pageURL, &payload))
	return payload, err
}

func TestKaganeReadInTheTab(t *testing.T) {
	tab, site := newBrowser(t)
	kagane, _ := reg.Lookup("kagane")
	series := "https://kagane.to/series/" + towerID

	// Before the clearance cookie exists the API answers the interstitial:
	// the read returns it and Arrived says it is not the payload.
	payload, err := read(t, tab, kagane.Browser, series, series)
	require.NoError(t, err)
	require.Contains(t, payload, "Just a moment...")
	require.False(t, kagane.Browser.Arrived(payload))

	// Once the page has set the cookie, the in-page fetch carries it and
	// returns the API JSON, which the Site's questions read.
	payload, err = read(t, tab, kagane.Browser, series+"?cleared=1", series)
	require.NoError(t, err)
	require.True(t, kagane.Browser.Arrived(payload))
	latest, err := kagane.Latest([]byte(payload), mustParse(t, series))
	require.NoError(t, err)
	require.Equal(t, kaganeChapterRows[5], row(latest))
	cover, err := kagane.Cover([]byte(payload), mustParse(t, series))
	require.NoError(t, err)
	require.Equal(t, "https://kagane.to/api/v2/image/0199a4c2-cccc-7ddd-8eee-ffff00001111", cover)

	// A reader page is read as its document.
	reader := series + "/reader/0199a4c3-0000-7000-8000-000000000005"
	payload, err = read(t, tab, kagane.Browser, reader, reader)
	require.NoError(t, err)
	require.True(t, kagane.Browser.Arrived(payload))
	_, err = kagane.Content([]byte(payload), mustParse(t, reader))
	require.Equal(t, ProblemLocked, ProblemCode(err))

	require.Contains(t, site.requests(), "kagane.to/api/v2/series/"+towerID)
}

func TestBrowserReadsPinTheTabsHost(t *testing.T) {
	tab, site := newBrowser(t)
	kagane, _ := reg.Lookup("kagane")
	novelfull, _ := reg.Lookup("novelfull")

	// The tab ended up on another host (a redirect): the read refuses inside
	// the page, before any request of its own.
	_, err := read(t, tab, kagane.Browser, "https://evil.example/series/"+towerID+"?cleared=1", "https://kagane.to/series/"+towerID)
	require.Error(t, err)
	require.Contains(t, err.Error(), "host pin")
	_, err = read(t, tab, novelfull.Browser, "https://evil.example/the-legendary-mechanic.html", "https://novelfull.com/the-legendary-mechanic.html")
	require.Error(t, err)
	require.Contains(t, err.Error(), "host pin")
	for _, r := range site.requests() {
		require.False(t, strings.HasPrefix(r, "evil.example/api/"), "no API call from a foreign page: %s", r)
	}
}

func TestNovelfullReadInTheTab(t *testing.T) {
	tab, _ := newBrowser(t)
	novelfull, _ := reg.Lookup("novelfull")
	page := "https://novelfull.com/the-legendary-mechanic.html"
	payload, err := read(t, tab, novelfull.Browser, page, page)
	require.NoError(t, err)
	require.True(t, novelfull.Browser.Arrived(payload))
	latest, err := novelfull.Latest([]byte(payload), mustParse(t, page))
	require.NoError(t, err)
	require.Equal(t, "Chapter 1463 - The End|1463|"+mechanic+"/chapter-1463-end.html|false", row(latest))
	cover, err := novelfull.Cover([]byte(payload), mustParse(t, page))
	require.NoError(t, err)
	require.Equal(t, "https://novelfull.com/uploads/thumbs/the-legendary-mechanic-c5f6d3e0b5.jpg", cover)
}

// The URL handed to a read is pinned before the browser is touched.
func TestBrowserReadsRefuseForeignURLs(t *testing.T) {
	t.Parallel()
	kagane, _ := reg.Lookup("kagane")
	novelfull, _ := reg.Lookup("novelfull")
	var payload string
	for _, tc := range []struct {
		b   *Browser
		url string
	}{
		{kagane.Browser, "https://evil.example/series/" + towerID},
		{kagane.Browser, "https://kagane.to.evil.example/series/" + towerID},
		{kagane.Browser, "https://kagane.to/series/not-a-uuid"},
		{kagane.Browser, "javascript:alert(1)"},
		{novelfull.Browser, "https://evil.example/x.html"},
		{novelfull.Browser, "file:///etc/passwd"},
	} {
		// A nil target: the read must fail before it would use one.
		_, err := tc.b.Read(tc.url, &payload)(context.Background(), nil)
		require.Error(t, err, tc.url)
		require.Empty(t, payload)
	}
}

func TestArrived(t *testing.T) {
	t.Parallel()
	kagane, _ := reg.Lookup("kagane")
	novelfull, _ := reg.Lookup("novelfull")
	for _, tc := range []struct {
		b    *Browser
		file string
		want bool
	}{
		{kagane.Browser, "series.json", true},
		{kagane.Browser, "error.json", true}, // the API answered; extraction names the problem
		{kagane.Browser, "challenge.html", false},
		{kagane.Browser, "chapter.html", true},
		{novelfull.Browser, "series.html", true},
		{novelfull.Browser, "chapter.html", true},
		{novelfull.Browser, "challenge.html", false},
	} {
		site := "kagane"
		if tc.b == novelfull.Browser {
			site = "novelfull"
		}
		require.Equal(t, tc.want, tc.b.Arrived(string(readFixture(t, site, tc.file))), "%s/%s", site, tc.file)
	}
	require.False(t, kagane.Browser.Arrived(""))
	require.False(t, kagane.Browser.Arrived(`{"title": "truncated`))
	require.False(t, novelfull.Browser.Arrived("   "))
}
