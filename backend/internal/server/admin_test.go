package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/api"
	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/imagetype/imagetest"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/server"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

func TestOwnerSeesABackOffAndResumesTheSite(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	owner := b.Token("olive", true)
	ann := b.Token("ann", false)

	// comix answers with a challenge: comix backs off; asura carries on.
	ref := mustResolve(t, tgedURL)
	b.Net.Set(ref.SeriesURL, http.StatusForbidden, "text/html", testenv.SiteFixture(t, "comix", "challenge.html"))
	servePage(b, orvURL, "asura", "series.html")
	b.Net.Set(orvCover, http.StatusOK, "image/png", imagetest.RealPNG(t, 7))
	require.Equal(t, http.StatusCreated, b.Do("PUT", "/api/bookmarks/"+ref.Key, ann, putBody("comix", tgedURL, "Chapter 1")).Code)
	orv := mustResolve(t, orvURL).Key
	require.Equal(t, http.StatusCreated, b.Do("PUT", "/api/bookmarks/"+orv, ann, putBody("asura", orvURL, "Chapter 1")).Code)
	apptest.Eventually(t, "comix backs off and its poll is snoozed", func() bool {
		return siteOf(status(t, b, owner), "comix").Paused && pollState(t, b, ref.Key) == "scheduled"
	})
	// River marks a job completed a moment after its work is visible.
	apptest.Eventually(t, "asura is polled", func() bool {
		return *b.Bookmark(ann, orv).LatestChapter != "" && b.JobCount("poll_series", "completed") == 1
	})

	st := status(t, b, owner)
	require.Len(t, st.Sites, len(latest.Default().Sites()))
	comix := siteOf(st, "comix")
	require.Equal(t, 1, comix.Refusals)
	require.True(t, strings.HasPrefix(comix.LastProblem, "challenge"), comix.LastProblem)
	require.Equal(t, 1, comix.QueuedPolls, "the refused poll waits, snoozed")
	require.WithinDuration(t, time.Now().Add(time.Minute), *comix.PausedUntil, 30*time.Second)
	asura := siteOf(st, "asura")
	require.False(t, asura.Paused)
	require.NotNil(t, asura.LastSuccessAt)
	require.Equal(t, int64(500), siteOf(st, "kagane").PaceMS)
	require.True(t, siteOf(st, "kagane").Browser)
	require.Len(t, st.Failing, 1)
	require.Equal(t, ref.Key, st.Failing[0].Key)
	require.Equal(t, "backed_off", st.Failing[0].Status)
	require.NotNil(t, st.Failing[0].BodyLen)
	require.Contains(t, st.Queue, api.QueueCountJSON{Kind: "poll_series", State: "completed", Count: 1}, "asura's acquisition")

	// The Site mends; the Owner lifts the back-off and the snoozed poll runs.
	servePage(b, tgedURL, "comix", "series.html")
	b.Net.Set(tgedCover, http.StatusOK, "image/png", imagetest.RealPNG(t, 8))
	r := b.Do("POST", "/api/admin/sites/comix/resume", owner, nil)
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	apptest.Eventually(t, "the snoozed poll runs", func() bool { return *b.Bookmark(ann, ref.Key).LatestChapter == "Chapter 206" })
	require.False(t, siteOf(status(t, b, owner), "comix").Paused)
	require.Equal(t, 2, b.Net.Hits(ref.SeriesURL))

	require.Equal(t, http.StatusNotFound, b.Do("POST", "/api/admin/sites/tapas/resume", owner, nil).Code)
}

