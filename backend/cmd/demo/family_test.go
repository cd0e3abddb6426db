package main

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
)

// The demo's two Sites of a family, added at start as `lectern site add`
// adds them, work end to end on the fixture server: a Bookmark is polled,
// its Cover acquired, a chapter archived, and the served userscripts match
// their hosts.
func TestDemoFamilySites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := startDemo(ctx, demoOptions{DatabaseURL: pgtest.NewURL(t), DataDir: t.TempDir(),
		Listen: "127.0.0.1:0", SitesListen: "127.0.0.1:0", Inject: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	e := &env{t: t, sites: d.sites, lectern: d.lectern, readerID: d.readerID, token: d.token}

	var out strings.Builder
	instructions(&out, d.sites, d.lectern.BaseURL, d.password, d.token, "", true, "", "/tmp/lectern.log")
	require.Contains(t, out.String(), fixturesites.ToonhavenSeries)

	for _, tc := range []struct{ key, site, series, chapter, script, host string }{
		{"toonhaven:iron-orchard", "toonhaven", fixturesites.ToonhavenSeries, "Chapter 99", "lectern-manga", "toonhaven.test"},
		{"lanternreads:the-salt-archivist", "lanternreads", fixturesites.LanternreadsSeries, "Chapter 212", "lectern-novel", "lanternreads.test"},
	} {
		require.Equal(t, http.StatusCreated, e.api(http.MethodPut, "/api/bookmarks/"+url.PathEscape(tc.key),
			map[string]any{"site": tc.site, "series_url": tc.series, "chapter": tc.chapter}, nil))
		b := e.waitCover(tc.key)
		require.NotEmpty(t, b.LatestChapter)
		require.Less(t, e.api(http.MethodPost, "/api/series/"+url.PathEscape(tc.key)+"/archive", map[string]any{"scope": "latest"}, nil), 300)
		require.Eventually(t, func() bool {
			var st struct {
				Archived int `json:"chapters_archived"`
			}
			return e.api(http.MethodGet, "/api/series/"+url.PathEscape(tc.key)+"/archive", nil, &st) == http.StatusOK && st.Archived == 1
		}, step, 50*time.Millisecond, "the newest readable chapter of %s archived", tc.key)
		require.Contains(t, e.userscript(tc.script), "// @match        https://"+tc.host+"/*\n")
	}
}
