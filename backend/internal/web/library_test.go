package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// seedLibrary gives ann four manga Bookmarks and one novel:
//
//	Solo Leveling      asura    read 10, latest 12 (2 h ago)   unread
//	Omniscient Reader  asura    read 50, latest 50 (1 day ago)  caught up
//	Blue Lock          demonic  read 5,  latest 7 (10 min ago) unread
//	zeta (no title)    asura    read 1,  no Latest Chapter yet
//	Shadow Slave       novelfull read 100, latest 101          unread
func seedLibrary(t *testing.T, b *testBundle) store.Reader {
	ann := b.Reader("ann", false)
	now := time.Now()
	b.bookmark(ann.ID, soloURL, "Solo Leveling", "Chapter 10", asuraChapter(soloURL, 10))
	b.setLatest(soloKey, "Chapter 12", 12, asuraChapter(soloURL, 12), now.Add(-2*time.Hour))
	b.bookmark(ann.ID, omniURL, "Omniscient Reader", "Chapter 50", asuraChapter(omniURL, 50))
	b.setLatest(omniKey, "Chapter 50", 50, asuraChapter(omniURL, 50), now.Add(-24*time.Hour))
	b.bookmark(ann.ID, lockURL, "Blue Lock", "Chapter 5", "https://demonicscans.org/title/Blue-Lock/chapter/5/20260101")
	b.setLatest(lockKey, "Chapter 7", 7, "https://demonicscans.org/title/Blue-Lock/chapter/7/20260301", now.Add(-10*time.Minute))
	b.bookmark(ann.ID, "https://asurascans.com/comics/zeta-0a0b0c0d", "", "Chapter 1", "")
	b.bookmark(ann.ID, slaveURL, "Shadow Slave", "Chapter 100", "https://novelfull.com/shadow-slave/chapter-100.html")
	b.setLatest(slaveKey, "Chapter 101", 101, "https://novelfull.com/shadow-slave/chapter-101.html", now.Add(-time.Hour))
	return ann
}

func cardTitles(p apptest.Page) []string { return texts(p, `.card-title`) }

func TestLibrarySortsFiltersAndCounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seedLibrary(t, b)
	c := b.Browser()
	c.SignIn("ann", password)

	r := c.Get("/library/manga")
	require.Equal(t, http.StatusOK, r.Code)
	require.Equal(t, []string{"Blue Lock", "Solo Leveling", "Omniscient Reader", "Zeta"}, cardTitles(r),
		"default: unread first, newest Latest Chapter first; a Series with no title shows its slug's words, never its key")
	require.Equal(t, []string{"Manga 4 2 new", "Novels 1 1 new"}, texts(r, `.tabs a`))
	require.Equal(t, "4 manga · 2 with new chapters", text(r, `[data-testid="summary"]`))

	card := r.Doc.Find(`[data-testid="card"][data-key="` + soloKey + `"]`)
	require.Equal(t, "new", strings.TrimSpace(card.Find(`.unread`).Text()))
	require.Equal(t, "since 2 h ago", strings.TrimSpace(card.Find("time").Text()), "new since the Latest Chapter appeared")
	require.Equal(t, "Chapter 10", strings.TrimSpace(card.Find(`.progress`).Text()))
	require.Equal(t, asuraChapter(soloURL, 10), card.Find(`.continue`).AttrOr("href", ""))
	require.Equal(t, asuraChapter(soloURL, 12), card.Find(`.latest-link`).AttrOr("href", ""))
	require.Equal(t, "noopener noreferrer", card.Find(`.continue`).AttrOr("rel", ""))
	require.Equal(t, "/series/"+soloKey, card.Find(`.card-title`).AttrOr("href", ""))
	require.Equal(t, "SL", strings.TrimSpace(card.Find(`.placeholder`).Text()))
	require.Zero(t, card.Find(`img[data-cover]`).Length(), "no Cover yet: the placeholder alone, no <img> that 404s")
	require.Equal(t, 1, card.Find(`.caught-up`).Length())

	caughtUp := r.Doc.Find(`[data-testid="card"][data-key="` + omniKey + `"]`)
	require.Zero(t, caughtUp.Find(`.unread, .caught-up`).Length())
	none := r.Doc.Find(`[data-testid="card"][data-key="asura:zeta"]`)
	require.Equal(t, "not found yet", strings.TrimSpace(none.Find(`.latest`).Text()))
	require.Equal(t, "Z", strings.TrimSpace(none.Find(`.placeholder`).Text()), "monogram from the key's slug")

	r = c.Get("/library/manga?sort=title")
	require.Equal(t, []string{"Blue Lock", "Omniscient Reader", "Solo Leveling", "Zeta"}, cardTitles(r))
	require.Equal(t, "title", r.Doc.Find(`select[name="sort"] option[selected]`).AttrOr("value", ""))
	r = c.Get("/library/manga?sort=updated")
	require.Equal(t, []string{"Blue Lock", "Solo Leveling", "Omniscient Reader", "Zeta"}, cardTitles(r))

	r = c.Get("/library/manga?site=demonic")
	require.Equal(t, []string{"Blue Lock"}, cardTitles(r))
	require.Equal(t, "1 of 4 manga · 2 with new chapters", text(r, `[data-testid="summary"]`))
	require.Equal(t, "demonic", r.Doc.Find(`select[name="site"] option[selected]`).AttrOr("value", ""))
	var sites []string
	r.Doc.Find(`select[name="site"] option`).Each(func(_ int, s *goquery.Selection) { sites = append(sites, s.AttrOr("value", "")) })
	require.Equal(t, []string{"", "asura", "comix", "demonic", "kagane", "mangadex", "webtoons"}, sites, "the manga Library's Sites")

	r = c.Get("/library/manga?q=LEVEL")
	require.Equal(t, []string{"Solo Leveling"}, cardTitles(r), "case-insensitive title filter")
	require.Equal(t, "LEVEL", r.Doc.Find(`input[name="q"]`).AttrOr("value", ""))
	r = c.Get("/library/manga?q=o&site=asura&sort=title")
	require.Equal(t, []string{"Omniscient Reader", "Solo Leveling"}, cardTitles(r))
	require.Equal(t, "/library/manga?sort=title", r.Doc.Find(`a.btn[href^="/library/manga"]`).AttrOr("href", ""), "Clear keeps the sort")
	r = c.Get("/library/manga?q=nothing+like+it")
	require.Empty(t, cardTitles(r))
	require.Contains(t, text(r, `[data-testid="empty"]`), "No manga match")

	r = c.Get("/library/novel")
	require.Equal(t, []string{"Shadow Slave"}, cardTitles(r))
	var novelSites []string
	r.Doc.Find(`select[name="site"] option`).Each(func(_ int, s *goquery.Selection) { novelSites = append(novelSites, s.AttrOr("value", "")) })
	require.Equal(t, []string{"", "lightnovelworld", "novelfull", "royalroad"}, novelSites)
}

