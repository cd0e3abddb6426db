package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// seedWithMissingCover gives the Reader a Bookmark of a Series whose Cover
// points at bytes that were never stored, so its /covers/ URL answers 404.
func (e *env) seedWithMissingCover(seriesURL, title, chapter string) string {
	e.t.Helper()
	ctx := context.Background()
	ref, err := latest.Default().Resolve(seriesURL)
	require.NoError(e.t, err)
	_, err = e.lectern.Store.PutBookmark(ctx, e.readerID, store.NewSeries{Key: ref.Key, Site: ref.Site, Kind: string(ref.Kind), SeriesURL: ref.SeriesURL},
		"", store.Progress{Chapter: chapter})
	require.NoError(e.t, err)
	sum := sha256.Sum256([]byte("never stored: " + ref.Key))
	_, err = e.lectern.Store.Pool.Exec(ctx, `UPDATE series SET title = $2, cover_address = $3, cover_type = 'image/png', updated_at = now() WHERE key = $1`,
		ref.Key, title, hex.EncodeToString(sum[:]))
	require.NoError(e.t, err)
	return ref.Key
}

// waitCover waits for the Poll and Cover jobs of a new Series: the wire's
// cover becomes a /covers/ URL on Lectern.
func (e *env) waitCover(key string) wireBookmark {
	e.t.Helper()
	var b wireBookmark
	require.Eventually(e.t, func() bool {
		b = e.bookmark(key)
		return b.Cover != ""
	}, step, 50*time.Millisecond, "the Acquisition of %s stores a Cover", key)
	require.True(e.t, strings.HasPrefix(b.Cover, e.lectern.BaseURL+"/covers/"), b.Cover)
	return b
}

// coverLoaded is a test (in the isolated world, panelJS in scope) that the
// item of key shows a loaded Cover image; it evaluates to its src.
func coverLoaded(key string) string {
	return fmt.Sprintf(`(() => { const it = R.querySelector('[data-testid="lectern-item"][data-key=%q]'); if (!it) return ''; `+
		`const img = it.querySelector('[data-testid="lectern-cover"]'); return img && img.complete && img.naturalWidth > 0 ? img.getAttribute('src') : ''; })()`, key)
}

