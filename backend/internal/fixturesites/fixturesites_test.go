package fixturesites_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"image/png"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fakenet"
	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

// The fixture server is reached here exactly as Lectern reaches it in the
// demo and the end-to-end test: through the destination gate with the
// server's resolver and dialer as its seams, and the plain Site fetcher
// pinned to each Site's hosts dialing through that gate.

func start(t *testing.T) *fixturesites.Server {
	t.Helper()
	s, err := fixturesites.Start(fixturesites.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func gateFor(s *fixturesites.Server) *gate.Client {
	return gate.New(gate.Options{Resolver: s, Dial: s.DialContext, RootCAs: s.RootCAs(), Timeout: 10 * time.Second})
}

func plain(s *fixturesites.Server, g *gate.Client) *fetch.PlainFetcher {
	return fetch.NewPlainFetcher(fetch.PlainOptions{Dial: g.DialContext, RootCAs: s.RootCAs(), Timeout: 10 * time.Second})
}

func fixture(t *testing.T, site, file string) []byte { return testenv.SiteFixture(t, site, file) }

var canonical = regexp.MustCompile(`<link rel="canonical" href="([^"]+)"`)

func TestEveryPageAnswersAtItsURLWithItsFixture(t *testing.T) {
	t.Parallel()
	s := start(t)
	f := plain(s, gateFor(s))
	for _, p := range s.Pages() {
		site, ok := latest.Default().Lookup(p.Site)
		require.True(t, ok, p.Site)
		page, err := f.Fetch(context.Background(), site, p.URL, fetch.Conditional{})
		require.NoError(t, err, p.URL)
		if p.File == "" {
			require.Equal(t, p.Body, string(page.Body), p.URL)
			continue
		}
		body := fixture(t, p.Site, p.File)
		require.Equal(t, body, page.Body, "%s serves %s/%s", p.URL, p.Site, p.File)
		// Where the fixture names its own address, the table agrees with it.
		if m := canonical.FindSubmatch(body); m != nil {
			want, _, _ := strings.Cut(p.URL, "?")
			require.Equal(t, want, string(m[1]), "%s/%s", p.Site, p.File)
		}
	}
}

func TestTheSeriesPagesResolveAndGiveTheirCovers(t *testing.T) {
	t.Parallel()
	s := start(t)
	g := gateFor(s)
	f := plain(s, g)
	covers := 0
	for _, p := range s.Pages() {
		if !p.Series {
			continue
		}
		readAs := p.URL
		if p.ReadAs != "" {
			readAs = p.ReadAs
		}
		ref, err := latest.Default().Resolve(readAs)
		require.NoError(t, err, readAs)
		require.Equal(t, p.Site, ref.Site)
		site, _ := latest.Default().Lookup(p.Site)
		// The registry's own series URL (no "www.") answers too, or where
		// the Site reads it from (an API): that is the address a Poll fetches.
		if site.Browser == nil {
			page, err := f.Fetch(context.Background(), site, site.ReadFrom(ref.SeriesURL), fetch.Conditional{})
			require.NoError(t, err, ref.SeriesURL)
			require.Equal(t, fixture(t, p.Site, p.File), page.Body)
		}
		c := s.CoverOf(readAs)
		require.NotEmpty(t, c, "%s/%s has a Cover", p.Site, p.File)
		img, err := g.FetchImage(context.Background(), c, readAs)
		require.NoError(t, err, c)
		require.Equal(t, "image/png", img.ContentType)
		cfg, err := png.DecodeConfig(bytes.NewReader(img.Bytes))
		require.NoError(t, err)
		require.Equal(t, [2]int{240, 340}, [2]int{cfg.Width, cfg.Height})
		covers++
	}
	require.Equal(t, 11, covers, "one Cover per Site, asura's old host, and asura's story on demonic")
}

func TestEveryFixtureIsServedOrAKnownVariant(t *testing.T) {
	t.Parallel()
	s := start(t)
	served := map[string]bool{}
	for _, p := range s.Pages() {
		if p.File != "" {
			served[p.Site+"/"+p.File] = true
		}
	}
	variants := fixturesites.Variants()
	root := filepath.Join("..", "..", "..", "testdata", "sites")
	sites, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, d := range sites {
		files, err := os.ReadDir(filepath.Join(root, d.Name()))
		require.NoError(t, err)
		for _, f := range files {
			name := d.Name() + "/" + f.Name()
			require.True(t, served[name] != slices.Contains(variants[d.Name()], f.Name()),
				"%s must be either served (fixturesites.pages) or listed as a variant, not both or neither", name)
		}
	}
	for site, files := range variants {
		for _, f := range files {
			_, err := os.Stat(filepath.Join(root, site, f))
			require.NoError(t, err, "listed variant %s/%s", site, f)
		}
	}
}

func TestChapterImagesAreServedAndDiffer(t *testing.T) {
	t.Parallel()
	s := start(t)
	g := gateFor(s)
	seen := map[string]string{}
	for _, u := range s.Images() {
		img, err := g.FetchImage(context.Background(), u, "")
		require.NoError(t, err, u)
		_, err = png.DecodeConfig(bytes.NewReader(img.Bytes))
		require.NoError(t, err, u)
		prev, dup := seen[string(img.Bytes)]
		require.False(t, dup, "%s and %s are the same image", u, prev)
		seen[string(img.Bytes)] = u
	}
	require.Contains(t, s.Images(), "https://cdn.demoniclibs.com/mangas/Solo%20Max-Level%20Newbie/0180/01.jpg?v=3",
		"a chapter page image read by the registry, spaces and query included")
}

func TestUnknownAddressesAreRefusedOr404(t *testing.T) {
	t.Parallel()
	s := start(t)
	g := gateFor(s)
	asura, _ := latest.Default().Lookup("asura")
	_, err := plain(s, g).Fetch(context.Background(), asura, fixturesites.AsuraSeries+"-nope", fetch.Conditional{})
	var se *fetch.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, http.StatusNotFound, se.Status)

	_, err = g.FetchImage(context.Background(), "https://cdn.asurascans.com/asura-images/covers/never.webp", "")
	require.ErrorContains(t, err, "404")

	// A name the fixtures do not stand for does not resolve, and no address
	// but the stand-in is dialled: nothing reaches the live network.
	_, err = s.LookupNetIP(context.Background(), "ip", "example.com")
	var dnsErr *net.DNSError
	require.ErrorAs(t, err, &dnsErr)
	require.True(t, dnsErr.IsNotFound)
	_, err = s.DialContext(context.Background(), "tcp", "1.1.1.1:443")
	require.ErrorContains(t, err, "only the fake network's stand-in addresses are reachable")
	_, err = s.DialContext(context.Background(), "tcp", fakenet.StandIn.String()+":80")
	require.Error(t, err)
	_, err = g.FetchImage(context.Background(), "https://example.com/cover.png", "")
	require.Error(t, err)
}

func TestModesAnswerLikeAnUnwellSite(t *testing.T) {
	t.Parallel()
	s := start(t)
	g := gateFor(s)
	f := plain(s, g)
	asura, _ := latest.Default().Lookup("asura")
	get := func() error {
		_, err := f.Fetch(context.Background(), asura, fixturesites.AsuraSeries, fetch.Conditional{})
		return err
	}
	statusOf := func(err error) int {
		var se *fetch.StatusError
		require.ErrorAs(t, err, &se)
		return se.Status
	}

	s.SetMode("asurascans.com", fixturesites.TooManyRequests)
	err := get()
	require.Equal(t, http.StatusTooManyRequests, statusOf(err))
	var se *fetch.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, time.Minute, se.RetryAfter)
	// Another host is untouched.
	_, err = g.FetchImage(context.Background(), s.CoverOf(fixturesites.AsuraSeries), "")
	require.NoError(t, err)

	s.SetMode("asurascans.com", fixturesites.Unavailable)
	require.Equal(t, http.StatusServiceUnavailable, statusOf(get()))

	s.SetMode("asurascans.com", fixturesites.Normal)
	s.SetMode("", fixturesites.Unavailable)
	require.NoError(t, get(), "a host's own mode wins over every host's")
	_, err = g.FetchImage(context.Background(), s.CoverOf(fixturesites.AsuraSeries), "")
	require.ErrorContains(t, err, "503")

	s.SetMode("", fixturesites.Normal)
	s.SetMode("www.asurascans.com", fixturesites.Hang)
	// Long enough that a loaded machine's request reaches the server (it is
	// counted below) before the client gives up.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = f.Fetch(ctx, asura, fixturesites.AsuraSeries, fetch.Conditional{})
	require.ErrorIs(t, err, context.DeadlineExceeded, "the request was held until the client gave up")
	require.Equal(t, 4, s.Hits(fixturesites.AsuraSeries), "429, 503, 200 and the held request, \"www.\" or not")
}

