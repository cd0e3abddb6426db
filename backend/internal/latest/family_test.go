package latest

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const familyFixtureDir = "../../../testdata/families"

func readFamilyFixture(t testing.TB, family, file string) []byte {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(familyFixtureDir, family, file))
	require.NoError(t, err)
	return body
}

func familySite(t testing.TB, name, family string, kind Kind, hosts []string, opts map[string]string) *Site {
	t.Helper()
	s, err := NewFamilySite(name, family, hosts, kind, opts)
	require.NoError(t, err)
	_, err = NewRegistry(append(BuiltIn(), s)...)
	require.NoError(t, err, "a family Site is a complete registry entry")
	return s
}

func mustURL(t testing.TB, raw string) *url.URL {
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u
}

// familySeriesCase is one series fixture of a family and what every
// question answers on it.
type familySeriesCase struct {
	family, file, page string
	site               *Site
	title, cover       string
	chapters           []string // oldest first, as rows
	latest             string   // a row; "" when problem is set
	problem            string
}

func TestFamilySeriesPages(t *testing.T) {
	t.Parallel()
	toon := familySite(t, "toonhaven", "madara", Manga, []string{"toonhaven.test"}, nil)
	ink := familySite(t, "inkstone", "mangathemesia", Manga, []string{"inkstone.test"}, nil)
	lantern := familySite(t, "lanternreads", "lightnovelwp", Novel, []string{"lanternreads.test"}, nil)
	keeper := "https://toonhaven.test/manga/the-lantern-keeper/"
	cases := []familySeriesCase{{
		family: "madara", file: "series.html", page: keeper, site: toon,
		title: "The Lantern Keeper",
		cover: "https://toonhaven.test/wp-content/uploads/WP-manga/data/lantern-keeper.jpg",
		chapters: []string{
			"Chapter 40|40|" + keeper + "chapter-40/|false",
			"Chapter 41|41|" + keeper + "chapter-41/|false",
			"Chapter 41.5 - Side Story|41.5|" + keeper + "chapter-41-5/|false",
			"Chapter 42|42|" + keeper + "chapter-42/|true",
			"Chapter 43|43||true",
		},
		latest: "Chapter 43|43||true",
	}, {
		family: "madara", file: "series-nocover.html", page: "https://toonhaven.test/manga/quiet-harbor/", site: toon,
		title: "Quiet Harbor", cover: "",
		chapters: []string{"Chapter 1|1|https://toonhaven.test/manga/quiet-harbor/chapter-1/|false"},
		latest:   "Chapter 1|1|https://toonhaven.test/manga/quiet-harbor/chapter-1/|false",
	}, {
		family: "madara", file: "series-ajax.html", page: "https://toonhaven.test/manga/iron-orchard/", site: toon,
		title: "Iron Orchard", cover: "https://toonhaven.test/wp-content/uploads/WP-manga/data/iron-orchard.webp",
		chapters: []string{}, problem: ProblemNoChapters,
	}, {
		family: "madara", file: "error404.html", page: keeper, site: toon, problem: ProblemNotSeriesPage,
	}, {
		family: "madara", file: "challenge.html", page: keeper, site: toon, problem: ProblemChallenge,
	}, {
		family: "mangathemesia", file: "series.html", page: "https://inkstone.test/manga/crimson-tidewalker/", site: ink,
		title: "Crimson Tidewalker", cover: "https://inkstone.test/wp-content/uploads/2026/03/crimson-tidewalker.jpg",
		chapters: []string{
			"Chapter 86|86|https://inkstone.test/crimson-tidewalker-chapter-86/|false",
			"Chapter 86.5|86.5|https://inkstone.test/crimson-tidewalker-chapter-86-5/|false",
			"Chapter 87|87|https://inkstone.test/crimson-tidewalker-chapter-87/|true",
			"Chapter 88|88||true",
		},
		latest: "Chapter 88|88||true",
	}, {
		family: "mangathemesia", file: "series-nocover.html", page: "https://inkstone.test/manga/paper-lanterns/", site: ink,
		title: "Paper Lanterns", cover: "",
		chapters: []string{"Chapter 1|1|https://inkstone.test/paper-lanterns-chapter-1/|false"},
		latest:   "Chapter 1|1|https://inkstone.test/paper-lanterns-chapter-1/|false",
	}, {
		family: "mangathemesia", file: "error404.html", page: "https://inkstone.test/manga/gone/", site: ink, problem: ProblemNotSeriesPage,
	}, {
		family: "mangathemesia", file: "challenge.html", page: "https://inkstone.test/manga/gone/", site: ink, problem: ProblemChallenge,
	}, {
		family: "lightnovelwp", file: "series.html", page: "https://lanternreads.test/series/the-salt-archivist/", site: lantern,
		title: "The Salt Archivist", cover: "https://lanternreads.test/wp-content/uploads/2026/05/salt-archivist.jpg",
		chapters: []string{
			"Chapter 212 - Ledger of Waves|212|https://lanternreads.test/the-salt-archivist-chapter-212/|false",
			"Chapter 212.5 - Interlude|212.5|https://lanternreads.test/the-salt-archivist-chapter-212-5/|false",
			"Chapter 213 - Tide Tables|213|https://lanternreads.test/the-salt-archivist-chapter-213/|true",
			"Chapter 214 - Brine and Bone|214||true",
		},
		latest: "Chapter 214 - Brine and Bone|214||true",
	}, {
		family: "lightnovelwp", file: "series-nocover.html", page: "https://lanternreads.test/series/glass-orchard/", site: lantern,
		title: "Glass Orchard", cover: "",
		chapters: []string{"Chapter 1|1|https://lanternreads.test/glass-orchard-chapter-1/|false"},
		latest:   "Chapter 1|1|https://lanternreads.test/glass-orchard-chapter-1/|false",
	}, {
		family: "lightnovelwp", file: "error404.html", page: "https://lanternreads.test/series/gone/", site: lantern, problem: ProblemNotSeriesPage,
	}, {
		family: "lightnovelwp", file: "challenge.html", page: "https://lanternreads.test/series/gone/", site: lantern, problem: ProblemChallenge,
	}}
	for _, c := range cases {
		t.Run(c.family+"/"+c.file, func(t *testing.T) {
			body := readFamilyFixture(t, c.family, c.file)
			pu := mustURL(t, c.page)
			newest, lerr := c.site.Latest(body, pu)
			if c.problem != "" {
				require.Equal(t, c.problem, ProblemCode(lerr), "Latest: %v", lerr)
				if c.problem != ProblemNoChapters {
					_, err := c.site.Cover(body, pu)
					require.Equal(t, c.problem, ProblemCode(err), "Cover on a body that is not the page")
					_, err = c.site.Chapters(body, pu)
					require.Equal(t, c.problem, ProblemCode(err), "Chapters on a body that is not the page")
					return
				}
			} else {
				require.NoError(t, lerr)
				require.Equal(t, c.latest, row(newest), "the newest chapter listed, locked or not")
			}
			title, err := c.site.Title(body, pu)
			require.NoError(t, err)
			require.Equal(t, c.title, title)
			cover, err := c.site.Cover(body, pu)
			require.NoError(t, err)
			require.Equal(t, c.cover, cover, "the real image, never a placeholder, the banner or the sidebar's")
			chapters, err := c.site.Chapters(body, pu)
			require.NoError(t, err)
			require.Equal(t, c.chapters, rows(chapters), "oldest first, announcements and other Series' chapters left out")
		})
	}
}

