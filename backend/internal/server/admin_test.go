package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/api"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func TestOwnerEndpointsAreRefusedToReaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reader := b.reader("ann", false)
	owner := b.reader("olive", true)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/api/admin/status"},
		{"POST", "/api/admin/sites/asura/resume"},
		{"POST", "/api/admin/series/asura:solo-leveling/poll"},
		{"POST", "/api/admin/series/asura:solo-leveling/cover/refetch"},
	} {
		r := b.do(tc.method, tc.path, reader, nil)
		require.Equal(t, http.StatusForbidden, r.Code, "%s %s", tc.method, tc.path)
		require.Contains(t, r.errorMsg(t), "Owner")
		require.Equal(t, http.StatusUnauthorized, b.do(tc.method, tc.path, "", nil).Code, "%s %s", tc.method, tc.path)
		require.NotEqual(t, http.StatusForbidden, b.do(tc.method, tc.path, owner, nil).Code, "%s %s", tc.method, tc.path)
	}
	var n int
	require.NoError(t, b.store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'poll_series'`).Scan(&n))
	require.Zero(t, n, "a refused request queued no poll, and the Owner's about an unknown Series neither")
}

func (b *testBundle) status(token string) api.StatusJSON {
	b.t.Helper()
	r := b.do("GET", "/api/admin/status", token, nil)
	require.Equal(b.t, http.StatusOK, r.Code, "%s", r.Body)
	var st api.StatusJSON
	r.json(b.t, &st)
	return st
}

func siteOf(st api.StatusJSON, name string) api.SiteStatusJSON {
	for _, s := range st.Sites {
		if s.Site == name {
			return s
		}
	}
	return api.SiteStatusJSON{}
}

func TestOwnerSeesABackOffAndResumesTheSite(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	owner := b.reader("olive", true)
	ann := b.reader("ann", false)

	// comix answers with a challenge: comix backs off; asura carries on.
	ref := mustResolve(t, tgedURL)
	b.net.set(ref.SeriesURL, http.StatusForbidden, "text/html", readSiteFixture(t, "comix", "challenge.html"))
	servePage(b, orvURL, "asura", "series.html")
	b.net.set(orvCover, http.StatusOK, "image/png", pngBytes(t, 7))
	require.Equal(t, http.StatusCreated, b.do("PUT", "/api/bookmarks/"+ref.Key, ann, putBody("comix", tgedURL, "Chapter 1")).Code)
	orv := mustResolve(t, orvURL).Key
	require.Equal(t, http.StatusCreated, b.do("PUT", "/api/bookmarks/"+orv, ann, putBody("asura", orvURL, "Chapter 1")).Code)
	eventually(t, "comix backs off and its poll is snoozed", func() bool {
		return siteOf(b.status(owner), "comix").Paused && b.pollState(ref.Key) == "scheduled"
	})
	// River marks a job completed a moment after its work is visible.
	eventually(t, "asura is polled", func() bool {
		return *b.bookmark(ann, orv).LatestChapter != "" && b.jobCount("poll_series", "completed") == 1
	})

	st := b.status(owner)
	require.Len(t, st.Sites, 6)
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
	b.net.set(tgedCover, http.StatusOK, "image/png", pngBytes(t, 8))
	r := b.do("POST", "/api/admin/sites/comix/resume", owner, nil)
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	eventually(t, "the snoozed poll runs", func() bool { return *b.bookmark(ann, ref.Key).LatestChapter == "Chapter 206" })
	require.False(t, siteOf(b.status(owner), "comix").Paused)
	require.Equal(t, 2, b.net.count(ref.SeriesURL))

	require.Equal(t, http.StatusNotFound, b.do("POST", "/api/admin/sites/mangadex/resume", owner, nil).Code)
}

func TestOwnerPollsNowAndRefetchesTheCover(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	owner := b.reader("olive", true)
	page := servePage(b, orvURL, "asura", "series.html")
	first := pngBytes(t, 9)
	b.net.set(orvCover, http.StatusOK, "image/png", first)
	key := mustResolve(t, orvURL).Key
	require.Equal(t, http.StatusCreated, b.do("PUT", "/api/bookmarks/"+key, owner, putBody("asura", orvURL, "Chapter 1")).Code)
	eventually(t, "the Cover lands", func() bool { return *b.bookmark(owner, key).Cover != "" })
	eventually(t, "the jobs settle", func() bool { return b.jobsDone("poll_series") && b.jobsDone("fetch_cover") })
	oldCover := *b.bookmark(owner, key).Cover

	require.Equal(t, http.StatusNotFound, b.do("POST", "/api/admin/series/asura:nobody/poll", owner, nil).Code)
	r := b.do("POST", "/api/admin/series/"+key+"/poll", owner, nil)
	require.Equal(t, http.StatusAccepted, r.Code, "%s", r.Body)
	eventually(t, "the Owner's poll fetches the page now", func() bool { return b.net.count(page) == 2 })
	eventually(t, "the jobs settle", func() bool { return b.jobsDone("poll_series") && b.jobsDone("fetch_cover") })
	require.Equal(t, 1, b.net.count(orvCover), "a poll never replaces a Cover")
	require.Equal(t, oldCover, *b.bookmark(owner, key).Cover)

	// A refetch with the same bytes changes nothing a client sees.
	before := b.bookmark(owner, key)
	require.Equal(t, http.StatusAccepted, b.do("POST", "/api/admin/series/"+key+"/cover/refetch", owner, nil).Code)
	eventually(t, "the refetch fetches the image again", func() bool { return b.net.count(orvCover) == 2 })
	eventually(t, "the jobs settle", func() bool { return b.jobsDone("poll_series") && b.jobsDone("fetch_cover") })
	require.Equal(t, 3, b.net.count(page), "a refetch starts from a fresh series-page fetch")
	same := b.bookmark(owner, key)
	require.Equal(t, oldCover, *same.Cover)
	require.Equal(t, before.UpdatedAt, same.UpdatedAt)

	// A failed refetch keeps the old Cover.
	b.net.set(orvCover, http.StatusBadGateway, "text/plain", []byte("bad gateway"))
	require.Equal(t, http.StatusAccepted, b.do("POST", "/api/admin/series/"+key+"/cover/refetch", owner, nil).Code)
	eventually(t, "the failed refetch is tried", func() bool { return b.net.count(orvCover) == 3 })
	eventually(t, "the jobs settle", func() bool { return b.jobsDone("poll_series") && b.jobsDone("fetch_cover") })
	require.Equal(t, oldCover, *b.bookmark(owner, key).Cover)

	// New art behind the same URL: a new address; the old bytes stay served.
	second := pngBytes(t, 10)
	b.net.set(orvCover, http.StatusOK, "image/png", second)
	require.Equal(t, http.StatusAccepted, b.do("POST", "/api/admin/series/"+key+"/cover/refetch", owner, nil).Code)
	eventually(t, "the new Cover lands", func() bool { return *b.bookmark(owner, key).Cover != oldCover })
	newCover := *b.bookmark(owner, key).Cover
	code, _, body := b.coverBytes(t, newCover, "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, second, body)
	code, _, body = b.coverBytes(t, oldCover, "")
	require.Equal(t, http.StatusOK, code, "an address is immutable: the old one still serves its bytes")
	require.Equal(t, first, body)
	require.Equal(t, "Chapter 1", b.bookmark(owner, key).Chapter)
}

// pollState is the state of the Series' newest poll job, "" when none.
func (b *testBundle) pollState(key string) string {
	b.t.Helper()
	var state string
	err := b.store.Pool.QueryRow(context.Background(),
		`SELECT state::text FROM river_job WHERE kind = 'poll_series' AND args->>'key' = $1 ORDER BY id DESC LIMIT 1`, key).Scan(&state)
	if err != nil {
		return ""
	}
	return state
}

// SITE_PACE naming no Site stops the start, so a typo cannot leave a Site
// at its default pace unnoticed.
func TestSitePaceMustNameSites(t *testing.T) {
	t.Parallel()
	st := store.New(pgtest.New(t))
	cfg := config.Config{PublicBaseURL: testBase, DataDir: t.TempDir(), SitePace: "asura=1s,mangadex=2s"}
	_, err := New(context.Background(), Deps{Config: cfg, Store: st, Logger: quiet()})
	require.ErrorContains(t, err, `SITE_PACE names "mangadex"`)
	cfg.SitePace = "asura=1s,kagane=250ms"
	_, err = New(context.Background(), Deps{Config: cfg, Store: st, Logger: quiet()})
	require.NoError(t, err)
}