func TestCloseEndsHeldRequests(t *testing.T) {
	t.Parallel()
	s, err := fixturesites.Start(fixturesites.Options{})
	require.NoError(t, err)
	s.SetMode("", fixturesites.Hang)
	f := plain(s, gateFor(s))
	asura, _ := latest.Default().Lookup("asura")
	done := make(chan error, 1)
	go func() {
		_, err := f.Fetch(context.Background(), asura, fixturesites.AsuraSeries, fetch.Conditional{})
		done <- err
	}()
	require.Eventually(t, func() bool { return s.Hits(fixturesites.AsuraSeries) == 1 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, s.Close())
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a held request outlived Close")
	}
}

func TestChromiumRulesNameEveryHostAndRefuseTheRest(t *testing.T) {
	t.Parallel()
	s := start(t)
	rules := s.HostResolverRules()
	for _, h := range s.Hosts() {
		require.Contains(t, rules, "MAP "+h+" "+s.Addr()+",")
	}
	require.True(t, strings.Index(rules, "MAP * ~NOTFOUND") > strings.LastIndex(rules, s.Addr()), "the catch-all comes last")
	require.Contains(t, rules, "EXCLUDE 127.0.0.1")
	require.Equal(t, s.SPKIHash(), s.ChromiumFlags()["ignore-certificate-errors-spki-list"])
	require.Len(t, s.SPKIHash(), 44)
	require.NotContains(t, s.Hosts(), "example.com")
}