func TestMangaPanelLoop(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fixturesites.Options{}, 4)
	// A Bookmark from before, whose Cover bytes are missing: the panel must
	// show the monogram, never a broken image.
	seeded := e.seedWithMissingCover(fixturesites.ComixSeries, "The Greatest Estate Developer", "Chapter 200")
	ref, err := latest.Default().Resolve(fixturesites.AsuraChapter)
	require.NoError(t, err)

	browser := launch(t, e.sites)
	b := newBridge(t, e.lectern.BaseURL, nil)
	tb := newTab(t, browser, b, "lectern-manga", e.userscript("lectern-manga"))
	tb.open(fixturesites.AsuraChapter)

	// The page's own script listens, in the bubbling phase, for what is typed.
	mainEval[bool](tb, `(() => { window.__heard = []; for (const type of ['keydown', 'keyup', 'keypress', 'beforeinput', 'input', 'paste', 'change']) `+
		`document.addEventListener(type, (ev) => window.__heard.push(type + ':' + (ev.key || ev.data || ''))); return true; })()`)

	// No token yet: opening the panel says so and shows the settings.
	tb.click("lectern-toggle")
	tb.wait(`q('lectern-panel').getAttribute('data-state') === 'error' && q('lectern-status').getAttribute('data-code') === 'no-token'`)
	tb.wait(`!q('lectern-settings').hidden`)

	// The Reader pastes the token: typed key by key into the panel's field.
	tb.panel(`q('lectern-token-input').focus()`, nil)
	tb.do(chromedp.KeyEvent(e.token))
	tb.click("lectern-token-save")
	tb.wait(`q('lectern-status').getAttribute('data-code') === 'token-saved' && q('lectern-panel').getAttribute('data-state') === 'ready'`)
	var saved string
	require.NoError(t, json.Unmarshal(b.value("lectern.token"), &saved))
	require.Equal(t, e.token, saved, "the token went to GM storage")
	var inputValue string
	tb.panel(`q('lectern-token-input').value`, &inputValue)
	require.Empty(t, inputValue, "the field is cleared on save")
	require.Empty(t, mainEval[[]string](tb, `window.__heard`), "no key or input event reached the page")

	// The panel lists the Bookmarks of this Library: the seeded one, with
	// the placeholder where its Cover 404s.
	tb.wait(fmt.Sprintf(`R.querySelectorAll('[data-testid="lectern-item"]').length === 1 && R.querySelector('[data-testid="lectern-item"][data-key=%q]')`, seeded))
	seededItem := fmt.Sprintf(`[data-testid="lectern-item"][data-key=%q]`, seeded)
	tb.wait(fmt.Sprintf(`R.querySelector('%s [data-testid="lectern-cover-placeholder"]') && !R.querySelector('%s [data-testid="lectern-cover"]')`, seededItem, seededItem))
	var monogram string
	tb.panel(fmt.Sprintf(`R.querySelector('%s [data-testid="lectern-cover-placeholder"]').textContent`, seededItem), &monogram)
	require.Equal(t, "TG", monogram)
	missing := e.bookmark(seeded).Cover
	resp, err := http.Get(missing)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "the seeded Cover really is missing: %s", missing)

	// The page is a chapter of a Series not bookmarked yet.
	var current struct{ Chapter, Progress string }
	tb.panel(`({ Chapter: q('lectern-current-chapter').textContent, Progress: q('lectern-current-progress').textContent })`, &current)
	require.Equal(t, "This page: Chapter 250", current.Chapter)
	require.Equal(t, "Not bookmarked yet.", current.Progress)
	tb.screenshot("e2e-manga-panel-before")

	// "Bookmark this chapter" records Progress through the API.
	tb.click("lectern-bookmark-chapter")
	tb.wait(`q('lectern-status').getAttribute('data-code') === 'recorded' && q('lectern-panel').getAttribute('data-state') === 'ready'`)
	got := e.bookmark(ref.Key)
	require.Equal(t, "Chapter 250", got.Chapter)
	require.NotNil(t, got.ChapterNumber)
	require.Equal(t, 250.0, *got.ChapterNumber)
	require.Equal(t, fixturesites.AsuraChapter, got.ChapterURL)
	tb.wait(fmt.Sprintf(`R.querySelector('[data-testid="lectern-item"][data-key=%q]').getAttribute('data-current') === 'true'`, ref.Key))

	// The Acquisition polls the series page and stores its Cover; a refresh
	// of the panel shows it, loaded from Lectern's /covers/.
	withCover := e.waitCover(ref.Key)
	require.Equal(t, 1, e.sites.Hits(e.sites.CoverOf(fixturesites.AsuraSeries)), "one Cover fetch")
	require.Equal(t, "Chapter 252 - The Last Reader", withCover.LatestChapter)
	tb.click("lectern-refresh")
	tb.wait(coverLoaded(ref.Key) + ` !== ''`)
	var src string
	tb.panel(coverLoaded(ref.Key), &src)
	require.Equal(t, withCover.Cover, src)
	require.True(t, strings.HasPrefix(src, e.lectern.BaseURL+"/covers/"), src)
	var natural int
	tb.panel(fmt.Sprintf(`R.querySelector('[data-testid="lectern-item"][data-key=%q] [data-testid="lectern-cover"]').naturalWidth`, ref.Key), &natural)
	require.Equal(t, 240, natural, "the fixture Cover's width: the bytes Lectern stored")
	tb.screenshot("e2e-manga-panel")

	requireTokenHidden(t, tb, e.token)
	require.Empty(t, b.refusedURLs(), "the script asked for nothing outside Lectern")
	for _, c := range b.callsSince(0) {
		require.True(t, strings.HasPrefix(c.URL, e.lectern.BaseURL+"/api/"), c.URL)
		require.NotContains(t, c.URL, e.token)
	}
}

