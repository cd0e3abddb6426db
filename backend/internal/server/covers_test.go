package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/imagetype/imagetest"
)

// The Covers spec's Seam 1, through the composed router over a real
// Postgres, real files, real River workers and loopback HTTPS fixtures of
// the Sites and their image hosts.

const (
	orvURL    = "https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b"
	orvCover  = "https://cdn.asurascans.com/asura-images/covers/omniscient-readers-viewpoint.7f3k9a2b.webp"
	shadowURL = "https://www.lightnovelworld.com/novel/shadow-slave"
	shadowImg = "https://static.lightnovelworld.com/bookcover/300x400/shadow-slave.jpg"
	tgedURL   = "https://comix.to/title/r8k2m-the-greatest-estate-developer"
	tgedCover = "https://static.comix.to/r8k2m/poster-medium.webp"
	smlnURL   = "https://demonicscans.org/manga/Solo-Max-Level-Newbie"
	smlnCover = "https://readermc.org/images/thumbnails/Solo%20Max-Level%20Newbie.webp"
)

func TestNewBookmarkAcquiresLatestAndCoverFromOneFetch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, site, seriesURL, fixture, image, wantLatest, kind string
		seed                                                    uint8
	}{
		{"manga", "asura", orvURL, "series.html", orvCover, "Chapter 252 - The Last Reader", "manga", 1},
		{"novel", "lightnovelworld", shadowURL, "series.html", shadowImg, "Chapter 2301: The Long Night", "novel", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupJobs(t)
			tok := b.Token("ann", false)
			page := servePage(b, tc.seriesURL, tc.site, tc.fixture)
			img := imagetest.RealPNG(t, tc.seed)
			// The CDN names it .webp/.jpg and serves PNG: the bytes decide.
			b.Net.Set(tc.image, http.StatusOK, "image/png", img)
			key := mustResolve(t, tc.seriesURL).Key

			r := b.Do("PUT", "/api/bookmarks/"+key, tok, putBody(tc.site, tc.seriesURL, "Chapter 3"))
			require.Equal(t, http.StatusCreated, r.Code, "%s", r.Body)
			var created apptest.Bookmark
			r.JSON(t, &created)
			require.Equal(t, "", *created.Cover, "no Cover before the bytes exist, and never the client's")

			apptest.Eventually(t, "the Cover lands", func() bool { return *b.Bookmark(tok, key).Cover != "" })
			apptest.Eventually(t, "the jobs settle", func() bool { return b.JobsDone("poll_series") && b.JobsDone("fetch_cover") })
			got := b.Bookmark(tok, key)
			require.Equal(t, tc.kind, got.Kind)
			require.Equal(t, tc.wantLatest, *got.LatestChapter)
			require.True(t, strings.HasPrefix(*got.Cover, testBase+"/covers/"), *got.Cover)
			require.True(t, strings.HasSuffix(*got.Cover, ".png"), *got.Cover)
			require.Equal(t, "Chapter 3", got.Chapter, "Progress untouched")
			require.Equal(t, 1, b.Net.Hits(page), "exactly one series-page fetch")
			require.Equal(t, 1, b.Net.Hits(tc.image), "one image fetch")

			// The route serves the bytes to anyone, no credential.
			code, ctype, body := coverBytes(t, b, *got.Cover, "")
			require.Equal(t, http.StatusOK, code)
			require.Equal(t, "image/png", ctype)
			require.Equal(t, img, body)
			var src string
			require.NoError(t, b.Store.Pool.QueryRow(context.Background(), `SELECT cover_source_url FROM series WHERE key = $1`, key).Scan(&src))
			require.Equal(t, tc.image, src)
		})
	}
}