func TestLibraryShowsWhatTheAPIShows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := seedLibrary(t, b)
	addr := strings.Repeat("ab", 32)
	_, err := b.Store.Pool.Exec(context.Background(),
		`UPDATE series SET cover_address = $2, cover_type = 'image/png', updated_at = now() WHERE key = $1`, soloKey, addr)
	require.NoError(t, err)

	token, hash, err := credential.NewToken()
	require.NoError(t, err)
	_, err = b.Store.CreateToken(context.Background(), ann.ID, "test", hash)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodGet, b.URL+"/api/bookmarks?kind=manga", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	var wire []struct {
		Key, Cover, Chapter, ChapterURL, LatestChapter, LatestChapterURL string
		Unread                                                           bool
	}
	require.NoError(t, json.Unmarshal(body, &wire))
	require.Len(t, wire, 4)

	c := b.Browser()
	c.SignIn("ann", password)
	r := c.Get("/library/manga")
	for _, w := range wire {
		card := r.Doc.Find(`[data-testid="card"][data-key="` + w.Key + `"]`)
		require.Equal(t, 1, card.Length(), w.Key)
		require.Equal(t, w.Cover, card.Find(`img[data-cover]`).AttrOr("src", ""), "%s: the panel's Cover URL", w.Key)
		require.Equal(t, w.Unread, card.Find(`.unread`).Length() == 1, w.Key)
		require.Contains(t, card.Find(`.latest`).Text(), w.LatestChapter, w.Key)
		require.Contains(t, card.Find(`.progress`).Text(), w.Chapter, w.Key)
	}
	img := r.Doc.Find(`[data-key="` + soloKey + `"] img[data-cover]`)
	require.Equal(t, b.Config.PublicBaseURL+"/covers/"+addr[:20]+".png", img.AttrOr("src", ""), "the short Cover reference (ADR 0032)")
	require.Equal(t, "lazy", img.AttrOr("loading", ""))
	require.Equal(t, "80", img.AttrOr("width", ""))
	require.Equal(t, "112", img.AttrOr("height", ""))
	require.Equal(t, "", img.AttrOr("alt", "missing"))
	require.Equal(t, 1, img.Parent().Find(`.placeholder`).Length(), "the placeholder sits under the image for a failed load")
	require.Contains(t, r.Header.Get("Content-Security-Policy"), "img-src 'self' "+b.Config.PublicBaseURL)
}

