package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/fakenet"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

// TestDemoLoop runs what `make demo` runs, with the userscript injected by
// the fixture Sites into the page itself (the demo's way, not the harness's
// isolated world), and walks the loop a newcomer follows: panel, Bookmark,
// Acquisition, Cover, web library.
func TestDemoLoop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := startDemo(ctx, demoOptions{DatabaseURL: pgtest.NewURL(t), DataDir: t.TempDir(),
		Listen: "127.0.0.1:0", SitesListen: "127.0.0.1:0", Inject: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	e := &env{t: t, sites: d.sites, lectern: d.lectern, readerID: d.readerID, token: d.token}
	base := d.lectern.BaseURL

	var out bytes.Buffer
	instructions(&out, d.sites, base, d.password, d.token, "/usr/bin/chromium", true, "", "/tmp/lectern.log")
	text := out.String()
	for _, want := range []string{d.token, d.password, "--host-resolver-rules='MAP ", "--ignore-certificate-errors-spki-list=" + shellQuote(d.sites.SPKIHash()),
		fixturesites.AsuraChapter, base + "/library/manga", "DEMO ONLY"} {
		require.Contains(t, text, want)
	}

	comix, err := latest.Default().Resolve(fixturesites.ComixSeries)
	require.NoError(t, err)
	asura, err := latest.Default().Resolve(fixturesites.AsuraChapter)
	require.NoError(t, err)

	browser := launch(t, d.sites)
	tb := newTab(t, browser, nil, "", "")
	tb.do(chromedp.Navigate(fixturesites.AsuraChapter))
	tb.attach()
	tb.click("lectern-toggle")
	// The demo Reader's seeded manga Bookmark; its Acquisition ran at start.
	tb.wait(fmt.Sprintf(`q('lectern-panel').getAttribute('data-state') === 'ready' && R.querySelector('[data-testid="lectern-item"][data-key=%q]')`, comix.Key))
	seeded := e.waitCover(comix.Key)

	tb.click("lectern-bookmark-chapter")
	tb.wait(`q('lectern-status').getAttribute('data-code') === 'recorded'`)
	got := e.bookmark(asura.Key)
	require.Equal(t, "Chapter 250", got.Chapter)
	withCover := e.waitCover(asura.Key)
	tb.click("lectern-refresh")
	tb.wait(coverLoaded(asura.Key) + ` !== '' && ` + coverLoaded(comix.Key) + ` !== ''`)
	var srcs []string
	tb.panel(`[`+coverLoaded(asura.Key)+`, `+coverLoaded(comix.Key)+`]`, &srcs)
	require.Equal(t, []string{withCover.Cover, seeded.Cover}, srcs)
	tb.screenshot("demo-manga-panel")

	// The novel page runs the novel script, with the seeded novel Bookmark.
	novelfull, err := latest.Default().Resolve(fixturesites.NovelFullSeries)
	require.NoError(t, err)
	tb.do(chromedp.Navigate(fixturesites.LightNovelWorldChapter))
	tb.attach()
	tb.click("lectern-toggle")
	tb.wait(fmt.Sprintf(`q('lectern-panel').getAttribute('data-state') === 'ready' && R.querySelector('[data-testid="lectern-item"][data-key=%q]')`, novelfull.Key))
	var versions string
	tb.panel(`q('lectern-versions').textContent`, &versions)
	require.True(t, strings.HasPrefix(versions, "lectern-novel "), versions)

	// The web library shows the same Bookmarks with the same Covers.
	lib := newTab(t, browser, nil, "", "")
	lib.do(
		chromedp.Navigate(base+"/login"),
		chromedp.SetValue(chromedp.ID("name"), "demo"),
		chromedp.SetValue(chromedp.ID("password"), d.password),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="cards"]`)),
	)
	lib.do(chromedp.Navigate(base + "/library/manga"))
	cards := (`[...document.querySelectorAll('[data-testid="card"]')].map((c) => { const img = c.querySelector('img[data-cover]'); ` +
		`return c.getAttribute('data-key') + ' ' + (img && img.complete && img.naturalWidth > 0 ? img.getAttribute('src') : ''); }).sort()`)
	want := []string{asura.Key + " " + withCover.Cover, comix.Key + " " + seeded.Cover}
	require.Eventually(t, func() bool {
		got := mainEval[[]string](lib, cards)
		return strings.Join(got, "|") == strings.Join(want, "|")
	}, step, 100*time.Millisecond, "the web library lists both with their Covers loaded")
	lib.screenshot("demo-web-library")

	// The demo's proxy is the only way in from a Site page: Lectern's API
	// answers no CORS, and the proxy passes nothing but the API.
	req, err := http.NewRequest(http.MethodOptions, base+"/api/bookmarks", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "https://asurascans.com")
	req.Header.Set("Access-Control-Request-Method", "GET")
	req.Header.Set("Access-Control-Request-Headers", "authorization")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))

	site := fixtureClient(d.sites)
	for path, status := range map[string]int{
		"/__lectern-demo/userscripts/lectern-manga.user.js":  http.StatusNotFound,
		"/__lectern-demo/covers/" + strings.Repeat("0", 64):  http.StatusNotFound,
		"/__lectern-demo/api/bookmarks":                      http.StatusUnauthorized,
		"/__lectern-demo/userscript.js?script=lectern-manga": http.StatusOK,
		"/__lectern-demo/userscript.js?script=other":         http.StatusNotFound,
	} {
		resp, err := site.Get("https://asurascans.com" + path)
		require.NoError(t, err, path)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, status, resp.StatusCode, "%s: %s", path, body)
		if status == http.StatusOK {
			require.Contains(t, string(body), "'"+base+"'", "the loader wraps the script Lectern serves")
			require.Contains(t, string(body), d.token, "demo only: the token is in the page")
		}
	}
	post, err := site.Post("https://asurascans.com/__lectern-demo/gm?script=lectern-manga", "application/json", strings.NewReader(`{"key":"other","value":1}`))
	require.NoError(t, err)
	post.Body.Close()
	require.Equal(t, http.StatusBadRequest, post.StatusCode, "only the script's own keys are stored")
}

// TestDemoSitesDir runs the demo with -sites: a page in the directory is
// what a browser gets (with the userscript put in) and what Lectern's
// Acquisition reads, and edits to it show on the next request.
func TestDemoSitesDir(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fixture, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "testdata", "sites", "asura", "series.html"))
	require.NoError(t, err)
	saved := func(title string) []byte {
		return []byte(strings.NewReplacer("Omniscient Reader&#x27;s Viewpoint", title, "Omniscient Reader's Viewpoint", title).Replace(string(fixture)))
	}
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "asura"), 0o755))
	page := filepath.Join(dir, "asura", "series.html")
	require.NoError(t, os.WriteFile(page, saved("A Page Saved From The Site"), 0o644))

	d, err := startDemo(ctx, demoOptions{DatabaseURL: pgtest.NewURL(t), DataDir: t.TempDir(),
		Listen: "127.0.0.1:0", SitesListen: "127.0.0.1:0", SitesDir: dir, Inject: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	e := &env{t: t, sites: d.sites, lectern: d.lectern, readerID: d.readerID, token: d.token}

	var out bytes.Buffer
	instructions(&out, d.sites, d.lectern.BaseURL, d.password, d.token, "", true, dir, "/tmp/lectern.log")
	require.Contains(t, out.String(), dir+"/<site>/<file>")

	site := fixtureClient(d.sites)
	get := func(u string) string {
		t.Helper()
		resp, err := site.Get(u)
		require.NoError(t, err, u)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, u)
		return string(b)
	}
	body := get(fixturesites.AsuraSeries)
	require.Contains(t, body, "A Page Saved From The Site")
	require.Contains(t, body, demoPrefix+"userscript.js", "the userscript is put into an override too")
	require.NotContains(t, get(fixturesites.AsuraChapter), "A Page Saved From The Site")

	ref, err := latest.Default().Resolve(fixturesites.AsuraSeries)
	require.NoError(t, err)
	n := 250.0
	_, _, err = d.lectern.Server.Library().Put(ctx, d.readerID, ref.Key, bookmark.PutRequest{
		Site: ref.Site, SeriesURL: ref.SeriesURL, Chapter: "Chapter 250", ChapterNumber: &n})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return e.bookmark(ref.Key).Title == "A Page Saved From The Site" },
		step, 50*time.Millisecond, "the Acquisition's Poll reads the page from the directory")

	require.NoError(t, os.WriteFile(page, saved("Edited While The Demo Runs"), 0o644))
	require.Contains(t, get(fixturesites.AsuraSeries), "Edited While The Demo Runs")
}

func TestDemoSitesMustBeADirectory(t *testing.T) {
	// Chdir: were the check to come after the data directory, nothing would
	// land in the repository anyway.
	t.Chdir(t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stderr bytes.Buffer
	err := run(ctx, []string{"-sites", "missing"}, io.Discard, &stderr)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "-sites:")
	require.NoError(t, os.WriteFile("file", nil, 0o644))
	err = run(ctx, []string{"-sites", "file"}, io.Discard, &stderr)
	require.ErrorContains(t, err, "is not a directory")
	_, err = os.Stat(".lectern")
	require.ErrorIs(t, err, os.ErrNotExist, "refused before anything is made")
}

// fixtureClient reaches the fixture Sites as the browser does.
func fixtureClient(sites *fixturesites.Server) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return sites.DialContext(ctx, "tcp", fakenet.StandIn.String()+":443")
		},
		TLSClientConfig: &tls.Config{RootCAs: sites.RootCAs(), MinVersion: tls.VersionTLS12},
	}}
}

func TestPrepareDatabaseStartsEmptyEachRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	server := pgtest.NewURL(t) // any database on the test server
	name := "lectern_demo_" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_"))
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), server)
		require.NoError(t, err)
		defer conn.Close(context.Background())
		_, err = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		require.NoError(t, err)
	})

	first, err := prepareDatabase(ctx, server, "", name)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(strings.SplitN(first, "?", 2)[0], "/"+name), first)
	conn, err := pgx.Connect(ctx, first)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE TABLE left_over (x int)")
	require.NoError(t, err)
	// Still connected: the next run drops it anyway.
	again, err := prepareDatabase(ctx, first, "", name)
	require.NoError(t, err)
	require.Equal(t, first, again)
	_ = conn.Close(ctx)
	conn, err = pgx.Connect(ctx, again)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename = 'left_over'`).Scan(&n))
	require.Zero(t, n, "the demo database starts empty")

	_, err = prepareDatabase(ctx, "mysql://nope", "", name)
	require.ErrorContains(t, err, "postgres://")
}

