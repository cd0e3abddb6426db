package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// One story on two Sites, as the demo has it: asura read to 250, demonic
// one chapter ahead.
const (
	orvAsuraURL   = "https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b"
	orvAsuraKey   = "asura:omniscient-readers-viewpoint"
	orvDemonicURL = "https://demonicscans.org/manga/Omniscient-Readers-Viewpoint"
	orvDemonicKey = "demonic:Omniscient-Readers-Viewpoint"
	orvTitle      = "Omniscient Reader's Viewpoint"
)

// put records numbered Progress (or none) through the Library.
func (b *testBundle) put(readerID int64, seriesURL, title, chapter string, number float64, chapterURL string) bookmark.Bookmark {
	b.T.Helper()
	ref, err := latest.Default().Resolve(seriesURL)
	require.NoError(b.T, err)
	req := bookmark.PutRequest{Site: ref.Site, SeriesURL: seriesURL, Title: title, Chapter: chapter, ChapterURL: chapterURL}
	if chapter != "" {
		req.ChapterNumber = &number
	}
	got, _, err := b.lib.Put(context.Background(), readerID, ref.Key, req)
	require.NoError(b.T, err)
	return got
}

// seedStory gives reader the story on both Sites, with the newest chapters
// the Poll would have found, and returns the newest chapter's URL.
func seedStory(t *testing.T, b *testBundle, readerID int64) string {
	t.Helper()
	b.put(readerID, orvAsuraURL, orvTitle, "Chapter 250", 250, orvAsuraURL+"/chapter/250")
	b.put(readerID, orvDemonicURL, orvTitle, "", 0, "")
	now := time.Now()
	b.setLatest(orvAsuraKey, "Chapter 250", 250, orvAsuraURL+"/chapter/250", now.Add(-48*time.Hour))
	newest := "https://demonicscans.org/chaptered.php?manga=5120&chapter=251"
	b.setLatest(orvDemonicKey, "Chapter 251", 251, newest, now.Add(-time.Hour))
	return newest
}

func TestLibraryShowsOneCardPerWork(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.Reader("ann", false)
	newest := seedStory(t, b, ann.ID)
	b.put(ann.ID, soloURL, "Solo Leveling", "Chapter 10", 10, asuraChapter(soloURL, 10))
	// Only demonic's member has a Cover: the Work's card shows it.
	_, err := b.Store.Pool.Exec(context.Background(),
		`UPDATE series SET cover_address = $2, cover_type = 'image/png', updated_at = now() WHERE key = $1`, orvDemonicKey, strings.Repeat("ab", 32))
	require.NoError(t, err)
	_, err = b.lib.Link(context.Background(), ann.ID, []string{orvAsuraKey, orvDemonicKey})
	require.NoError(t, err)

	c := b.Browser()
	c.SignIn("ann", password)
	r := c.Get("/library/manga")
	require.Equal(t, http.StatusOK, r.Code)
	require.Equal(t, []string{orvTitle, "Solo Leveling"}, cardTitles(r), "one card for the Work, unread first")
	require.Equal(t, "2 manga · 1 with new chapters", text(r, `[data-testid="summary"]`), "a Work counts once")
	require.Equal(t, "Manga 2 1 new", text(r, `.tabs a`))
	card := r.Doc.Find(`[data-testid="card"][data-work]`)
	require.Equal(t, 1, card.Length())
	require.Equal(t, []string{"asura", "demonic"}, texts(r, `[data-work] [data-testid="work-site"]`))
	require.Equal(t, "Chapter 250 on asura", strings.Join(strings.Fields(card.Find(`.progress`).Text()), " "))
	require.Equal(t, "Chapter 251 on demonic", strings.Join(strings.Fields(card.Find(`.latest`).Text()), " "))
	require.Contains(t, card.Find(`img`).AttrOr("src", ""), "/covers/abab", "the Cover of the member that has one")
	require.Equal(t, "new", strings.TrimSpace(card.Find(`.unread`).Text()), "demonic has a chapter past the Work's Progress")

	cont := map[string]string{}
	card.Find(`[data-testid="work-continue"]`).Each(func(_ int, s *goquery.Selection) { cont[s.AttrOr("data-site", "")] = s.AttrOr("href", "") })
	require.Equal(t, map[string]string{"asura": orvAsuraURL + "/chapter/250", "demonic": newest}, cont,
		"Continue per Site: where the Work was read on asura; demonic's next chapter, its newest")

	// Filtered to one member's Site, the Work's card is still the one card.
	r = c.Get("/library/manga?site=demonic")
	require.Equal(t, []string{orvTitle}, cardTitles(r))
	require.Equal(t, "/works/move?site=demonic", r.Doc.Find(`[data-testid="move-link"]`).AttrOr("href", ""))
}

