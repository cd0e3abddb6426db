package latest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, url   string
		key, series string
		err         error
	}{
		// asura: the rotating suffix goes, whatever it is now; the series URL keeps it.
		{"asura series", "https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b", "asura:omniscient-readers-viewpoint", "https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b", nil},
		{"asura rotated suffix", "https://asurascans.com/comics/omniscient-readers-viewpoint-0q9x8w7v", "asura:omniscient-readers-viewpoint", "https://asurascans.com/comics/omniscient-readers-viewpoint-0q9x8w7v", nil},
		{"asura digitless random suffix", "https://asurascans.com/comics/omniscient-readers-viewpoint-qzkxwvbt", "asura:omniscient-readers-viewpoint", "https://asurascans.com/comics/omniscient-readers-viewpoint-qzkxwvbt", nil},
		{"asura word kept", "https://asurascans.com/comics/solo-leveling-ragnarok", "asura:solo-leveling-ragnarok", "https://asurascans.com/comics/solo-leveling-ragnarok", nil},
		{"asura word then suffix", "https://asurascans.com/comics/solo-leveling-ragnarok-c0ffee12", "asura:solo-leveling-ragnarok", "https://asurascans.com/comics/solo-leveling-ragnarok-c0ffee12", nil},
		{"asura chapter", "https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b/chapter/250.5", "asura:omniscient-readers-viewpoint", "https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b", nil},
		{"asura old host hex", "https://asuracomic.net/series/omniscient-readers-viewpoint-a1b2c3d4", "asura:omniscient-readers-viewpoint", "https://asuracomic.net/series/omniscient-readers-viewpoint-a1b2c3d4", nil},
		{"asura old chapter", "https://asuracomic.net/series/omniscient-readers-viewpoint-a1b2c3d4/chapter/118", "asura:omniscient-readers-viewpoint", "https://asuracomic.net/series/omniscient-readers-viewpoint-a1b2c3d4", nil},
		{"asura old chapter without /series/", "https://asuracomic.net/omniscient-readers-viewpoint-a1b2c3d4/chapter/118", "asura:omniscient-readers-viewpoint", "https://asuracomic.net/series/omniscient-readers-viewpoint-a1b2c3d4", nil},
		{"asura normalised", "http://www.AsuraScans.com:443/comics/omniscient-readers-viewpoint-7f3k9a2b/?ref=home#top", "asura:omniscient-readers-viewpoint", "https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b", nil},
		{"asura listing", "https://asurascans.com/comics", "", "", ErrNotSeriesURL},
		{"asura home", "https://asurascans.com/", "", "", ErrNotSeriesURL},
		{"asura chapter without number", "https://asurascans.com/comics/x-7f3k9a2b/chapter", "", "", ErrNotSeriesURL},
		{"asura deeper page", "https://asurascans.com/comics/x-7f3k9a2b/chapter/5/comments", "", "", ErrNotSeriesURL},

		{"demonic series", "https://demonicscans.org/manga/Solo-Max-Level-Newbie", "demonic:Solo-Max-Level-Newbie", "https://demonicscans.org/manga/Solo-Max-Level-Newbie", nil},
		{"demonic reader", "https://demonicscans.org/title/Solo-Max-Level-Newbie/chapter/180/20260101", "demonic:Solo-Max-Level-Newbie", "https://demonicscans.org/manga/Solo-Max-Level-Newbie", nil},
		{"demonic normalised", "http://www.demonicscans.org/manga/Solo-Max-Level-Newbie/?x=1", "demonic:Solo-Max-Level-Newbie", "https://demonicscans.org/manga/Solo-Max-Level-Newbie", nil},
		{"demonic chaptered.php", "https://demonicscans.org/chaptered.php?manga=4812&chapter=180", "", "", ErrNotSeriesURL},
		{"demonic latest", "https://demonicscans.org/lastupdates.php", "", "", ErrNotSeriesURL},

		{"comix series", "https://comix.to/title/r8k2m-the-greatest-estate-developer", "comix:r8k2m", "https://comix.to/title/r8k2m-the-greatest-estate-developer", nil},
		{"comix chapter", "https://comix.to/title/r8k2m-the-greatest-estate-developer/5551985-chapter-205", "comix:r8k2m", "https://comix.to/title/r8k2m-the-greatest-estate-developer", nil},
		{"comix renamed slug same key", "https://comix.ws/title/r8k2m-estate-developer/", "comix:r8k2m", "https://comix.ws/title/r8k2m-estate-developer", nil},
		{"comix browse", "https://comix.to/browse", "", "", ErrNotSeriesURL},
		{"comix title page other", "https://comix.to/title/r8k2m-x/reviews", "", "", ErrNotSeriesURL},

		{"kagane series", "https://kagane.to/series/0199A4C2-7D1E-7B3A-9F21-4BE0C6D1A2F3#the-tower", "kagane:0199a4c2-7d1e-7b3a-9f21-4be0c6d1a2f3", "https://kagane.to/series/0199a4c2-7d1e-7b3a-9f21-4be0c6d1a2f3", nil},
		{"kagane reader", "https://kagane.org/series/0199a4c2-7d1e-7b3a-9f21-4be0c6d1a2f3/reader/0199a4c3-0000-7000-8000-000000000005", "kagane:0199a4c2-7d1e-7b3a-9f21-4be0c6d1a2f3", "https://kagane.org/series/0199a4c2-7d1e-7b3a-9f21-4be0c6d1a2f3", nil},
		{"kagane not a uuid", "https://kagane.to/series/the-tower", "", "", ErrNotSeriesURL},
		{"kagane search", "https://kagane.to/search?q=tower", "", "", ErrNotSeriesURL},

		{"lnw series", "https://www.lightnovelworld.com/novel/shadow-slave", "lightnovelworld:shadow-slave", "https://lightnovelworld.com/novel/shadow-slave", nil},
		{"lnw chapter", "https://www.lightnovelworld.com/novel/shadow-slave/chapter-2301", "lightnovelworld:shadow-slave", "https://lightnovelworld.com/novel/shadow-slave", nil},
		{"lnw list page", "https://lightnovelworld.co/novel/shadow-slave/chapters?page=3", "lightnovelworld:shadow-slave", "https://lightnovelworld.co/novel/shadow-slave", nil},
		{"lnw list page .com", "https://lightnovelworld.com/novel/shadow-slave/chapters/page-3", "lightnovelworld:shadow-slave", "https://lightnovelworld.com/novel/shadow-slave", nil},
		{"lnw reviews", "https://lightnovelworld.com/novel/shadow-slave/reviews", "", "", ErrNotSeriesURL},
		{"lnw genre", "https://lightnovelworld.com/genre/fantasy", "", "", ErrNotSeriesURL},

		{"novelfull series", "https://novelfull.com/the-legendary-mechanic.html", "novelfull:the-legendary-mechanic", "https://novelfull.com/the-legendary-mechanic.html", nil},
		{"novelfull list page", "https://novelfull.com/the-legendary-mechanic.html?page=2&per-page=50", "novelfull:the-legendary-mechanic", "https://novelfull.com/the-legendary-mechanic.html", nil},
		{"novelfull chapter", "https://novelfull.net/the-legendary-mechanic/chapter-1463-end.html", "novelfull:the-legendary-mechanic", "https://novelfull.net/the-legendary-mechanic.html", nil},
		{"novelfull hot list", "https://novelfull.com/hot-novel.html", "", "", ErrNotSeriesURL},
		{"novelfull index", "https://novelfull.com/index.html", "", "", ErrNotSeriesURL},

		{"mangadex title", "https://mangadex.org/title/8F3C6B2E-4D1A-4E7B-9C2D-5A6B7C8D9E0F/tourou-no-deshi", "mangadex:8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f", "https://mangadex.org/title/8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f", nil},
		{"mangadex title without slug", "http://www.mangadex.org/title/8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f/?tab=chapters#top", "mangadex:8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f", "https://mangadex.org/title/8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f", nil},
		{"mangadex api record", "https://api.mangadex.org/manga/8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f?includes[]=cover_art", "mangadex:8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f", "https://mangadex.org/title/8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f", nil},
		{"mangadex api feed", "https://api.mangadex.org/manga/8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f/feed?translatedLanguage[]=en", "mangadex:8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f", "https://mangadex.org/title/8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f", nil},
		{"mangadex chapter names no manga", "https://mangadex.org/chapter/c0000000-0000-4000-8000-000000000105", "", "", ErrNotSeriesURL},
		{"mangadex title not a uuid", "https://mangadex.org/title/tourou-no-deshi", "", "", ErrNotSeriesURL},
		{"mangadex api other", "https://api.mangadex.org/manga/8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f/aggregate", "", "", ErrNotSeriesURL},
		{"mangadex title on the api host", "https://api.mangadex.org/title/8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f", "", "", ErrNotSeriesURL},
		{"mangadex cover file", "https://uploads.mangadex.org/covers/8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f/x.jpg", "", "", ErrNotSeriesURL},

		{"royalroad fiction", "https://www.royalroad.com/fiction/48112/the-lamplighters-ledger", "royalroad:48112", "https://royalroad.com/fiction/48112/the-lamplighters-ledger", nil},
		{"royalroad chapter", "https://www.royalroad.com/fiction/48112/the-lamplighters-ledger/chapter/800006/chapter-28-the-long-street", "royalroad:48112", "https://royalroad.com/fiction/48112/the-lamplighters-ledger", nil},
		{"royalroad chapter without its slug", "https://royalroad.com/fiction/48112/the-lamplighters-ledger/chapter/800006", "royalroad:48112", "https://royalroad.com/fiction/48112/the-lamplighters-ledger", nil},
		{"royalroad normalised", "http://WWW.RoyalRoad.com/fiction/48112/the-lamplighters-ledger/?tab=reviews#top", "royalroad:48112", "https://royalroad.com/fiction/48112/the-lamplighters-ledger", nil},
		{"royalroad feed", "https://www.royalroad.com/fiction/syndication/48112", "royalroad:48112", "https://royalroad.com/fiction/48112", nil},
		{"royalroad bare id", "https://www.royalroad.com/fiction/48112", "royalroad:48112", "https://royalroad.com/fiction/48112", nil},
		{"royalroad short chapter link", "https://www.royalroad.com/fiction/chapter/800006", "", "", ErrNotSeriesURL},
		{"royalroad reviews", "https://www.royalroad.com/fiction/48112/the-lamplighters-ledger/reviews", "", "", ErrNotSeriesURL},
		{"royalroad search", "https://www.royalroad.com/fictions/search?title=lamp", "", "", ErrNotSeriesURL},
		{"royalroad not an id", "https://www.royalroad.com/fiction/lamp/the-lamplighters-ledger", "", "", ErrNotSeriesURL},

		{"webtoons list", "https://www.webtoons.com/en/fantasy/the-salt-cartographer/list?title_no=7710", "webtoons:7710", "https://webtoons.com/en/fantasy/the-salt-cartographer/list?title_no=7710", nil},
		{"webtoons list page 2", "https://www.webtoons.com/en/fantasy/the-salt-cartographer/list?title_no=7710&page=2#top", "webtoons:7710", "https://webtoons.com/en/fantasy/the-salt-cartographer/list?title_no=7710", nil},
		{"webtoons viewer", "http://www.webtoons.com/en/fantasy/the-salt-cartographer/episode-6/viewer?title_no=7710&episode_no=6", "webtoons:7710", "https://webtoons.com/en/fantasy/the-salt-cartographer/list?title_no=7710", nil},
		{"webtoons rss", "https://www.webtoons.com/en/fantasy/the-salt-cartographer/rss?title_no=7710", "webtoons:7710", "https://webtoons.com/en/fantasy/the-salt-cartographer/list?title_no=7710", nil},
		{"webtoons bare rss", "https://www.webtoons.com/rss?title_no=7710", "webtoons:7710", "https://webtoons.com/episodeList?titleNo=7710", nil},
		{"webtoons episodeList", "https://webtoons.com/episodeList?titleNo=7710", "webtoons:7710", "https://webtoons.com/episodeList?titleNo=7710", nil},
		{"webtoons list without title_no", "https://www.webtoons.com/en/fantasy/the-salt-cartographer/list", "", "", ErrNotSeriesURL},
		{"webtoons title_no not a number", "https://www.webtoons.com/en/fantasy/the-salt-cartographer/list?title_no=x", "", "", ErrNotSeriesURL},
		{"webtoons canvas", "https://www.webtoons.com/en/canvas/a-small-story/list?title_no=7710", "", "", ErrNotSeriesURL},
		{"webtoons genre page", "https://www.webtoons.com/en/genres/fantasy", "", "", ErrNotSeriesURL},

		{"unknown host", "https://tapas.io/series/abc", "", "", ErrUnknownSite},
		{"lookalike host", "https://asurascans.com.evil.example/comics/x-7f3k9a2b", "", "", ErrUnknownSite},
		{"subdomain", "https://cdn.asurascans.com/comics/x-7f3k9a2b", "", "", ErrUnknownSite},
		{"ftp", "ftp://asurascans.com/comics/x-7f3k9a2b", "", "", ErrBadURL},
		{"relative", "/comics/x-7f3k9a2b", "", "", ErrBadURL},
		{"user info", "https://user:pw@asurascans.com/comics/x-7f3k9a2b", "", "", ErrBadURL},
		{"port", "https://asurascans.com:8443/comics/x-7f3k9a2b", "", "", ErrBadURL},
		{"empty", "  ", "", "", ErrBadURL},
		{"too long", "https://asurascans.com/comics/" + strings.Repeat("a", 3000), "", "", ErrBadURL},
		{"traversal slug", "https://asurascans.com/comics/..%2Fadmin", "", "", ErrNotSeriesURL},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ref, err := reg.Resolve(tc.url)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				require.Empty(t, ref.Key)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.key, ref.Key)
			require.Equal(t, tc.series, ref.SeriesURL)
			site, _, ok := SplitKey(ref.Key)
			require.True(t, ok)
			require.Equal(t, site, ref.Site)
			s, ok := reg.Lookup(site)
			require.True(t, ok)
			require.Equal(t, s.Kind, ref.Kind)
			// The series URL is a fixed point: resolving it gives itself.
			again, err := reg.Resolve(ref.SeriesURL)
			require.NoError(t, err)
			require.Equal(t, ref, again)
		})
	}
}

