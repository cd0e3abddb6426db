package latest

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// listingNow is the clock the listing fixtures' relative times count back from.
var listingNow = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

type listingCase struct {
	name    string
	site    *Site
	body    []byte
	page    string
	updates []string // key|label|number|url|locked|at (RFC 3339 or "")
	reach   string   // RFC 3339 or ""
	problem string
}

func updateRow(u Update) string {
	num := ""
	if u.Chapter.Number != nil {
		num = formatNumber(*u.Chapter.Number)
	}
	at := ""
	if !u.At.IsZero() {
		at = u.At.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%s|%s|%s|%s|%t|%s", u.Key, u.Chapter.Label, num, u.Chapter.URL, u.Chapter.Locked, at)
}

// Every Site with a listing reads its listing fixture: entries of Series
// Lectern does not hold are answered like any other (the Poll ignores
// them), entries off the Site's hosts, announcements and the page's other
// blocks are not entries, a Series listed twice is one entry, and the
// Site's challenge page is no listing.
func TestListings(t *testing.T) {
	t.Parallel()
	toon := familySite(t, "toonhaven", "madara", Manga, []string{"toonhaven.test"}, nil)
	ink := familySite(t, "inkstone", "mangathemesia", Manga, []string{"inkstone.test"}, nil)
	lantern := familySite(t, "lanternreads", "lightnovelwp", Novel, []string{"lanternreads.test"}, nil)
	rr, _ := reg.Lookup("royalroad")
	nf, _ := reg.Lookup("novelfull")
	dm, _ := reg.Lookup("demonic")
	md, _ := reg.Lookup("mangadex")
	asura, _ := reg.Lookup("asura")
	cases := []listingCase{{
		name: "madara", site: toon, body: readFamilyFixture(t, "madara", "listing.html"), page: "https://toonhaven.test/",
		updates: []string{
			"toonhaven:the-lantern-keeper|Chapter 44|44|https://toonhaven.test/manga/the-lantern-keeper/chapter-44/|false|2026-12-04T09:48:00Z",
			"toonhaven:iron-orchard|Chapter 101|101||true|2026-12-04T07:00:00Z",
			"toonhaven:not-held-here|Chapter 7|7|https://toonhaven.test/manga/not-held-here/chapter-7/|false|2026-11-20T00:00:00Z",
		},
		reach: "2026-11-20T00:00:00Z",
	}, {
		name: "madara/challenge", site: toon, body: readFamilyFixture(t, "madara", "challenge.html"), page: "https://toonhaven.test/", problem: ProblemChallenge,
	}, {
		name: "madara/series page", site: toon, body: readFamilyFixture(t, "madara", "series.html"), page: "https://toonhaven.test/", problem: ProblemNotListingPage,
	}, {
		name: "mangathemesia", site: ink, body: readFamilyFixture(t, "mangathemesia", "listing.html"), page: "https://inkstone.test/",
		updates: []string{
			"inkstone:crimson-tidewalker|Chapter 89|89|https://inkstone.test/crimson-tidewalker-chapter-89/|false|2026-12-04T09:55:00Z",
			"inkstone:paper-lanterns|Chapter 2|2|https://inkstone.test/paper-lanterns-chapter-2/|true|2026-12-04T09:00:00Z",
			"inkstone:unheld-voyage|Chapter 31|31|https://inkstone.test/unheld-voyage-chapter-31/|false|2026-12-04T06:00:00Z",
		},
		reach: "2026-12-04T06:00:00Z",
	}, {
		name: "mangathemesia/challenge", site: ink, body: readFamilyFixture(t, "mangathemesia", "challenge.html"), page: "https://inkstone.test/", problem: ProblemChallenge,
	}, {
		name: "lightnovelwp", site: lantern, body: readFamilyFixture(t, "lightnovelwp", "listing.html"), page: "https://lanternreads.test/",
		updates: []string{
			"lanternreads:the-salt-archivist|Chapter 215 - Low Water|215|https://lanternreads.test/the-salt-archivist-chapter-215/|false|2026-12-04T09:40:00Z",
			"lanternreads:glass-orchard|Chapter 2|2|https://lanternreads.test/glass-orchard-chapter-2/|true|2026-12-04T08:00:00Z",
			"lanternreads:nobody-holds-this|Chapter 9|9|https://lanternreads.test/nobody-holds-this-chapter-9/|false|2026-12-04T05:00:00Z",
		},
		reach: "2026-12-04T05:00:00Z",
	}, {
		name: "lightnovelwp/challenge", site: lantern, body: readFamilyFixture(t, "lightnovelwp", "challenge.html"), page: "https://lanternreads.test/", problem: ProblemChallenge,
	}, {
		name: "royalroad", site: rr, body: readFixture(t, "royalroad", "listing.html"), page: "https://www.royalroad.com/fictions/latest-updates",
		updates: []string{
			"royalroad:21220|Chapter 109 - New Dawn|109|https://www.royalroad.com/fiction/21220/mother-of-learning/chapter/1100001|false|2026-12-04T08:00:00Z",
			"royalroad:99001|Part 3||https://www.royalroad.com/fiction/99001/a-fiction-nobody-holds/chapter/2000001|false|2026-12-04T06:00:00Z",
		},
		reach: "2026-12-04T06:00:00Z",
	}, {
		name: "royalroad/challenge", site: rr, body: readFixture(t, "royalroad", "challenge.html"), page: "https://www.royalroad.com/fictions/latest-updates", problem: ProblemChallenge,
	}, {
		name: "novelfull", site: nf, body: readFixture(t, "novelfull", "listing.html"), page: "https://novelfull.com/latest-release-novel",
		updates: []string{
			"novelfull:martial-peak|Chapter 6010 - The End|6010|https://novelfull.com/martial-peak/chapter-6010-the-end.html|false|",
			"novelfull:an-unheld-novel|Chapter 77|77|https://novelfull.com/an-unheld-novel/chapter-77.html|false|",
		},
	}, {
		name: "demonic", site: dm, body: readFixture(t, "demonic", "listing.html"), page: "https://demonicscans.org/lastupdates.php",
		updates: []string{
			"demonic:Solo-Max-Level-Newbie|Chapter 183|183|https://demonicscans.org/chaptered.php?manga=4812&chapter=183|false|2026-12-03T00:00:00Z",
			"demonic:Nano-Machine|Chapter 260|260|https://demonicscans.org/chaptered.php?manga=77&chapter=260|false|2026-12-02T00:00:00Z",
		},
		reach: "2026-12-02T00:00:00Z",
	}, {
		name: "demonic/error", site: dm, body: readFixture(t, "demonic", "error.html"), page: "https://demonicscans.org/lastupdates.php", problem: ProblemNotFound,
	}, {
		name: "mangadex", site: md, body: readFixture(t, "mangadex", "listing.json"), page: mangadexListingURL,
		updates: []string{
			"mangadex:8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f|Chapter 13 - After the Festival|13|https://mangadex.org/chapter/c1000000-0000-4000-8000-000000000106|false|2026-12-04T09:30:00Z",
			"mangadex:aaaaaaaa-1111-4222-8333-444444444444|Chapter 48|48|https://mangadex.org/chapter/c1000000-0000-4000-8000-000000000201|false|2026-12-04T09:10:00Z",
		},
		reach: "2026-12-04T09:10:00Z",
	}, {
		name: "mangadex/error", site: md, body: readFixture(t, "mangadex", "error.json"), page: mangadexListingURL, problem: ProblemNotListingPage,
	}, {
		name: "mangadex/a manga feed", site: md, body: readFixture(t, "mangadex", "series.json"), page: mangadexListingURL, problem: ProblemNotListingPage,
	}, {
		name: "asura", site: asura, body: readFixture(t, "asura", "listing.json"), page: asuraListingURL,
		updates: []string{
			"asura:omniscient-readers-viewpoint|Chapter 252|252|https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b/chapter/252|true|2026-12-04T09:30:00Z",
			"asura:tower-of-the-unheld|Chapter 17 - The Gate|17|https://asurascans.com/comics/tower-of-the-unheld-q8w2e4r6/chapter/17|false|2026-12-04T08:15:42Z",
			"asura:a-query-kept-out|Chapter 3|3|https://asurascans.com/comics/a-query-kept-out-k9j8h7g6/chapter/3|false|2026-12-04T07:00:00Z",
			"asura:only-a-slug|Chapter 40.5|40.5|https://asurascans.com/comics/only-a-slug/chapter/40.5|false|2026-12-03T22:00:00Z",
		},
		reach: "2026-12-03T22:00:00Z",
	}, {
		name: "asura/challenge", site: asura, body: readFixture(t, "asura", "challenge.html"), page: asuraListingURL, problem: ProblemChallenge,
	}, {
		name: "asura/series page", site: asura, body: readFixture(t, "asura", "series.html"), page: asuraListingURL, problem: ProblemNotListingPage,
	}, {
		name: "asura/error", site: asura, body: readFixture(t, "asura", "error.json"), page: asuraListingURL, problem: ProblemNotListingPage,
	}, {
		name: "novelfull/challenge", site: nf, body: readFixture(t, "novelfull", "challenge.html"), page: "https://novelfull.com/latest-release-novel", problem: ProblemChallenge,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			page, err := url.Parse(c.page)
			require.NoError(t, err)
			got, err := c.site.Listing.Read(c.body, page, listingNow)
			if c.problem != "" {
				require.Error(t, err)
				require.Equal(t, c.problem, ProblemCode(err), "%v", err)
				return
			}
			require.NoError(t, err)
			rows := make([]string, len(got.Updates))
			for i, u := range got.Updates {
				rows[i] = updateRow(u)
				ref, err := c.site.ResolveOn(u.SeriesURL)
				require.NoError(t, err)
				require.Equal(t, u.Key, ref.Key, "an entry's Series URL names its key")
			}
			require.Equal(t, c.updates, rows)
			if c.reach == "" {
				require.True(t, got.Reach.IsZero(), "entries without times leave the reach unknown")
			} else {
				require.Equal(t, c.reach, got.Reach.UTC().Format(time.RFC3339))
			}
		})
	}
}

