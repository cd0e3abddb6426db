package fetch

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// SiteStates reads whether a Site is backing off; *store.Store implements
// it.
type SiteStates interface {
	BackingOffUntil(ctx context.Context, site string, now time.Time) (until time.Time, backingOff bool, err error)
}

// Policy is the one place that decides, for the Poll, the Cover job and the
// Archive alike: which fetcher takes a request (by the address's shape,
// never by the Series' Site name), whether requests to a Site wait (the
// Owner paused it or all background work, or it is backing off) and how
// long a job waits, whether one request may go now (Admit), and each
// host's pace.
type Policy struct {
	Registry *latest.Registry
	// Paces are SITE_PACE's overrides of the Sites' own intervals, the
	// defaults the Owner's run-time paces replace.
	Paces Paces
	// States is nil in tests that never back off.
	States SiteStates
	// Settings are the Owner's run-time settings; nil in tests without an
	// Owner (nothing paused, the configured paces).
	Settings *SettingsReader
	// Browser says whether a browser is configured; nil means none.
	Browser interface{ Enabled() bool }
	// BrowserTimeout bounds one browser read; 0 means DefaultBrowserTimeout.
	BrowserTimeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultBrowserTimeout bounds one browser read, long enough for a
// JavaScript interstitial to clear itself.
const DefaultBrowserTimeout = 60 * time.Second

// Route is how a request is made.
type Route int

// The routes.
const (
	// RoutePlain: the plain fetcher pinned to the Site's hosts (a page), or
	// the destination gate (an image).
	RoutePlain Route = iota
	// RouteBrowser: inside the browser, after the Site's page has cleared.
	RouteBrowser
	// RouteNone: only a browser can read it and none is configured.
	RouteNone
)

func (p *Policy) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Policy) browserEnabled() bool { return p.Browser != nil && p.Browser.Enabled() }

// PageRoute is how a page of site is read: a browser Site's in the browser
// when one is configured; without one, by the plain fetcher only when the
// Site's Fallback allows it (novelfull), never for kagane, whose plain fetch
// only ever gets the challenge.
func (p *Policy) PageRoute(site *latest.Site) Route {
	switch {
	case site.Browser == nil:
		return RoutePlain
	case p.browserEnabled():
		return RouteBrowser
	case site.Browser.Fallback:
		return RoutePlain
	}
	return RouteNone
}

// ImageRoute is how an image (a Cover, an archived page) at host is
// fetched, decided by the address's shape: an address on the hosts of a
// Site read only in a browser (kagane's API) goes through the browser, any
// other through the destination gate. site is the Site owning host, nil
// when none does (a CDN).
func (p *Policy) ImageRoute(host string) (site *latest.Site, route Route) {
	site, ok := p.Registry.HostSite(host)
	if !ok {
		return nil, RoutePlain
	}
	if site.Browser == nil || site.Browser.Fallback {
		return site, RoutePlain
	}
	if p.browserEnabled() {
		return site, RouteBrowser
	}
	return site, RouteNone
}

// BrowserDeadline bounds one browser read by BrowserTimeout.
func (p *Policy) BrowserDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	d := p.BrowserTimeout
	if d <= 0 {
		d = DefaultBrowserTimeout
	}
	return context.WithTimeout(ctx, d)
}

// BackingOff reports whether the named Site is backing off, and until when.
func (p *Policy) BackingOff(ctx context.Context, site string) (time.Time, bool, error) {
	if p.States == nil {
		return time.Time{}, false, nil
	}
	until, ok, err := p.States.BackingOffUntil(ctx, site, p.now())
	if err != nil {
		return time.Time{}, false, fmt.Errorf("back-off of %s: %w", site, err)
	}
	return until, ok, nil
}

// OwnerSettings are the Owner's run-time settings as this replica applies
// them now (at most the SettingsReader's TTL old).
func (p *Policy) OwnerSettings(ctx context.Context) (Settings, error) {
	if p.Settings == nil {
		return Settings{}, nil
	}
	return p.Settings.Get(ctx)
}

// Hold says whether requests to the named Site wait now, and why: the
// Owner's pause of everything, of the Site, or the Site's back-off. A job
// that finds its Site held snoozes for HoldSnooze, keeping its attempts.
func (p *Policy) Hold(ctx context.Context, site string) (Hold, error) {
	s, err := p.OwnerSettings(ctx)
	if err != nil {
		return Hold{}, err
	}
	h := Hold{All: s.AllPaused, Site: s.Sites[site].Paused}
	if h.ByOwner() {
		return h, nil
	}
	if until, ok, err := p.BackingOff(ctx, site); err != nil {
		return Hold{}, err
	} else if ok {
		h.Until = until
	}
	return h, nil
}

// HoldSnooze is how long a job held by h waits before it looks again: a
// back-off to its end (Snooze), an Owner's pause PauseRecheck (jittered),
// as the Owner's resume wakes the waiting jobs itself.
func (p *Policy) HoldSnooze(h Hold) time.Duration {
	if h.ByOwner() {
		return PauseRecheck + time.Duration(rand.Float64()*float64(PauseRecheck/10))
	}
	return p.Snooze(h.Until)
}

