package fetch

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/lectern-reader/lectern/backend/internal/fetch/browser"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// Fetcher fetches a Site page (a series or chapter page, or a page a Site's
// ChapterList override asks for). It is the seam tests replace with a fake;
// production uses Sites.
type Fetcher interface {
	FetchSeries(ctx context.Context, site *latest.Site, pageURL string, cond Conditional) (Page, error)
}

// BrowserReader is the browser fetcher as the Site fetcher uses it;
// *browser.Browser satisfies it.
type BrowserReader interface {
	Enabled() bool
	Read(ctx context.Context, pageURL string, hosts []string, read browser.ReadFunc, arrived browser.ArrivedFunc) (string, error)
}

// Sites is the production Fetcher: the Policy's PageRoute picks the browser
// or the plain fetcher for each Site.
type Sites struct {
	Plain *PlainFetcher
	// Browser is nil or disabled when no browser is configured. It paces its
	// own navigations through the gate (browser.Options.Pace).
	Browser BrowserReader
	Policy  *Policy
}

// FetchSeries implements Fetcher.
func (f *Sites) FetchSeries(ctx context.Context, site *latest.Site, pageURL string, cond Conditional) (Page, error) {
	// A Site that serves its data apart from its pages (an API) is read
	// there, whoever asks for the page: the Poll, the archive, the probe.
	pageURL = site.ReadFrom(pageURL)
	switch f.Policy.PageRoute(site) {
	case RouteBrowser:
		return f.read(ctx, site, pageURL)
	case RouteNone:
		return Page{}, fmt.Errorf("fetch %s page: %s is read only in a browser: %w", site.Name, site.Name, ErrNoBrowser)
	}
	return f.Plain.Fetch(ctx, site, pageURL, cond)
}

func (f *Sites) read(ctx context.Context, site *latest.Site, pageURL string) (Page, error) {
	// The host pin before the browser is touched; the browser checks again
	// inside the tab, on purpose (docs/adr/0004).
	u, err := pinURL(site, pageURL)
	if err != nil {
		return Page{}, fmt.Errorf("read %s page: %w", site.Name, err)
	}
	ctx, cancel := f.Policy.BrowserDeadline(ctx)
	defer cancel()
	ctx, waited := withWaitMeter(ctx)
	payload, err := f.Browser.Read(ctx, u.String(), site.AllHostNames(), site.Browser.Read, site.Browser.Arrived)
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
	return Page{URL: u.String(), Body: []byte(payload), Via: "browser", Waited: waited()}, nil
}

// FormPoster is a Fetcher that can also post a form to a Site page (the
// production Sites can; a test's fake Fetcher need not).
type FormPoster interface {
	PostForm(ctx context.Context, site *latest.Site, pageURL string, form url.Values) (Page, error)
}

// ErrNoPost: the Fetcher in use cannot post forms.
var ErrNoPost = errors.New("this fetcher cannot post forms")

// PostForm implements FormPoster: always through the plain fetcher, pinned
// and paced; a browser Site's read has no form to post, so a browser-only
// Site is refused.
func (f *Sites) PostForm(ctx context.Context, site *latest.Site, pageURL string, form url.Values) (Page, error) {
	if f.Policy.PageRoute(site) == RouteNone {
		return Page{}, fmt.Errorf("post %s page: %s is read only in a browser: %w", site.Name, site.Name, ErrNoBrowser)
	}
	return f.Plain.PostForm(ctx, site, pageURL, form)
}

// Pages returns the PageFetcher a Site's ChapterList override uses: f,
// pinned to that Site, its body or an error.
func Pages(f Fetcher, site *latest.Site) latest.PageFetcher { return sitePages{f: f, site: site} }

type sitePages struct {
	f    Fetcher
	site *latest.Site
}

func (p sitePages) FetchPage(ctx context.Context, rawURL string) ([]byte, error) {
	page, err := p.f.FetchSeries(ctx, p.site, rawURL, Conditional{})
	if err != nil {
		return nil, err
	}
	return page.Body, nil
}

func (p sitePages) PostForm(ctx context.Context, rawURL string, form url.Values) ([]byte, error) {
	poster, ok := p.f.(FormPoster)
	if !ok {
		return nil, fmt.Errorf("post %s: %w", rawURL, ErrNoPost)
	}
	page, err := poster.PostForm(ctx, p.site, rawURL, form)
	if err != nil {
		return nil, err
	}
	return page.Body, nil
}