// The Sites with a listing and those without; each without says why in
// docs/adr/0028-site-listings.md.
func TestListingSites(t *testing.T) {
	t.Parallel()
	var with []string
	for _, s := range Default().Sites() {
		if u, ok := s.ListingURL(); ok {
			require.True(t, s.HasHost(mustURL(t, u).Hostname()), "%s's listing is on its hosts", s.Name)
			with = append(with, s.Name)
		}
	}
	require.Equal(t, []string{"asura", "demonic", "mangadex", "novelfull", "royalroad"}, with)
	for _, f := range []string{"madara", "mangathemesia", "lightnovelwp"} {
		kind := Manga
		if f == "lightnovelwp" {
			kind = Novel
		}
		s := familySite(t, "fam-"+f, f, kind, []string{f + ".test"}, nil)
		u, ok := s.ListingURL()
		require.True(t, ok, "family %s has a listing", f)
		require.Equal(t, "https://"+f+".test/", u)
	}
	_, err := NewRegistry(&Site{Name: "x", Kind: Manga, Hosts: []string{"x.test"}, SeriesPath: func(*url.URL) (string, string, bool) { return "", "", false },
		Title: func([]byte, *url.URL) (string, error) { return "", nil }, Latest: func([]byte, *url.URL) (Chapter, error) { return Chapter{}, nil },
		Cover: func([]byte, *url.URL) (string, error) { return "", nil }, Chapters: func([]byte, *url.URL) ([]Chapter, error) { return nil, nil },
		Content: func([]byte, *url.URL) (Content, error) { return Content{}, nil }, Listing: &Listing{Path: "latest"}})
	require.Error(t, err, "a listing without Read is refused at start")
}

