// Package browser is the browser fetcher of the Poll: one headless Chrome,
// reached at a DevTools URL (the Compose sidecar) or launched from a local
// Chromium, driven through one shared tab lifecycle (DESIGN decision 5).
//
// Browser Sites contribute a read (a chromedp action that writes the payload)
// and an arrival test; this package owns everything else: the tab held open
// across re-reads so a JavaScript interstitial can clear itself and write its
// cookie, one read at a time, the caller's deadline bound to the tab, paced
// re-reads, the host pin checked again inside the tab, and the difference
// between a lost browser and a read worth retrying.
//
// Chrome reaches the network only through a small forward proxy inside lectern
// that dials with the destination gate (see proxy.go), so a hostile page cannot
// make the browser fetch from private addresses.
package browser

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
)

// Errors a caller tells apart with errors.Is.
var (
	// ErrNoBrowser: neither a DevTools URL nor a Chromium path is configured.
	// Callers degrade: kagane is skipped, novelfull falls back to the plain fetcher.
	ErrNoBrowser = errors.New("no browser configured")
	// ErrLostBrowser: the browser process died or its connection dropped, or
	// it could not be started or reached at all. The next use reconnects or
	// relaunches; the read itself may be retried then.
	ErrLostBrowser = errors.New("lost the browser")
	// ErrChallenge: the page was read but the payload never arrived before the
	// deadline (an interstitial that did not clear). The Site backs off.
	ErrChallenge = errors.New("challenge did not clear")
	// ErrHostPin: the tab's page, after navigation and redirects, is not on one
	// of the Site's hosts (or not https), or an address given was not.
	ErrHostPin = errors.New("host pin")
	// ErrRead: the read failed for a reason worth retrying later (the page did
	// not load, the read action kept failing until the deadline).
	ErrRead = errors.New("browser read failed")
	// ErrTooLarge: an image was larger than the caller's cap.
	ErrTooLarge = errors.New("image larger than the cap")
)

// ReadFunc is a browser Site's read: run inside the tab after it navigated to
// pageURL, it writes the payload (kagane: the JSON of an in-page fetch of its
// API; novelfull: the document HTML).
type ReadFunc = func(pageURL string, payload *string) chromedp.Action[chromedp.Void]

// ArrivedFunc tells the real payload from a challenge interstitial.
type ArrivedFunc = func(payload string) bool

// Options configure a Browser. Only one of URL and Path is used; URL wins.
type Options struct {
	// URL is the DevTools endpoint of a running headless Chrome (the Compose
	// sidecar): http://host:9222 or ws://host:9222/devtools/browser/<id>.
	// Every tab lectern opens there lives in a browser context whose proxy is
	// ProxyAddr, so the sidecar needs no --proxy-server; launch flags cannot be
	// set from here, though, so start it with: --headless --no-sandbox
	// --disable-gpu --disable-quic --no-first-run --disable-background-networking
	// --disable-component-update --disable-sync
	// --force-webrtc-ip-handling-policy=disable_non_proxied_udp (WebRTC UDP
	// ignores proxies) --remote-debugging-address=0.0.0.0
	// --remote-debugging-port=9222, and keep its DevTools port off any network
	// but lectern's.
	URL string
	// Path is a local Chromium binary, launched when URL is empty.
	Path string
	// Dial is the guarded dialer the proxy uses for every connection Chrome
	// asks for (the destination gate refuses non-public addresses). When nil,
	// every destination is refused: the browser is never given the raw network.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Pace is the shared per-host pacing gate, called with the page's host
	// before every navigation and every re-read. Nil means no pacing.
	Pace func(ctx context.Context, host string) error
	// Logger receives the fetcher's own lines (default slog.Default()).
	Logger *slog.Logger

	// ProxyListen is where the proxy listens (default 127.0.0.1:0, loopback on
	// a free port). With a remote sidecar it must be an address the sidecar
	// can reach, e.g. ":3128" on the Compose network; the per-process proxy
	// credentials keep it from being an open proxy there.
	ProxyListen string
	// ProxyAddr is host:port the browser is told to use for the proxy
	// (default: the listener's address). With a sidecar: "lectern:3128".
	ProxyAddr string

	// RereadInterval is the pause between re-reads of a page whose payload has
	// not arrived (default 1s); Pace is applied on top of it.
	RereadInterval time.Duration
	// LoadTimeout caps the wait for a page's load event; a slow page is then
	// read as it is (default 20s).
	LoadTimeout time.Duration
	// LaunchTimeout caps starting or connecting to the browser (default 30s).
	LaunchTimeout time.Duration
	// DialTimeout caps one dial of the proxy (default 10s).
	DialTimeout time.Duration
	// Idle closes a Chromium this Browser launched after that long without
	// a read (BROWSER_IDLE); the next read launches it again. 0 keeps it
	// running. A browser at URL is never closed: it is not ours.
	Idle time.Duration

	// IgnoreCertErrors makes a launched Chromium accept any certificate. For
	// tests against self-signed loopback servers only; never set it in production.
	IgnoreCertErrors bool
}

