package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/imagetype/imagetest"
	"github.com/lectern-reader/lectern/backend/internal/server"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

const (
	towerURL   = "https://kagane.to/series/0199a4c2-7d1e-7b3a-9f21-4be0c6d1a2f3"
	towerAPI   = "https://kagane.to/api/v2/series/0199a4c2-7d1e-7b3a-9f21-4be0c6d1a2f3"
	towerCover = "https://kagane.to/api/v2/image/0199a4c2-cccc-7ddd-8eee-ffff00001111"
)

// kagane through real headless Chromium: the series page is a JavaScript
// interstitial that sets its clearance cookie after a second and reloads;
// the API and the Cover answer only with that cookie (the Cover with
// Cross-Origin-Resource-Policy: same-origin). Chromium reaches the fixture
// only through lectern's proxy, which dials through the destination gate
// onto the fixture network. A Bookmark's Acquisition must bring both the
// Latest Chapter and the Cover.
func TestKaganePollAndCoverThroughTheBrowser(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase, Workers: 4, DeferJobs: true,
		Config: func(c *config.Config) {
			c.BrowserPath = testenv.ChromiumPath(t)
			c.BrowserProxyListen = "127.0.0.1:0"
		},
		Seams: func(s *server.Seams) { s.BrowserIgnoreCertErrors = true },
	})
	n := b.Net

	cleared := func(r *http.Request) bool {
		c, err := r.Cookie("cf_clearance")
		return err == nil && c.Value == "ok"
	}
	challenge := `<!doctype html><html><head><title>Just a moment...</title></head><body><p>Checking your browser</p>
<script>setTimeout(function () { document.cookie = "cf_clearance=ok; path=/; Secure"; location.reload(); }, 1000);</script></body></html>`
	n.HandleFunc(towerURL, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if !cleared(r) {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, challenge)
			return
		}
		fmt.Fprint(w, `<!doctype html><html><head><title>The Tower of Nine Gates | Kagane</title></head><body><div id="__next"></div></body></html>`)
	})
	n.HandleFunc(towerAPI, func(w http.ResponseWriter, r *http.Request) {
		if !cleared(r) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write(testenv.SiteFixture(t, "kagane", "challenge.html"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(testenv.SiteFixture(t, "kagane", "series.json"))
	})
	img := imagetest.RealPNG(t, 42)
	n.HandleFunc(towerCover, func(w http.ResponseWriter, r *http.Request) {
		if !cleared(r) {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Cross-Origin-Resource-Policy", "same-origin")
		_, _ = w.Write(img)
	})
	b.StartJobs()
	tok := b.Token("ann", false)
	key := mustResolve(t, towerURL).Key

	r := b.Do("PUT", "/api/bookmarks/"+key, tok, map[string]any{"site": "kagane", "series_url": towerURL, "chapter": "Chapter 2"})
	require.Equal(t, http.StatusCreated, r.Code, "%s", r.Body)
	apptest.Eventually(t, "the Latest Chapter and the Cover land through the browser", func() bool {
		got := b.Bookmark(tok, key)
		return *got.LatestChapter != "" && *got.Cover != ""
	})
	got := b.Bookmark(tok, key)
	require.Equal(t, "The Tower of Nine Gates", got.Title)
	require.True(t, strings.HasPrefix(*got.LatestChapterURL, towerURL+"/reader/"), *got.LatestChapterURL)
	code, ctype, body := coverBytes(t, b, *got.Cover, "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "image/png", ctype)
	require.Equal(t, img, body)
	require.GreaterOrEqual(t, n.Hits(towerAPI), 2, "the API was read before and after the challenge cleared")
	var status string
	require.NoError(t, b.Store.Pool.QueryRow(t.Context(), `SELECT poll_status FROM series WHERE key = $1`, key).Scan(&status))
	require.Equal(t, "ok", status)
}