// logBuffer collects the server's log lines, written from its handlers.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestOverrideFilesReplaceFixturesWhileTheServerRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "asura"), 0o755))
	page := filepath.Join(dir, "asura", "series.html")
	require.NoError(t, os.WriteFile(page, []byte("<html>saved from the Site</html>"), 0o644))
	var logs logBuffer
	s, err := fixturesites.Start(fixturesites.Options{Override: dir,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	f := plain(s, gateFor(s))
	asura, _ := latest.Default().Lookup("asura")
	get := func(u string) ([]byte, error) {
		t.Helper()
		page, err := f.Fetch(context.Background(), asura, u, fetch.Conditional{})
		if err != nil {
			return nil, err
		}
		return page.Body, nil
	}
	body := func(u string) string {
		t.Helper()
		b, err := get(u)
		require.NoError(t, err, u)
		return string(b)
	}
	chapter := string(fixture(t, "asura", "chapter.html"))

	require.Equal(t, "<html>saved from the Site</html>", body(fixturesites.AsuraSeries))
	require.Equal(t, chapter, body(fixturesites.AsuraChapter), "a fixture without an override")

	require.NoError(t, os.WriteFile(page, []byte("<html>edited while running</html>"), 0o644))
	require.Equal(t, "<html>edited while running</html>", body(fixturesites.AsuraSeries), "read again on the next request")

	require.NoError(t, os.Remove(page))
	require.Equal(t, string(fixture(t, "asura", "series.html")), body(fixturesites.AsuraSeries), "gone: the fixture again")

	// An override that cannot be read is a 404 and a log line, not the
	// fixture it was meant to replace.
	require.NoError(t, os.Mkdir(filepath.Join(dir, "asura", "chapter.html"), 0o755))
	_, err = get(fixturesites.AsuraChapter)
	var se *fetch.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, http.StatusNotFound, se.Status)
	require.Contains(t, logs.String(), "fixture override unreadable")
	require.Contains(t, logs.String(), filepath.Join(dir, "asura", "chapter.html"))

	// A file the pages table does not name is at no URL, however it is asked.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "asura", "secret.html"), []byte("secret"), 0o644))
	for _, u := range []string{"https://asurascans.com/secret.html", "https://asurascans.com/asura/secret.html",
		"https://asurascans.com/comics/..%2F..%2Fasura%2Fsecret.html", fixturesites.AsuraSeries + "/secret.html"} {
		_, err := get(u)
		require.ErrorAs(t, err, &se, u)
		require.Equal(t, http.StatusNotFound, se.Status, u)
	}
}

func TestOverrideMustBeADirectory(t *testing.T) {
	t.Parallel()
	_, err := fixturesites.Start(fixturesites.Options{Override: filepath.Join(t.TempDir(), "missing")})
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "override directory")

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = fixturesites.Start(fixturesites.Options{Override: file})
	require.ErrorContains(t, err, "is not a directory")
}

