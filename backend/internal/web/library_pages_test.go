package web_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The library page shows 100 cards a page: counts and filters cover the
// whole Library, the pager keeps the filters, a page past the last shows
// the last, and a page that is not a whole number from 1 is a 400.
func TestLibraryPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.Reader("ann", false)
	seedMany(t, b.Store, ann.ID, 250, "")
	c := b.Browser()
	c.SignIn("ann", password)

	r := c.Get("/library/manga?sort=title")
	require.Equal(t, http.StatusOK, r.Code)
	require.Len(t, cardTitles(r), 100)
	require.True(t, strings.HasPrefix(text(r, `[data-testid="summary"]`), "250 manga · "), "counts cover the whole Library")
	require.Equal(t, []string{"Manga 250 125 new", "Novels 0"}, texts(r, `.tabs a`))
	require.Equal(t, "Page 1 of 3 · 1–100 of 250", text(r, `[data-testid="pager-status"]`))
	require.Zero(t, r.Doc.Find(`[data-testid="pager-prev"]`).Length())
	require.Zero(t, r.Doc.Find(`[data-testid="filters"] [name="page"]`).Length(), "a new filter starts at page 1")

	// Following Next keeps the sort and walks the whole Library once, in order.
	all := cardTitles(r)
	for range 2 {
		next, ok := r.Doc.Find(`[data-testid="pager-next"]`).Attr("href")
		require.True(t, ok)
		require.Contains(t, next, "sort=title")
		r = c.Get(next)
		require.Equal(t, http.StatusOK, r.Code)
		all = append(all, cardTitles(r)...)
	}
	require.Equal(t, "Page 3 of 3 · 201–250 of 250", text(r, `[data-testid="pager-status"]`))
	require.Zero(t, r.Doc.Find(`[data-testid="pager-next"]`).Length())
	prev, _ := r.Doc.Find(`[data-testid="pager-prev"]`).Attr("href")
	require.Equal(t, "/library/manga?page=2&sort=title", prev)
	require.Len(t, all, 250)
	sorted := slices.Clone(all)
	slices.SortStableFunc(sorted, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	require.Equal(t, sorted, all, "the pages follow the sort across their edges")
	require.Equal(t, len(sorted), len(slices.Compact(slices.Clone(sorted))), "no card twice")
	// An action from page 3 comes back to page 3.
	require.Equal(t, "/library/manga?page=3&sort=title", r.Doc.Find(`input[name="back"]`).AttrOr("value", ""))

	// A page past the last shows the last.
	r = c.Get("/library/manga?sort=title&page=9")
	require.Equal(t, http.StatusOK, r.Code)
	require.Equal(t, all[200:], cardTitles(r))
	// A filter narrows the pages: one page, no pager.
	r = c.Get("/library/manga?q=" + "Number+12&page=2")
	require.Equal(t, http.StatusOK, r.Code)
	require.Zero(t, r.Doc.Find(`[data-testid="pager"]`).Length())
	require.NotEmpty(t, cardTitles(r))

	for _, bad := range []string{"abc", "0", "-1", "1.5", "2x"} {
		r = c.Get("/library/manga?page=" + bad)
		require.Equal(t, http.StatusBadRequest, r.Code, bad)
	}
}
