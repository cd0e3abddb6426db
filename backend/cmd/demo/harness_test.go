package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The end-to-end harness: the fixture Sites on loopback HTTPS, Lectern
// in-process on a fresh test database with real River workers (the same
// composition `make demo` runs), and a real headless Chromium whose resolver
// sends the Site hostnames to the fixture server. The built userscript is
// fetched from the running Lectern, as a userscript manager installs it, and
// evaluated in an isolated world with GM_* functions backed by this test.

//go:embed gm_bridge.js
var bridgeTemplate string

const (
	worldName   = "lectern-e2e"
	bindingName = "__lecternGM"
	step        = 45 * time.Second // generous: a slow machine never fails a step
)

// env is one setup: fixture Sites, a Lectern and a Reader with a token.
type env struct {
	t        testing.TB
	sites    *fixturesites.Server
	lectern  *lectern
	readerID int64
	token    string
}

func newEnv(t testing.TB, opts fixturesites.Options, workers int) *env {
	t.Helper()
	sites, err := fixturesites.Start(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sites.Close() })
	ctx := context.Background()
	l, err := startLectern(ctx, sites, lecternOptions{
		DatabaseURL: pgtest.NewURL(t), DataDir: t.TempDir(), Listen: "127.0.0.1:0", Workers: workers,
		SitePace: brisk(20 * time.Millisecond), RiverPoll: 50 * time.Millisecond, Version: "e2e",
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	id, token, err := newReader(ctx, l.Store, "ann", "correct horse battery", false)
	require.NoError(t, err)
	return &env{t: t, sites: sites, lectern: l, readerID: id, token: token}
}

// api calls Lectern's API as the Reader and decodes a JSON answer into out.
func (e *env) api(method, path string, body, out any) int {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(e.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.lectern.BaseURL+path, rd)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	if out != nil && resp.StatusCode < 300 {
		require.NoError(e.t, json.Unmarshal(raw, out), "%s", raw)
	}
	return resp.StatusCode
}

// wireBookmark is the part of the wire's Bookmark these tests read.
type wireBookmark struct {
	Key           string   `json:"key"`
	Title         string   `json:"title"`
	SeriesURL     string   `json:"series_url"`
	Cover         string   `json:"cover"`
	Chapter       string   `json:"chapter"`
	ChapterNumber *float64 `json:"chapter_number"`
	ChapterURL    string   `json:"chapter_url"`
	LatestChapter string   `json:"latest_chapter"`
}

func (e *env) bookmark(key string) wireBookmark {
	e.t.Helper()
	var b wireBookmark
	require.Equal(e.t, http.StatusOK, e.api(http.MethodGet, "/api/bookmarks/"+url.PathEscape(key), nil, &b))
	return b
}

// userscript is the built script as the running Lectern serves it.
func (e *env) userscript(name string) string {
	e.t.Helper()
	resp, err := http.Get(e.lectern.BaseURL + "/userscripts/" + name + ".user.js")
	require.NoError(e.t, err)
	defer resp.Body.Close()
	require.Equal(e.t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	require.NotContains(e.t, string(b), "__LECTERN_BASE_URL__", "the server writes its base URL in")
	require.Contains(e.t, string(b), "'"+e.lectern.BaseURL+"'")
	return string(b)
}

// launch starts a headless Chromium that resolves the fixture hosts to the
// fixture server, accepts its certificate by key hash, and resolves no other
// name. It returns the browser's context.
func launch(t testing.TB, sites *fixturesites.Server) context.Context {
	t.Helper()
	path := testenv.ChromiumPath(t)
	profile := t.TempDir() // registered first, so removed after the browser exits
	opts := append([]chromedp.ExecAllocatorOption{}, chromedp.DefaultExecAllocatorOptions[:]...)
	opts = append(opts, chromedp.ExecPath(path), chromedp.UserDataDir(profile), chromedp.WindowSize(1280, 900))
	for _, f := range []string{"headless", "no-sandbox", "disable-gpu", "disable-quic", "no-first-run",
		"disable-background-networking", "disable-component-update", "disable-sync"} {
		opts = append(opts, chromedp.Flag(f, true))
	}
	for name, value := range sites.ChromiumFlags() {
		opts = append(opts, chromedp.Flag(name, value))
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	require.NoError(t, chromedp.Do(ctx), "start Chromium at %s", path)
	return ctx
}

// gmCall is one GM_xmlhttpRequest the bridge performed.
type gmCall struct {
	Method, URL string
	Status      int
	// Sent and Received are the bytes on the wire (one connection per
	// request), headers included.
	Sent, Received int64
	IfNoneMatch    string
}

// bridge is the Go half of gm_bridge.js: the script's storage and its
// requests, which it makes only to Lectern's origin (the script's @connect).
type bridge struct {
	t      testing.TB
	origin string
	client *http.Client

	mu      sync.Mutex
	values  map[string]json.RawMessage
	calls   []gmCall
	refused []string
}

func newBridge(t testing.TB, origin string, values map[string]any) *bridge {
	b := &bridge{t: t, origin: origin}
	b.reset(values)
	b.client = &http.Client{
		Timeout: 30 * time.Second,
		// A manager reports redirects through finalUrl; following them here
		// lets the script see where it ended up.
		Transport: &http.Transport{
			DisableKeepAlives:  true,
			DisableCompression: true,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				var d net.Dialer
				c, err := d.DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return &countingConn{Conn: c}, nil
			},
		},
	}
	return b
}

// countingConn counts the bytes of one connection.
type countingConn struct {
	net.Conn
	read, written atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

type bridgeMsg struct {
	Op      string            `json:"op"`
	ID      int64             `json:"id"`
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Data    *string           `json:"data"`
	Timeout int64             `json:"timeout"`
	Key     string            `json:"key"`
	Value   json.RawMessage   `json:"value"`
}

type bridgeReply struct {
	Status          int    `json:"status,omitempty"`
	ResponseText    string `json:"responseText"`
	ResponseHeaders string `json:"responseHeaders"`
	FinalURL        string `json:"finalUrl,omitempty"`
	Error           string `json:"error,omitempty"`
}

// serve answers the binding's calls for a tab until tabCtx ends.
func (b *bridge) serve(tabCtx context.Context) {
	events := chromedp.Events(tabCtx, runtime.BindingCalled)
	go func() {
		for ev, err := range events {
			if err != nil {
				return
			}
			if ev.Name != bindingName {
				continue
			}
			var msg bridgeMsg
			if json.Unmarshal([]byte(ev.Payload), &msg) != nil {
				continue
			}
			switch msg.Op {
			case "set":
				b.mu.Lock()
				b.values[msg.Key] = msg.Value
				b.mu.Unlock()
			case "xhr":
				go func(world runtime.ExecutionContextID) {
					reply := b.do(tabCtx, msg)
					raw, _ := json.Marshal(reply)
					_, _ = chromedp.Call(tabCtx, runtime.Evaluate, runtime.EvaluateParams{
						Expression: fmt.Sprintf("__lecternGMDone(%d, %s)", msg.ID, raw),
						ContextID:  world,
					})
				}(ev.ExecutionContextID)
			}
		}
	}()
}

// do performs one request, as a userscript manager does: only to the
// deployment's origin (@connect), with the script's headers and body.
func (b *bridge) do(ctx context.Context, msg bridgeMsg) bridgeReply {
	u, err := url.Parse(msg.URL)
	if err != nil || u.Scheme+"://"+u.Host != b.origin {
		b.mu.Lock()
		b.refused = append(b.refused, msg.URL)
		b.mu.Unlock()
		return bridgeReply{Error: "refused"}
	}
	if msg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(msg.Timeout)*time.Millisecond)
		defer cancel()
	}
	var body io.Reader
	if msg.Data != nil {
		body = strings.NewReader(*msg.Data)
	}
	req, err := http.NewRequestWithContext(ctx, msg.Method, msg.URL, body)
	if err != nil {
		return bridgeReply{Error: "error"}
	}
	for k, v := range msg.Headers {
		req.Header.Set(k, v)
	}
	var conn *countingConn
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { conn, _ = info.Conn.(*countingConn) },
	}))
	resp, err := b.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return bridgeReply{Error: "timeout"}
		}
		return bridgeReply{Error: "error"}
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return bridgeReply{Error: "error"}
	}
	// A manager hands the script the decoded body, as the browser's own
	// requests do.
	text, err := apptest.Decode(raw, resp.Header.Get("Content-Encoding"))
	if err != nil {
		return bridgeReply{Error: "error"}
	}
	var headers strings.Builder
	for k, vs := range resp.Header {
		for _, v := range vs {
			fmt.Fprintf(&headers, "%s: %s\r\n", k, v)
		}
	}
	call := gmCall{Method: msg.Method, URL: msg.URL, Status: resp.StatusCode, IfNoneMatch: req.Header.Get("If-None-Match")}
	if conn != nil {
		call.Sent, call.Received = conn.written.Load(), conn.read.Load()
	}
	b.mu.Lock()
	b.calls = append(b.calls, call)
	b.mu.Unlock()
	return bridgeReply{Status: resp.StatusCode, ResponseText: string(text), ResponseHeaders: headers.String(), FinalURL: resp.Request.URL.String()}
}