func TestMarkCaughtUpAndRemove(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := seedLibrary(t, b)
	c := b.Browser()
	c.SignIn("ann", password)

	// From a filtered view: the action returns to it.
	view := "/library/manga?q=solo&sort=title"
	r := c.Get(view)
	form := url.Values{"csrf": {apptest.CSRF(t, r)}, "key": {soloKey}, "back": {r.Doc.Find(`input[name="back"]`).AttrOr("value", "")}}
	require.Equal(t, view, form.Get("back"))
	res := c.Post("/library/caught-up", form)
	require.Equal(t, http.StatusSeeOther, res.Code, res.Body)
	require.Equal(t, "/library/manga?msg=caught-up&q=solo&sort=title", res.Location())

	got, err := b.lib.Get(context.Background(), ann.ID, soloKey)
	require.NoError(t, err)
	require.Equal(t, "Chapter 12", got.Chapter, "Progress is now the Latest Chapter")
	require.Equal(t, asuraChapter(soloURL, 12), got.ChapterURL)
	require.NotNil(t, got.ChapterNumber)
	require.Equal(t, 12.0, *got.ChapterNumber)
	require.False(t, got.Unread)

	r = c.Get(res.Location())
	require.Equal(t, "Marked as caught up.", text(r, `[data-testid="flash"]`))
	require.Zero(t, r.Doc.Find(`.unread`).Length())

	// A hostile back field falls back to the Library.
	form.Set("back", "https://evil.example/")
	form.Set("key", lockKey)
	res = c.Post("/library/caught-up", form)
	require.Equal(t, "/library/manga?msg=caught-up", res.Location())

	// Remove from the Series page returns to the Library, not the gone page.
	r = c.Get("/series/" + omniKey)
	res = c.Post("/library/remove", url.Values{"csrf": {apptest.CSRF(t, r)}, "key": {omniKey}, "back": {"/series/" + omniKey}})
	require.Equal(t, http.StatusSeeOther, res.Code)
	require.Equal(t, "/library/manga?msg=removed", res.Location())
	_, err = b.lib.Get(context.Background(), ann.ID, omniKey)
	require.Error(t, err)
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM series WHERE key = $1`, omniKey), "the Series stays")
	require.Equal(t, http.StatusNotFound, c.Get("/series/"+omniKey).Code)

	// Another Reader's Bookmark on the same Series is untouched by ann's actions.
	bob := b.Reader("bob", false)
	b.bookmark(bob.ID, lockURL, "Blue Lock", "Chapter 1", "")
	r = c.Get("/library/manga")
	res = c.Post("/library/remove", url.Values{"csrf": {apptest.CSRF(t, r)}, "key": {lockKey}})
	require.Equal(t, http.StatusSeeOther, res.Code)
	bobs, err := b.lib.Get(context.Background(), bob.ID, lockKey)
	require.NoError(t, err)
	require.Equal(t, "Chapter 1", bobs.Chapter)
}

func TestSeriesPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seedLibrary(t, b)
	bob := b.Reader("bob", false)
	b.bookmark(bob.ID, soloURL, "Solo Leveling", "Chapter 2", "")
	c := b.Browser()
	c.SignIn("ann", password)

	r := c.Get("/series/" + soloKey)
	require.Equal(t, http.StatusOK, r.Code)
	require.Equal(t, "Solo Leveling", text(r, `[data-testid="series-title"]`))
	require.Equal(t, "2 Readers hold this Series", text(r, `[data-testid="readers"]`))
	require.True(t, strings.HasPrefix(text(r, `.latest`), "Chapter 12 · seen 2 h ago"), text(r, `.latest`))
	require.True(t, strings.HasPrefix(text(r, `.progress`), "Chapter 10 · recorded"), text(r, `.progress`))
	require.Equal(t, soloURL, r.Doc.Find(`[data-testid="facts"] a[href="`+soloURL+`"]`).Text())
	img := r.Doc.Find(`.cover.large`)
	require.Equal(t, 1, img.Length())
	require.Equal(t, "SL", strings.TrimSpace(img.Find(`.placeholder`).Text()))
	require.Equal(t, 1, r.Doc.Find(`button[formaction="/library/caught-up"]`).Length())

	r = c.Get("/series/" + slaveKey)
	require.Equal(t, "1 Reader holds this Series", text(r, `[data-testid="readers"]`))
	require.Equal(t, "novel", r.Doc.Find(`[aria-current="page"]`).First().AttrOr("href", "")[len("/library/"):], "the Series' Library is the current tab")
}

// Before any poll read its title and with none sent by the Reader, a Series
// shows its URL's slug words on the library card and the Series page, never
// its key.
func TestAnUntitledSeriesShowsItsSlugWords(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.Reader("ann", false)
	b.bookmark(ann.ID, omniURL, "", "Chapter 1", "")
	c := b.Browser()
	c.SignIn("ann", password)
	want := latest.SlugTitle(omniURL)
	require.NotEmpty(t, want)
	lib := c.Get("/library/manga")
	require.Equal(t, http.StatusOK, lib.Code)
	require.Contains(t, lib.Body, want)
	require.NotContains(t, text(lib, `[data-testid="card"]`), omniKey)
	ser := c.Get("/series/" + omniKey)
	require.Equal(t, http.StatusOK, ser.Code)
	require.Contains(t, text(ser, "h1"), want)
}