// Snooze is how long a job waits for a back-off that ends at until: to its
// end, with up to 10% (at most a minute) of jitter so a Site's snoozed jobs
// do not all wake at once.
func (p *Policy) Snooze(until time.Time) time.Duration {
	d := max(until.Sub(p.now()), time.Second)
	return d + time.Duration(rand.Float64()*float64(min(d/10, time.Minute)))
}

// Admit decides whether one request to host may go now and returns the
// interval it is paced at: ErrPaused when the Owner paused all background
// work, the Site owning host, or series (the Site of the Series an image at
// a host no Site owns belongs to, nil for a page). Every request passes
// here before the pacing gate, so a pause stops a job in the middle too.
func (p *Policy) Admit(ctx context.Context, host string, series *latest.Site) (time.Duration, error) {
	s, err := p.OwnerSettings(ctx)
	if err != nil {
		return 0, err
	}
	site, ok := p.Registry.HostSite(host)
	if !ok {
		site = series
	}
	switch {
	case s.AllPaused:
		return 0, fmt.Errorf("request to %s: %w (all background work)", host, ErrPaused)
	case site != nil && s.Sites[site.Name].Paused, series != nil && s.Sites[series.Name].Paused:
		return 0, fmt.Errorf("request to %s: %w (%s)", host, ErrPaused, siteName(site, series))
	case site == nil:
		return latest.DefaultPace, nil
	}
	return p.Paces.In(s, site), nil
}

func siteName(site, series *latest.Site) string {
	if series != nil && (site == nil || site.Name != series.Name) {
		return series.Name + ", the Series' Site"
	}
	return site.Name
}

// Pace is a Site's interval between two requests to one of its hosts now:
// the Owner's, else SITE_PACE's, else the Site's own.
func (p *Policy) Pace(ctx context.Context, site *latest.Site) (time.Duration, error) {
	s, err := p.OwnerSettings(ctx)
	if err != nil {
		return 0, err
	}
	return p.Paces.In(s, site), nil
}

// GuardDial refuses a connection to the hosts of a Site the Owner paused
// (or to any host while all background work is paused), for the browser's
// proxy: a page already open in a tab must not load more from a paused
// Site.
func (p *Policy) GuardDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		if _, err := p.Admit(ctx, host, nil); err != nil {
			return nil, err
		}
		return dial(ctx, network, addr)
	}
}

// Back-off of a Site that refuses us: the pause starts at BackoffMin and
// doubles with each consecutive refusal up to BackoffMax. A Retry-After
// longer than that is honoured up to RetryAfterMax.
const (
	BackoffMin    = time.Minute
	BackoffMax    = 6 * time.Hour
	RetryAfterMax = 24 * time.Hour
)

// BackoffPause is the pause after the refusals-th consecutive refusal.
func BackoffPause(refusals int, retryAfter time.Duration) time.Duration {
	d := BackoffMin
	for i := 1; i < refusals && d < BackoffMax; i++ {
		d *= 2
	}
	d = min(d, BackoffMax)
	return max(d, min(retryAfter, RetryAfterMax))
}

// Paces are the per-Site minimum intervals of the pacing gate: each Site's
// own (Site.Pace) unless SITE_PACE overrides it.
type Paces map[string]time.Duration

// NewPaces checks SITE_PACE overrides against the registry: a name that is
// no Site is refused, so a typo does not silently leave a Site at its
// default.
func NewPaces(reg *latest.Registry, overrides map[string]time.Duration) (Paces, error) {
	p := Paces{}
	for name, d := range overrides {
		if _, ok := reg.Lookup(name); !ok {
			return nil, fmt.Errorf("SITE_PACE names %q, which is not a Site (%s)", name, strings.Join(reg.Names(), ", "))
		}
		p[name] = d
	}
	return p, nil
}

// In is a Site's interval under the Owner's settings s: the Owner's, else
// SITE_PACE's, else the Site's own.
func (p Paces) In(s Settings, site *latest.Site) time.Duration {
	if d := s.Sites[site.Name].Pace; d != nil {
		return *d
	}
	return p.Of(site)
}

// Source names where a Site's interval under s comes from: "owner",
// "SITE_PACE" or "site" (its own).
func (p Paces) Source(s Settings, site *latest.Site) string {
	switch {
	case s.Sites[site.Name].Pace != nil:
		return "owner"
	case p.Configured(site):
		return "SITE_PACE"
	}
	return "site"
}

// Configured reports whether SITE_PACE sets the Site's interval.
func (p Paces) Configured(site *latest.Site) bool {
	_, ok := p[site.Name]
	return ok
}

// Of is a Site's configured interval: SITE_PACE's, else its own.
func (p Paces) Of(site *latest.Site) time.Duration {
	if d, ok := p[site.Name]; ok {
		return d
	}
	return site.Pace
}
