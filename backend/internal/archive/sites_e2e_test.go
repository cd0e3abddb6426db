package archive_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
)

// A Site end to end through the whole deployment (the composed server
// with its workers on real Postgres and River, the fixture Sites on the
// fake network): resolve, PUT, the Acquisition's poll, the Cover stored and
// served, a chapter archived, read in the web reader and exported.

// siteRun is one Site's walk through that loop.
type siteRun struct {
	site, pageURL, seriesURL string
	// refused is a URL of the Site that /api/resolve answers 422, and what
	// the refusal says.
	refused, refusedSays string
	// chapter, chapterURL are the Progress recorded with the PUT.
	chapter, chapterURL string
	title, latest       string
	// latestURL is the chapter the "latest" scope archives; pages its page
	// count; export the export route (archive.cbz or archive.epub) and what
	// the read page shows.
	latestURL string
	pages     int
	export    string
	// text is a sentence of the archived chapter (a novel's), and absent
	// what must not be in it.
	text, absent string
	// fetched are the URLs the first poll reads, each once; feed the one
	// a later poll reads instead (the Site's PollURL), "" for none.
	fetched []string
	feed    string
	// imageHost serves the chapter's images, each asked with the chapter
	// as Referer (the host refuses others).
	imageHost string
	// trackers are the tracker ids the series page names, kept through
	// the feed's polls.
	trackers map[string]string
}