func TestMadaraAjaxChapterList(t *testing.T) {
	t.Parallel()
	series := "https://toonhaven.test/manga/iron-orchard/"
	body := readFamilyFixture(t, "madara", "series-ajax.html")
	list := readFamilyFixture(t, "madara", "chapters-ajax.html")
	want := []string{
		"Chapter 99|99|" + series + "chapter-99/|false",
		"Chapter 100|100|" + series + "chapter-100/|false",
		"Chapter 101|101|" + series + "chapter-101/|true",
	}
	for _, tc := range []struct {
		opts map[string]string
		post string
		form string
	}{
		{nil, series + "ajax/chapters/", ""},
		{map[string]string{OptChapters: ChaptersAjax}, series + "ajax/chapters/", ""},
		{map[string]string{OptChapters: ChaptersAdminAjax}, "https://toonhaven.test/wp-admin/admin-ajax.php", "action=manga_get_chapters&manga=5120"},
	} {
		site := familySite(t, "toonhaven", "madara", Manga, []string{"toonhaven.test"}, tc.opts)
		f := &fixtureFetcher{pages: map[string][]byte{"POST " + tc.post: list}}
		newest, err := site.LatestChapter(context.Background(), f, series, body)
		require.NoError(t, err, "options %v", tc.opts)
		require.Equal(t, want[2], row(newest))
		all, err := site.AllChapters(context.Background(), f, series, body)
		require.NoError(t, err)
		require.Equal(t, want, rows(all), "the ajax answer, without the Hiatus entry")
		require.Equal(t, []string{"POST " + tc.post + " " + tc.form, "POST " + tc.post + " " + tc.form}, f.asked,
			"one POST per question, through the caller's fetcher and nothing else")
	}

	// A page that lists its chapters needs no second request.
	site := familySite(t, "toonhaven", "madara", Manga, []string{"toonhaven.test"}, nil)
	f := &fixtureFetcher{}
	newest, err := site.LatestChapter(context.Background(), f, "https://toonhaven.test/manga/the-lantern-keeper/", readFamilyFixture(t, "madara", "series.html"))
	require.NoError(t, err)
	require.Equal(t, "Chapter 43", newest.Label)
	require.Empty(t, f.asked)

	// The chapter list endpoint failing is an error, never an empty list.
	f = &fixtureFetcher{failed: errors.New("connection reset")}
	_, err = site.LatestChapter(context.Background(), f, series, body)
	require.ErrorContains(t, err, "connection reset")
}

