package browser

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

// The fixtures stand in for a browser Site behind a JavaScript interstitial.
// A "Site" is a loopback HTTPS server reached under a fake hostname
// (name.test) that only the test network's dial function knows, so a page
// loads only if the browser really went through lectern's proxy.

const (
	realMarker      = "Real Series"
	challengeMarker = "Just a moment..."
	clearDelayMS    = 1500
)

// challengePage sets the clearance cookie from JavaScript after ~1.5 s and
// reloads into the real page, as a Cloudflare interstitial does.
const challengePage = `<!doctype html><html><head><title>Just a moment...</title></head>
<body><p>Checking your browser</p>
<script>setTimeout(function () { document.cookie = "clearance=ok; path=/; Secure"; location.reload(); }, %d);</script>
</body></html>`

// stuckPage is an interstitial that never clears.
const stuckPage = `<!doctype html><html><head><title>Just a moment...</title></head>
<body><p>Checking your browser</p></body></html>`

const realPage = `<!doctype html><html><head><title>Series</title></head>
<body><h1>Real Series</h1><ul class="list-chapter"><li><a href="/s/chapter-12.html">Chapter 12</a></li></ul></body></html>`

// testNet is the proxy's dial function in tests: it maps the fake Site
// hostnames to the loopback servers and refuses every other destination, as
// the destination gate refuses loopback and private addresses.
type testNet struct {
	mu      sync.Mutex
	names   map[string]bool
	refused []string
}

func newTestNet() *testNet { return &testNet{names: map[string]bool{}} }

func (n *testNet) allow(host string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.names[host] = true
}

func (n *testNet) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	ok := n.names[host]
	if !ok {
		n.refused = append(n.refused, addr)
	}
	n.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("destination %s refused: not a public address", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
}

func (n *testNet) refusedAddrs() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.refused...)
}

// site is one loopback HTTPS fixture server with a request log.
type site struct {
	srv  *httptest.Server
	host string // the fake hostname, e.g. "read-cleared.test"
	mu   sync.Mutex
	log  []string
	png  []byte
}

var (
	nonName   = regexp.MustCompile(`[^a-z0-9]+`)
	siteCount atomic.Int64
)

// newSite starts a fixture server for the test under a hostname of its own,
// so that the clearance cookie of one test never clears another's challenge
// (the browser context keeps cookies across reads, by design).
func newSite(t testing.TB, n *testNet, suffix string) *site {
	t.Helper()
	name := strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()+"-"+suffix), "-"), "-")
	if len(name) > 50 {
		name = name[len(name)-50:]
	}
	// The counter keeps names unique across -count runs in one process too.
	name = fmt.Sprintf("%s-%d", strings.Trim(name, "-"), siteCount.Add(1))
	s := &site{host: name + ".test", png: testPNG(t, 64, 64)}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	n.allow(s.host)
	return s
}

func (s *site) port() string {
	_, port, _ := net.SplitHostPort(s.srv.Listener.Addr().String())
	return port
}

// url is the address of path under the fake hostname.
func (s *site) url(path string) string {
	return "https://" + s.host + ":" + s.port() + path
}

func (s *site) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

func (s *site) served(path string) bool {
	for _, r := range s.requests() {
		if strings.HasPrefix(r, path) {
			return true
		}
	}
	return false
}

