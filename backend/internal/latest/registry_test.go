package latest

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"
)

// reg is the registry of the built-in Sites the package's tests ask. A
// test that needs another Site builds its own registry.
var reg = Default()

// A seventh Site is one registry entry: this one is written the way
// docs/adding-a-site.md says, and nothing outside the entry is edited for
// Resolve, Lookup, Sites, the dispatch and Probe to use it. It lives in a
// registry of its own: no other registry, and no other test, sees it.
func TestSeventhSiteIsOneEntry(t *testing.T) {
	t.Parallel()
	var seventh *Site
	chapters := func(body []byte, page *url.URL) ([]Chapter, error) {
		doc, err := parseHTML(body, ProblemNotSeriesPage)
		if err != nil {
			return nil, err
		}
		if doc.Find("main.series").Length() == 0 {
			return nil, Diagnose(body, ProblemNotSeriesPage, "no main.series")
		}
		base := seventh.baseURL(page)
		var out []Chapter
		doc.Find("main.series ol.chapters a").Each(func(_ int, a *goquery.Selection) {
			if link, ok := seventh.siteURL(base, a.AttrOr("href", "")); ok {
				out = append(out, chapterOf(a.Text(), nil, link, false))
			}
		})
		return out, nil
	}
	seventh = &Site{
		Name:  "pillmanga",
		Kind:  Manga,
		Hosts: []string{"pill-manga.example"},
		SeriesPath: func(u *url.URL) (string, string, bool) {
			var buf [maxPathParts]string
			p, ok := pathParts(u, &buf)
			if !ok || len(p) < 2 || p[0] != "manga" || !validSlug(p[1]) {
				return "", "", false
			}
			return p[1], "/manga/" + p[1], true
		},
		Title:    func(body []byte, page *url.URL) (string, error) { return "", nil },
		Latest:   func(body []byte, page *url.URL) (Chapter, error) { return latestOf(chapters(body, page)) },
		Cover:    func(body []byte, page *url.URL) (string, error) { return "", nil },
		Chapters: chapters,
		Content: func(body []byte, page *url.URL) (Content, error) {
			return Content{}, problem(ProblemNotChapterPage, "pages are not read")
		},
	}
	r, err := NewRegistry(append(BuiltIn(), seventh)...)
	require.NoError(t, err)

	ref, err := r.Resolve("https://www.pill-manga.example/manga/one-piece/chapter-1100?x=1")
	require.NoError(t, err)
	require.Equal(t, Ref{Key: "pillmanga:one-piece", Site: "pillmanga", Kind: Manga, SeriesURL: "https://pill-manga.example/manga/one-piece"}, ref)

	got, ok := r.Lookup("pillmanga")
	require.True(t, ok)
	require.Same(t, seventh, got)
	require.Equal(t, DefaultPace, got.Pace, "an entry without a pace gets the default")

	var names []string
	for _, s := range r.Sites() {
		names = append(names, s.Name)
	}
	require.Contains(t, names, "pillmanga")

	body := []byte(`<html><body><nav><a href="/manga/other/chapter-9">Other 9</a></nav><main class="series"><ol class="chapters">
<li><a href="/manga/one-piece/chapter-1099">Chapter 1099</a></li><li><a href="/manga/one-piece/chapter-1100">Chapter 1100</a></li></ol></main></body></html>`)
	all, err := got.AllChapters(context.Background(), &fixtureFetcher{}, ref.SeriesURL, body)
	require.NoError(t, err)
	require.Equal(t, []string{
		"Chapter 1099|1099|https://pill-manga.example/manga/one-piece/chapter-1099|false",
		"Chapter 1100|1100|https://pill-manga.example/manga/one-piece/chapter-1100|false",
	}, rows(all))

	result := Probe(got, PageSeries, ref.SeriesURL, body)
	require.True(t, result.Answered)
	require.Equal(t, "pillmanga:one-piece", result.Key)
	require.Equal(t, "Chapter 1100", result.LatestChapter.Label)

	_, err = reg.Resolve("https://pill-manga.example/manga/one-piece")
	require.ErrorIs(t, err, ErrUnknownSite, "another registry does not know the seventh Site")
	_, ok = reg.Lookup("pillmanga")
	require.False(t, ok)
}

func TestNewRegistryRefusesBrokenEntries(t *testing.T) {
	t.Parallel()
	asura, _ := reg.Lookup("asura")
	valid := func(name string, hosts ...string) *Site {
		s := *asura
		s.Name, s.Hosts, s.Browser, s.ChapterList = name, hosts, nil, nil
		return &s
	}
	cases := map[string]func() *Site{
		"duplicate name": func() *Site { return valid("asura", "other-asura.example") },
		"duplicate host": func() *Site { return valid("asura2", "asurascans.com") },
		"no hosts":       func() *Site { return valid("nohosts") },
		"www host":       func() *Site { return valid("wwwhost", "www.example.org") },
		"upper host":     func() *Site { return valid("upperhost", "Example.org") },
		"bad name":       func() *Site { return valid("bad:name", "bad-name.example") },
		"missing Cover": func() *Site {
			s := valid("nocover", "nocover.example")
			s.Cover = nil
			return s
		},
		"missing Content": func() *Site {
			s := valid("nocontent", "nocontent.example")
			s.Content = nil
			return s
		},
		"bad kind": func() *Site {
			s := valid("badkind", "badkind.example")
			s.Kind = "comic"
			return s
		},
		"browser without arrival test": func() *Site {
			s := valid("nobrowser", "nobrowser.example")
			kagane, _ := reg.Lookup("kagane")
			s.Browser = &Browser{Read: kagane.Browser.Read}
			return s
		},
	}
	for name, mk := range cases {
		s := mk()
		r, err := NewRegistry(append(BuiltIn(), s)...)
		require.Error(t, err, name)
		require.Nil(t, r, "%s: a refused entry gives no registry", name)
	}
	// The refused entries left the real ones alone.
	ref, err := reg.Resolve("https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(ref.Key, "asura:"))
}