func TestFamilyChapterPages(t *testing.T) {
	t.Parallel()
	toon := familySite(t, "toonhaven", "madara", Manga, []string{"toonhaven.test"}, nil)
	novels := familySite(t, "lanternnovels", "madara", Novel, []string{"lanternnovels.test"}, nil)
	ink := familySite(t, "inkstone", "mangathemesia", Manga, []string{"inkstone.test"}, nil)
	lantern := familySite(t, "lanternreads", "lightnovelwp", Novel, []string{"lanternreads.test"}, nil)

	c, err := toon.Content(readFamilyFixture(t, "madara", "chapter.html"), mustURL(t, "https://toonhaven.test/manga/the-lantern-keeper/chapter-41/"))
	require.NoError(t, err)
	require.Equal(t, []string{
		"https://cdn.toonhaven.test/manga_6a1/ch41/01.jpg",
		"https://cdn.toonhaven.test/manga_6a1/ch41/02.jpg",
		"https://cdn.toonhaven.test/manga_6a1/ch41/03.jpg",
	}, c.Pages, "the lazy images' real addresses, without the placeholder or the ad")

	c, err = novels.Content(readFamilyFixture(t, "madara", "chapter-novel.html"), mustURL(t, "https://lanternnovels.test/novel/moonlit-ledger/chapter-7/"))
	require.NoError(t, err)
	require.Equal(t, "Chapter 7: The Ledger Opens\n\nThe clerk turned the first page.\n\nInk had dried in the shape of a name.\n\n"+
		"Translator's note: the name is a pun on \"moon\" in the original.", c.Text)

	c, err = ink.Content(readFamilyFixture(t, "mangathemesia", "chapter.html"), mustURL(t, "https://inkstone.test/crimson-tidewalker-chapter-86/"))
	require.NoError(t, err)
	require.Equal(t, []string{"https://cdn.inkstone.test/2026/11/ct-86/001.jpg", "https://cdn.inkstone.test/2026/11/ct-86/002.jpg"}, c.Pages)

	c, err = lantern.Content(readFamilyFixture(t, "lightnovelwp", "chapter.html"), mustURL(t, "https://lanternreads.test/the-salt-archivist-chapter-212/"))
	require.NoError(t, err)
	require.Equal(t, "The archivist counted the jars twice.\n\nSalt does not forget, she said, and neither do I.\n\n"+
		"TL note: \"jars\" here is the same word as \"memories\".", c.Text)

	for _, tc := range []struct {
		site   *Site
		family string
	}{{toon, "madara"}, {ink, "mangathemesia"}, {lantern, "lightnovelwp"}} {
		_, err := tc.site.Content(readFamilyFixture(t, tc.family, "error404.html"), nil)
		require.Equal(t, ProblemNotChapterPage, ProblemCode(err), tc.family)
		_, err = tc.site.Content(readFamilyFixture(t, tc.family, "challenge.html"), nil)
		require.Equal(t, ProblemChallenge, ProblemCode(err), tc.family)
	}
}