func TestSuggestionsAreAcceptedOrDismissed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.Reader("ann", false)
	seedStory(t, b, ann.ID)
	// Another pair with one title, and a hostile title that must stay text.
	b.put(ann.ID, lockURL, "<script>alert(1)</script> Blue Lock", "Chapter 5", 5, "")
	b.put(ann.ID, "https://asurascans.com/comics/blue-lock-0a1b2c3d", "<script>alert(1)</script> Blue Lock", "Chapter 3", 3, "")

	c := b.Browser()
	c.SignIn("ann", password)
	r := c.Get("/library/manga")
	require.Equal(t, 2, r.Doc.Find(`[data-testid="work-suggestion"]`).Length(), r.Body)
	require.NotContains(t, r.Body, "<script>alert(1)</script>", "titles are escaped")
	orv := r.Doc.Find(`[data-testid="work-suggestion"][data-keys="` + orvAsuraKey + ` ` + orvDemonicKey + `"]`)
	require.Equal(t, 1, orv.Length(), r.Body)
	require.Contains(t, orv.Text(), "same title")

	// Without the form's CSRF token nothing is linked.
	r = c.Post("/works/link", url.Values{"key": {orvAsuraKey}, "with": {orvDemonicKey}})
	require.Equal(t, http.StatusForbidden, r.Code)
	require.Equal(t, "", b.bookmarkOf(ann.ID, orvAsuraKey).Work)

	// Accept: one Work, one card.
	r = c.PostForm("/library/manga", "/works/link", url.Values{"key": {orvAsuraKey}, "with": {orvDemonicKey}, "back": {"/library/manga"}})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(t, "/library/manga?msg=linked", r.Location())
	w := b.bookmarkOf(ann.ID, orvAsuraKey).Work
	require.NotEmpty(t, w)
	require.Equal(t, w, b.bookmarkOf(ann.ID, orvDemonicKey).Work)

	// Dismiss the other: it is not suggested again, and nothing is linked.
	r = c.PostForm("/library/manga", "/works/dismiss", url.Values{"key": {"asura:blue-lock"}, "with": {lockKey}})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	r = c.Get("/library/manga")
	require.Zero(t, r.Doc.Find(`[data-testid="work-suggestion"]`).Length(), r.Body)
	require.Equal(t, "", b.bookmarkOf(ann.ID, lockKey).Work)

	// Bad input is a clear 4xx: a malformed key, the same key twice, a key not held.
	for _, f := range []url.Values{
		{"key": {"nokey"}, "with": {orvDemonicKey}},
		{"key": {lockKey}, "with": {lockKey}},
	} {
		require.Equal(t, http.StatusBadRequest, c.PostForm("/library/manga", "/works/link", f).Code, f.Encode())
	}
	require.Equal(t, http.StatusNotFound, c.PostForm("/library/manga", "/works/link", url.Values{"key": {lockKey}, "with": {"asura:not-held"}}).Code)

	// Another Reader cannot link or unlink ann's Bookmarks: they hold none.
	b.Reader("bob", false)
	bob := b.Browser()
	bob.SignIn("bob", password)
	require.Equal(t, http.StatusNotFound, bob.PostForm("/library/manga", "/works/link", url.Values{"key": {lockKey}, "with": {"asura:blue-lock"}}).Code)
	require.Equal(t, http.StatusNotFound, bob.PostForm("/library/manga", "/works/unlink", url.Values{"work": {w}, "key": {orvAsuraKey}}).Code)
	require.Equal(t, w, b.bookmarkOf(ann.ID, orvAsuraKey).Work)
}

