package web_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/web"
)

func TestFirstRunCreatesTheOwnerOnlyWhileNoReaderExists(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.Browser()

	r := c.Get("/")
	require.Equal(t, http.StatusSeeOther, r.Code)
	require.Equal(t, "/setup", r.Location(), "no Reader yet: the front door is first-run set-up")
	r = c.Get("/library/manga")
	require.Equal(t, http.StatusSeeOther, r.Code)
	require.Equal(t, "/setup", r.Location())
	r = c.Get("/login")
	require.Equal(t, "/setup", r.Location())

	form := c.Get("/setup")
	require.Equal(t, http.StatusOK, form.Code)
	require.Equal(t, 1, form.Doc.Find(`form[action="/setup"]`).Length())
	token := apptest.CSRF(t, form)

	// Refused without the double-submitted token.
	r = c.Post("/setup", url.Values{"name": {"olive"}, "password": {password}, "confirm": {password}})
	require.Equal(t, http.StatusForbidden, r.Code)
	// Refused with mismatched passwords or a weak one, saying why.
	r = c.Post("/setup", url.Values{"csrf": {token}, "name": {"olive"}, "password": {password}, "confirm": {"other password"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Contains(t, text(r, `[data-testid="form-error"]`), "passwords differ")
	r = c.Post("/setup", url.Values{"csrf": {token}, "name": {"olive"}, "password": {"short"}, "confirm": {"short"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Contains(t, text(r, `[data-testid="form-error"]`), "at least 8 characters")
	r = c.Post("/setup", url.Values{"csrf": {token}, "name": {" olive"}, "password": {password}, "confirm": {password}})
	require.Equal(t, http.StatusSeeOther, r.Code, "surrounding spaces are trimmed: %s", r.Body)
	require.Equal(t, "/library/manga?msg=welcome", r.Location())

	owner, err := b.Store.ReaderByName(context.Background(), "olive")
	require.NoError(t, err)
	require.True(t, owner.IsOwner)
	lib := c.Get(r.Location())
	require.Equal(t, http.StatusOK, lib.Code)
	require.Equal(t, "olive", text(lib, `[data-testid="who"]`), "set-up signs the Owner in")
	require.Contains(t, text(lib, `[data-testid="flash"]`), "Welcome")

	// Once a Reader exists, set-up is closed to everyone.
	other := b.Browser()
	r = other.Get("/setup")
	require.Equal(t, http.StatusSeeOther, r.Code)
	require.Equal(t, "/login", r.Location())
	login := other.Get("/login")
	r = other.Post("/setup", url.Values{"csrf": {apptest.CSRF(t, login)}, "name": {"mallory"}, "password": {password}, "confirm": {password}})
	require.Equal(t, http.StatusConflict, r.Code)
	require.Contains(t, text(r, `[data-testid="error-message"]`), "already has an Owner")
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM readers`))
}

func TestSessionCookieAttributesAndOnlyItsHashIsStored(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		base   string
		name   string
		secure bool
	}{
		{"https://lectern.example.net", "__Host-lectern_session", true},
		{"http://lectern.lan:8080", "lectern_session", false},
	} {
		t.Run(tc.base, func(t *testing.T) {
			t.Parallel()
			st := store.New(pgtest.New(t))
			cfg := config.Config{PublicBaseURL: tc.base}
			ui, err := web.New(web.Deps{Config: cfg, Store: st, Library: &bookmark.Service{Store: st, Registry: latest.Default(), BaseURL: tc.base}})
			require.NoError(t, err)
			hash, err := credential.HashPassword(password)
			require.NoError(t, err)
			_, err = st.CreateReader(context.Background(), "ann", hash, false)
			require.NoError(t, err)

			rec := serve(ui.Handler(), http.MethodGet, "/login", nil, nil)
			require.Equal(t, http.StatusOK, rec.Code)
			anon := findCookie(t, rec.Result().Cookies(), strings.Replace(tc.name, "session", "csrf", 1))
			require.True(t, anon.HttpOnly)
			require.Equal(t, http.SameSiteStrictMode, anon.SameSite)
			require.Equal(t, tc.secure, anon.Secure)

			page := parse(t, rec.Body.String())
			token, _ := page.Find(`input[name="csrf"]`).Attr("value")
			rec = serve(ui.Handler(), http.MethodPost, "/login",
				url.Values{"csrf": {token}, "name": {"ann"}, "password": {password}}, []*http.Cookie{anon})
			require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
			sc := findCookie(t, rec.Result().Cookies(), tc.name)
			require.True(t, sc.HttpOnly, "scripts never read the session")
			require.Equal(t, http.SameSiteLaxMode, sc.SameSite)
			require.Equal(t, tc.secure, sc.Secure, "Secure exactly when PUBLIC_BASE_URL is https")
			require.Equal(t, "/", sc.Path)
			require.Empty(t, sc.Domain, "host-only")
			require.InDelta(t, web.SessionTTL.Seconds(), float64(sc.MaxAge), 1)
			require.GreaterOrEqual(t, len(sc.Value), 43, "256 random bits")

			// The database holds the SHA-256 of the cookie value, never the value.
			var stored []byte
			var csrfToken string
			require.NoError(t, st.Pool.QueryRow(context.Background(), `SELECT id_hash, csrf_token FROM sessions`).Scan(&stored, &csrfToken))
			require.Equal(t, hex.EncodeToString(credential.HashSecret(sc.Value)), hex.EncodeToString(stored))
			var leaked int
			require.NoError(t, st.Pool.QueryRow(context.Background(),
				`SELECT count(*) FROM sessions WHERE encode(id_hash, 'escape') LIKE '%' || $1 || '%' OR csrf_token = $1`, sc.Value).Scan(&leaked))
			require.Zero(t, leaked)
		})
	}
}

func TestLoginLogout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.Reader("ann", false)
	c := b.Browser()

	r := c.Get("/settings")
	require.Equal(t, http.StatusSeeOther, r.Code)
	require.Equal(t, "/login?next=%2Fsettings", r.Location(), "an anonymous visitor signs in and comes back")

	form := c.Get("/login?next=%2Fsettings")
	require.Equal(t, "/settings", form.Doc.Find(`input[name="next"]`).AttrOr("value", ""))
	token := apptest.CSRF(t, form)
	r = c.Post("/login", url.Values{"csrf": {token}, "name": {"ann"}, "password": {"wrong password"}})
	require.Equal(t, http.StatusUnauthorized, r.Code)
	require.Equal(t, "Wrong name or password.", text(r, `[data-testid="form-error"]`))
	require.Equal(t, "ann", r.Doc.Find(`input[name="name"]`).AttrOr("value", ""), "the name is kept, the password is not")
	require.Empty(t, r.Doc.Find(`input[name="password"]`).AttrOr("value", ""))
	r = c.Post("/login", url.Values{"csrf": {token}, "name": {"nobody"}, "password": {password}})
	require.Equal(t, http.StatusUnauthorized, r.Code)
	require.Equal(t, "Wrong name or password.", text(r, `[data-testid="form-error"]`), "an unknown name reads the same as a wrong password")

	// Bytes the database cannot hold are a 400, not a failed query.
	r = c.Post("/login", url.Values{"csrf": {token}, "name": {"ann\x00"}, "password": {password}})
	require.Equal(t, http.StatusBadRequest, r.Code)
	r = c.Post("/login", url.Values{"csrf": {token}, "name": {"\xffann"}, "password": {password}})
	require.Equal(t, http.StatusBadRequest, r.Code)

	// An open redirect through ?next= is refused.
	r = c.Post("/login", url.Values{"csrf": {token}, "name": {"ann"}, "password": {password}, "next": {"//evil.example/x"}})
	require.Equal(t, http.StatusSeeOther, r.Code)
	require.Equal(t, "/library/manga", r.Location())
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM sessions WHERE reader_id = $1`, ann.ID))

	r = c.Get("/settings")
	require.Equal(t, http.StatusOK, r.Code)
	require.Equal(t, "ann", text(r, `[data-testid="who"]`))
	require.Zero(t, r.Doc.Find(`[data-testid="nav-owner"]`).Length(), "a Reader sees no Owner link")

	// Sign out needs the session's CSRF token too.
	r = c.Post("/logout", nil)
	require.Equal(t, http.StatusForbidden, r.Code)
	r = c.PostForm("/settings", "/logout", nil)
	require.Equal(t, http.StatusSeeOther, r.Code)
	require.Equal(t, "/login", r.Location())
	require.Zero(t, b.Count(`SELECT count(*) FROM sessions WHERE reader_id = $1`, ann.ID), "the session row is gone, not just the cookie")
	r = c.Get("/settings")
	require.Equal(t, http.StatusSeeOther, r.Code)
}

func TestLoginIsRateLimited(t *testing.T) {
	t.Parallel()
	st := store.New(pgtest.New(t))
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ui, err := web.New(web.Deps{Config: config.Config{PublicBaseURL: "http://lectern.lan"}, Store: st,
		Library: &bookmark.Service{Store: st, Registry: latest.Default(), BaseURL: "http://lectern.lan"}, Now: clock})
	require.NoError(t, err)
	hash, err := credential.HashPassword(password)
	require.NoError(t, err)
	for _, n := range []string{"ann", "bob"} {
		_, err = st.CreateReader(context.Background(), n, hash, false)
		require.NoError(t, err)
	}

	login := func(addr, name, pw string) int {
		rec := serve(ui.Handler(), http.MethodGet, "/login", nil, nil, addr)
		anon := rec.Result().Cookies()
		token, _ := parse(t, rec.Body.String()).Find(`input[name="csrf"]`).Attr("value")
		rec = serve(ui.Handler(), http.MethodPost, "/login", url.Values{"csrf": {token}, "name": {name}, "password": {pw}}, anon, addr)
		if rec.Code == http.StatusTooManyRequests {
			require.NotEmpty(t, rec.Header().Get("Retry-After"))
			require.Contains(t, rec.Body.String(), "Too many failed sign-ins")
		}
		return rec.Code
	}
	const attacker, other = "203.0.113.7:5000", "198.51.100.9:5000"
	for range 5 {
		require.Equal(t, http.StatusUnauthorized, login(attacker, "ann", "guess guess"))
	}
	require.Equal(t, http.StatusTooManyRequests, login(attacker, "ann", password),
		"after 5 failures even the right password waits: the check is not even run")
	require.Equal(t, http.StatusSeeOther, login(other, "ann", password), "another address is not blocked")
	require.Equal(t, http.StatusSeeOther, login(attacker, "bob", password), "another name from the address still may try")

	// The per-address budget stops one client walking through names.
	for i := range 15 {
		require.Equal(t, http.StatusUnauthorized, login(attacker, "name"+string(rune('a'+i)), "guess guess"))
	}
	require.Equal(t, http.StatusTooManyRequests, login(attacker, "bob", password))

	// IPv6 clients are counted per /64.
	for i := range 5 {
		require.Equal(t, http.StatusUnauthorized, login("[2001:db8:1:2::"+string(rune('1'+i))+"]:443", "ann", "guess guess"))
	}
	require.Equal(t, http.StatusTooManyRequests, login("[2001:db8:1:2:ffff::1]:443", "ann", password))

	now = now.Add(15 * time.Minute)
	require.Equal(t, http.StatusSeeOther, login(attacker, "ann", password), "the window ends")
}

// Behind a reverse proxy named in TRUSTED_PROXIES, the limiter counts the
// client the proxy saw, not the proxy: a guesser is blocked, the other
// Readers behind the same proxy are not, and what a client writes into
// X-Forwarded-For itself does not buy it a fresh address. From a peer that
// is not a trusted proxy the header is ignored altogether.
func TestLoginLimitBehindATrustedProxy(t *testing.T) {
	t.Parallel()
	st := store.New(pgtest.New(t))
	ui, err := web.New(web.Deps{Config: config.Config{PublicBaseURL: "http://lectern.lan", TrustedProxies: "10.0.0.0/8"}, Store: st,
		Library: &bookmark.Service{Store: st, Registry: latest.Default(), BaseURL: "http://lectern.lan"}})
	require.NoError(t, err)
	hash, err := credential.HashPassword(password)
	require.NoError(t, err)
	_, err = st.CreateReader(context.Background(), "ann", hash, false)
	require.NoError(t, err)

	login := func(peer, xff, pw string) int {
		do := func(method string, form url.Values, cookies []*http.Cookie) *httptest.ResponseRecorder {
			var body io.Reader
			if form != nil {
				body = strings.NewReader(form.Encode())
			}
			req := httptest.NewRequest(method, "/login", body)
			if form != nil {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			for _, c := range cookies {
				req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
			}
			req.RemoteAddr = peer
			req.Header.Set("X-Forwarded-For", xff)
			rec := httptest.NewRecorder()
			ui.Handler().ServeHTTP(rec, req)
			return rec
		}
		rec := do(http.MethodGet, nil, nil)
		token, _ := parse(t, rec.Body.String()).Find(`input[name="csrf"]`).Attr("value")
		return do(http.MethodPost, url.Values{"csrf": {token}, "name": {"ann"}, "password": {pw}}, rec.Result().Cookies()).Code
	}
	const proxy = "10.0.0.2:443"
	for i := range 5 {
		spoofed := fmt.Sprintf("192.0.2.%d, 203.0.113.7", i+1)
		require.Equal(t, http.StatusUnauthorized, login(proxy, spoofed, "guess guess"))
	}
	require.Equal(t, http.StatusTooManyRequests, login(proxy, "192.0.2.99, 203.0.113.7", password),
		"the guesser is counted by the address the proxy saw, whatever it wrote before it")
	require.Equal(t, http.StatusSeeOther, login(proxy, "198.51.100.9", password), "another Reader behind the proxy is not blocked")
	require.Equal(t, http.StatusSeeOther, login(proxy, "198.51.100.10, 10.0.0.7", password), "a chain of trusted proxies is walked")

	// Not a trusted proxy: its header is ignored, so rotating it changes nothing.
	const direct = "198.51.100.50:5000"
	for i := range 5 {
		require.Equal(t, http.StatusUnauthorized, login(direct, fmt.Sprintf("192.0.2.%d", i+1), "guess guess"))
	}
	require.Equal(t, http.StatusTooManyRequests, login(direct, "192.0.2.200", password))
}

func TestPasswordChangeEndsOtherSessions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.Reader("ann", false)
	here, there := b.Browser(), b.Browser()
	here.SignIn("ann", password)
	there.SignIn("ann", password)

	const next = "a brand new passphrase"
	r := here.PostForm("/settings", "/settings/password", url.Values{"current": {"wrong"}, "new": {next}, "confirm": {next}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Equal(t, "The current password is wrong.", text(r, `[data-testid="password-error"]`))
	r = here.PostForm("/settings", "/settings/password", url.Values{"current": {password}, "new": {next}, "confirm": {"typo"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	r = here.PostForm("/settings", "/settings/password", url.Values{"current": {password}, "new": {"short"}, "confirm": {"short"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Contains(t, text(r, `[data-testid="password-error"]`), "at least 8 characters")

	r = here.PostForm("/settings", "/settings/password", url.Values{"current": {password}, "new": {next}, "confirm": {next}})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(t, "/settings?msg=password-changed", r.Location())
	require.Equal(t, http.StatusOK, here.Get("/settings").Code, "this browser stays signed in")
	require.Equal(t, http.StatusSeeOther, there.Get("/settings").Code, "the other session ended")
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM sessions WHERE reader_id = $1`, ann.ID))

	fresh := b.Browser()
	p := fresh.Get("/login")
	r = fresh.Post("/login", url.Values{"csrf": {apptest.CSRF(t, p)}, "name": {"ann"}, "password": {password}})
	require.Equal(t, http.StatusUnauthorized, r.Code, "the old password is gone")
	fresh.SignIn("ann", next)
}