// reset replaces the storage, as a fresh install with these values.
func (b *bridge) reset(values map[string]any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.values = map[string]json.RawMessage{}
	for k, v := range values {
		raw, err := json.Marshal(v)
		require.NoError(b.t, err)
		b.values[k] = raw
	}
}

// snapshot is the storage as the bridge script's initial values.
func (b *bridge) snapshot() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	raw, err := json.Marshal(b.values)
	require.NoError(b.t, err)
	return string(raw)
}

func (b *bridge) value(key string) json.RawMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.values[key]
}

func (b *bridge) callsSince(n int) []gmCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]gmCall(nil), b.calls[n:]...)
}

func (b *bridge) refusedURLs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.refused...)
}

func (b *bridge) callCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.calls)
}

// tab is one browser tab showing the panel: either with the userscript
// injected by the test into an isolated world (world set), or injected by
// the demo into the page itself, reached then through DevTools' view of
// the closed shadow root (root set), a privilege the page does not have.
type tab struct {
	t      testing.TB
	ctx    context.Context
	bridge *bridge
	script string
	code   string // the served userscript
	world  runtime.ExecutionContextID
	root   runtime.RemoteObjectID
}

// newTab opens a tab in its own browser context; with a bridge, the
// isolated world's binding is wired to it.
func newTab(t testing.TB, browser context.Context, b *bridge, script, code string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	require.NoError(t, chromedp.Do(ctx))
	tb := &tab{t: t, ctx: ctx, bridge: b, script: script, code: code}
	tb.do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		if b != nil {
			// Bound to the named world only: the page's own scripts never see it.
			if _, err := chromedp.Call(ctx, runtime.AddBinding, runtime.AddBindingParams{Name: bindingName, ExecutionContextName: worldName}); err != nil {
				return err
			}
		}
		// Headless Chromium reports a light theme; the screenshots show
		// the dark one most Readers use.
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}},
		})
		return err
	}))
	if b != nil {
		b.serve(ctx)
	}
	return tb
}

