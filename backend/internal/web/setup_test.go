package web_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/config"
)

// syncLog collects a server's JSON log.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// field is the value of key on the first line whose message starts with msg.
func (l *syncLog) field(t *testing.T, msg, key string) string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range strings.Split(l.b.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && strings.HasPrefix(m["msg"].(string), msg) {
			v, _ := m[key].(string)
			return v
		}
	}
	t.Fatalf("no log line %q", msg)
	return ""
}

// While no Owner exists, a request from another machine (here: a client
// behind a trusted proxy, whose forwarded address counts) sees the setup
// code field and is refused without the code serve logged at start; with
// it, the Owner is created, and the code is spent.
func TestFirstRunFromElsewhereNeedsTheSetupCode(t *testing.T) {
	t.Parallel()
	var logs syncLog
	b := setup(t, apptest.Options{
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		Config: func(c *config.Config) { c.TrustedProxies = "127.0.0.1" },
	})
	code := logs.field(t, "first run: no Owner yet", "setup_code")
	require.Regexp(t, `^[A-Z2-7]{4}-[A-Z2-7]{4}-[A-Z2-7]{4}-[A-Z2-7]{4}$`, code)

	c := b.Browser()
	get := func(forwarded string) apptest.Page {
		req := c.Request(http.MethodGet, "/setup", nil)
		req.Header.Set("X-Forwarded-For", forwarded)
		return c.Do(req)
	}
	post := func(forwarded string, form url.Values) apptest.Page {
		return c.Post("/setup", form, "X-Forwarded-For", forwarded)
	}
	page := get("203.0.113.7")
	require.Equal(t, http.StatusOK, page.Code)
	require.Equal(t, 1, page.Doc.Find(`[data-testid="setup-code"]`).Length(), "another machine is asked for the code")
	require.Contains(t, page.Body, "first run: no Owner yet", "the page says where the code is")
	csrf := apptest.CSRF(t, page)
	form := url.Values{"csrf": {csrf}, "name": {"mallory"}, "password": {password}, "confirm": {password}}

	r := post("203.0.113.7", form)
	require.Equal(t, http.StatusForbidden, r.Code, r.Body)
	require.Contains(t, text(r, `[data-testid="form-error"]`), "setup code")
	form.Set("setup_code", "AAAA-BBBB-CCCC-DDDD")
	r = post("203.0.113.7", form)
	require.Equal(t, http.StatusForbidden, r.Code, "a wrong code")
	require.Zero(t, b.Count(`SELECT count(*) FROM readers`))

	// The forwarded address is loopback: the proxy runs on this machine
	// and so did the client. No code asked.
	require.Zero(t, get("127.0.0.1").Doc.Find(`[data-testid="setup-code"]`).Length())

	// Typed the way people type it: lower case, spaces for dashes.
	form.Set("name", "olive")
	form.Set("setup_code", strings.ToLower(strings.ReplaceAll(code, "-", " ")))
	r = post("203.0.113.7", form)
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM readers WHERE name = 'olive' AND is_owner`))
}

// Without TRUSTED_PROXIES a forwarded address is anyone's claim and is not
// read: a request from this machine stays one, whatever it says.
func TestFirstRunOnThisMachineNeedsNoCode(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.Browser()
	req := c.Request(http.MethodGet, "/setup", nil)
	req.Header.Set("X-Forwarded-For", "203.0.113.7")
	page := c.Do(req)
	require.Equal(t, http.StatusOK, page.Code)
	require.Zero(t, page.Doc.Find(`[data-testid="setup-code"]`).Length(), "the peer is loopback and no proxy is trusted")
}
