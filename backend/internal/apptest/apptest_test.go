package apptest_test

import (
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The harness is the composed server: a token's PUT queues the Series'
// Acquisition and nothing runs it; a signed-in browser reaches the web
// library over the loopback server; a second replica shares the database.
func TestNewIsTheComposedServer(t *testing.T) {
	t.Parallel()
	a := apptest.New(t)
	tok := a.Token("ann", false)
	r := a.Do(http.MethodPut, "/api/bookmarks/asura:solo-leveling", tok, map[string]any{
		"site": "asura", "series_url": "https://asurascans.com/comics/solo-leveling-1a2b3c4d", "chapter": "Chapter 3"})
	require.Equal(t, http.StatusCreated, r.Code, "%s", r.Body)
	require.Equal(t, "Chapter 3", a.Bookmark(tok, "asura:solo-leveling").Chapter)
	require.Equal(t, 1, a.JobCount("poll_series", "available"), "queued, and with no workers never run")
	require.Empty(t, a.Net.Requests(), "nothing reached the fake network")
	require.Equal(t, 401, a.Do(http.MethodGet, "/api/bookmarks", "", nil).Code)

	b := a.Browser()
	b.SignIn("ann", apptest.Password)
	p := b.Get("/library/manga")
	require.Equal(t, http.StatusOK, p.Code)
	require.NotEmpty(t, apptest.CSRF(t, p))

	again := a.Replica()
	require.NotEqual(t, a.URL, again.URL)
	require.Equal(t, "Chapter 3", again.Bookmark(tok, "asura:solo-leveling").Chapter)
}

// With workers the jobs run, on the fake network and the fixture Sites.
func TestWorkersRunTheJobsOnTheFakeNetwork(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{Workers: 2, Sites: &fixturesites.Options{}})
	tok := a.Token("ann", false)
	r := a.Do(http.MethodPut, "/api/bookmarks/asura:omniscient-readers-viewpoint", tok, map[string]any{
		"site": "asura", "series_url": fixturesites.AsuraSeries, "chapter": "Chapter 3"})
	require.Equal(t, http.StatusCreated, r.Code, "%s", r.Body)
	apptest.Eventually(t, "the Acquisition runs", func() bool {
		l := a.Bookmark(tok, "asura:omniscient-readers-viewpoint").LatestChapter
		return l != nil && *l != "" && a.JobsDone("poll_series")
	})
	require.Equal(t, 1, a.Sites.Hits(fixturesites.AsuraSeries))
}
