// Package fetch is a replica's fetch tree: the plain fetcher of Site pages
// (pinned to the Site's hosts, paced, dialling through the destination
// gate), the Site page Fetcher that routes each Site to it or to the
// browser (Sites), and the one Policy that routes pages and images, reads
// back-off and paces hosts for the Poll, the Cover job and the Archive
// alike. It reads state through interfaces it declares (SiteStates, Pacer;
// pacing.Slots), so nothing here imports the store or the Cover job.
package fetch

import (
	"context"
	"crypto/x509"
	"log/slog"
	"net"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/fetch/browser"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// Pacer is the per-host pacing gate (*pacing.Gate, or the same timed by the
// metrics): Wait returns when a request to host may go, every apart from the
// previous one to that host by any worker or replica.
type Pacer interface {
	Wait(ctx context.Context, host string, every time.Duration) error
}

// Options are what a replica's fetch tree is built from.
type Options struct {
	Registry *latest.Registry
	// Paces are SITE_PACE's overrides.
	Paces  Paces
	States SiteStates
	// Settings are the Owner's run-time settings (pauses, paces); nil for
	// none.
	Settings *SettingsReader
	// Pacer paces every request to a host: Site pages, redirect hops,
	// browser navigations, Covers and archived pages.
	Pacer Pacer
	// Gate is the destination gate every image goes through; the plain
	// fetcher and the browser's proxy dial through it too, so a Site's own
	// DNS cannot point a fetch at the Owner's network either.
	Gate *gate.Client
	// Plain configures the plain fetcher; its Dial and Pace are set here.
	Plain PlainOptions
	// Browser configures the browser fetcher; nil when none is configured
	// (BROWSER_URL and BROWSER_PATH unset). Its Dial and Pace are set here
	// unless BrowserDial names a wrapped dial (the metrics' refusal count).
	Browser     *browser.Options
	BrowserDial func(ctx context.Context, network, addr string) (net.Conn, error)
	// BrowserTimeout bounds one browser read (BROWSER_TIMEOUT).
	BrowserTimeout time.Duration
	RootCAs        *x509.CertPool
	Logger         *slog.Logger
}

// Tree is a replica's fetch tree: the Policy, the Site fetcher over the
// plain and browser fetchers, and the destination gate and pacing gate they
// share.
type Tree struct {
	Policy  *Policy
	Sites   *Sites
	Plain   *PlainFetcher
	Browser *browser.Browser // nil when none is configured
	Gate    *gate.Client
	Pacer   Pacer
}

// New builds the fetch tree. Every request to a host is first admitted by
// the Policy (refused while the Owner pauses its Site) and then waits at the
// pacing gate for that host's Site's interval.
func New(o Options) *Tree {
	t := &Tree{Gate: o.Gate, Pacer: o.Pacer}
	t.Policy = &Policy{Registry: o.Registry, Paces: o.Paces, States: o.States, Settings: o.Settings, BrowserTimeout: o.BrowserTimeout}
	pace := func(ctx context.Context, host string) error {
		every, err := t.Policy.Admit(ctx, host, nil)
		if err != nil {
			return err
		}
		return o.Pacer.Wait(ctx, host, every)
	}
	plain := o.Plain
	plain.Dial = o.Gate.DialContext
	plain.Pace = pace
	plain.RootCAs = o.RootCAs
	t.Plain = NewPlainFetcher(plain)
	t.Sites = &Sites{Plain: t.Plain, Policy: t.Policy}
	if o.Browser != nil {
		bo := *o.Browser
		bo.Dial = o.Gate.DialContext
		if o.BrowserDial != nil {
			bo.Dial = o.BrowserDial
		}
		// Chromium loads a page's resources through the proxy on its own:
		// a paused Site's hosts are refused there too.
		bo.Dial = t.Policy.GuardDial(bo.Dial)
		bo.Pace = MeteredPace(pace)
		if bo.Logger == nil {
			bo.Logger = o.Logger
		}
		t.Browser = browser.New(bo)
		t.Sites.Browser = t.Browser
		t.Policy.Browser = t.Browser
	}
	return t
}

// Close releases the browser, if one was launched.
func (t *Tree) Close() error {
	if t.Browser == nil {
		return nil
	}
	return t.Browser.Close()
}
