package latest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/fetch/browser"
)

// Fetcher fetches a Series page for the Poll. It is the seam tests replace
// with a fake; production uses Fetchers.
type Fetcher interface {
	FetchSeries(ctx context.Context, site *Site, seriesURL string, cond Conditional) (Page, error)
}

// BrowserReader is the browser fetcher as the Poll uses it;
// *browser.Browser satisfies it.
type BrowserReader interface {
	Enabled() bool
	Read(ctx context.Context, pageURL string, hosts []string, read browser.ReadFunc, arrived browser.ArrivedFunc) (string, error)
}

// DefaultBrowserTimeout bounds one browser read, long enough for a
// JavaScript interstitial to clear itself.
const DefaultBrowserTimeout = 60 * time.Second

// Fetchers is the production Fetcher: a browser Site's page is read in the
// browser when one is configured; without one, the plain fetcher takes over
// only for a Site whose Fallback allows it (novelfull), and a Site that
// never falls back (kagane) gets ErrNoBrowser. Every other Site uses the
// plain fetcher.
type Fetchers struct {
	Plain *PlainFetcher
	// Browser is nil or disabled when no browser is configured. It paces its
	// own navigations through the gate (browser.Options.Pace).
	Browser BrowserReader
	// BrowserTimeout bounds one read; 0 means DefaultBrowserTimeout.
	BrowserTimeout time.Duration
}

// UsesBrowser reports whether a page of site is read in the browser.
func (f *Fetchers) UsesBrowser(site *Site) bool {
	return site.Browser != nil && f.Browser != nil && f.Browser.Enabled()
}

// FetchSeries implements Fetcher.
func (f *Fetchers) FetchSeries(ctx context.Context, site *Site, seriesURL string, cond Conditional) (Page, error) {
	if site.Browser != nil {
		if f.UsesBrowser(site) {
			return f.read(ctx, site, seriesURL)
		}
		if !site.Browser.Fallback {
			return Page{}, fmt.Errorf("fetch %s page: %s is read only in a browser: %w", site.Name, site.Name, ErrNoBrowser)
		}
	}
	return f.Plain.Fetch(ctx, site, seriesURL, cond)
}

func (f *Fetchers) read(ctx context.Context, site *Site, pageURL string) (Page, error) {
	// The host pin before the browser is touched; the browser checks again
	// inside the tab, on purpose (docs/adr/0004).
	u, err := pinURL(site, pageURL)
	if err != nil {
		return Page{}, fmt.Errorf("read %s page: %w", site.Name, err)
	}
	timeout := f.BrowserTimeout
	if timeout <= 0 {
		timeout = DefaultBrowserTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	payload, err := f.Browser.Read(ctx, u.String(), browserHosts(site), site.Browser.Read, site.Browser.Arrived)
	if err != nil {
		return Page{}, err
	}
	max := int64(DefaultFetchMaxBytes)
	if f.Plain != nil {
		max = f.Plain.MaxBytes()
	}
	if int64(len(payload)) > max {
		return Page{}, fmt.Errorf("read %s: %w of %d bytes", u.Redacted(), ErrTooLarge, max)
	}
	return Page{URL: u.String(), Body: []byte(payload), Via: "browser"}, nil
}

// browserHosts are the names a browser read of site may be on: each host
// and its "www." form, since the browser compares exact names.
func browserHosts(site *Site) []string {
	out := make([]string, 0, 2*len(site.Hosts))
	for _, h := range site.Hosts {
		out = append(out, h, "www."+h)
	}
	return out
}

// Paces are the per-Site minimum intervals of the pacing gate: each Site's
// own (Site.Pace) unless SITE_PACE overrides it.
type Paces map[string]time.Duration

// NewPaces checks SITE_PACE overrides against the registry: a name that is
// no Site is refused, so a typo does not silently leave a Site at its
// default.
func NewPaces(overrides map[string]time.Duration) (Paces, error) {
	p := Paces{}
	for name, d := range overrides {
		if _, ok := Lookup(name); !ok {
			return nil, fmt.Errorf("SITE_PACE names %q, which is not a Site (%s)", name, strings.Join(siteNames(), ", "))
		}
		p[name] = d
	}
	return p, nil
}

// Of is a Site's interval.
func (p Paces) Of(site *Site) time.Duration {
	if d, ok := p[site.Name]; ok {
		return d
	}
	return site.Pace
}

// ForHost is the interval of the Site owning host, DefaultPace for a host
// no Site owns.
func (p Paces) ForHost(host string) time.Duration {
	if site, ok := HostSite(host); ok {
		return p.Of(site)
	}
	return DefaultPace
}

// HostSite returns the Site a host belongs to: one of its hostnames, with or
// without "www.", or a subdomain of one (kagane's API on yuzuki.kagane.org).
// Cover bytes are routed by this, the address's shape, never by the Series'
// Site name.
func HostSite(host string) (*Site, bool) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" {
		return nil, false
	}
	if s := siteForHost(host); s != nil {
		return s, true
	}
	for i := strings.IndexByte(host, '.'); i >= 0 && i+1 < len(host); {
		host = host[i+1:]
		if s := siteForHost(host); s != nil {
			return s, true
		}
		i = strings.IndexByte(host, '.')
	}
	return nil, false
}

func siteNames() []string {
	var out []string
	for _, s := range Sites() {
		out = append(out, s.Name)
	}
	return out
}