// Browser is the browser fetcher. Its methods are safe for concurrent use;
// reads are serialised, one at a time.
type Browser struct {
	opts Options
	log  *slog.Logger

	// sem serialises every use of the browser and guards cur and proxy.
	sem   chan struct{}
	cur   *conn
	proxy *proxy
	// pid is the launched browser's process id (0 when none or remote).
	pid atomic.Int64
	// idle is the teardown timer of a launched browser, re-armed by every
	// read's end; usedAt is that end. Both guarded by sem.
	idle   *time.Timer
	usedAt time.Time
}

// conn is one connected browser and the browser context every tab opens in.
type conn struct {
	allocCancel context.CancelFunc
	root        context.Context
	rootCancel  context.CancelFunc
	bctx        cdp.BrowserContextID
	lost        <-chan struct{}
}

func (c *conn) isLost() bool {
	select {
	case <-c.lost:
		return true
	default:
		return false
	}
}

func (c *conn) close() {
	c.rootCancel()
	c.allocCancel()
}

// New returns a Browser. It starts nothing: the proxy and the browser start on
// first use. With neither opts.URL nor opts.Path, every use reports ErrNoBrowser.
func New(opts Options) *Browser {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Dial == nil {
		opts.Dial = func(context.Context, string, string) (net.Conn, error) {
			return nil, errors.New("browser proxy: no destination gate configured, refusing every destination")
		}
	}
	if opts.ProxyListen == "" {
		opts.ProxyListen = "127.0.0.1:0"
	}
	if opts.RereadInterval <= 0 {
		opts.RereadInterval = time.Second
	}
	if opts.LoadTimeout <= 0 {
		opts.LoadTimeout = 20 * time.Second
	}
	if opts.LaunchTimeout <= 0 {
		opts.LaunchTimeout = 30 * time.Second
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 10 * time.Second
	}
	return &Browser{
		opts: opts,
		log:  opts.Logger.With("component", "browser"),
		sem:  make(chan struct{}, 1),
	}
}

// Enabled reports whether a browser is configured at all.
func (b *Browser) Enabled() bool { return b.opts.URL != "" || b.opts.Path != "" }

// Close stops the browser (or disconnects from the sidecar) and the proxy. It
// waits for a read in progress to end.
func (b *Browser) Close() error {
	b.sem <- struct{}{}
	defer func() { <-b.sem }()
	if b.idle != nil {
		b.idle.Stop()
	}
	if b.cur != nil {
		b.cur.close()
		b.cur = nil
		b.pid.Store(0)
	}
	if b.proxy != nil {
		err := b.proxy.close()
		b.proxy = nil
		return err
	}
	return nil
}

// acquire takes the browser for one read, or gives up when ctx ends first.
func (b *Browser) acquire(ctx context.Context) error {
	select {
	case b.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the browser: %w", ctx.Err())
	}
}