func TestExistingSeriesCausesNoFetchAndKeepsItsCover(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	ann, bob := b.Token("ann", false), b.Token("bob", false)
	page := servePage(b, orvURL, "asura", "series.html")
	b.Net.Set(orvCover, http.StatusOK, "image/png", imagetest.RealPNG(t, 3))
	key := mustResolve(t, orvURL).Key
	require.Equal(t, http.StatusCreated, b.Do("PUT", "/api/bookmarks/"+key, ann, putBody("asura", orvURL, "Chapter 1")).Code)
	apptest.Eventually(t, "the Cover lands", func() bool { return *b.Bookmark(ann, key).Cover != "" })
	apptest.Eventually(t, "the jobs settle", func() bool { return b.JobsDone("poll_series") && b.JobsDone("fetch_cover") })
	before := b.Bookmark(ann, key)

	// Another Reader, another client-sent cover, a changed image behind the
	// same URL: nothing is fetched, nothing replaced.
	b.Net.Set(orvCover, http.StatusOK, "image/png", imagetest.RealPNG(t, 4))
	r := b.Do("PUT", "/api/bookmarks/"+key, bob, putBody("asura", orvURL, "Chapter 2"))
	require.Equal(t, http.StatusCreated, r.Code)
	var bobs apptest.Bookmark
	r.JSON(t, &bobs)
	require.Equal(t, *before.Cover, *bobs.Cover)
	r = b.Do("PUT", "/api/bookmarks/"+key, ann, putBody("asura", orvURL, "Chapter 3"))
	require.Equal(t, http.StatusOK, r.Code)
	require.Equal(t, 0, b.JobCount("poll_series", "available")+b.JobCount("poll_series", "running"))
	require.Equal(t, 1, b.Net.Hits(page), "an existing Series is not fetched again for a Bookmark")
	require.Equal(t, 1, b.Net.Hits(orvCover))
	require.Equal(t, *before.Cover, *b.Bookmark(ann, key).Cover)
}

func TestCoverRouteServesOnlyWhatWasStored(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	tok := b.Token("ann", false)
	servePage(b, orvURL, "asura", "series.html")
	img := imagetest.RealPNG(t, 5)
	b.Net.Set(orvCover, http.StatusOK, "image/png", img)
	key := mustResolve(t, orvURL).Key
	require.Equal(t, http.StatusCreated, b.Do("PUT", "/api/bookmarks/"+key, tok, putBody("asura", orvURL, "Chapter 1")).Code)
	apptest.Eventually(t, "the Cover lands", func() bool { return *b.Bookmark(tok, key).Cover != "" })
	// The Bookmark names the Cover by its short reference (ADR 0032); the
	// Series row holds the full address, and both URLs serve it.
	stored := strings.TrimPrefix(*b.Bookmark(tok, key).Cover, testBase+"/covers/")
	short := strings.TrimSuffix(stored, ".png")
	series, err := b.Store.SeriesByKey(context.Background(), key)
	require.NoError(t, err)
	address := series.CoverAddress
	require.True(t, blob.ValidAddress(address))
	require.Equal(t, address[:20], short)

	for _, path := range []string{"/covers/" + stored, "/covers/" + address + ".png"} {
		r := b.Do("GET", path, "", nil)
		require.Equal(t, http.StatusOK, r.Code, path)
		require.Equal(t, `"`+address+`"`, r.Header.Get("ETag"), path)
		require.Equal(t, "public, max-age=31536000, immutable", r.Header.Get("Cache-Control"))
		require.Equal(t, "nosniff", r.Header.Get("X-Content-Type-Options"))
		require.Equal(t, "cross-origin", r.Header.Get("Cross-Origin-Resource-Policy"))
	}

	never := strings.Repeat("0", 64)
	for _, path := range []string{
		"/covers/" + never,
		"/covers/" + never + ".png",
		"/covers/" + address + ".jpg", // stored, but not as a JPEG
		"/covers/" + short + ".jpg",
		"/covers/" + strings.ToUpper(address),
		"/covers/..%2f..%2fgo.mod",
		"/covers/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
		"/covers/" + address[:63],
		"/covers/" + address + "%00.png",
		"/covers/" + address[:2] + "%2f" + address[2:4] + "%2f" + address,
	} {
		r := b.Do("GET", path, "", nil)
		require.Equal(t, http.StatusNotFound, r.Code, path)
		require.NotEqual(t, img, r.Body, path)
	}
}

