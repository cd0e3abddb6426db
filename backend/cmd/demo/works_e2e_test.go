package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// wireWork is the part of the wire's Bookmark the Works test reads.
type wireWork struct {
	Key         string `json:"key"`
	Work        string `json:"work"`
	WorkChapter string `json:"work_chapter"`
	WorkSite    string `json:"work_progress_site"`
}

func (e *env) workOf(key string) wireWork {
	e.t.Helper()
	var w wireWork
	require.Equal(e.t, http.StatusOK, e.api(http.MethodGet, "/api/bookmarks/"+url.PathEscape(key), nil, &w))
	return w
}

// One story on two of the demo's Sites (Omniscient Reader's Viewpoint on
// asura and on demonic, one chapter ahead): on demonic's page of a Series
// the Reader does not hold, the panel offers to link it with their asura
// Bookmark, and one click bookmarks and links it; then the Work line says
// where the Work was read and where to continue, on either Site.
func TestWorkPanelOnTwoSites(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fixturesites.Options{}, 4)
	asura, err := latest.Default().Resolve(fixturesites.AsuraChapter)
	require.NoError(t, err)
	demonic, err := latest.Default().Resolve(fixturesites.DemonicORVSeries)
	require.NoError(t, err)

	// Read to 250 on asura (as the panel records it).
	n := 250.0
	require.Equal(t, http.StatusCreated, e.api(http.MethodPut, "/api/bookmarks/"+asura.Key, map[string]any{
		"site": asura.Site, "series_url": asura.SeriesURL, "title": "Omniscient Reader's Viewpoint",
		"chapter": "Chapter 250", "chapter_number": n, "chapter_url": fixturesites.AsuraChapter,
	}, nil))
	e.waitCover(asura.Key)

	browser := launch(t, e.sites)
	b := newBridge(t, e.lectern.BaseURL, map[string]any{"lectern.token": e.token})
	tb := newTab(t, browser, b, "lectern-manga", e.userscript("lectern-manga"))
	tb.open(fixturesites.DemonicORVSeries)

	tb.click("lectern-toggle")
	tb.wait(`q('lectern-panel').getAttribute('data-state') === 'ready' && !q('lectern-offer').hidden`)
	var offer struct{ Text, Evidence, Progress string }
	tb.panel(`({ Text: q('lectern-offer-text').textContent, Evidence: q('lectern-offer-evidence').textContent, Progress: q('lectern-current-progress').textContent })`, &offer)
	require.Equal(t, "Same story as Omniscient Reader's Viewpoint on asura?", offer.Text)
	require.Equal(t, "(same title)", offer.Evidence)
	require.Equal(t, "Not bookmarked yet.", offer.Progress)
	var workHidden bool
	tb.panel(`q('lectern-work-line').hidden`, &workHidden)
	require.True(t, workHidden, "no Work line before the Series is held")
	tb.screenshot("e2e-work-offer")

	// One click: bookmarked and linked.
	tb.click("lectern-offer-link")
	tb.wait(`q('lectern-status').getAttribute('data-code') === 'linked' && q('lectern-panel').getAttribute('data-state') === 'ready'`)
	d, a := e.workOf(demonic.Key), e.workOf(asura.Key)
	require.NotEmpty(t, d.Work)
	require.Equal(t, d.Work, a.Work, "the two Bookmarks are one Work")
	require.Equal(t, "Chapter 250", d.WorkChapter)
	require.Equal(t, "asura", d.WorkSite)

	// Once demonic's page is polled, the line says what it has and where
	// to continue (asura's newest, 252, is early access there).
	e.waitCover(demonic.Key)
	tb.click("lectern-refresh")
	want := "Chapter 250, read on asura · this Site has Chapter 251 → continue at 251 · newest: Chapter 252 - The Last Reader on asura"
	tb.wait(fmt.Sprintf(`q('lectern-panel').getAttribute('data-state') === 'ready' && q('lectern-work-line').textContent === %q`, want))
	var cont struct{ Href, Offer string }
	tb.panel(`({ Href: q('lectern-work-continue').getAttribute('href'), Offer: String(q('lectern-offer').hidden) })`, &cont)
	require.Equal(t, "https://demonicscans.org/chaptered.php?manga=5120&chapter=251", cont.Href, "continue at demonic's 251")
	require.Equal(t, "true", cont.Offer, "a held Series is offered nothing")
	var item struct{ Progress, Latest string }
	tb.panel(fmt.Sprintf(`(() => { const it = R.querySelector('[data-testid="lectern-item"][data-key=%q]'); `+
		`return { Progress: it.querySelector('[data-testid="lectern-progress"]').textContent, Latest: it.querySelector('[data-testid="lectern-latest"]').textContent }; })()`, demonic.Key), &item)
	require.Equal(t, "Read: Chapter 250 on asura", item.Progress, "the list shows the Work's Progress and where it was read")
	require.Equal(t, "demonic latest: Chapter 251", item.Latest)
	tb.screenshot("e2e-work-line-demonic")

	// On asura's chapter page, the Work line of the same Work.
	tb.open(fixturesites.AsuraChapter)
	tb.click("lectern-toggle")
	tb.wait(`q('lectern-panel').getAttribute('data-state') === 'ready' && !q('lectern-work-line').hidden`)
	var line string
	tb.panel(`q('lectern-work-line').textContent`, &line)
	require.Equal(t, "Chapter 250, read here · this Site has Chapter 252 - The Last Reader → continue at 251", line)

	requireTokenHidden(t, tb, e.token)
	require.Empty(t, b.refusedURLs(), "the script asked for nothing outside Lectern")
}

// "Not the same": the offer goes, and the server does not make it again.
func TestWorkOfferDismissed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fixturesites.Options{}, 4)
	asura, err := latest.Default().Resolve(fixturesites.AsuraChapter)
	require.NoError(t, err)
	demonic, err := latest.Default().Resolve(fixturesites.DemonicORVSeries)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, e.api(http.MethodPut, "/api/bookmarks/"+asura.Key, map[string]any{
		"site": asura.Site, "series_url": asura.SeriesURL, "title": "Omniscient Reader's Viewpoint", "chapter": "Chapter 250", "chapter_number": 250,
	}, nil))

	browser := launch(t, e.sites)
	b := newBridge(t, e.lectern.BaseURL, map[string]any{"lectern.token": e.token})
	tb := newTab(t, browser, b, "lectern-manga", e.userscript("lectern-manga"))
	tb.open(fixturesites.DemonicORVSeries)
	tb.click("lectern-toggle")
	tb.wait(`q('lectern-panel').getAttribute('data-state') === 'ready' && !q('lectern-offer').hidden`)
	tb.click("lectern-offer-dismiss")
	tb.wait(`q('lectern-status').getAttribute('data-code') === 'dismissed' && q('lectern-offer').hidden`)

	tb.click("lectern-refresh")
	tb.wait(`q('lectern-panel').getAttribute('data-state') === 'ready' && q('lectern-status').getAttribute('data-code') === 'ok'`)
	var hidden bool
	tb.panel(`q('lectern-offer').hidden`, &hidden)
	require.True(t, hidden, "a dismissed pair is not offered again")
	require.Equal(t, http.StatusNotFound, e.api(http.MethodGet, "/api/bookmarks/"+url.PathEscape(demonic.Key), nil, nil), "nothing was bookmarked")
	var works []json.RawMessage
	require.Equal(t, http.StatusOK, e.api(http.MethodGet, "/api/works", nil, &works))
	require.Empty(t, works, "nothing was linked")
}
