package web_test

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/fakenet"
	"github.com/lectern-reader/lectern/backend/internal/secretbox"
)

// setupWithHooks is setup with hooks.test and ntfy.test answering on the
// fake network, and internal.test resolving to a private address.
func setupWithHooks(t *testing.T) (*testBundle, *fakenet.Net) {
	t.Helper()
	b := setup(t, apptest.Options{Config: func(c *config.Config) { c.SecretKey = secretbox.NewKey() }})
	for _, h := range []string{"hooks.test", "ntfy.test"} {
		b.Net.HandleHost(h, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	}
	b.Net.Resolve("internal.test", netip.MustParseAddr("10.1.2.3"))
	return b, b.Net
}

// paths are the paths of the requests that reached the fake network.
func paths(n *fakenet.Net) []string {
	var out []string
	for _, r := range n.Requests() {
		out = append(out, r.Path)
	}
	return out
}

func TestNotificationTargetsAndSendTest(t *testing.T) {
	t.Parallel()
	b, hooks := setupWithHooks(t)
	b.Reader("ann", false)
	c := b.Browser()
	c.SignIn("ann", password)

	// Refused at save time, with the reason, and the form refilled.
	r := c.PostForm("/settings", "/settings/notify", url.Values{"kind": {"webhook"}, "url": {"http://hooks.test/x"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Contains(t, text(r, `[data-testid="target-form-error"]`), "plain http is refused")
	require.Equal(t, "http://hooks.test/x", r.Doc.Find(`#target-url`).AttrOr("value", ""))
	r = c.PostForm("/settings", "/settings/notify", url.Values{"kind": {"webhook"}, "url": {"https://192.168.1.10/hook"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Contains(t, text(r, `[data-testid="target-form-error"]`), "not a public address")

	r = c.PostForm("/settings", "/settings/notify", url.Values{"kind": {"ntfy"}, "url": {"https://ntfy.test/ann-news?auth=tk_hidden"}})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	r = c.PostForm("/settings", "/settings/notify", url.Values{"kind": {"apprise"}, "url": {"jsons://internal.test/hook"}, "mode": {"threshold"}, "threshold": {"4"}})
	require.Equal(t, http.StatusOK, r.Code, "a name is accepted at save time; the gate judges its address at send time")
	secret := text(r, `[data-testid="signing-secret"] code`)
	require.True(t, strings.HasPrefix(secret, "whsec_"), "a signed webhook's secret is shown once: %q", secret)
	r = c.PostForm("/settings", "/settings/notify", url.Values{"kind": {"apprise"}, "url": {"json://hooks.test/x"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Contains(t, text(r, `[data-testid="target-form-error"]`), "use jsons://")

	settings := c.Get("/settings?msg=target-added")
	require.Contains(t, text(settings, `[data-testid="flash"]`), "target added")
	rows := settings.Doc.Find(`[data-testid="target-row"]`)
	require.Equal(t, 2, rows.Length())
	require.Contains(t, rows.First().Text(), "ntfys://ntfy.test/ann-news?auth=tk_h…")
	require.NotContains(t, settings.Body, "tk_hidden", "tokens in target URLs are not shown again")
	require.NotContains(t, settings.Body, secret, "nor the signing secret")
	require.Contains(t, rows.Eq(1).Text(), "once 4 chapters wait")

	// Send test: arrives at the stub through the gate.
	testPath, ok := rows.First().Find(`form[action$="/test"]`).Attr("action")
	require.True(t, ok)
	r = c.PostForm("/settings", testPath, nil)
	require.Equal(t, http.StatusOK, r.Code)
	require.Contains(t, text(r, `[data-testid="test-result"]`), "Test sent")
	require.Contains(t, text(r, `[data-testid="test-result"]`), "The service answered 200", "with the service's answer")
	require.Equal(t, []string{"/"}, paths(hooks), "ntfy is published to the server's root")

	// To a private address: refused, nothing arrives, and the page says why.
	before := len(hooks.Dials())
	testPath, _ = rows.Eq(1).Find(`form[action$="/test"]`).Attr("action")
	r = c.PostForm("/settings", testPath, nil)
	require.Equal(t, http.StatusOK, r.Code)
	require.Contains(t, text(r, `[data-testid="test-result"]`), "refused to send there (private)")
	require.Len(t, paths(hooks), 1)
	require.Len(t, hooks.Dials(), before, "no connection was made")

	// Another Reader can neither test nor remove Ann's targets.
	b.Reader("bob", false)
	bob := b.Browser()
	bob.SignIn("bob", password)
	require.Equal(t, http.StatusNotFound, bob.PostForm("/settings", testPath, nil).Code)
	delPath, _ := rows.Eq(1).Find(`form[action$="/delete"]`).Attr("action")
	require.Equal(t, http.StatusNotFound, bob.PostForm("/settings", delPath, nil).Code)

	r = c.PostForm("/settings", delPath, nil)
	require.Equal(t, http.StatusSeeOther, r.Code)
	require.Equal(t, 1, c.Get("/settings").Doc.Find(`[data-testid="target-row"]`).Length())

	// Without the CSRF token nothing changes.
	r = c.Post("/settings/notify", url.Values{"kind": {"ntfy"}, "url": {"https://ntfy.test/other"}})
	require.Equal(t, http.StatusForbidden, r.Code)
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM notify_targets`))
}

// The console lists the Owner alerts raised and not recovered; pending
// ones (not yet held long enough) are not shown.
func TestOwnerAlertsInTheConsole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.Reader("olive", true)
	_, err := b.Store.Pool.Exec(t.Context(), `INSERT INTO owner_alerts (key, kind, site, cause, message, first_seen_at, raised_at) VALUES
		('site_failing:asura', 'site_failing', 'asura', 'pages changed shape', '9 of the 10 Series of asura <b>failed</b>: pages changed shape.', now() - interval '2 hours', now()),
		('queue_stale', 'queue_stale', '', '', 'pending, not shown', now(), NULL)`)
	require.NoError(t, err)
	c := b.Browser()
	c.SignIn("olive", password)
	r := c.Get("/owner/sites")
	require.Equal(t, http.StatusOK, r.Code)
	alerts := r.Doc.Find(`[data-testid="owner-alert"]`)
	require.Equal(t, 1, alerts.Length())
	require.Equal(t, "asura", alerts.AttrOr("data-site", ""))
	require.Contains(t, alerts.Text(), "pages changed shape")
	require.Contains(t, r.Body, "&lt;b&gt;failed&lt;/b&gt;", "the message is text")
}

// A Reader mutes a held Series' notifications from its page, and unmutes.
func TestSeriesMuteFromItsPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.Reader("ann", false)
	b.bookmark(ann.ID, soloURL, "Solo Leveling", "Chapter 3", "")
	c := b.Browser()
	c.SignIn("ann", password)
	page := c.Get("/series/" + soloKey)
	require.Equal(t, http.StatusOK, page.Code)
	action, ok := page.Doc.Find(`#notify-mute form`).Attr("action")
	require.True(t, ok, "the mute is offered")
	r := c.PostForm("/series/"+soloKey, action, url.Values{"muted": {"1"}})
	require.Equal(t, http.StatusSeeOther, r.Code)
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM notify_mutes WHERE reader_id = $1 AND series_key = $2`, ann.ID, soloKey))
	page = c.Get("/series/" + soloKey)
	require.Equal(t, 1, page.Doc.Find(`[data-testid="muted"]`).Length())
	r = c.PostForm("/series/"+soloKey, action, url.Values{"muted": {"0"}})
	require.Equal(t, http.StatusSeeOther, r.Code)
	require.Zero(t, b.Count(`SELECT count(*) FROM notify_mutes`))

	b.Reader("bob", false)
	bob := b.Browser()
	bob.SignIn("bob", password)
	require.Equal(t, http.StatusNotFound, bob.PostForm("/library/manga", action, url.Values{"muted": {"1"}}).Code, "only a held Series")
}