func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, step)
	defer cancel()
	require.NoError(tb.t, chromedp.Do(ctx, actions...))
}

// open navigates to pageURL and, once it has loaded (document-idle), runs
// the userscript in a fresh isolated world and waits for its test hook.
func (tb *tab) open(pageURL string) {
	tb.t.Helper()
	tb.do(chromedp.Navigate(pageURL))
	tb.inject()
}

func (tb *tab) inject() {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, step)
	defer cancel()
	frame := cdp.FrameID(chromedp.FromContext(tb.ctx).Target.TargetID)
	res, err := chromedp.Call(ctx, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: frame, WorldName: worldName})
	require.NoError(tb.t, err)
	tb.world, tb.root = res.ExecutionContextID, ""
	name, _ := json.Marshal(tb.script)
	src := strings.NewReplacer("__VALUES__", tb.bridge.snapshot(), "__SCRIPT__", string(name), "__USERSCRIPT__", tb.code).Replace(bridgeTemplate)
	tb.evaluate(src, nil)
	tb.wait(`true`)
}

// attach finds the panel the page itself runs (the demo's injection) and
// holds its shadow root through DevTools.
func (tb *tab) attach() {
	tb.t.Helper()
	deadline := time.Now().Add(step)
	for {
		ctx, cancel := context.WithTimeout(tb.ctx, step)
		doc, err := chromedp.Call(ctx, dom.GetDocument, dom.GetDocumentParams{Depth: ptr(int64(-1)), Pierce: ptr(true)})
		require.NoError(tb.t, err)
		if sr := findShadowRoot(doc.Root); sr != nil {
			obj, err := chromedp.Call(ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: sr.BackendNodeID})
			cancel()
			require.NoError(tb.t, err)
			tb.world, tb.root = 0, obj.Object.ObjectID
			return
		}
		cancel()
		if time.Now().After(deadline) {
			tb.t.Fatal("the page shows no Lectern panel")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// findShadowRoot returns the shadow root holding the panel.
func findShadowRoot(n *cdp.Node) *cdp.Node {
	if n == nil {
		return nil
	}
	for _, sr := range n.ShadowRoots {
		for _, c := range sr.Children {
			if attr(c, "data-testid") == "lectern-root" {
				return sr
			}
		}
	}
	for _, c := range n.Children {
		if r := findShadowRoot(c); r != nil {
			return r
		}
	}
	return nil
}

func attr(n *cdp.Node, name string) string {
	for i := 0; i+1 < len(n.Attributes); i += 2 {
		if n.Attributes[i] == name {
			return n.Attributes[i+1]
		}
	}
	return ""
}

// mainEval evaluates expr in the page's own JavaScript world.
func mainEval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, step)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	require.NoError(tb.t, err, short(expr))
	return v
}