func runSite(t *testing.T, run siteRun) {
	app := apptest.New(t, apptest.Options{Workers: 4, Sites: &fixturesites.Options{}, Logger: quietLogger(),
		Config: func(c *config.Config) { c.SitePace = run.site + "=0" }})
	ctx := context.Background()
	ann := app.Reader("ann", false)
	require.NoError(t, app.Store.SetArchiveReader(ctx, ann.ID, true, nil))
	tok := app.NewToken(ann)

	resp := app.Do("GET", "/api/resolve?url="+url.QueryEscape(run.pageURL), tok, nil)
	require.Equal(t, http.StatusOK, resp.Code, "%s", resp.Body)
	var ref struct {
		Key       string `json:"key"`
		Site      string `json:"site"`
		SeriesURL string `json:"series_url"`
	}
	resp.JSON(t, &ref)
	require.Equal(t, run.site, ref.Site)
	require.Equal(t, run.seriesURL, ref.SeriesURL)
	if run.refused != "" {
		resp = app.Do("GET", "/api/resolve?url="+url.QueryEscape(run.refused), tok, nil)
		require.Equal(t, http.StatusUnprocessableEntity, resp.Code, "%s", resp.Body)
		require.Contains(t, resp.ErrorMsg(t), run.refusedSays)
	}

	resp = app.Do("PUT", "/api/bookmarks/"+url.PathEscape(ref.Key), tok,
		map[string]any{"site": run.site, "series_url": ref.SeriesURL, "chapter": run.chapter, "chapter_url": run.chapterURL})
	require.Equal(t, http.StatusCreated, resp.Code, "%s", resp.Body)

	var b apptest.Bookmark
	apptest.Eventually(t, "the Acquisition polls the Series and stores its Cover", func() bool {
		b = app.Bookmark(tok, ref.Key)
		return b.LatestChapter != nil && b.Cover != nil && *b.Cover != ""
	})
	require.Equal(t, run.title, b.Title)
	require.Equal(t, run.latest, *b.LatestChapter)
	require.NotNil(t, b.Unread)
	require.True(t, *b.Unread, "Progress is behind the Latest Chapter")
	for _, u := range run.fetched {
		require.Equal(t, 1, app.Sites.Hits(u), "one poll reads %s once", u)
	}
	require.True(t, strings.HasPrefix(*b.Cover, app.URL+"/covers/"), *b.Cover)
	cover, err := http.Get(*b.Cover)
	require.NoError(t, err)
	coverBytes, _ := io.ReadAll(cover.Body)
	cover.Body.Close()
	require.Equal(t, http.StatusOK, cover.StatusCode)
	require.Equal(t, "image/png", cover.Header.Get("Content-Type"))
	require.NotEmpty(t, coverBytes)
	coverOf := app.Sites.CoverOf(run.seriesURL)
	if coverOf == "" {
		// The fixture table names the page as the Site links it (www.).
		coverOf = app.Sites.CoverOf(strings.Replace(run.seriesURL, "https://", "https://www.", 1))
	}
	require.NotEmpty(t, coverOf)
	require.Equal(t, 1, app.Sites.Hits(coverOf), "the Cover is fetched once, from %s", coverOf)

	if run.feed != "" {
		// Once the Series has its Cover, the Owner's "poll now" reads the
		// feed alone.
		owner := app.Token("olive", true)
		apptest.Eventually(t, "the Acquisition's job is finished", func() bool { return app.JobsDone("poll_series") })
		before := app.Sites.Hits(run.feed)
		resp = app.Do("POST", "/api/admin/series/"+url.PathEscape(ref.Key)+"/poll", owner, nil)
		require.Equal(t, http.StatusAccepted, resp.Code, "%s", resp.Body)
		apptest.Eventually(t, "the second poll reads the feed", func() bool { return app.Sites.Hits(run.feed) == before+1 && app.JobsDone("poll_series") })
		for _, u := range run.fetched {
			if u != run.feed { // read by the first poll only
				require.Equal(t, 1, app.Sites.Hits(u), "the second poll reads only the feed, not %s", u)
			}
		}
		b = app.Bookmark(tok, ref.Key)
		require.Equal(t, run.latest, *b.LatestChapter, "the feed names the same Latest Chapter")
		require.Equal(t, run.title, b.Title)
	}
	if run.trackers != nil {
		ids, err := app.Store.SeriesTrackerIDs(ctx, ref.Key)
		require.NoError(t, err)
		require.Equal(t, run.trackers, ids, "the record's links, kept through the feed's poll")
	}

	resp = app.Do("POST", "/api/series/"+url.PathEscape(ref.Key)+"/archive", tok, map[string]any{"scope": "latest"})
	require.Equal(t, http.StatusAccepted, resp.Code, "%s", resp.Body)
	apptest.Eventually(t, "the newest readable chapter is archived", func() bool {
		return app.Count(`SELECT count(*) FROM archive_chapters WHERE url = $1 AND state = 'archived' AND page_count = $2`, run.latestURL, run.pages) == 1
	})

	if run.imageHost != "" {
		n := 0
		for _, r := range app.Net.Requests() {
			if r.Host == run.imageHost && strings.HasPrefix(r.Path, "/20261124_7/") {
				n++
				require.Equal(t, run.latestURL, r.Header.Get("Referer"), "%s%s", r.Host, r.Path)
			}
		}
		require.Equal(t, run.pages, n, "each page image fetched once")
	}

	br := app.Browser()
	br.SignIn("ann", apptest.Password)
	p := br.Get("/series/" + url.PathEscape(ref.Key))
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	link, ok := p.Doc.Find(`[data-testid="archive-link"]`).Attr("href")
	require.True(t, ok, "the Series page links its archive")
	p = br.Get(link)
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	read, ok := p.Doc.Find(`[data-testid="archived-row"] [data-testid="read"]`).First().Attr("href")
	require.True(t, ok)
	p = br.Get(read)
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	if run.text != "" {
		shown := p.Doc.Find(`[data-testid="novel-text"]`).Text()
		require.Contains(t, shown, run.text)
		require.NotContains(t, shown, run.absent)
	}
	if run.export == "archive.cbz" {
		imgs := p.Doc.Find(`[data-testid="strip"] img[data-testid="page"]`)
		require.Equal(t, run.pages, imgs.Length())
		img := br.Get(imgs.First().AttrOr("src", ""))
		require.Equal(t, http.StatusOK, img.Code)
		require.True(t, strings.HasPrefix(img.Header.Get("Content-Type"), "image/"), img.Header.Get("Content-Type"))
	}

	code, hdr, body := apiGet(app, "/api/series/"+url.PathEscape(ref.Key)+"/"+run.export, tok)
	require.Equal(t, http.StatusOK, code, string(body))
	zr := openZip(t, body)
	if run.export == "archive.cbz" {
		require.Equal(t, "application/vnd.comicbook+zip", hdr.Get("Content-Type"))
		require.Len(t, zr.File, run.pages+1, "the pages and ComicInfo.xml")
		require.Equal(t, "ComicInfo.xml", zr.File[run.pages].Name)
	} else {
		require.Equal(t, "application/epub+zip", hdr.Get("Content-Type"))
		var all strings.Builder
		for _, f := range zr.File {
			if strings.HasSuffix(f.Name, ".xhtml") {
				all.Write(readEntry(t, f))
			}
		}
		require.Contains(t, all.String(), run.text)
		require.NotContains(t, all.String(), run.absent)
	}
}