func TestSeriesPageLinksAndUnlinks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.Reader("ann", false)
	seedStory(t, b, ann.ID)
	b.put(ann.ID, soloURL, "Solo Leveling", "Chapter 10", 10, "")
	c := b.Browser()
	c.SignIn("ann", password)

	page := "/series/" + orvDemonicKey
	r := c.Get(page)
	require.Equal(t, http.StatusOK, r.Code)
	opts := texts(r, `[data-testid="work-with"] option`)
	require.Equal(t, []string{"★ " + orvTitle + " on asura (same title)", "Solo Leveling on asura"}, opts, "the suggested one first, with why")

	r = c.PostForm(page, "/works/link", url.Values{"key": {orvDemonicKey}, "with": {orvAsuraKey}, "back": {page}})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(t, page+"?msg=linked", r.Location())

	r = c.Get(page)
	require.Equal(t, "One story on 2 Sites. Progress: Chapter 250 on asura · newest: Chapter 251 on demonic", text(r, `[data-testid="work-summary"]`))
	require.Equal(t, 2, r.Doc.Find(`[data-testid="work-member"]`).Length())
	require.Equal(t, []string{"Solo Leveling on asura"}, texts(r, `[data-testid="work-with"] option`), "members are not offered again")

	// A third Series joins the Work from its own page; then unlinking it
	// leaves the Work of two, and unlinking one of those dissolves it.
	r = c.PostForm("/series/"+soloKey, "/works/link", url.Values{"key": {soloKey}, "with": {orvDemonicKey}})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	w := b.bookmarkOf(ann.ID, orvDemonicKey).Work
	require.Equal(t, w, b.bookmarkOf(ann.ID, soloKey).Work)

	r = c.PostForm(page, "/works/unlink", url.Values{"work": {w}, "key": {soloKey}, "back": {page}})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(t, "", b.bookmarkOf(ann.ID, soloKey).Work)
	require.Equal(t, w, b.bookmarkOf(ann.ID, orvAsuraKey).Work)

	r = c.PostForm(page, "/works/unlink", url.Values{"work": {w}, "key": {orvAsuraKey}, "back": {page}})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(t, "", b.bookmarkOf(ann.ID, orvAsuraKey).Work)
	require.Equal(t, "", b.bookmarkOf(ann.ID, orvDemonicKey).Work, "the last-but-one leaving dissolves the Work")

	// A Work that is gone, or none at all, is a 404; no Work named a 400.
	require.Equal(t, http.StatusNotFound, c.PostForm(page, "/works/unlink", url.Values{"work": {w}, "key": {orvAsuraKey}}).Code)
	require.Equal(t, http.StatusBadRequest, c.PostForm(page, "/works/unlink", url.Values{"key": {orvAsuraKey}}).Code)
}

func TestGoneSeriesShowsItsBadgeAndReason(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.Reader("ann", false)
	seedStory(t, b, ann.ID)
	b.put(ann.ID, lockURL, "Blue Lock", "Chapter 5", 5, "")
	_, err := b.Store.Pool.Exec(context.Background(), `UPDATE series SET gone_reason = 'the series page answers 404', updated_at = now() WHERE key = $1`, lockKey)
	require.NoError(t, err)
	_, err = b.Store.Pool.Exec(context.Background(), `UPDATE series SET gone_reason = 'site removed', updated_at = now() WHERE key = $1`, orvAsuraKey)
	require.NoError(t, err)
	_, err = b.lib.Link(context.Background(), ann.ID, []string{orvAsuraKey, orvDemonicKey})
	require.NoError(t, err)

	c := b.Browser()
	c.SignIn("ann", password)
	r := c.Get("/library/manga")
	lock := r.Doc.Find(`[data-testid="card"][data-key="` + lockKey + `"]`)
	require.Equal(t, "gone", strings.TrimSpace(lock.Find(`[data-testid="gone"]`).Text()))
	require.Equal(t, "the series page answers 404", strings.TrimSpace(lock.Find(`[data-testid="gone-reason"]`).Text()))
	require.Equal(t, "gone asura: site removed", text(r, `[data-work] [data-testid="gone"]`))

	r = c.Get("/series/" + orvAsuraKey)
	require.Contains(t, text(r, `[data-testid="gone-reason"]`), "This Series is gone from asura: site removed. Your Bookmark stays. The story goes on on demonic: Chapter 251.")
}