func (s *site) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.log = append(s.log, r.URL.RequestURI())
	s.mu.Unlock()
	cleared := false
	if c, err := r.Cookie("clearance"); err == nil && c.Value == "ok" {
		cleared = true
	}
	html := func(status int, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
	switch {
	case r.URL.Path == "/plain":
		html(http.StatusOK, realPage)
	case r.URL.Path == "/challenge":
		if cleared {
			html(http.StatusOK, realPage)
			return
		}
		html(http.StatusForbidden, fmt.Sprintf(challengePage, clearDelayMS))
	case r.URL.Path == "/stuck":
		html(http.StatusForbidden, stuckPage)
	case r.URL.Path == "/api/series":
		// kagane-style: the data exists only in a JSON API behind the clearance cookie.
		if !cleared {
			html(http.StatusForbidden, stuckPage)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"title":"Real Series","series_books":[{"chapter_no":"12"}]}`)
	case r.URL.Path == "/cover.png":
		// Same-origin only, and only once the challenge cleared.
		if !cleared {
			html(http.StatusForbidden, stuckPage)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Cross-Origin-Resource-Policy", "same-origin")
		_, _ = w.Write(s.png)
	case r.URL.Path == "/missing.png":
		http.NotFound(w, r)
	case r.URL.Path == "/redirect":
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	case r.URL.Path == "/jsnav":
		html(http.StatusOK, fmt.Sprintf(`<!doctype html><html><body><p>leaving</p>
<script>setTimeout(function () { location.href = %q; }, 200);</script></body></html>`, r.URL.Query().Get("to")))
	case r.URL.Path == "/embed":
		// A page that references an address on the private side (here a
		// second loopback server): the browser must get nothing from it.
		src := r.URL.Query().Get("img")
		html(http.StatusOK, fmt.Sprintf(`<!doctype html><html><head><title>waiting</title></head><body>
<img src=%q onload="document.title='img-loaded'" onerror="document.title='img-error'">
<p>Real Series</p></body></html>`, src))
	default:
		http.NotFound(w, r)
	}
}

func testPNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.NRGBA{uint8(x * 4), uint8(y * 4), uint8(x ^ y), 255})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// htmlRead is a novelfull-style read: the document HTML.
func htmlRead(_ string, payload *string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		s, err := chromedp.Evaluate[string](`document.documentElement.outerHTML`)(ctx, t)
		*payload = s
		return err
	})
}

// apiRead is a kagane-style read: an in-page fetch of the Site's JSON API, so
// the request carries the clearance cookie.
func apiRead(apiPath string) ReadFunc {
	return func(_ string, payload *string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			s, err := chromedp.Evaluate[string](fmt.Sprintf(
				`fetch(%q, {credentials: 'include'}).then(r => r.ok ? r.text() : '')`, apiPath),
				chromedp.EvalAwaitPromise)(ctx, t)
			*payload = s
			return err
		})
	}
}

// titleRead reads document.title.
func titleRead(_ string, payload *string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		s, err := chromedp.Evaluate[string](`document.title`)(ctx, t)
		*payload = s
		return err
	})
}

func realArrived(p string) bool {
	return strings.Contains(p, realMarker) && !strings.Contains(p, challengeMarker)
}

// syncBuffer collects log output from several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// pacer records the pacing gate's calls, in order.
type pacer struct {
	mu    sync.Mutex
	calls map[string]int
	seq   []string
}

func (p *pacer) Pace(ctx context.Context, host string) error {
	p.mu.Lock()
	if p.calls == nil {
		p.calls = map[string]int{}
	}
	p.calls[host]++
	p.seq = append(p.seq, host)
	p.mu.Unlock()
	return ctx.Err()
}

// sequence is the order of the calls for the given hosts.
func (p *pacer) sequence(hosts ...string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, h := range p.seq {
		for _, want := range hosts {
			if h == want {
				out = append(out, h)
			}
		}
	}
	return out
}

func (p *pacer) count(host string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[host]
}

// env is a Browser with its test network, pacer and log.
type env struct {
	b    *Browser
	net  *testNet
	pace *pacer
	log  *syncBuffer
}

func newEnv(t testing.TB, opts Options) *env {
	t.Helper()
	e := &env{net: newTestNet(), pace: &pacer{}, log: &syncBuffer{}}
	opts.Dial = e.net.Dial
	opts.Pace = e.pace.Pace
	opts.Logger = slogTo(e.log)
	if opts.URL == "" && opts.Path == "" {
		opts.Path = testenv.ChromiumPath(t)
		opts.IgnoreCertErrors = true
	}
	if opts.RereadInterval == 0 {
		opts.RereadInterval = 250 * time.Millisecond
	}
	e.b = New(opts)
	t.Cleanup(func() { _ = e.b.Close() })
	return e
}

// insecureClient is the plain-HTTP reference: it reaches the fixture server
// directly, skipping certificate checks (the server is self-signed).
func insecureClient() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}

func slogTo(w *syncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// execCommand starts a process in a group of its own, so the test can end it
// and its children by that group's id.
func execCommand(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}