func TestOwnerPollsNowAndRefetchesTheCover(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	owner := b.Token("olive", true)
	page := servePage(b, orvURL, "asura", "series.html")
	first := imagetest.RealPNG(t, 9)
	b.Net.Set(orvCover, http.StatusOK, "image/png", first)
	key := mustResolve(t, orvURL).Key
	require.Equal(t, http.StatusCreated, b.Do("PUT", "/api/bookmarks/"+key, owner, putBody("asura", orvURL, "Chapter 1")).Code)
	apptest.Eventually(t, "the Cover lands", func() bool { return *b.Bookmark(owner, key).Cover != "" })
	apptest.Eventually(t, "the jobs settle", func() bool { return b.JobsDone("poll_series") && b.JobsDone("fetch_cover") })
	oldCover := *b.Bookmark(owner, key).Cover

	require.Equal(t, http.StatusNotFound, b.Do("POST", "/api/admin/series/asura:nobody/poll", owner, nil).Code)
	r := b.Do("POST", "/api/admin/series/"+key+"/poll", owner, nil)
	require.Equal(t, http.StatusAccepted, r.Code, "%s", r.Body)
	apptest.Eventually(t, "the Owner's poll fetches the page now", func() bool { return b.Net.Hits(page) == 2 })
	apptest.Eventually(t, "the jobs settle", func() bool { return b.JobsDone("poll_series") && b.JobsDone("fetch_cover") })
	require.Equal(t, 1, b.Net.Hits(orvCover), "a poll never replaces a Cover")
	require.Equal(t, oldCover, *b.Bookmark(owner, key).Cover)

	// A refetch with the same bytes changes nothing a client sees.
	before := b.Bookmark(owner, key)
	require.Equal(t, http.StatusAccepted, b.Do("POST", "/api/admin/series/"+key+"/cover/refetch", owner, nil).Code)
	apptest.Eventually(t, "the refetch fetches the image again", func() bool { return b.Net.Hits(orvCover) == 2 })
	apptest.Eventually(t, "the jobs settle", func() bool { return b.JobsDone("poll_series") && b.JobsDone("fetch_cover") })
	require.Equal(t, 3, b.Net.Hits(page), "a refetch starts from a fresh series-page fetch")
	same := b.Bookmark(owner, key)
	require.Equal(t, oldCover, *same.Cover)
	require.Equal(t, before.UpdatedAt, same.UpdatedAt)

	// A failed refetch keeps the old Cover.
	b.Net.Set(orvCover, http.StatusBadGateway, "text/plain", []byte("bad gateway"))
	require.Equal(t, http.StatusAccepted, b.Do("POST", "/api/admin/series/"+key+"/cover/refetch", owner, nil).Code)
	apptest.Eventually(t, "the failed refetch is tried", func() bool { return b.Net.Hits(orvCover) == 3 })
	apptest.Eventually(t, "the jobs settle", func() bool { return b.JobsDone("poll_series") && b.JobsDone("fetch_cover") })
	require.Equal(t, oldCover, *b.Bookmark(owner, key).Cover)

	// New art behind the same URL: a new address; the old bytes stay served.
	second := imagetest.RealPNG(t, 10)
	b.Net.Set(orvCover, http.StatusOK, "image/png", second)
	require.Equal(t, http.StatusAccepted, b.Do("POST", "/api/admin/series/"+key+"/cover/refetch", owner, nil).Code)
	apptest.Eventually(t, "the new Cover lands", func() bool { return *b.Bookmark(owner, key).Cover != oldCover })
	newCover := *b.Bookmark(owner, key).Cover
	code, _, body := coverBytes(t, b, newCover, "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, second, body)
	code, _, body = coverBytes(t, b, oldCover, "")
	require.Equal(t, http.StatusOK, code, "an address is immutable: the old one still serves its bytes")
	require.Equal(t, first, body)
	require.Equal(t, "Chapter 1", b.Bookmark(owner, key).Chapter)
}

// SITE_PACE naming no Site stops the start, so a typo cannot leave a Site
// at its default pace unnoticed.
func TestSitePaceMustNameSites(t *testing.T) {
	t.Parallel()
	st := store.New(pgtest.New(t))
	cfg := config.Config{PublicBaseURL: testBase, DataDir: t.TempDir(), SitePace: "asura=1s,tapas=2s"}
	_, err := server.New(context.Background(), server.Deps{Config: cfg, Store: st, Logger: slog.New(slog.DiscardHandler)})
	require.ErrorContains(t, err, `SITE_PACE names "tapas"`)
	cfg.SitePace = "asura=1s,kagane=250ms"
	_, err = server.New(context.Background(), server.Deps{Config: cfg, Store: st, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
}
