package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/secretbox"
	"github.com/lectern-reader/lectern/backend/internal/tracker/trackertest"
)

// MyAnimeList is linked from Settings through its authorisation page: the
// link leaves with a state and a PKCE challenge, the callback comes back
// with the code and must bring that state; the Series page then maps the
// Bookmark to an entry the Reader picks from a search, and its completed
// mark.
func TestTrackersInSettingsAndOnTheSeriesPage(t *testing.T) {
	t.Parallel()
	mal := trackertest.MAL(t)
	mal.Catalog[151807] = "Solo Leveling"
	b := setup(t, apptest.Options{Config: func(c *config.Config) {
		c.SecretKey = secretbox.NewKey()
		c.MALAPIURL, c.MALOAuthURL, c.MALClientID, c.MALClientSecret = mal.APIURL(), mal.MALOAuthURL(), mal.ClientID, mal.ClientSecret
		c.TrackerPace = "myanimelist=0s"
	}})
	ann := b.Reader("ann", false)
	b.bookmark(ann.ID, "https://asurascans.com/comics/solo-leveling-1a2b3c4d", "Solo Leveling", "Chapter 12.5", "")
	c := b.Browser()
	c.SignIn("ann", password)

	settings := c.Get("/settings")
	require.Equal(t, http.StatusOK, settings.Code)
	require.Equal(t, "/settings/trackers/myanimelist/connect", settings.Doc.Find(`[data-testid="tracker-myanimelist"] [data-testid="tracker-connect"]`).AttrOr("href", ""))
	require.Equal(t, 1, settings.Doc.Find(`[data-testid="tracker-anilist"] [data-testid="tracker-token-form"]`).Length(), "AniList takes a pasted token without a client id")
	require.Equal(t, 1, settings.Doc.Find(`[data-testid="tracker-mangaupdates"] [data-testid="tracker-login-form"]`).Length())

	out := c.Get("/settings/trackers/myanimelist/connect")
	require.Equal(t, http.StatusSeeOther, out.Code)
	to, err := url.Parse(out.Location())
	require.NoError(t, err)
	require.Equal(t, mal.MALOAuthURL()+"/authorize", to.Scheme+"://"+to.Host+to.Path)
	q := to.Query()
	code := mal.IssueCode(q.Get("code_challenge"), q.Get("redirect_uri"))

	forged := c.Get("/settings/trackers/myanimelist/callback?" + url.Values{"code": {code}, "state": {"forged"}}.Encode())
	require.Equal(t, http.StatusUnprocessableEntity, forged.Code)
	require.Contains(t, text(forged, `[data-testid="tracker-error"]`), "was not started here")

	back := c.Get("/settings/trackers/myanimelist/callback?" + url.Values{"code": {code}, "state": {q.Get("state")}}.Encode())
	require.Equal(t, http.StatusSeeOther, back.Code, back.Body)
	require.Equal(t, "/settings?msg=tracker-linked#trackers", back.Location())
	settings = c.Get("/settings")
	require.Contains(t, text(settings, `[data-testid="tracker-myanimelist"] [data-testid="tracker-state"]`), "Linked as "+mal.UserName)
	require.Equal(t, 1, settings.Doc.Find(`[data-testid="tracker-myanimelist"] [data-testid="tracker-import"]`).Length(), "the list import is offered")

	// The Series page: search, confirm, and the entry with its link.
	const page = "/series/asura:solo-leveling"
	p := c.Get(page + "?tracker_search=myanimelist&q=solo")
	require.Equal(t, http.StatusOK, p.Code)
	cands := p.Doc.Find(`[data-testid="tracker-candidates"] li`)
	require.Equal(t, 1, cands.Length())
	require.Contains(t, cands.Text(), "Solo Leveling")
	form := cands.Find("form")
	action := form.AttrOr("action", "")
	require.Equal(t, "/series/asura:solo-leveling/trackers/myanimelist", action)
	res := c.Post(action, url.Values{"csrf": {apptest.CSRF(t, p)}, "id": {form.Find(`input[name="id"]`).AttrOr("value", "")}, "title": {"Solo Leveling"}})
	require.Equal(t, http.StatusSeeOther, res.Code, res.Body)
	p = c.Get(page)
	link := p.Doc.Find(`[data-testid="tracker-row-myanimelist"] [data-testid="tracker-entry"]`)
	require.Equal(t, "https://myanimelist.net/manga/151807", link.AttrOr("href", ""))
	require.Contains(t, text(p, `[data-testid="tracker-row-myanimelist"]`), "sending soon")

	res = c.PostForm(page, page+"/completed", url.Values{"completed": {"1"}})
	require.Equal(t, http.StatusSeeOther, res.Code, res.Body)
	p = c.Get(res.Location())
	require.Equal(t, "completed", text(p, `[data-testid="completed"]`))
	require.Contains(t, text(p, `[data-testid="flash"]`), "Marked completed")

	// Another Reader cannot map Ann's Bookmark.
	b.Reader("bob", false)
	bob := b.Browser()
	bob.SignIn("bob", password)
	res = bob.PostForm("/settings", "/series/asura:solo-leveling/trackers/myanimelist", url.Values{"id": {"2"}})
	require.Equal(t, http.StatusNotFound, res.Code)
}

// An id a Site's page names is offered on the Series page to confirm.
func TestSiteSuggestionConfirmed(t *testing.T) {
	t.Parallel()
	ani := trackertest.AniList(t)
	b := setup(t, apptest.Options{Config: func(c *config.Config) {
		c.SecretKey = secretbox.NewKey()
		c.AniListAPIURL = ani.GraphQLURL()
	}})
	ann := b.Reader("ann", false)
	b.bookmark(ann.ID, "https://asurascans.com/comics/solo-leveling-1a2b3c4d", "Solo Leveling", "Chapter 3", "")
	require.NoError(t, b.Store.SetSeriesTrackerIDs(context.Background(), "asura:solo-leveling", map[string]string{"anilist": "105398"}))
	c := b.Browser()
	c.SignIn("ann", password)
	const page = "/series/asura:solo-leveling"
	p := c.Get(page)
	sug := p.Doc.Find(`[data-testid="tracker-suggestion"]`)
	require.Equal(t, 1, sug.Length(), p.Body)
	require.Contains(t, strings.Join(strings.Fields(sug.Text()), " "), "AniList entry 105398")
	res := c.Post(sug.AttrOr("action", ""), url.Values{"csrf": {apptest.CSRF(t, p)}, "id": {"105398"}})
	require.Equal(t, http.StatusSeeOther, res.Code, res.Body)
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM tracker_entries WHERE entry_id = '105398' AND source = 'site'`))
}
