package browser

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// tab is the state of one open tab: the host pin, and the handling of the
// requests the page makes.
//
// The URL was pinned before the read, and it is pinned again here on purpose:
// a headless browser is a strong SSRF primitive and series_url arrives in a
// client-supplied PUT body, so a redirect or a script must not be able to
// carry the tab elsewhere and have its content taken for the Site's. Do not
// deduplicate this with the caller's check (ADR on the Site registry).
// Two layers: top-level document requests outside the hosts are failed before
// they leave the browser, and the page the tab shows is checked before and
// after every read.
type tab struct {
	hosts      []string
	user, pass string
	log        *slog.Logger

	// wg counts the goroutines answering paused requests; they end with the tab.
	wg sync.WaitGroup

	mu        sync.Mutex
	ctx       context.Context
	mainFrame cdp.FrameID
	started   bool   // the first navigation was sent; earlier about:blank is ours
	violation string // the first top-level URL outside the pin, if any
}

// open creates the tab, starts listening to it, and turns on request
// interception so the proxy's credentials can be given (only to the proxy's
// challenge) and top-level navigations can be pinned.
func (t *tab) open(tabCtx context.Context) error {
	if err := chromedp.Listen(tabCtx, t.onEvent); err != nil {
		return err
	}
	c := chromedp.FromContext(tabCtx)
	t.mu.Lock()
	t.ctx = tabCtx
	// A page target's main frame has the target's id.
	t.mainFrame = cdp.FrameID(c.Target.TargetID)
	t.mu.Unlock()

	// A service worker installed by the Site would answer requests outside
	// this tab's interception; the network is always asked instead.
	if _, err := chromedp.Call(tabCtx, network.SetBypassServiceWorker, network.SetBypassServiceWorkerParams{Bypass: true}); err != nil {
		return fmt.Errorf("bypass service workers: %w", err)
	}
	_, err := chromedp.Call(tabCtx, fetch.Enable, fetch.EnableParams{
		Patterns:           []*fetch.RequestPattern{{URLPattern: "*", RequestStage: fetch.RequestStageRequest}},
		HandleAuthRequests: ptr(true),
	})
	if err != nil {
		return fmt.Errorf("enable request interception: %w", err)
	}
	return nil
}

// navigating marks the start of the tab's own navigation: from here on every
// top-level navigation is checked against the pin.
func (t *tab) navigating() {
	t.mu.Lock()
	t.started = true
	t.mu.Unlock()
}

// onEvent runs on the tab's message loop: it must return at once and must not
// call into the tab, so answers go out from goroutines.
func (t *tab) onEvent(ev any) {
	switch ev := ev.(type) {
	case *fetch.EventRequestPaused:
		t.mu.Lock()
		ctx, main := t.ctx, t.mainFrame
		t.mu.Unlock()
		if ctx == nil {
			return
		}
		block := ev.ResourceType == network.ResourceTypeDocument && ev.FrameID == main &&
			ev.Request != nil && !t.allowedTop(ev.Request.URL)
		if block {
			t.noteViolation(ev.Request.URL)
		}
		id := ev.RequestID
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			var err error
			if block {
				_, err = chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: id, ErrorReason: network.ErrorReasonBlockedByClient})
			} else {
				_, err = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
			}
			if err != nil && ctx.Err() == nil {
				t.log.Debug("browser: answer paused request", "err", err)
			}
		}()
	case *fetch.EventAuthRequired:
		t.mu.Lock()
		ctx := t.ctx
		t.mu.Unlock()
		if ctx == nil {
			return
		}
		// Credentials go only to our proxy's challenge; a Site asking for a
		// login gets nothing.
		resp := &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseCancelAuth}
		if ch := ev.AuthChallenge; ch != nil && ch.Source == fetch.AuthChallengeSourceProxy && ch.Realm == proxyRealm {
			resp = &fetch.AuthChallengeResponse{
				Response: fetch.AuthChallengeResponseResponseProvideCredentials,
				Username: t.user,
				Password: t.pass,
			}
		}
		id := ev.RequestID
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			_, err := chromedp.Call(ctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: id, AuthChallengeResponse: resp})
			if err != nil && ctx.Err() == nil {
				t.log.Debug("browser: answer auth challenge", "err", err)
			}
		}()
	case *page.EventFrameNavigated:
		if ev.Frame == nil || ev.Frame.ParentID != "" {
			return
		}
		t.mu.Lock()
		started := t.started
		t.mu.Unlock()
		if started && !isErrorPage(ev.Frame.URL) && !t.allowedTop(ev.Frame.URL) {
			t.noteViolation(ev.Frame.URL)
		}
	}
}

func (t *tab) allowedTop(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme == "https" && hostAllowed(u.Hostname(), t.hosts)
}

// isErrorPage: Chrome shows chrome-error://chromewebdata/ when a load fails;
// that is a failed load (reported by the navigation), not a page elsewhere.
func isErrorPage(raw string) bool { return strings.HasPrefix(raw, "chrome-error:") }

func (t *tab) noteViolation(raw string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.violation == "" {
		t.violation = raw
	}
}

// pinError reports a top-level navigation outside the pin seen so far.
func (t *tab) pinError() error {
	t.mu.Lock()
	v := t.violation
	t.mu.Unlock()
	if v == "" {
		return nil
	}
	return fmt.Errorf("%w: the tab was sent to %s, outside %v", ErrHostPin, clip(v), t.hosts)
}

// checkPin asks the browser (not the page's own scripts) where the tab's main
// frame is, and fails when that is outside the pin.
func (t *tab) checkPin(tabCtx context.Context) error {
	if err := t.pinError(); err != nil {
		return err
	}
	tree, err := chromedp.Call(tabCtx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return err
	}
	if tree.FrameTree == nil || tree.FrameTree.Frame == nil {
		return fmt.Errorf("the tab has no main frame")
	}
	where := tree.FrameTree.Frame.URL
	if isErrorPage(where) {
		return fmt.Errorf("the page failed to load")
	}
	if !t.allowedTop(where) {
		return fmt.Errorf("%w: the tab shows %s, outside %v", ErrHostPin, clip(where), t.hosts)
	}
	return nil
}

// clip keeps hostile URLs from flooding logs and errors.
func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
