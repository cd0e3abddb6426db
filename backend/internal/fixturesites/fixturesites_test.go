package fixturesites_test

import (
	"bytes"
	"context"
	"image/png"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/latest"
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

func fixture(t *testing.T, site, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "sites", site, file))
	require.NoError(t, err)
	return b
}

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
		// The registry's own series URL (no "www.") answers too: that is the
		// address a Poll fetches.
		if site.Browser == nil {
			page, err := f.Fetch(context.Background(), site, ref.SeriesURL, fetch.Conditional{})
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
	require.Equal(t, 7, covers, "one Cover per Site, and asura's old host")
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
	require.ErrorContains(t, err, "only the fixture Sites are reachable")
	_, err = s.DialContext(context.Background(), "tcp", fixturesites.StandIn.String()+":80")
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
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
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