// release ends a use of the browser, arming the idle teardown of one that
// was launched here.
func (b *Browser) release() {
	if b.opts.Idle > 0 && b.opts.URL == "" && b.cur != nil {
		b.usedAt = time.Now()
		if b.idle == nil {
			b.idle = time.AfterFunc(b.opts.Idle, b.closeIdle)
		} else {
			b.idle.Reset(b.opts.Idle)
		}
	}
	<-b.sem
}

// closeIdle closes the launched browser when no read used it for Idle. A
// read in progress holds sem; its release arms the timer again, so the
// teardown then simply waits for the next quiet Idle.
func (b *Browser) closeIdle() {
	select {
	case b.sem <- struct{}{}:
	default:
		return
	}
	defer func() { <-b.sem }()
	if b.cur == nil || time.Since(b.usedAt) < b.opts.Idle {
		return
	}
	pid := b.pid.Load()
	b.drop()
	b.log.Info("browser closed after idle", "idle", b.opts.Idle.String(), "pid", pid)
}

// connection returns the live browser, reconnecting or relaunching after a
// loss. Called with sem held.
func (b *Browser) connection(ctx context.Context) (*conn, error) {
	if b.cur != nil {
		if !b.cur.isLost() {
			return b.cur, nil
		}
		b.drop()
	}
	if b.proxy == nil {
		p, err := startProxy(b.opts.ProxyListen, b.opts.Dial, b.opts.DialTimeout, b.log)
		if err != nil {
			return nil, err
		}
		b.proxy = p
	}
	proxyAddr := b.opts.ProxyAddr
	if proxyAddr == "" {
		proxyAddr = b.proxy.addr()
	}
	proxyURL := "http://" + proxyAddr

	var allocCtx context.Context
	var allocCancel context.CancelFunc
	where := b.opts.URL
	if b.opts.URL != "" {
		allocCtx, allocCancel = remote.NewAllocator(context.Background(), b.opts.URL)
	} else {
		where = b.opts.Path
		allocCtx, allocCancel = chromedp.NewExecAllocator(context.Background(), b.launchOptions(proxyURL)...)
	}
	// The browser must outlive this call, so it is bound to its own context;
	// the caller's deadline and LaunchTimeout only bound the start.
	root, rootCancel := chromedp.NewContext(allocCtx)
	lctx, lcancel := context.WithTimeout(ctx, b.opts.LaunchTimeout)
	defer lcancel()
	stop := context.AfterFunc(lctx, rootCancel)

	// Every tab opens in this browser context, whose proxy is ours even on a
	// remote sidecar that was started without --proxy-server. It keeps its
	// cookies across reads, so a cleared challenge stays cleared between Polls.
	res, err := chromedp.CallBrowser(root, target.CreateBrowserContext, target.CreateBrowserContextParams{
		DisposeOnDetach: ptr(true),
		ProxyServer:     proxyURL,
		ProxyBypassList: "<-loopback>",
	})
	if !stop() {
		err = fmt.Errorf("start the browser: %w", lctx.Err())
	}
	if err != nil {
		rootCancel()
		allocCancel()
		return nil, fmt.Errorf("%w: connect to browser %s: %w", ErrLostBrowser, where, err)
	}
	cc := chromedp.FromContext(root)
	c := &conn{
		allocCancel: allocCancel,
		root:        root,
		rootCancel:  rootCancel,
		bctx:        res.BrowserContextID,
		lost:        cc.Browser.LostConnection,
	}
	if p := cc.Browser.Process(); p != nil {
		b.pid.Store(int64(p.Pid))
	}
	b.cur = c
	b.log.Info("browser connected", "browser", where, "proxy", proxyAddr)
	return c, nil
}

// drop forgets a lost browser and frees what is left of it. Called with sem held.
func (b *Browser) drop() {
	if b.cur == nil {
		return
	}
	b.cur.close()
	b.cur = nil
	b.pid.Store(0)
}