func TestResolveOnPinsTheSite(t *testing.T) {
	t.Parallel()
	asura, _ := reg.Lookup("asura")
	ref, err := asura.ResolveOn("https://asuracomic.net/series/omniscient-readers-viewpoint-a1b2c3d4")
	require.NoError(t, err)
	require.Equal(t, "asura:omniscient-readers-viewpoint", ref.Key)
	_, err = asura.ResolveOn("https://comix.to/title/r8k2m-the-greatest-estate-developer")
	require.ErrorIs(t, err, ErrUnknownSite)
	require.Contains(t, err.Error(), "comix.to")
}

func TestAsuraSuffix(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"omniscient-readers-viewpoint-7f3k9a2b": "omniscient-readers-viewpoint",
		"omniscient-readers-viewpoint-a1b2c3d4": "omniscient-readers-viewpoint",
		"omniscient-readers-viewpoint-qzkxwvbt": "omniscient-readers-viewpoint", // random letters, no digit
		"solo-leveling-ragnarok":                "solo-leveling-ragnarok",       // an 8-letter word
		"the-great-champion":                    "the-great-champion",
		"tower-of-overlord":                     "tower-of-overlord",
		"nano-machine":                          "nano-machine", // 7 letters: never a suffix
		"7f3k9a2b":                              "7f3k9a2b",     // nothing before it
		"x-7F3K9A2B":                            "x-7F3K9A2B",   // upper case is not the suffix alphabet
		"level-999-12345678":                    "level-999",
	} {
		require.Equal(t, want, asuraSlug(in), in)
	}
}