func TestNovelPanelBookmark(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fixturesites.Options{}, 4)
	ref, err := latest.Default().Resolve(fixturesites.LightNovelWorldChapter)
	require.NoError(t, err)
	browser := launch(t, e.sites)
	// The token was saved on an earlier visit.
	b := newBridge(t, e.lectern.BaseURL, map[string]any{"lectern.token": e.token})
	tb := newTab(t, browser, b, "lectern-novel", e.userscript("lectern-novel"))
	tb.open(fixturesites.LightNovelWorldChapter)

	tb.click("lectern-toggle")
	tb.wait(`q('lectern-panel').getAttribute('data-state') === 'ready' && q('lectern-empty')`)
	var versions string
	tb.panel(`q('lectern-versions').textContent`, &versions)
	require.Regexp(t, `^lectern-novel \d+\.\d+\.\d+ · server e2e$`, versions)

	tb.click("lectern-bookmark-chapter")
	tb.wait(`q('lectern-status').getAttribute('data-code') === 'recorded'`)
	got := e.bookmark(ref.Key)
	require.Equal(t, latest.Novel, ref.Kind)
	require.Contains(t, got.Chapter, "2301")
	require.NotNil(t, got.ChapterNumber)
	require.Equal(t, 2301.0, *got.ChapterNumber)
	require.Equal(t, fixturesites.LightNovelWorldChapter, got.ChapterURL)
	require.Equal(t, "Shadow Slave", got.Title)

	withCover := e.waitCover(ref.Key)
	tb.click("lectern-refresh")
	tb.wait(coverLoaded(ref.Key) + ` !== ''`)
	var src string
	tb.panel(coverLoaded(ref.Key), &src)
	require.Equal(t, withCover.Cover, src)
	tb.screenshot("e2e-novel-panel")
	requireTokenHidden(t, tb, e.token)
}

// On MangaDex the chapter URL names no manga: the panel finds the Series
// through the title link in the reader's header, and records Progress with
// the chapter URL.
func TestMangadexPanelRecordsProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fixturesites.Options{}, 4)
	ref, err := latest.Default().Resolve(fixturesites.MangadexSeries)
	require.NoError(t, err)
	browser := launch(t, e.sites)
	b := newBridge(t, e.lectern.BaseURL, map[string]any{"lectern.token": e.token})
	tb := newTab(t, browser, b, "lectern-manga", e.userscript("lectern-manga"))
	tb.open(fixturesites.MangadexChapter)

	tb.click("lectern-toggle")
	tb.wait(`q('lectern-panel').getAttribute('data-state') === 'ready' && q('lectern-empty')`)
	var current struct{ Chapter, Progress string }
	tb.panel(`({ Chapter: q('lectern-current-chapter').textContent, Progress: q('lectern-current-progress').textContent })`, &current)
	require.Equal(t, "This page: Ch. 10.5", current.Chapter)
	require.Equal(t, "Not bookmarked yet.", current.Progress, "the Series resolved through the title link")

	tb.click("lectern-bookmark-chapter")
	tb.wait(`q('lectern-status').getAttribute('data-code') === 'recorded'`)
	got := e.bookmark(ref.Key)
	require.Equal(t, "Ch. 10.5", got.Chapter)
	require.NotNil(t, got.ChapterNumber)
	require.Equal(t, 10.5, *got.ChapterNumber)
	require.Equal(t, fixturesites.MangadexChapter, got.ChapterURL)
	require.Equal(t, fixturesites.MangadexSeries, got.SeriesURL)

	withCover := e.waitCover(ref.Key)
	require.Equal(t, "Chapter 10.5 - Side Story", withCover.LatestChapter)
	tb.click("lectern-refresh")
	tb.wait(coverLoaded(ref.Key) + ` !== ''`)
	tb.screenshot("e2e-mangadex-panel")
	requireTokenHidden(t, tb, e.token)
}