// launchOptions are the flags of a local Chromium. Chromedp adds
// --user-data-dir=<fresh temp dir> (removed when the browser exits) and, as
// root, --no-sandbox; both are also set here so the list reads complete.
func (b *Browser) launchOptions(proxyURL string) []chromedp.ExecAllocatorOption {
	opts := append([]chromedp.ExecAllocatorOption{}, chromedp.DefaultExecAllocatorOptions[:]...)
	opts = append(opts, chromedp.ExecPath(b.opts.Path))
	for _, f := range launchFlags(proxyURL) {
		opts = append(opts, chromedp.Flag(f.name, f.value))
	}
	if b.opts.IgnoreCertErrors {
		opts = append(opts, chromedp.IgnoreCertErrors)
	}
	return opts
}

type flag struct {
	name  string
	value any
}

// launchFlags are the Chromium flags this deployment needs: headless without a
// sandbox (containers run as root), no GPU, no QUIC (UDP would not pass the
// proxy), nothing that phones home, and every connection through the proxy,
// loopback included ("<-loopback>" removes Chrome's implicit bypass). WebRTC
// UDP ignores proxies, so it is limited to proxied TCP.
func launchFlags(proxyURL string) []flag {
	return []flag{
		{"headless", true},
		{"no-sandbox", true},
		{"disable-gpu", true},
		{"disable-quic", true},
		{"no-first-run", true},
		{"disable-background-networking", true},
		{"disable-component-update", true},
		{"disable-sync", true},
		{"proxy-server", proxyURL},
		{"proxy-bypass-list", "<-loopback>"},
		{"force-webrtc-ip-handling-policy", "disable_non_proxied_udp"},
	}
}

func ptr[T any](v T) *T { return &v }

// pinned parses raw and checks that it is https on one of hosts. The message
// names what was wrong; errors.Is(err, ErrHostPin) holds.
func pinned(raw string, hosts []string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not a URL: %v", ErrHostPin, raw, err)
	}
	if u.Scheme != "https" {
		return nil, fmt.Errorf("%w: %s is not https", ErrHostPin, redact(u))
	}
	if !hostAllowed(u.Hostname(), hosts) {
		return nil, fmt.Errorf("%w: host %q of %s is not one of %v", ErrHostPin, u.Hostname(), redact(u), hosts)
	}
	return u, nil
}

func hostAllowed(host string, hosts []string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" {
		return false
	}
	for _, h := range hosts {
		if host == strings.TrimSuffix(strings.ToLower(h), ".") {
			return true
		}
	}
	return false
}

// redact drops credentials from a URL before it is logged or put in an error.
func redact(u *url.URL) string {
	if u.User == nil {
		return u.String()
	}
	c := *u
	c.User = nil
	return c.String()
}

// attempt is one read inside the tab. It reports whether the payload arrived;
// an error is retried until the deadline unless it is fatal (errors.Is
// ErrHostPin or ErrTooLarge, or a non-retryable image status).
type attempt func(tabCtx context.Context) (arrived bool, err error)

// fatal marks an attempt error that re-reading cannot fix.
type fatal struct{ err error }

func (f fatal) Error() string { return f.err.Error() }
func (f fatal) Unwrap() error { return f.err }

// Read loads pageURL in a tab and runs read until arrived accepts the payload
// or ctx ends. hosts are the Site's hostnames: pageURL and the page the tab
// finally shows must be on one of them.
//
// It returns ErrNoBrowser, ErrHostPin, ErrLostBrowser, ErrChallenge (read but
// never arrived), ErrRead (never read successfully, or the page did not load),
// each wrapped with what was being done.
func (b *Browser) Read(ctx context.Context, pageURL string, hosts []string, read ReadFunc, arrived ArrivedFunc) (string, error) {
	if read == nil || arrived == nil {
		return "", errors.New("browser read: a read and an arrival test are required")
	}
	var payload string
	err := b.withTab(ctx, pageURL, hosts, func(tabCtx context.Context) (bool, error) {
		var p string
		if err := chromedp.Do(tabCtx, read(pageURL, &p)); err != nil {
			return false, err
		}
		if !arrived(p) {
			return false, nil
		}
		payload = p
		return true, nil
	})
	if err != nil {
		return "", err
	}
	return payload, nil
}