// The demo stands in for the push services: a Discord target made through
// the demo's API (its SECRET_KEY seals the token) and its Test button land
// at /__lectern-demo/pushes on the fixture server.
func TestDemoPushes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := startDemo(ctx, demoOptions{DatabaseURL: pgtest.NewURL(t), DataDir: t.TempDir(),
		Listen: "127.0.0.1:0", SitesListen: "127.0.0.1:0"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })

	var out bytes.Buffer
	instructions(&out, d.sites, d.lectern.BaseURL, d.password, d.token, "", false, "", "/tmp/lectern.log")
	require.Contains(t, out.String(), "API token        "+d.token)
	require.Contains(t, out.String(), "https://"+d.sites.Addr()+fixturesites.PushesPath)

	api := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, d.lectern.BaseURL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+d.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, b
	}
	code, body := api(http.MethodPost, "/api/notify/targets", `{"url": "discord://112233445566778899/demo-token-0123456789"}`)
	require.Equal(t, http.StatusCreated, code, "%s", body)
	var target struct {
		ID int64 `json:"id"`
	}
	require.NoError(t, json.Unmarshal(body, &target))
	code, body = api(http.MethodPost, fmt.Sprintf("/api/notify/targets/%d/test", target.ID), "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), `"ok":true`, "%s", body)

	pushes := d.sites.Pushes()
	require.Len(t, pushes, 1)
	require.Equal(t, "discord", pushes[0].Service)
	require.Equal(t, "/api/webhooks/112233445566778899/demo-token-0123456789", pushes[0].Path)
}