func TestSplitKeyAndHasHost(t *testing.T) {
	t.Parallel()
	site, slug, ok := SplitKey("kagane:0199a4c2-7d1e-7b3a-9f21-4be0c6d1a2f3")
	require.True(t, ok)
	require.Equal(t, "kagane", site)
	require.Equal(t, "0199a4c2-7d1e-7b3a-9f21-4be0c6d1a2f3", slug)
	for _, bad := range []string{"", ":", "asura:", ":slug", "noseparator"} {
		_, _, ok := SplitKey(bad)
		require.False(t, ok, bad)
	}
	asura, _ := reg.Lookup("asura")
	require.True(t, asura.HasHost("asurascans.com"))
	require.True(t, asura.HasHost("WWW.AsuraComic.net"))
	require.False(t, asura.HasHost("cdn.asurascans.com"))
	require.False(t, asura.HasHost("comix.to"))
}

func TestRegistryEntries(t *testing.T) {
	t.Parallel()
	want := map[string]Kind{"asura": Manga, "demonic": Manga, "comix": Manga, "kagane": Manga, "lightnovelworld": Novel, "mangadex": Manga, "novelfull": Novel, "royalroad": Novel, "webtoons": Manga}
	got := map[string]Kind{}
	for _, s := range reg.Sites() {
		if _, real := want[s.Name]; !real {
			// A fake Site another test registers for the moment.
			continue
		}
		got[s.Name] = s.Kind
		require.NoError(t, s.validate(), s.Name)
		require.Positive(t, s.Pace, s.Name)
		require.LessOrEqual(t, s.Pace, DefaultPace, s.Name)
	}
	require.Equal(t, want, got)
	_, ok := reg.Lookup("tapas")
	require.False(t, ok, "an unknown site string is refused")

	kagane, _ := reg.Lookup("kagane")
	require.NotNil(t, kagane.Browser)
	require.False(t, kagane.Browser.Fallback, "kagane never falls back: a plain fetch only gets the challenge")
	novelfull, _ := reg.Lookup("novelfull")
	require.NotNil(t, novelfull.Browser)
	require.True(t, novelfull.Browser.Fallback)
	for _, name := range []string{"asura", "demonic", "comix", "lightnovelworld", "mangadex", "royalroad", "webtoons"} {
		s, _ := reg.Lookup(name)
		require.Nil(t, s.Browser, name)
	}
	asura, _ := reg.Lookup("asura")
	require.Equal(t, time.Second, asura.Pace)
}