// withTab is the one tab lifecycle every read shares: pin the page, take
// the browser, open a tab bound to the caller's deadline, load the page,
// and read it until an attempt brings the payload.
func (b *Browser) withTab(ctx context.Context, pageURL string, hosts []string, try attempt) error {
	if !b.Enabled() {
		return ErrNoBrowser
	}
	u, err := pinned(pageURL, hosts)
	if err != nil {
		return fmt.Errorf("browser read: %w", err)
	}
	page := redact(u)
	if err := b.acquire(ctx); err != nil {
		return fmt.Errorf("browser read %s: %w", page, err)
	}
	defer b.release()

	c, err := b.connection(ctx)
	if err != nil {
		return fmt.Errorf("browser read %s: %w", page, err)
	}

	// The tab is a child of the browser, and the caller's deadline is bound to
	// it: when ctx ends, the tab closes and whatever runs in it returns.
	tabCtx, closeTab := chromedp.NewContext(c.root, chromedp.WithExistingBrowserContext(c.bctx))
	unbind := context.AfterFunc(ctx, closeTab)
	r := &tabRead{b: b, ctx: ctx, c: c, tabCtx: tabCtx, u: u, host: u.Hostname(), page: page,
		t: &tab{hosts: hosts, user: b.proxy.user, pass: b.proxy.pass, log: b.log}}
	defer func() {
		unbind()
		closeTab()
		r.t.wg.Wait()
	}()
	if err := r.load(); err != nil {
		return err
	}
	return r.readUntilArrived(try)
}

// tabRead is one use of the tab lifecycle: the caller's context, the
// connection and the tab the read runs in, and the page it reads.
type tabRead struct {
	b      *Browser
	ctx    context.Context // the caller's
	c      *conn
	tabCtx context.Context
	t      *tab
	u      *url.URL
	host   string
	page   string // u redacted, for logs and errors
}

// wrap names the page in err.
func (r *tabRead) wrap(err error) error { return fmt.Errorf("browser read %s: %w", r.page, err) }

// fail names why a step failed: a lost browser (forgotten, so the next use
// reconnects), the caller's deadline, or the step itself.
func (r *tabRead) fail(what string, err error) error {
	if r.c.isLost() {
		r.b.log.Warn("browser lost", "page", r.page, "during", what, "err", err)
		r.b.drop()
		return fmt.Errorf("browser read %s: %s: %w: %v", r.page, what, ErrLostBrowser, err)
	}
	if r.ctx.Err() != nil {
		return fmt.Errorf("browser read %s: %s: %w: %w", r.page, what, ErrRead, r.ctx.Err())
	}
	return fmt.Errorf("browser read %s: %s: %w: %w", r.page, what, ErrRead, err)
}

// load opens the tab, waits at the pacing gate and navigates. A page whose
// load event does not come within LoadTimeout is read as it is.
func (r *tabRead) load() error {
	if err := r.t.open(r.tabCtx); err != nil {
		return r.fail("open tab", err)
	}
	if err := r.b.pace(r.ctx, r.host); err != nil {
		return fmt.Errorf("browser read %s: pace: %w", r.page, err)
	}
	r.t.navigating()
	nctx, ncancel := context.WithTimeout(r.tabCtx, r.b.opts.LoadTimeout)
	err := chromedp.Do(nctx, chromedp.Navigate(r.u.String()))
	loadTimedOut := errors.Is(nctx.Err(), context.DeadlineExceeded) && r.tabCtx.Err() == nil
	ncancel()
	if perr := r.t.pinError(); perr != nil {
		return r.wrap(perr)
	}
	if err != nil && !loadTimedOut {
		return r.fail("navigate", err)
	}
	return nil
}