// On Royal Road the chapter's number is the one its title gives, and the
// panel records Progress on the fixture chapter page.
func TestRoyalroadPanelRecordsProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fixturesites.Options{}, 4)
	ref, err := latest.Default().Resolve(fixturesites.RoyalroadChapter)
	require.NoError(t, err)
	browser := launch(t, e.sites)
	b := newBridge(t, e.lectern.BaseURL, map[string]any{"lectern.token": e.token})
	tb := newTab(t, browser, b, "lectern-novel", e.userscript("lectern-novel"))
	tb.open(fixturesites.RoyalroadChapter)

	tb.click("lectern-toggle")
	tb.wait(`q('lectern-panel').getAttribute('data-state') === 'ready' && q('lectern-empty')`)
	var chapter string
	tb.panel(`q('lectern-current-chapter').textContent`, &chapter)
	require.Equal(t, "This page: Chapter 28: The Long Street", chapter)

	tb.click("lectern-bookmark-chapter")
	tb.wait(`q('lectern-status').getAttribute('data-code') === 'recorded'`)
	got := e.bookmark(ref.Key)
	require.Equal(t, latest.Novel, ref.Kind)
	require.Equal(t, "Chapter 28: The Long Street", got.Chapter)
	require.NotNil(t, got.ChapterNumber)
	require.Equal(t, 28.0, *got.ChapterNumber)
	require.Equal(t, fixturesites.RoyalroadChapter, got.ChapterURL)
	require.Equal(t, "The Lamplighter's Ledger", got.Title)

	e.waitCover(ref.Key)
	tb.click("lectern-refresh")
	tb.wait(coverLoaded(ref.Key) + ` !== ''`)
	tb.screenshot("e2e-royalroad-panel")
	requireTokenHidden(t, tb, e.token)
}

// On WEBTOON the viewer's episode_no is the episode's number; the panel
// records Progress on the fixture viewer.
func TestWebtoonsPanelRecordsProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fixturesites.Options{}, 4)
	ref, err := latest.Default().Resolve(fixturesites.WebtoonsChapter)
	require.NoError(t, err)
	browser := launch(t, e.sites)
	b := newBridge(t, e.lectern.BaseURL, map[string]any{"lectern.token": e.token})
	tb := newTab(t, browser, b, "lectern-manga", e.userscript("lectern-manga"))
	tb.open(fixturesites.WebtoonsChapter)

	tb.click("lectern-toggle")
	tb.wait(`q('lectern-panel').getAttribute('data-state') === 'ready' && q('lectern-empty')`)
	var chapter string
	tb.panel(`q('lectern-current-chapter').textContent`, &chapter)
	require.Equal(t, "This page: Ep. 6 - The Lighthouse Map", chapter)

	tb.click("lectern-bookmark-chapter")
	tb.wait(`q('lectern-status').getAttribute('data-code') === 'recorded'`)
	got := e.bookmark(ref.Key)
	require.Equal(t, "webtoons:7710", ref.Key)
	require.Equal(t, "Ep. 6 - The Lighthouse Map", got.Chapter)
	require.NotNil(t, got.ChapterNumber)
	require.Equal(t, 6.0, *got.ChapterNumber)
	require.Equal(t, fixturesites.WebtoonsChapter, got.ChapterURL)

	withCover := e.waitCover(ref.Key)
	require.Equal(t, "Ep. 6 - The Lighthouse Map", withCover.LatestChapter)
	tb.click("lectern-refresh")
	tb.wait(coverLoaded(ref.Key) + ` !== ''`)
	tb.screenshot("e2e-webtoons-panel")
	requireTokenHidden(t, tb, e.token)
}

