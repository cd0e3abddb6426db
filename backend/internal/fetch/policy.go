package fetch

import (
	"context"
	"fmt"
	"math/rand/v2"
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
// never by the Series' Site name), whether a Site is backing off, how long a
// job waits a back-off out, and each host's pace.
type Policy struct {
	Registry *latest.Registry
	// Paces are SITE_PACE's overrides of the Sites' own intervals.
	Paces Paces
	// States is nil in tests that never back off.
	States SiteStates
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

// Snooze is how long a job waits for a back-off that ends at until: to its
// end, with up to 10% (at most a minute) of jitter so a Site's snoozed jobs
// do not all wake at once.
func (p *Policy) Snooze(until time.Time) time.Duration {
	d := max(until.Sub(p.now()), time.Second)
	return d + time.Duration(rand.Float64()*float64(min(d/10, time.Minute)))
}

// Pace is a Site's interval between two requests to one of its hosts.
func (p *Policy) Pace(site *latest.Site) time.Duration { return p.Paces.Of(site) }

// PaceOfHost is the interval of the Site owning host, DefaultPace for a
// host no Site owns.
func (p *Policy) PaceOfHost(host string) time.Duration {
	if site, ok := p.Registry.HostSite(host); ok {
		return p.Paces.Of(site)
	}
	return latest.DefaultPace
}

// PaceOfImage is the interval an image at host is paced at: its own Site's
// when a Site owns the host, else that of the Site of the Series it belongs
// to (a Cover CDN is paced as the Series' Site).
func (p *Policy) PaceOfImage(host string, series *latest.Site) time.Duration {
	if site, ok := p.Registry.HostSite(host); ok {
		return p.Paces.Of(site)
	}
	if series != nil {
		return p.Paces.Of(series)
	}
	return latest.DefaultPace
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

// Of is a Site's interval.
func (p Paces) Of(site *latest.Site) time.Duration {
	if d, ok := p[site.Name]; ok {
		return d
	}
	return site.Pace
}