func TestFamilyURLs(t *testing.T) {
	t.Parallel()
	toon := familySite(t, "toonhaven", "madara", Manga, []string{"toonhaven.test", "toonhaven2.test"}, nil)
	ink := familySite(t, "inkstone", "mangathemesia", Manga, []string{"inkstone.test"}, nil)
	comics := familySite(t, "comicden", "madara", Manga, []string{"comicden.test"}, map[string]string{OptSeriesPath: "/read/"})
	reg, err := NewRegistry(append(BuiltIn(), toon, ink, comics)...)
	require.NoError(t, err)
	for _, tc := range []struct{ url, key, series string }{
		{"https://toonhaven.test/manga/iron-orchard/", "toonhaven:iron-orchard", "https://toonhaven.test/manga/iron-orchard/"},
		{"https://www.toonhaven2.test/manga/iron-orchard/chapter-12/?style=list", "toonhaven:iron-orchard", "https://toonhaven2.test/manga/iron-orchard/"},
		{"https://toonhaven.test/webtoon/iron-orchard/chapter-1/p/2", "toonhaven:iron-orchard", "https://toonhaven.test/webtoon/iron-orchard/"},
		{"https://inkstone.test/manga/crimson-tidewalker/", "inkstone:crimson-tidewalker", "https://inkstone.test/manga/crimson-tidewalker/"},
		{"https://inkstone.test/series/crimson-tidewalker", "inkstone:crimson-tidewalker", "https://inkstone.test/series/crimson-tidewalker/"},
		{"https://comicden.test/read/odd-path/chapter-3/", "comicden:odd-path", "https://comicden.test/read/odd-path/"},
	} {
		ref, err := reg.Resolve(tc.url)
		require.NoError(t, err, tc.url)
		require.Equal(t, tc.key, ref.Key, tc.url)
		require.Equal(t, tc.series, ref.SeriesURL, tc.url)
	}
	for _, raw := range []string{
		"https://inkstone.test/crimson-tidewalker-chapter-86/", // a root chapter names no Series
		"https://comicden.test/manga/odd-path/",                // the option replaces the usual paths
		"https://toonhaven.test/manga-genre/action/",
	} {
		_, err := reg.Resolve(raw)
		require.ErrorIs(t, err, ErrNotSeriesURL, raw)
	}
}

func TestNewFamilySiteRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, family string
		hosts        []string
		kind         Kind
		opts         map[string]string
		says         string
	}{
		{"x", "wordpress", []string{"a.test"}, Manga, nil, "unknown family"},
		{"asura", "madara", []string{"a.test"}, Manga, nil, "built-in"},
		{"Bad_Name", "madara", []string{"a.test"}, Manga, nil, "lower-case"},
		{"ok", "mangathemesia", []string{"a.test"}, Novel, nil, "serves manga"},
		{"ok", "madara", nil, Manga, nil, "at least one host"},
		{"ok", "madara", []string{"10.0.0.1"}, Manga, nil, "IP address"},
		{"ok", "madara", []string{"a.test:8443"}, Manga, nil, "without scheme, port"},
		{"ok", "madara", []string{"*.a.test"}, Manga, nil, "wildcard"},
		{"ok", "madara", []string{"localhost"}, Manga, nil, "needs a dot"},
		{"ok", "madara", []string{"a.test", "www.a.test"}, Manga, nil, "twice"},
		{"ok", "madara", []string{"a.test"}, Manga, map[string]string{"selector": "div.x"}, "no option"},
		{"ok", "madara", []string{"a.test"}, Manga, map[string]string{OptChapters: "graphql"}, "not one of"},
		{"ok", "madara", []string{"a.test"}, Manga, map[string]string{OptSeriesPath: "a/b"}, "one path segment"},
	} {
		_, err := NewFamilySite(tc.name, tc.family, tc.hosts, tc.kind, tc.opts)
		require.ErrorIs(t, err, ErrInvalidSite, "%+v", tc)
		require.ErrorContains(t, err, tc.says)
	}
	s, err := NewFamilySite("ok-2", "madara", []string{"WWW.Example.TEST"}, "", nil)
	require.NoError(t, err)
	require.Equal(t, []string{"example.test"}, s.Hosts)
	require.Equal(t, Manga, s.Kind, "the family's usual Library")
}