// apiGet is a GET with a token, answering the status, the headers and the
// whole body.
func apiGet(app *apptest.App, path, token string) (int, http.Header, []byte) {
	req, _ := http.NewRequest(http.MethodGet, app.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, []byte(err.Error())
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, body
}

const mdFeed = "https://api.mangadex.org/manga/8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f/feed?translatedLanguage[]=en&order[readableAt]=desc&limit=100" +
	"&includeFuturePublishAt=0&includeEmptyPages=0&includeExternalUrl=0" +
	"&contentRating[]=safe&contentRating[]=suggestive&contentRating[]=erotica&contentRating[]=pornographic"

func TestMangadexEndToEnd(t *testing.T) {
	t.Parallel()
	const manga = "8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f"
	runSite(t, siteRun{
		site:        "mangadex",
		pageURL:     fixturesites.MangadexSeries + "/tourou-no-deshi",
		seriesURL:   fixturesites.MangadexSeries,
		refused:     fixturesites.MangadexChapter,
		refusedSays: "title URL",
		chapter:     "Chapter 10 - Ten Lanterns", chapterURL: "https://mangadex.org/chapter/c0000000-0000-4000-8000-000000000110",
		title:     "The Lantern Keeper's Apprentice",
		latest:    "Chapter 10.5 - Side Story",
		latestURL: fixturesites.MangadexChapter, pages: 3, export: "archive.cbz",
		fetched:  []string{"https://api.mangadex.org/manga/" + manga + "?includes[]=cover_art", mdFeed},
		feed:     mdFeed,
		trackers: map[string]string{"anilist": "154321", "myanimelist": "149876", "mangaupdates": "70112850792"},
	})
}

func TestRoyalroadEndToEnd(t *testing.T) {
	t.Parallel()
	runSite(t, siteRun{
		site:        "royalroad",
		pageURL:     fixturesites.RoyalroadChapter,
		seriesURL:   "https://royalroad.com/fiction/48112/the-lamplighters-ledger",
		refused:     "https://www.royalroad.com/fiction/chapter/800006",
		refusedSays: "names no fiction",
		chapter:     "Chapter 27: Ember", chapterURL: fixturesites.RoyalroadSeries + "/chapter/800005",
		title:     "The Lamplighter's Ledger",
		latest:    "Chapter 28: The Long Street",
		latestURL: "https://royalroad.com/fiction/48112/the-lamplighters-ledger/chapter/800006",
		export:    "archive.epub",
		text:      "Oren lit the first lamp",
		absent:    "unlawfully",
		fetched:   []string{"https://royalroad.com/fiction/48112/the-lamplighters-ledger"},
		feed:      "https://www.royalroad.com/fiction/syndication/48112",
	})
}

func TestWebtoonsEndToEnd(t *testing.T) {
	t.Parallel()
	runSite(t, siteRun{
		site:      "webtoons",
		pageURL:   fixturesites.WebtoonsChapter,
		seriesURL: "https://webtoons.com/en/fantasy/the-salt-cartographer/list?title_no=7710",
		refused:   "https://www.webtoons.com/en/fantasy/the-salt-cartographer/list", refusedSays: "not a series",
		chapter: "Ep. 5 - Brine", chapterURL: "https://www.webtoons.com/en/fantasy/the-salt-cartographer/episode-5/viewer?title_no=7710&episode_no=5",
		title:     "The Salt Cartographer",
		latest:    "Ep. 6 - The Lighthouse Map",
		latestURL: fixturesites.WebtoonsChapter, pages: 3, export: "archive.cbz",
		fetched:   []string{"https://webtoons.com/en/fantasy/the-salt-cartographer/list?title_no=7710"},
		feed:      "https://www.webtoons.com/en/fantasy/the-salt-cartographer/rss?title_no=7710",
		imageHost: "webtoon-phinf.pstatic.net",
	})
}
