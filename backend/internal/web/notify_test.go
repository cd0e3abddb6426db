package web_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/server"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/testcert"
)

// hookStub is a loopback HTTPS receiver reached through the server's
// Seams: hooks.test and ntfy.test resolve to a public address the dial seam
// routes to it; internal.test resolves to a private one.
type hookStub struct {
	srv   *httptest.Server
	mu    sync.Mutex
	paths []string
	dials []string
}

func (h *hookStub) got() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.paths...)
}

func (h *hookStub) dialed() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.dials...)
}

type stubResolver map[string]netip.Addr

func (r stubResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// setupWithHooks is setup with the server's gate seams pointed at a stub.
func setupWithHooks(t *testing.T) (*testBundle, *hookStub) {
	t.Helper()
	h := &hookStub{}
	cfgTLS, pool := testcert.New(t, "hooks.test", "ntfy.test", "internal.test")
	h.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		h.paths = append(h.paths, r.URL.Path)
		h.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	h.srv.TLS = cfgTLS
	h.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	h.srv.StartTLS()
	t.Cleanup(h.srv.Close)
	public := netip.MustParseAddr("93.184.216.34")
	seams := &server.Seams{
		Resolver: stubResolver{"hooks.test": public, "ntfy.test": public, "internal.test": netip.MustParseAddr("10.1.2.3")},
		Dial: func(ctx context.Context, _, addr string) (net.Conn, error) {
			h.mu.Lock()
			h.dials = append(h.dials, addr)
			h.mu.Unlock()
			if addr != netip.AddrPortFrom(public, 443).String() {
				return nil, fmt.Errorf("stub: no route to %s", addr)
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", h.srv.Listener.Addr().String())
		},
		RootCAs: pool,
	}

	st := store.New(pgtest.New(t))
	var handler http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	cfg := config.Config{PublicBaseURL: ts.URL, DataDir: t.TempDir()}
	cfg.CoverDir = cfg.DataDir + "/covers"
	srv, err := server.New(context.Background(), server.Deps{Config: cfg, Store: st, Version: "test", Seams: seams})
	require.NoError(t, err)
	handler = srv.Handler()
	return &testBundle{t: t, store: st, srv: srv, lib: srv.Library(), ts: ts, cfg: cfg}, h
}

func TestNotificationTargetsAndSendTest(t *testing.T) {
	t.Parallel()
	b, hooks := setupWithHooks(t)
	b.reader("ann", false)
	c := b.client()
	c.signIn("ann", password)

	// Refused at save time, with the reason, and the form refilled.
	r := c.postForm("/settings", "/settings/notify", url.Values{"kind": {"webhook"}, "url": {"http://hooks.test/x"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Contains(t, text(r, `[data-testid="target-form-error"]`), "only https")
	require.Equal(t, "http://hooks.test/x", r.Doc.Find(`#target-url`).AttrOr("value", ""))
	r = c.postForm("/settings", "/settings/notify", url.Values{"kind": {"webhook"}, "url": {"https://192.168.1.10/hook"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Contains(t, text(r, `[data-testid="target-form-error"]`), "not a public address")

	r = c.postForm("/settings", "/settings/notify", url.Values{"kind": {"ntfy"}, "url": {"https://ntfy.test/ann-news?auth=tk_hidden"}})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	r = c.postForm("/settings", "/settings/notify", url.Values{"kind": {"webhook"}, "url": {"https://internal.test/hook"}})
	require.Equal(t, http.StatusSeeOther, r.Code, "a name is accepted at save time; the gate judges its address at send time")

	settings := c.get("/settings?msg=target-added")
	require.Contains(t, text(settings, `[data-testid="flash"]`), "target added")
	rows := settings.Doc.Find(`[data-testid="target-row"]`)
	require.Equal(t, 2, rows.Length())
	require.Contains(t, rows.First().Text(), "https://ntfy.test/ann-news?…")
	require.NotContains(t, settings.Body, "tk_hidden", "tokens in target URLs are not shown again")

	// Send test: arrives at the stub through the gate.
	testPath, ok := rows.First().Find(`form[action$="/test"]`).Attr("action")
	require.True(t, ok)
	r = c.postForm("/settings", testPath, nil)
	require.Equal(t, http.StatusOK, r.Code)
	require.Contains(t, text(r, `[data-testid="test-result"]`), "Test sent")
	require.Equal(t, []string{"/"}, hooks.got(), "ntfy is published to the server's root")

	// To a private address: refused, nothing arrives, and the page says why.
	before := len(hooks.dialed())
	testPath, _ = rows.Eq(1).Find(`form[action$="/test"]`).Attr("action")
	r = c.postForm("/settings", testPath, nil)
	require.Equal(t, http.StatusOK, r.Code)
	require.Contains(t, text(r, `[data-testid="test-result"]`), "refused to send there (private)")
	require.Len(t, hooks.got(), 1)
	require.Len(t, hooks.dialed(), before, "no connection was made")

	// Another Reader can neither test nor remove Ann's targets.
	b.reader("bob", false)
	bob := b.client()
	bob.signIn("bob", password)
	require.Equal(t, http.StatusNotFound, bob.postForm("/settings", testPath, nil).Code)
	delPath, _ := rows.Eq(1).Find(`form[action$="/delete"]`).Attr("action")
	require.Equal(t, http.StatusNotFound, bob.postForm("/settings", delPath, nil).Code)

	r = c.postForm("/settings", delPath, nil)
	require.Equal(t, http.StatusSeeOther, r.Code)
	require.Equal(t, 1, c.get("/settings").Doc.Find(`[data-testid="target-row"]`).Length())

	// Without the CSRF token nothing changes.
	r = c.post("/settings/notify", url.Values{"kind": {"ntfy"}, "url": {"https://ntfy.test/other"}})
	require.Equal(t, http.StatusForbidden, r.Code)
	require.Equal(t, 1, b.count(`SELECT count(*) FROM notify_targets`))
}