// Resolve runs on every PUT: it must stay cheap. The bound is the handful of
// allocations url.Parse and the key and URL strings need, not a timing.
// A MangaDex chapter URL names no manga: the refusal says which URL to give.
func TestMangadexChapterURLAsksForTheTitle(t *testing.T) {
	t.Parallel()
	_, err := reg.Resolve("https://mangadex.org/chapter/c0000000-0000-4000-8000-000000000105")
	require.ErrorIs(t, err, ErrNotSeriesURL)
	require.Contains(t, err.Error(), "title URL")
}

func TestResolveAllocations(t *testing.T) {
	urls := []string{
		"https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b/chapter/250",
		"https://www.lightnovelworld.com/novel/shadow-slave/chapter-2301?utm=x#c",
		"https://kagane.to/series/0199a4c2-7d1e-7b3a-9f21-4be0c6d1a2f3",
	}
	for _, u := range urls {
		allocs := testing.AllocsPerRun(200, func() {
			if _, err := reg.Resolve(u); err != nil {
				t.Fatal(err)
			}
		})
		require.LessOrEqual(t, allocs, 8.0, "%s: %v allocations", u, allocs)
	}
	_, err := reg.Resolve("https://example.com/")
	require.True(t, errors.Is(err, ErrUnknownSite))
}