func TestCoverFailuresStoreNothingAndTouchNothingElse(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	tok := b.Token("ann", false)
	// comix: the "image" is an HTML page; demonic: the CDN is down.
	servePage(b, tgedURL, "comix", "series.html")
	b.Net.Set(tgedCover, http.StatusOK, "image/webp", []byte("<!doctype html><html><body>not an image</body></html>"))
	servePage(b, smlnURL, "demonic", "series.html")
	b.Net.Set(smlnCover, http.StatusServiceUnavailable, "text/plain", []byte("down"))

	for _, tc := range []struct{ site, url, cover string }{{"comix", tgedURL, tgedCover}, {"demonic", smlnURL, smlnCover}} {
		key := mustResolve(t, tc.url).Key
		r := b.Do("PUT", "/api/bookmarks/"+key, tok, putBody(tc.site, tc.url, "Chapter 9"))
		require.Equal(t, http.StatusCreated, r.Code, "%s", r.Body)
		apptest.Eventually(t, "the Cover fetch is tried", func() bool { return b.Net.Hits(tc.cover) == 1 })
		apptest.Eventually(t, "the jobs settle", func() bool { return b.JobsDone("poll_series") && b.JobsDone("fetch_cover") })
		got := b.Bookmark(tok, key)
		require.Equal(t, "", *got.Cover, tc.site)
		require.NotEmpty(t, *got.LatestChapter, "the Latest Chapter lands whatever the Cover does")
		require.Equal(t, "Chapter 9", got.Chapter)
		require.Equal(t, 9.0, *got.ChapterNumber)
		var problem string
		require.NoError(t, b.Store.Pool.QueryRow(context.Background(), `SELECT cover_problem FROM series WHERE key = $1`, key).Scan(&problem))
		require.NotEmpty(t, problem, "the failure is noted for the Owner")
	}
	require.Zero(t, storedFiles(t, b.Config.CoverDir), "nothing was stored")
	require.Equal(t, 2, b.JobCount("fetch_cover", "completed"), "a failed Cover is not retried by a queue of its own")
}

func TestCoverBytesSurviveARestartWithoutASecondFetch(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	tok := b.Token("ann", false)
	page := servePage(b, shadowURL, "lightnovelworld", "series.html")
	img := imagetest.RealPNG(t, 6)
	b.Net.Set(shadowImg, http.StatusOK, "image/png", img)
	key := mustResolve(t, shadowURL).Key
	require.Equal(t, http.StatusCreated, b.Do("PUT", "/api/bookmarks/"+key, tok, putBody("lightnovelworld", shadowURL, "Chapter 1")).Code)
	apptest.Eventually(t, "the Cover lands", func() bool { return *b.Bookmark(tok, key).Cover != "" })
	apptest.Eventually(t, "the jobs settle", func() bool { return b.JobsDone("poll_series") && b.JobsDone("fetch_cover") })
	coverURL := *b.Bookmark(tok, key).Cover
	require.NoError(t, b.Server.StopJobs(context.Background()))

	// A new process on the same database and volume.
	restarted := time.Now()
	again := b.Replica()
	apptest.Eventually(t, "the new replica's plan has run", func() bool {
		var n int
		require.NoError(t, again.Store.Pool.QueryRow(context.Background(),
			`SELECT count(*) FROM river_job WHERE kind = 'plan_polls' AND state = 'completed' AND created_at > $1`, restarted).Scan(&n))
		return n > 0
	})
	r := again.Do("GET", strings.TrimPrefix(coverURL, testBase), "", nil)
	require.Equal(t, http.StatusOK, r.Code)
	require.Equal(t, img, r.Body)
	require.Equal(t, coverURL, *again.Bookmark(tok, key).Cover)
	require.Equal(t, 1, b.Net.Hits(page), "no second series-page fetch")
	require.Equal(t, 1, b.Net.Hits(shadowImg), "no second image fetch")
}
