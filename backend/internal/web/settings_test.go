package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
)

func apiStatus(t *testing.T, b *testBundle, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.URL+"/api/bookmarks", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

var tokenPattern = regexp.MustCompile(`lec_[A-Za-z0-9_-]{43}`)

func TestTokenIsShownOnceAndWorks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.Reader("ann", false)
	c := b.Browser()
	c.SignIn("ann", password)

	settings := c.Get("/settings")
	require.Contains(t, text(settings, `#tokens`), "No tokens yet.")
	require.Equal(t, b.Config.PublicBaseURL+"/userscripts/lectern-manga.user.js", settings.Doc.Find(`[data-testid="script-manga"]`).AttrOr("href", ""))
	require.Equal(t, b.Config.PublicBaseURL+"/userscripts/lectern-novel.user.js", settings.Doc.Find(`[data-testid="script-novel"]`).AttrOr("href", ""))
	require.Contains(t, text(settings, "#userscripts"), "Tampermonkey")

	r := c.Post("/settings/tokens", url.Values{"csrf": {apptest.CSRF(t, settings)}, "name": {"laptop <Firefox>"}})
	require.Equal(t, http.StatusOK, r.Code, "shown in the answer to the POST itself, never via a redirect")
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	token := text(r, `[data-testid="new-token-value"]`)
	require.Regexp(t, `^lec_[A-Za-z0-9_-]{43}$`, token)
	require.Contains(t, text(r, `[data-testid="new-token"]`), `Token “laptop <Firefox>” created`)
	require.Equal(t, http.StatusOK, apiStatus(t, b, token), "the token shown is a live API token")

	// Shown once: no later page, cookie or database row holds it.
	again := c.Get("/settings")
	require.NotContains(t, again.Body, token)
	require.Empty(t, tokenPattern.FindAllString(again.Body, -1))
	require.Zero(t, again.Doc.Find(`[data-testid="new-token"]`).Length())
	for _, ck := range c.Cookies() {
		require.NotContains(t, ck.Value, token)
	}
	require.Zero(t, b.Count(`SELECT count(*) FROM api_tokens WHERE name LIKE '%' || $1 || '%' OR encode(token_hash, 'escape') LIKE '%' || $1 || '%'`, token))

	rows := again.Doc.Find(`[data-testid="token-row"]`)
	require.Equal(t, 1, rows.Length())
	require.Contains(t, rows.Text(), "laptop <Firefox>")
	require.Contains(t, rows.Find(`td[data-label="Last used"]`).Text(), "just now", "the API call above was recorded")

	// Revoke: the token stops working; another Reader cannot revoke it.
	var id int64
	require.NoError(t, b.Store.Pool.QueryRow(context.Background(), `SELECT id FROM api_tokens WHERE reader_id = $1`, ann.ID).Scan(&id))
	b.Reader("bob", false)
	bob := b.Browser()
	bob.SignIn("bob", password)
	res := bob.PostForm("/settings", fmt.Sprintf("/settings/tokens/%d/revoke", id), nil)
	require.Equal(t, http.StatusNotFound, res.Code)
	require.Equal(t, http.StatusOK, apiStatus(t, b, token))

	res = c.PostForm("/settings", fmt.Sprintf("/settings/tokens/%d/revoke", id), nil)
	require.Equal(t, http.StatusSeeOther, res.Code)
	require.Equal(t, http.StatusUnauthorized, apiStatus(t, b, token))
	r = c.Get(res.Location())
	require.Equal(t, "Token revoked.", text(r, `[data-testid="flash"]`))
	require.Contains(t, text(r, `[data-testid="token-row"]`), "revoked just now")
	require.Zero(t, r.Doc.Find(`[data-testid="token-row"] form`).Length(), "a revoked token has no Revoke button")
}

func TestOwnerManagesReaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	olive := b.Reader("olive", true)
	c := b.Browser()
	c.SignIn("olive", password)

	// Create, with clear refusals.
	r := c.PostForm("/owner/readers", "/owner/readers", url.Values{"name": {"ann"}, "password": {"short"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Contains(t, text(r, `[data-testid="form-error"]`), "at least 8 characters")
	require.Equal(t, "ann", r.Doc.Find(`#new-name`).AttrOr("value", ""), "the form keeps the name")
	r = c.PostForm("/owner/readers", "/owner/readers", url.Values{"name": {" ann"}, "password": {password}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Contains(t, text(r, `[data-testid="form-error"]`), "may not start or end with a space")
	r = c.PostForm("/owner/readers", "/owner/readers", url.Values{"name": {"ann"}, "password": {password}})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	r = c.PostForm("/owner/readers", "/owner/readers", url.Values{"name": {"ann"}, "password": {password}})
	require.Equal(t, http.StatusConflict, r.Code)
	require.Contains(t, text(r, `[data-testid="form-error"]`), "already exists")

	ann, err := b.Store.ReaderByName(context.Background(), "ann")
	require.NoError(t, err)
	require.False(t, ann.IsOwner)
	b.bookmark(ann.ID, soloURL, "Solo Leveling", "Chapter 1", "")
	annC := b.Browser()
	annC.SignIn("ann", password)

	list := c.Get("/owner/readers?msg=reader-created")
	require.Equal(t, "Reader created.", text(list, `[data-testid="flash"]`))
	require.Equal(t, []string{"ann", "olive (you)"}, texts(list, `[data-testid="reader-row"] td[data-label="Name"]`))
	require.Equal(t, "1", text(list, `[data-name="ann"] td[data-label="Bookmarks"]`))

	// Reset ann's password: her sessions end, the new one works.
	annPath := fmt.Sprintf("/owner/readers/%d", ann.ID)
	r = c.PostForm("/owner/readers", annPath+"/password", url.Values{"password": {"tiny"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	r = c.PostForm("/owner/readers", annPath+"/password", url.Values{"password": {"a reset passphrase"}})
	require.Equal(t, http.StatusSeeOther, r.Code)
	require.Equal(t, http.StatusSeeOther, annC.Get("/settings").Code, "ann's session ended")
	annC.SignIn("ann", "a reset passphrase")
	require.Equal(t, http.StatusOK, c.Get("/owner/readers").Code, "the Owner's own session is untouched")

	// The last Owner can be neither demoted nor deleted.
	olivePath := fmt.Sprintf("/owner/readers/%d", olive.ID)
	r = c.PostForm("/owner/readers", olivePath+"/owner", url.Values{"owner": {"false"}})
	require.Equal(t, http.StatusConflict, r.Code)
	require.Contains(t, text(r, `[data-testid="form-error"]`), "olive is the last Owner")
	r = c.PostForm(olivePath+"/delete", olivePath+"/delete", nil)
	require.Equal(t, http.StatusConflict, r.Code)
	require.Contains(t, text(r, `[data-testid="form-error"]`), "last Owner and cannot be deleted")
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM readers WHERE is_owner`))

	// Grant ann the flag; she sees the console; then olive may step down.
	r = c.PostForm("/owner/readers", annPath+"/owner", url.Values{"owner": {"true"}})
	require.Equal(t, http.StatusSeeOther, r.Code)
	require.Equal(t, http.StatusOK, annC.Get("/owner/readers").Code)
	r = c.PostForm("/owner/readers", olivePath+"/owner", url.Values{"owner": {"false"}})
	require.Equal(t, http.StatusSeeOther, r.Code)
	require.Equal(t, "/settings?msg=owner-removed", r.Location(), "no longer an Owner: out of the console")
	require.Equal(t, http.StatusForbidden, c.Get("/owner/readers").Code)

	// ann deletes olive, whose Bookmarks and sessions go with her.
	b.bookmark(olive.ID, omniURL, "Omniscient Reader", "Chapter 3", "")
	confirm := annC.Get(olivePath + "/delete")
	require.Equal(t, http.StatusOK, confirm.Code)
	require.Contains(t, text(confirm, ".panel p"), "with their 1 Bookmark")
	r = annC.Post(olivePath+"/delete", url.Values{"csrf": {apptest.CSRF(t, confirm)}})
	require.Equal(t, http.StatusSeeOther, r.Code)
	require.Equal(t, "/owner/readers?msg=reader-deleted", r.Location())
	require.Zero(t, b.Count(`SELECT count(*) FROM readers WHERE id = $1`, olive.ID))
	require.Zero(t, b.Count(`SELECT count(*) FROM bookmarks WHERE reader_id = $1`, olive.ID))
	require.Equal(t, http.StatusSeeOther, c.Get("/settings").Code, "olive's session is gone")
	require.Equal(t, 0, b.Count(`SELECT readers FROM series WHERE key = $1`, omniKey))

	// Deleting yourself (not the last Owner) signs you out.
	b.Reader("third", true)
	annPage := annC.Get(annPath + "/delete")
	require.Contains(t, annPage.Body, "you will be signed out")
	r = annC.Post(annPath+"/delete", url.Values{"csrf": {apptest.CSRF(t, annPage)}})
	require.Equal(t, "/login", r.Location())
	require.True(t, strings.HasPrefix(annC.Get("/settings").Location(), "/login"))
}