// On a network the test shares (Options.Net), the test's own answer for a
// URL wins over the fixture's, the other pages stay the fixtures', and a
// Close leaves the network to its owner.
func TestATestsOwnAnswersWinOnASharedNetwork(t *testing.T) {
	t.Parallel()
	n := fakenet.New(t)
	s, err := fixturesites.Start(fixturesites.Options{Net: n})
	require.NoError(t, err)
	n.Set(fixturesites.AsuraSeries, http.StatusForbidden, "text/html", []byte("<html>challenge</html>"))
	f := plain(s, gateFor(s))
	asura, _ := latest.Default().Lookup("asura")
	_, err = f.Fetch(context.Background(), asura, fixturesites.AsuraSeries, fetch.Conditional{})
	var se *fetch.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, http.StatusForbidden, se.Status)
	page, err := f.Fetch(context.Background(), asura, fixturesites.AsuraChapter, fetch.Conditional{})
	require.NoError(t, err)
	require.Equal(t, fixture(t, "asura", "chapter.html"), page.Body)
	require.Equal(t, 1, s.Hits(fixturesites.AsuraSeries))

	require.NoError(t, s.Close())
	n.Set("https://cdn.test/x", http.StatusOK, "text/plain", []byte("still up"))
	_, err = n.LookupNetIP(context.Background(), "ip", "cdn.test")
	require.NoError(t, err)
	g := gate.New(gate.Options{Resolver: n, Dial: n.DialContext, RootCAs: n.RootCAs(), Timeout: 10 * time.Second})
	_, err = g.FetchImage(context.Background(), "https://cdn.test/x", "")
	require.Equal(t, gate.ClassNotImage, gate.Class(err), "the network still answers after the fixtures closed: %v", err)
}

// Every Site with a listing gets one, generated from the series pages
// served, which its registry entry reads back: the served Series with their
// Latest Chapters. An edited override page is a release the listing shows.
func TestListingsAreGeneratedFromTheSeriesPages(t *testing.T) {
	t.Parallel()
	override := t.TempDir()
	s, err := fixturesites.Start(fixturesites.Options{Override: override})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return s.DialContext(ctx, "tcp", fakenet.StandIn.String()+":443")
		},
		TLSClientConfig: &tls.Config{RootCAs: s.RootCAs(), MinVersion: tls.VersionTLS12},
	}}
	reg := latest.Default()
	read := func(name string) latest.ListingPage {
		t.Helper()
		site, _ := reg.Lookup(name)
		u, ok := site.ListingURL()
		require.True(t, ok)
		resp, err := client.Get(u)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, u)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		pu, _ := url.Parse(u)
		lp, err := site.Listing.Read(body, pu, time.Now())
		require.NoError(t, err, "%s", body)
		return lp
	}
	for _, name := range []string{"royalroad", "novelfull", "demonic", "mangadex", "asura"} {
		lp := read(name)
		site, _ := reg.Lookup(name)
		// One entry per series page the fixture server holds for the Site
		// (demonic also serves asura's story, for Works).
		series := map[string][]string{"royalroad": {fixturesites.RoyalroadSeries}, "novelfull": {fixturesites.NovelFullSeries},
			"demonic": {fixturesites.DemonicSeries, fixturesites.DemonicORVSeries}, "mangadex": {fixturesites.MangadexSeries},
			// asura's old structure's page is the same Series: one entry.
			"asura": {fixturesites.AsuraSeries}}[name]
		var want, got []string
		for _, u := range series {
			ref, err := site.ResolveOn(u)
			require.NoError(t, err)
			want = append(want, ref.Key)
		}
		for _, up := range lp.Updates {
			got = append(got, up.Key)
		}
		require.ElementsMatch(t, want, got, name)
	}
	before := read("royalroad").Updates[0].Chapter

	fixture, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "sites", "royalroad", "series.html"))
	require.NoError(t, err)
	edited := strings.Replace(string(fixture), before.Label, before.Label+" (Revised)", 1)
	require.NotEqual(t, string(fixture), edited, "the fixture names its newest chapter %q", before.Label)
	require.NoError(t, os.Mkdir(filepath.Join(override, "royalroad"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(override, "royalroad", "series.html"), []byte(edited), 0o644))
	after := read("royalroad").Updates[0]
	require.NotEqual(t, before.Label, after.Chapter.Label, "the edit shows in the listing at once")
	require.False(t, after.At.IsZero())
}