// checkPin checks that the page the tab shows is still on the Site's hosts.
func (r *tabRead) checkPin() error {
	if perr := r.t.checkPin(r.tabCtx); perr != nil {
		if errors.Is(perr, ErrHostPin) {
			return r.wrap(perr)
		}
		return r.fail("check page", perr)
	}
	return nil
}

// readUntilArrived runs try until the payload arrives, re-reading while an
// interstitial clears itself, until the caller's deadline.
func (r *tabRead) readUntilArrived(try attempt) error {
	start := time.Now()
	reads := 0
	var lastErr error
	for {
		if err := r.checkPin(); err != nil {
			return r.atDeadline(err, start, reads)
		}
		ok, err := try(r.tabCtx)
		if perr := r.t.pinError(); perr != nil {
			return r.wrap(perr)
		}
		var fe fatal
		switch {
		case errors.As(err, &fe):
			return r.wrap(fe.err)
		case err != nil:
			if r.c.isLost() || r.ctx.Err() != nil {
				return r.atDeadline(r.fail("read", err), start, reads)
			}
			lastErr = err
		case ok:
			// The payload is only trusted if the tab is still where it may be.
			if err := r.checkPin(); err != nil {
				return err
			}
			r.b.log.Debug("browser read arrived", "page", r.page, "reads", reads+1, "took", time.Since(start))
			return nil
		default:
			reads++
			lastErr = nil
		}
		if err := r.waitToReread(start, reads, lastErr); err != nil {
			return err
		}
	}
}

// atDeadline is err, unless the caller's deadline interrupted a step after
// the page had been read without the payload: that is an interstitial that
// did not clear (ErrChallenge, the Site backs off), whichever step the
// deadline happened to cut, as waitToReread says. A host pin and a lost
// browser keep their own error.
func (r *tabRead) atDeadline(err error, start time.Time, reads int) error {
	if reads == 0 || r.ctx.Err() == nil || r.c.isLost() || errors.Is(err, ErrHostPin) || errors.Is(err, ErrLostBrowser) {
		return err
	}
	return fmt.Errorf("browser read %s: %w after %d reads in %s", r.page, ErrChallenge, reads, time.Since(start).Round(time.Millisecond))
}

// waitToReread waits RereadInterval, then at the pacing gate, before the
// next read. reads counts the reads that completed without the payload: a
// deadline after one of them means an interstitial that did not clear.
func (r *tabRead) waitToReread(start time.Time, reads int, lastErr error) error {
	wait := time.NewTimer(r.b.opts.RereadInterval)
	select {
	case <-r.ctx.Done():
		wait.Stop()
		if reads > 0 {
			// The page was read and was not the payload: an interstitial.
			return fmt.Errorf("browser read %s: %w after %d reads in %s", r.page, ErrChallenge, reads, time.Since(start).Round(time.Millisecond))
		}
		return fmt.Errorf("browser read %s: %w: no read completed before the deadline (last: %v): %w", r.page, ErrRead, lastErr, r.ctx.Err())
	case <-r.c.lost:
		wait.Stop()
		return r.fail("wait to re-read", errors.New("connection dropped"))
	case <-wait.C:
	}
	if err := r.b.pace(r.ctx, r.host); err != nil {
		if r.ctx.Err() != nil && reads > 0 {
			return fmt.Errorf("browser read %s: %w after %d reads", r.page, ErrChallenge, reads)
		}
		return fmt.Errorf("browser read %s: pace: %w", r.page, err)
	}
	return nil
}

func (b *Browser) pace(ctx context.Context, host string) error {
	if b.opts.Pace == nil {
		return ctx.Err()
	}
	return b.opts.Pace(ctx, host)
}

// launchedPID is the launched browser's process id, 0 when none or remote.
func (b *Browser) launchedPID() int { return int(b.pid.Load()) }