func TestMoveBookmarksToAnotherSite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.Reader("ann", false)
	// demonic is dying: Blue Lock read to 5 there, held on asura at 3 (the
	// same title); Solo Max-Level Newbie has no match anywhere.
	b.put(ann.ID, lockURL, "Blue Lock", "Chapter 5", 5, "https://demonicscans.org/title/Blue-Lock/chapter/5/20260101")
	b.put(ann.ID, "https://asurascans.com/comics/blue-lock-0a1b2c3d", "Blue Lock", "Chapter 3", 3, "")
	b.put(ann.ID, "https://demonicscans.org/manga/Solo-Max-Level-Newbie", "Solo Max-Level Newbie", "Chapter 180", 180, "")
	c := b.Browser()
	c.SignIn("ann", password)

	r := c.Get("/works/move?site=demonic")
	require.Equal(t, http.StatusOK, r.Code, r.Body)
	require.Equal(t, 2, r.Doc.Find(`[data-testid="move-row"]`).Length())
	box := r.Doc.Find(`[data-testid="move-row"][data-key="` + lockKey + `"] [data-testid="move-target"]`)
	require.Equal(t, 1, box.Length())
	require.Equal(t, lockKey+" asura:blue-lock", box.AttrOr("value", ""))
	_, ticked := box.Attr("checked")
	require.False(t, ticked, "nothing is ticked for the Reader")
	require.Equal(t, 1, r.Doc.Find(`[data-testid="move-row"][data-key="demonic:Solo-Max-Level-Newbie"] [data-testid="move-none"]`).Length())
	// Every row also lists the Reader's other Bookmarks, "Don't move" chosen.
	other := r.Doc.Find(`[data-testid="move-row"][data-key="demonic:Solo-Max-Level-Newbie"] [data-testid="move-other"] option`)
	require.Equal(t, []string{"", "demonic:Solo-Max-Level-Newbie asura:blue-lock"}, []string{other.Eq(0).AttrOr("value", "x"), other.Eq(1).AttrOr("value", "")})
	require.Equal(t, 2, other.Length())

	// Nothing ticked: nothing moves.
	r = c.PostForm("/works/move?site=demonic", "/works/move", url.Values{"site": {"demonic"}})
	require.Equal(t, http.StatusBadRequest, r.Code)
	require.Equal(t, "Chapter 3", b.bookmarkOf(ann.ID, "asura:blue-lock").Chapter)
	// Without the CSRF token: refused.
	require.Equal(t, http.StatusForbidden, c.Post("/works/move", url.Values{"site": {"demonic"}, "move": {lockKey + " asura:blue-lock"}}).Code)
	// Malformed ticks and a move from another Site are 400s.
	for _, tick := range []string{"x", lockKey + " " + lockKey, "asura:blue-lock " + lockKey, lockKey + " asura:blue-lock extra"} {
		r = c.PostForm("/works/move?site=demonic", "/works/move", url.Values{"site": {"demonic"}, "move": {tick}})
		require.Equal(t, http.StatusBadRequest, r.Code, tick)
	}
	require.Equal(t, "Chapter 3", b.bookmarkOf(ann.ID, "asura:blue-lock").Chapter)

	// A tick and a choice for one Bookmark: two places, nothing moves.
	r = c.PostForm("/works/move?site=demonic", "/works/move", url.Values{"site": {"demonic"}, "move": {lockKey + " asura:blue-lock", lockKey + " asura:blue-lock"}})
	require.Equal(t, http.StatusBadRequest, r.Code)

	// The reviewed, ticked move (the unchosen lists post ""): Progress goes
	// across and the pair is linked.
	r = c.PostForm("/works/move?site=demonic", "/works/move", url.Values{"site": {"demonic"}, "move": {"", lockKey + " asura:blue-lock", ""}})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(t, "/works/move?msg=moved&site=demonic", r.Location())
	moved := b.bookmarkOf(ann.ID, "asura:blue-lock")
	require.Equal(t, "Chapter 5", moved.Chapter)
	require.NotEmpty(t, moved.Work)
	require.Equal(t, moved.Work, b.bookmarkOf(ann.ID, lockKey).Work)
	require.Equal(t, "Chapter 180", b.bookmarkOf(ann.ID, "demonic:Solo-Max-Level-Newbie").Chapter, "an unticked Bookmark is untouched")

	require.Equal(t, http.StatusBadRequest, c.Get("/works/move?site=Not%20A%20Site").Code)
	require.Equal(t, 1, c.Get("/works/move?site=kagane").Doc.Find(`[data-testid="move-empty"]`).Length())
}

// bookmarkOf is the Reader's Bookmark of key as the wire renders it.
func (b *testBundle) bookmarkOf(readerID int64, key string) bookmark.Bookmark {
	b.T.Helper()
	got, err := b.lib.Get(context.Background(), readerID, key)
	require.NoError(b.T, err)
	return got
}