// evaluate runs src (awaiting a promise) in the isolated world and decodes
// its value into out when out is not nil.
func (tb *tab) evaluate(src string, out any) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, step)
	defer cancel()
	res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
		Expression: src, ContextID: tb.world, ReturnByValue: ptr(true), AwaitPromise: ptr(true),
	})
	require.NoError(tb.t, err)
	tb.result(res.Result, res.ExceptionDetails, src, out)
}

func (tb *tab) result(v *runtime.RemoteObject, exc *runtime.ExceptionDetails, src string, out any) {
	tb.t.Helper()
	if exc != nil {
		desc := exc.Text
		if exc.Exception != nil {
			desc += " " + exc.Exception.Description
		}
		tb.t.Fatalf("panel: %s\n%s", desc, short(src))
	}
	if out != nil {
		require.NotNil(tb.t, v)
		require.NoError(tb.t, json.Unmarshal(v.Value, out), "%s", short(src))
	}
}

// panel evaluates expr with R (the panel's shadow root) and q(testid) in
// scope, and decodes its value into out when out is not nil.
func (tb *tab) panel(expr string, out any) {
	tb.t.Helper()
	const prelude = `const q = (id) => R.querySelector('[data-testid="' + id + '"]');`
	if tb.world != 0 {
		tb.evaluate("(async () => { const R = globalThis.__lecternHook.shadowRoot; "+prelude+" return ("+expr+"); })()", out)
		return
	}
	ctx, cancel := context.WithTimeout(tb.ctx, step)
	defer cancel()
	src := "async function () { const R = this; " + prelude + " return (" + expr + "); }"
	res, err := chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: src, ObjectID: tb.root, ReturnByValue: ptr(true), AwaitPromise: ptr(true),
	})
	require.NoError(tb.t, err)
	tb.result(res.Result, res.ExceptionDetails, src, out)
}

// wait waits until expr (as for panel) is true.
func (tb *tab) wait(expr string) {
	tb.t.Helper()
	deadline := time.Now().Add(step)
	for {
		var ok bool
		if tb.world != 0 {
			// Until the script has run, there is no hook yet.
			var hooked bool
			tb.evaluate(`!!globalThis.__lecternHook`, &hooked)
			if !hooked {
				time.Sleep(50 * time.Millisecond)
				continue
			}
		}
		tb.panel("(() => { try { return !!("+expr+"); } catch (e) { return false; } })()", &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var state string
			tb.panel(`q('lectern-panel').getAttribute('data-state') + ' / ' + q('lectern-status').getAttribute('data-code') + ' / ' + q('lectern-status').textContent`, &state)
			tb.t.Fatalf("waiting for %s; panel: %s", expr, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// click clicks the element with testid with a real mouse event at its
// centre.
func (tb *tab) click(testid string) { tb.clickIn("", testid) }

// clickIn clicks the element with testid inside scope, a selector within
// the shadow root.
func (tb *tab) clickIn(scope, testid string) {
	tb.t.Helper()
	sel := `[data-testid="` + testid + `"]`
	if scope != "" {
		sel = scope + " " + sel
	}
	tb.wait(fmt.Sprintf(`(() => { const el = R.querySelector(%q); return el && !el.disabled && el.getClientRects().length > 0; })()`, sel))
	var box struct{ X, Y float64 }
	tb.panel(fmt.Sprintf(`(() => { const el = R.querySelector(%q); el.scrollIntoView({ block: 'nearest' }); const r = el.getBoundingClientRect(); return { X: r.left + r.width / 2, Y: r.top + r.height / 2 }; })()`, sel), &box)
	tb.do(chromedp.MouseClickXY(box.X, box.Y))
}

func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, step)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(tb.t, err)
	p := filepath.Join(testenv.ScreenshotDir(tb.t), name+".png")
	require.NoError(tb.t, os.WriteFile(p, buf, 0o644))
	tb.t.Logf("screenshot: %s", p)
}

func ptr[T any](v T) *T { return &v }

func short(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
