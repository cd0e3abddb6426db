package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

// The Owner console's one Sites page adds, tests, edits and removes Sites
// of a family, through the same service as the API; a refusal is named
// with the form kept as it was filled.
func TestOwnerAddsTestsEditsAndRemovesAFamilySite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.Reader("olive", true)
	oc := b.Browser()
	oc.SignIn("olive", password)
	const series = "https://toonhaven.test/manga/iron-orchard/"
	b.Net.Set(series, http.StatusOK, "text/html; charset=utf-8", testenv.FamilyFixture(t, "madara", "series-ajax.html"))
	b.Net.Set(series+"ajax/chapters/", http.StatusOK, "text/html; charset=utf-8", testenv.FamilyFixture(t, "madara", "chapters-ajax.html"))

	p := oc.Get("/owner/sites")
	require.Equal(t, http.StatusOK, p.Code)
	require.Equal(t, 1, p.Doc.Find(`[data-testid="add-site"]`).Length())
	require.Contains(t, text(p, `#add-site`), "madara")

	form := url.Values{"site": {"toonhaven"}, "family": {"madara"}, "kind": {"manga"}, "hosts": {"toonhaven.test"}, "options": {""}, "url": {series}}
	r := oc.PostForm("/owner/sites", "/owner/sites/test", form)
	require.Equal(t, http.StatusOK, r.Code, r.Body)
	require.Contains(t, text(r, `[data-testid="probe-verdict"]`), "Every question answered")
	require.Contains(t, text(r, `[data-testid="probe"]`), `"label": "Chapter 101"`)
	require.Contains(t, text(r, `[data-testid="probe"]`), `"key": "madara:iron-orchard"`)
	require.Equal(t, "toonhaven.test", r.Doc.Find(`[data-testid="add-site"] input[name="hosts"]`).AttrOr("value", ""), "the form stays filled")
	require.Zero(t, b.Count(`SELECT count(*) FROM added_sites`), "testing stores nothing")

	bad := url.Values{"site": {"toonhaven"}, "family": {"madara"}, "kind": {"manga"}, "hosts": {"asurascans.com"}}
	r = oc.PostForm("/owner/sites", "/owner/sites/add", bad)
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Contains(t, text(r, `[data-testid="site-refused"]`), "already a host of the Site asura")

	r = oc.PostForm("/owner/sites", "/owner/sites/add", form)
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(t, "/owner/sites?msg=site-added", r.Location())
	p = oc.Get(r.Location())
	require.Contains(t, text(p, `[data-testid="flash"]`), "Site added")
	require.Equal(t, "toonhaven.test", text(p, `[data-site="toonhaven"] [data-testid="site-hosts"]`))

	r = oc.PostForm("/owner/sites", "/owner/sites/toonhaven/definition", url.Values{"hosts": {"toonhaven.test toonhaven.example"}, "options": {"chapters=admin-ajax"}})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	p = oc.Get("/owner/sites")
	require.Equal(t, "toonhaven.test toonhaven.example · chapters=admin-ajax", text(p, `[data-site="toonhaven"] [data-testid="site-hosts"]`))
	r = oc.PostForm("/owner/sites", "/owner/sites/toonhaven/definition", url.Values{"hosts": {"toonhaven.test"}, "options": {"chapters=soon"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Contains(t, text(r, `[data-testid="site-refused"]`), "not one of")
	require.Zero(t, p.Doc.Find(`[data-site="asura"] [data-testid="remove-site"]`).Length(), "a built-in Site is not removed here")

	r = oc.PostForm("/owner/sites", "/owner/sites/toonhaven/remove", nil)
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(t, "/owner/sites?msg=site-removed", r.Location())
	require.Zero(t, oc.Get("/owner/sites").Doc.Find(`[data-site="toonhaven"]`).Length())
}