// pageReport is what the page's own script can find.
type pageReport struct {
	Leaks       []string `json:"leaks"`
	Hosts       int      `json:"hosts"`
	OpenRoots   int      `json:"openRoots"`
	HookVisible bool     `json:"hookVisible"`
	PanelText   bool     `json:"panelText"`
}

// pageFinds searches, from the page's own JavaScript world, every place a
// page can read for secret.
func pageFinds(tb *tab, secret string) pageReport {
	tb.t.Helper()
	lit, err := json.Marshal(secret)
	require.NoError(tb.t, err)
	return mainEval[pageReport](tb, `(() => {
		const secret = `+string(lit)+`;
		const has = (s) => typeof s === 'string' && s.includes(secret);
		const leaks = [];
		if (has(document.documentElement.outerHTML)) leaks.push('document HTML');
		if (has(document.documentElement.textContent)) leaks.push('document text');
		for (const el of document.querySelectorAll('*')) {
			for (const a of el.attributes) if (has(a.name) || has(a.value)) leaks.push('attribute ' + a.name + ' of ' + el.tagName);
			if (el.shadowRoot && has(el.shadowRoot.innerHTML)) leaks.push('open shadow root of ' + el.tagName);
		}
		for (const [name, st] of [['localStorage', localStorage], ['sessionStorage', sessionStorage]]) {
			for (let i = 0; i < st.length; i++) { const k = st.key(i); if (has(k) || has(st.getItem(k))) leaks.push(name); }
		}
		if (has(document.cookie)) leaks.push('cookies');
		if (has(location.href) || has(document.referrer) || has(window.name)) leaks.push('URL or window name');
		for (const en of performance.getEntries()) if (has(en.name)) leaks.push('resource ' + en.name);
		for (const k of Object.getOwnPropertyNames(window)) {
			let v; try { v = window[k]; } catch (e) { continue; }
			if (has(v)) leaks.push('window.' + k);
		}
		// The panel's host is the one <div> appended to <html>.
		const hosts = [...document.documentElement.children].filter((el) => el.tagName === 'DIV');
		return {
			leaks,
			hosts: hosts.length,
			openRoots: hosts.filter((h) => h.shadowRoot !== null).length,
			hookVisible: typeof window.__lecternHook !== 'undefined' || typeof window.__lecternGM !== 'undefined' || typeof GM_getValue !== 'undefined',
			panelText: document.documentElement.textContent.includes('Bookmark this chapter'),
		};
	})()`)
}

// requireTokenHidden asserts, from the page's own JavaScript world, that the
// token is nowhere the page can read and the panel's shadow root is closed.
// A decoy planted where a careless script would put a token is found first,
// so the search is shown to look where it claims to.
func requireTokenHidden(t *testing.T, tb *tab, token string) {
	t.Helper()
	const decoy = "decoy-5f2a9c"
	mainEval[bool](tb, `(() => { localStorage.setItem('x', '`+decoy+`'); document.body.setAttribute('data-x', '`+decoy+`'); `+
		`document.cookie = 'x=`+decoy+`; path=/'; window.__decoy = '`+decoy+`'; return true; })()`)
	found := pageFinds(tb, decoy)
	require.Subset(t, found.Leaks, []string{"localStorage", "attribute data-x of BODY", "cookies", "window.__decoy"})
	mainEval[bool](tb, `(() => { localStorage.removeItem('x'); document.body.removeAttribute('data-x'); `+
		`document.cookie = 'x=; path=/; max-age=0'; delete window.__decoy; return true; })()`)

	r := pageFinds(tb, token)
	require.Empty(t, r.Leaks, "the page's own script found the token")
	require.Equal(t, 1, r.Hosts, "the panel's host element is in the page")
	require.Zero(t, r.OpenRoots, "host.shadowRoot is null from the page: the root is closed")
	require.False(t, r.HookVisible, "the harness's world is invisible to the page")
	require.False(t, r.PanelText, "the panel's content is not in the page's DOM")
}