func TestUpdateNewerThan(t *testing.T) {
	t.Parallel()
	n := func(f float64) *float64 { return &f }
	u := Update{Chapter: Chapter{Label: "Chapter 44", Number: n(44)}}
	require.True(t, u.NewerThan("Chapter 43", n(43)))
	require.False(t, u.NewerThan("Chapter 44", n(44)))
	require.False(t, u.NewerThan("Chapter 45", n(45)), "an entry behind the stored chapter (a lagging listing) is not newer")
	require.False(t, u.NewerThan("", nil), "a Series never polled is due anyway")
	require.True(t, Update{Chapter: Chapter{Label: "Epilogue"}}.NewerThan("Chapter 44", n(44)), "without numbers a different label is newer")
	require.False(t, Update{Chapter: Chapter{Label: " Epilogue "}}.NewerThan("Epilogue", nil))
}

func TestWhenOf(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"12 mins ago": "2026-12-04T09:48:00Z", "an hour ago": "2026-12-04T09:00:00Z", "2 days ago": "2026-12-02T10:00:00Z",
		"just now": "2026-12-04T10:00:00Z", "November 20, 2026": "2026-11-20T00:00:00Z", "1796371200": "2026-12-04T08:00:00Z",
		"2026-12-04T08:00:00Z": "2026-12-04T08:00:00Z", "soon": "", "": "",
	} {
		got := whenOf(in, listingNow)
		if want == "" {
			require.True(t, got.IsZero(), in)
			continue
		}
		require.Equal(t, want, got.UTC().Format(time.RFC3339), in)
	}
}