// With -sites DIR, swapping a Site's page for one of another shape tells
// the demo's Owner within minutes: the console's alert names "pages changed
// shape".
func TestDemoPagesChangedShapeAlert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "asura"), 0o755))
	// The watch looks every 2 seconds and raises after 5, where the demo
	// waits 30 seconds and a minute: the same decisions, in a test's time.
	d, err := startDemo(ctx, demoOptions{DatabaseURL: pgtest.NewURL(t), DataDir: t.TempDir(),
		Listen: "127.0.0.1:0", SitesListen: "127.0.0.1:0", SitesDir: dir, WatchEvery: 2 * time.Second, FailingHold: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	e := &env{t: t, sites: d.sites, lectern: d.lectern, readerID: d.readerID, token: d.token}

	ref, err := latest.Default().Resolve(fixturesites.AsuraSeries)
	require.NoError(t, err)
	n := 1.0
	_, _, err = d.lectern.Server.Library().Put(ctx, d.readerID, ref.Key, bookmark.PutRequest{
		Site: ref.Site, SeriesURL: ref.SeriesURL, Chapter: "Chapter 1", ChapterNumber: &n})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return e.bookmark(ref.Key).Title != "" }, step, 100*time.Millisecond, "the Acquisition polls the page")
	healthy := func() bool {
		var seen bool
		require.NoError(t, d.lectern.Store.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM site_health WHERE site = 'asura')`).Scan(&seen))
		return seen
	}
	require.Eventually(t, healthy, 3*time.Minute, 500*time.Millisecond, "the watch sees asura healthy")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "asura", "series.html"),
		[]byte("<!doctype html><html><head><title>Asura</title></head><body><main><h1>Our new reader is here</h1></main></body></html>"), 0o644))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.lectern.BaseURL+"/api/admin/series/"+ref.Key+"/poll", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300)

	raised := func() bool {
		alerts, err := d.lectern.Store.OwnerAlerts(ctx)
		require.NoError(t, err)
		for _, a := range alerts {
			if a.Site == "asura" && a.RaisedAt != nil {
				require.Equal(t, "pages changed shape", a.Cause, a.Message)
				return true
			}
		}
		return false
	}
	require.Eventually(t, raised, 5*time.Minute, time.Second, "the Owner is told")
}
