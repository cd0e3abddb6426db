// Package latest knows the Sites: the registry of what each supported reading
// Site answers (Series key, Latest Chapter, Cover, chapters, chapter content)
// from a body it is given. It fetches nothing: the Poll (package poll) and the
// fetch tree (package fetch) ask it.
//
// The registry is one table of records keyed by the site string; see
// docs/adr/0004-site-registry.md for why the question set is fixed and an
// unusual Site owns an override instead of widening it. docs/adding-a-site.md
// says how a seventh Site joins.
package latest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/chromedp/chromedp"
)

// Kind is the Library a Series belongs to, decided by its Site.
type Kind string

// The two Libraries.
const (
	Manga Kind = "manga"
	Novel Kind = "novel"
)

// DefaultPace is the minimum interval between two requests to a Site whose
// entry names none: slow enough to be a polite background reader.
const DefaultPace = 2 * time.Second

// Chapter is one chapter as a Site lists it.
type Chapter struct {
	// Label is the chapter's name as the Site shows it ("Chapter 105",
	// "Ch. 12.5 - Title").
	Label string `json:"label"`
	// Number is the chapter number the Site gives or the label carries; nil
	// when neither has one, because a guessed number makes unread badges lie.
	Number *float64 `json:"number"`
	// URL is the chapter page, absolute, on one of the Site's hosts.
	URL string `json:"url"`
	// Locked is true when the Site marks the chapter premium or early-access:
	// listed, but not the Reader's next readable chapter.
	Locked bool `json:"locked"`
}

// Content is what a chapter page holds: page images for manga, text for novels.
type Content struct {
	// Pages are the page image URLs, absolute, in reading order (manga).
	Pages []string
	// Text is the chapter's text (novels): plain text, paragraphs separated by
	// one blank line, with no markup, scripts, ads, navigation or comments.
	Text string
}

// PageFetcher fetches one page of a Site. The caller's implementation is
// pinned to the Site's hosts and paced, so an override never opens its own
// connections.
type PageFetcher interface {
	FetchPage(ctx context.Context, rawURL string) ([]byte, error)
	// PostForm posts form (application/x-www-form-urlencoded) to rawURL and
	// returns the answer's body: madara's chapter list is a POST.
	PostForm(ctx context.Context, rawURL string, form url.Values) ([]byte, error)
}

// Browser is what a browser Site contributes to the shared tab lifecycle: the
// read that runs inside a held-open tab after it has navigated to pageURL, and
// the test that the payload is the real page rather than a challenge. The
// browser fetcher owns the loop; a Site never drives the browser itself.
type Browser struct {
	// Read stores the payload of the page in *payload. It pins the tab's
	// location to the Site's hosts again even though the URL was pinned
	// before: a headless browser is a strong SSRF primitive.
	Read func(pageURL string, payload *string) chromedp.Action[chromedp.Void]
	// Arrived reports whether payload is the page itself and not a challenge
	// interstitial still solving.
	Arrived func(payload string) bool
	// Fallback allows the plain fetcher to take over when no browser is
	// configured (novelfull yes, kagane never: a plain fetch only ever gets
	// the challenge).
	Fallback bool
}

// Site is one supported reading Site: the answers it gives to the fixed
// questions. Every function field is required except ChapterList; NewRegistry
// refuses an entry that lacks one.
type Site struct {
	// Name is the stored site string, the first half of every Series key.
	Name string
	// Kind is the Library the Site's Series belong to.
	Kind Kind
	// Hosts are the hostnames a Site URL may carry, current first. Every fetch of
	// a Site page is pinned to them, redirects included.
	Hosts []string
	// Pace is the minimum interval between two requests to the Site's hosts,
	// shared by every worker; the Poll's gate reads it.
	Pace time.Duration

	// Title reads the Series' title from a series page body, "" when the
	// page shows none.
	Title func(body []byte, page *url.URL) (string, error)
	// Latest reads the Latest Chapter from a series page body. page is the URL
	// the body was fetched from (nil when unknown); relative links resolve
	// against it.
	Latest func(body []byte, page *url.URL) (Chapter, error)
	// Cover reads the Cover address from a series page body: absolute, or ""
	// when the page is a series page that shows no Cover.
	Cover func(body []byte, page *url.URL) (string, error)
	// Chapters reads the chapters a series page body lists, oldest first.
	Chapters func(body []byte, page *url.URL) ([]Chapter, error)
	// Content reads a chapter page body.
	Content func(body []byte, page *url.URL) (Content, error)

	// ChapterList, when set, replaces Chapters for the full list: the Site
	// paginates it or serves it from its own endpoint, so the override makes
	// the extra fetches through the caller's fetcher.
	ChapterList func(ctx context.Context, fetch PageFetcher, seriesURL string, seriesBody []byte) ([]Chapter, error)

	// LatestOf, when set, replaces Latest for the Poll: the Latest Chapter
	// needs a further body (madara's ajax chapter list when the page lists
	// none, MangaDex's chapter feed beside the manga record), fetched through
	// the caller's pinned, paced fetcher. seriesURL is where seriesBody was
	// read from. Latest still answers from the series page alone.
	LatestOf func(ctx context.Context, fetch PageFetcher, seriesURL string, seriesBody []byte) (Chapter, error)

	// ReadURL, when set, gives the address a page's body is read from when
	// the Site serves its data apart from the page a Reader opens (an API:
	// MangaDex's title and reader pages are script shells, their data is on
	// api.mangadex.org). ok is false for a URL read as it is. The address is
	// on the Site's hosts; every fetch of a Site page goes through it.
	ReadURL func(u *url.URL) (string, bool)

	// PollURL, when set, gives a lighter body the Poll reads instead of the
	// series page once the Series has its Cover and a Latest Chapter: a feed
	// (Royal Road's syndication, WEBTOON's RSS, MangaDex's chapter feed).
	// The entry's answers read that body too; when it fails or names no
	// Latest Chapter, the Poll reads the series page. ok is false when the
	// Site has no such body for seriesURL.
	PollURL func(seriesURL string) (string, bool)

	// Listing, when set, is the Site's Site-wide "recent updates" body
	// (listing.go, docs/adr/0028-site-listings.md).
	Listing *Listing

	// NoSeries, when set, says why a URL of the Site names no Series, where
	// the Site can say more than "not a series page" (a MangaDex chapter URL
	// names no manga: its title URL is needed). "" keeps the plain refusal.
	NoSeries func(u *url.URL) string

	// Browser is set for Sites whose pages sit behind a JavaScript challenge.
	Browser *Browser

	// Family is the family an added Site was made from ("" for a built-in
	// Site), Options the options it was made with.
	Family  string
	Options map[string]string

	// Trackers, when set, reads the tracker entries a series page names
	// (MangaDex's links: al, mal, mu): tracker ("anilist", "myanimelist",
	// "mangaupdates") to the tracker's API id as a decimal number (a
	// MangaUpdates base-36 URL id converted). The Poll records them as
	// Series facts; Readers are offered them as the mapping to confirm.
	Trackers func(body []byte, page *url.URL) map[string]string

	// AltTitles, when set, reads the other titles a series page lists for
	// its Series (MangaDex's altTitles and its titles in other languages),
	// the one Title answers left out. Optional like Trackers: only a Site
	// that publishes them answers (docs/adr/0004); the Poll records them as
	// a Series fact that only the Works suggestions read.
	AltTitles func(body []byte, page *url.URL) []string

	// SeriesPath maps the path of any Site URL (series or chapter page) to the
	// Series slug and the series page path. ok is false for pages that do not
	// name one Series. u has been normalised by parseSiteURL. path may be a
	// whole https URL on another of the Site's hosts, when u is on a host
	// that serves no series page (MangaDex's API).
	SeriesPath func(u *url.URL) (slug, path string, ok bool)
}

// Ref names a Series as the registry derives it from a URL.
type Ref struct {
	Key       string `json:"key"`
	Site      string `json:"site"`
	Kind      Kind   `json:"kind"`
	SeriesURL string `json:"series_url"`
}

// Errors from Resolve. Callers show them to clients, so they say what is wrong.
var (
	ErrUnknownSite  = errors.New("not a page of a supported Site")
	ErrNotSeriesURL = errors.New("not a series or chapter page")
	ErrBadURL       = errors.New("not an absolute http(s) URL")
)

// Registry is the table of Sites, keyed by the site string and by host. It
// is a value: the server builds one at start from BuiltIn and hands it to
// every part that asks a Site anything, so a test builds its own (with a
// seventh Site, say) without touching anyone else's.
//
// Its base Sites are fixed when it is built; the Sites an Owner adds at run
// time are replaced as a whole by SetAdded, which every reader sees at its
// next lookup. A Registry is safe for concurrent use.
type Registry struct {
	base []*Site
	cur  atomic.Pointer[table]
}

// table is one immutable state of a Registry.
type table struct {
	byName map[string]*Site
	byHost map[string]*Site
	sorted []*Site
	added  []*Site
}

// BuiltIn returns new entries for the Sites compiled into Lectern.
func BuiltIn() []*Site {
	return []*Site{newAsura(), newComix(), newDemonic(), newKagane(), newLightnovelworld(), newMangadex(), newNovelfull(), newRoyalroad(), newWebtoons()}
}

// NewRegistry builds a registry whose base is sites. It refuses a duplicate
// name or host and an entry that lacks an answer, so such a mistake fails
// at start and in every test rather than at dispatch in production. An
// entry without a Pace gets DefaultPace.
func NewRegistry(sites ...*Site) (*Registry, error) {
	t, err := newTable(sites, nil)
	if err != nil {
		return nil, err
	}
	r := &Registry{base: sites}
	r.cur.Store(t)
	return r, nil
}

// SetAdded replaces the Sites added at run time with added. It refuses, and
// changes nothing, when an added Site's name or a host is taken or an entry
// is incomplete.
func (r *Registry) SetAdded(added ...*Site) error {
	t, err := newTable(r.base, added)
	if err != nil {
		return err
	}
	r.cur.Store(t)
	return nil
}

// Added returns the Sites added at run time, ordered by name.
func (r *Registry) Added() []*Site { return slices.Clone(r.cur.Load().added) }

func newTable(base, added []*Site) (*table, error) {
	t := &table{byName: make(map[string]*Site, len(base)+len(added)), byHost: map[string]*Site{}}
	for _, s := range append(slices.Clone(base), added...) {
		if err := s.validate(); err != nil {
			return nil, fmt.Errorf("site registry: %w", err)
		}
		if s.Pace == 0 {
			s.Pace = DefaultPace
		}
		if _, dup := t.byName[s.Name]; dup {
			return nil, fmt.Errorf("site registry: duplicate site %s", s.Name)
		}
		for _, h := range s.Hosts {
			if other := t.byHost[h]; other != nil {
				return nil, fmt.Errorf("site registry: host %s claimed by %s and %s", h, other.Name, s.Name)
			}
		}
		t.byName[s.Name] = s
		for _, h := range s.Hosts {
			t.byHost[h] = s
		}
		t.sorted = append(t.sorted, s)
	}
	byName := func(a, b *Site) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(t.sorted, byName)
	t.added = slices.Clone(added)
	slices.SortFunc(t.added, byName)
	return t, nil
}

// Default is a registry of the built-in Sites. Their entries are checked by
// every test, so a failure here is a bug in this package: it panics.
func Default() *Registry {
	r, err := NewRegistry(BuiltIn()...)
	if err != nil {
		panic(err)
	}
	return r
}

func (s *Site) validate() error {
	switch {
	case s.Name == "" || strings.ContainsAny(s.Name, ": /"):
		return fmt.Errorf("site name %q must be a short word", s.Name)
	case s.Kind != Manga && s.Kind != Novel:
		return fmt.Errorf("site %s: kind %q is neither manga nor novel", s.Name, s.Kind)
	case len(s.Hosts) == 0:
		return fmt.Errorf("site %s: no hosts", s.Name)
	case s.SeriesPath == nil, s.Title == nil, s.Latest == nil, s.Cover == nil, s.Chapters == nil, s.Content == nil:
		return fmt.Errorf("site %s: an answer is missing (SeriesPath, Title, Latest, Cover, Chapters and Content are all required)", s.Name)
	case s.Pace < 0:
		return fmt.Errorf("site %s: negative pace", s.Name)
	case s.Listing != nil && (s.Listing.Read == nil || !strings.HasPrefix(s.Listing.Path, "/") && !s.onHosts(s.Listing.Path)):
		return fmt.Errorf("site %s: a listing needs Read and a path starting with / or an https URL on its hosts", s.Name)
	case s.Browser != nil && (s.Browser.Read == nil || s.Browser.Arrived == nil):
		return fmt.Errorf("site %s: a browser Site needs Read and Arrived", s.Name)
	}
	for _, h := range s.Hosts {
		if h == "" || h != strings.ToLower(h) || strings.HasPrefix(h, "www.") || strings.ContainsAny(h, ":/ ") {
			return fmt.Errorf("site %s: host %q must be a bare lower-case name without a www. prefix", s.Name, h)
		}
	}
	return nil
}

// Lookup returns the Site named by a stored site string.
func (r *Registry) Lookup(name string) (*Site, bool) {
	s, ok := r.cur.Load().byName[name]
	return s, ok
}

// Sites returns every Site, ordered by name.
func (r *Registry) Sites() []*Site { return slices.Clone(r.cur.Load().sorted) }

// Names returns every site string, ordered.
func (r *Registry) Names() []string {
	sorted := r.cur.Load().sorted
	out := make([]string, len(sorted))
	for i, s := range sorted {
		out[i] = s.Name
	}
	return out
}

// HasHost reports whether host is one of the Site's hostnames, ignoring case
// and a leading "www.".
func (s *Site) HasHost(host string) bool {
	return slices.Contains(s.Hosts, strings.TrimPrefix(strings.ToLower(host), "www."))
}

// AllHostNames are the names a page of the Site may be on: each host and
// its "www." form, for the browser, which compares exact names.
func (s *Site) AllHostNames() []string {
	out := make([]string, 0, 2*len(s.Hosts))
	for _, h := range s.Hosts {
		out = append(out, h, "www."+h)
	}
	return out
}

func (r *Registry) siteForHost(host string) *Site {
	return r.cur.Load().byHost[strings.TrimPrefix(host, "www.")]
}

// HostSite returns the Site a host belongs to: one of its hostnames, with or
// without "www.", or a subdomain of one (kagane's API on yuzuki.kagane.org).
// Cover bytes are routed by this, the address's shape, never by the Series'
// Site name.
func (r *Registry) HostSite(host string) (*Site, bool) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" {
		return nil, false
	}
	if s := r.siteForHost(host); s != nil {
		return s, true
	}
	for i := strings.IndexByte(host, '.'); i >= 0 && i+1 < len(host); {
		host = host[i+1:]
		if s := r.siteForHost(host); s != nil {
			return s, true
		}
		i = strings.IndexByte(host, '.')
	}
	return nil, false
}

// AllChapters returns the Series' full chapter list, oldest first: through
// the Site's override when it has one (which may fetch more pages with
// fetch), otherwise from the series page body alone.
func (s *Site) AllChapters(ctx context.Context, fetch PageFetcher, seriesURL string, seriesBody []byte) ([]Chapter, error) {
	if s.ChapterList != nil {
		return s.ChapterList(ctx, fetch, seriesURL, seriesBody)
	}
	u, err := url.Parse(seriesURL)
	if err != nil {
		return nil, fmt.Errorf("chapters of %s: %w", seriesURL, ErrBadURL)
	}
	return s.Chapters(seriesBody, u)
}

// Resolve derives the Series a Site URL belongs to. It accepts series and
// chapter pages and normalises scheme, "www.", query, fragment and trailing
// slash, so every URL of one Series gives one key.
func (r *Registry) Resolve(raw string) (Ref, error) {
	u, err := parseSiteURL(raw)
	if err != nil {
		return Ref{}, err
	}
	site := r.siteForHost(u.Host)
	if site == nil {
		return Ref{}, fmt.Errorf("%w: %s", ErrUnknownSite, u.Host)
	}
	return site.resolve(u)
}

// ResolveOn derives the Series for a URL that must belong to the named Site.
func (s *Site) ResolveOn(raw string) (Ref, error) {
	u, err := parseSiteURL(raw)
	if err != nil {
		return Ref{}, err
	}
	if !s.HasHost(u.Host) {
		return Ref{}, fmt.Errorf("%w: host %s is not one of %s's (%s)", ErrUnknownSite, u.Host, s.Name, strings.Join(s.Hosts, ", "))
	}
	return s.resolve(u)
}

func (s *Site) resolve(u *url.URL) (Ref, error) {
	slug, path, ok := s.SeriesPath(u)
	if !ok || slug == "" {
		if s.NoSeries != nil {
			if why := s.NoSeries(u); why != "" {
				return Ref{}, fmt.Errorf("%w on %s: %s", ErrNotSeriesURL, s.Name, why)
			}
		}
		return Ref{}, fmt.Errorf("%w on %s: %s", ErrNotSeriesURL, s.Name, u.EscapedPath())
	}
	series := url.URL{Scheme: "https", Host: strings.TrimPrefix(u.Host, "www."), Path: path}
	if strings.HasPrefix(path, "https://") {
		abs, err := url.Parse(path)
		if err != nil || !s.HasHost(abs.Hostname()) {
			return Ref{}, fmt.Errorf("%w on %s: series page %q is not on its hosts", ErrNotSeriesURL, s.Name, path)
		}
		series = *abs
	}
	return Ref{Key: s.Name + ":" + slug, Site: s.Name, Kind: s.Kind, SeriesURL: series.String()}, nil
}

// ReadFrom is the address the body of a Site page is fetched from: the
// page itself, or where the Site's ReadURL says its data is.
func (s *Site) ReadFrom(pageURL string) string {
	if s.ReadURL == nil {
		return pageURL
	}
	u, err := parseSiteURL(pageURL)
	if err != nil || !s.HasHost(u.Host) {
		return pageURL
	}
	if to, ok := s.ReadURL(u); ok {
		return to
	}
	return pageURL
}

// LatestChapter is the Latest Chapter of a Series from the body read for
// its series page: through LatestOf when the Site names it in a further
// body (fetched with fetch), otherwise from the body alone.
func (s *Site) LatestChapter(ctx context.Context, fetch PageFetcher, seriesURL string, seriesBody []byte) (Chapter, error) {
	if s.LatestOf != nil {
		return s.LatestOf(ctx, fetch, seriesURL, seriesBody)
	}
	if seriesURL == "" {
		return s.Latest(seriesBody, nil)
	}
	u, err := url.Parse(seriesURL)
	if err != nil {
		return Chapter{}, fmt.Errorf("latest of %s: %w", seriesURL, ErrBadURL)
	}
	return s.Latest(seriesBody, u)
}

// SplitKey splits a Series key into its site and slug. A key that is not
// valid UTF-8 text without NUL is no key: the registry never makes one, and
// Postgres refuses it as a query parameter (a 500 where a 404 is due).
func SplitKey(key string) (site, slug string, ok bool) {
	site, slug, ok = strings.Cut(key, ":")
	return site, slug, ok && site != "" && slug != "" && utf8.ValidString(key) && !strings.ContainsRune(key, 0)
}

// parseSiteURL parses and normalises a Site URL: lower-case host, no port,
// no user info, no fragment, no trailing slash. The query stays for the
// Sites whose URLs name the Series in it (WEBTOON's title_no); a series URL
// carries one only when its SeriesPath says so.
func parseSiteURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" || len(raw) > 2048 {
		return nil, ErrBadURL
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Opaque != "" {
		return nil, ErrBadURL
	}
	if p := u.Port(); p != "" && p != "443" && p != "80" {
		return nil, fmt.Errorf("%w: unexpected port %s", ErrBadURL, p)
	}
	u.Host = strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	u.Fragment, u.RawFragment, u.ForceQuery = "", "", false
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// maxPathParts bounds the segments any Site's URL shape has; longer paths
// name no Series.
const maxPathParts = 6

// pathParts splits a cleaned path into its non-empty segments, into buf so
// that Resolve, called on every PUT, does not allocate for it. ok is false
// when the path has more segments than any Site URL.
func pathParts(u *url.URL, buf *[maxPathParts]string) ([]string, bool) {
	n := 0
	for seg := range strings.SplitSeq(u.Path, "/") {
		if seg == "" {
			continue
		}
		if n == maxPathParts {
			return nil, false
		}
		buf[n] = seg
		n++
	}
	return buf[:n], true
}

// validSlug accepts the characters Sites use in slugs and ids, and nothing
// that could change a path when the slug is put back into a URL.
func validSlug(s string) bool {
	if s == "" || len(s) > 200 || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '.' && c != '_' && c != '~' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

func isHex(c byte) bool { return c >= 'a' && c <= 'f' || c >= '0' && c <= '9' }

// isUUID reports whether s is a UUID in its 8-4-4-4-12 hex form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			c := s[i] | 0x20
			if !isHex(c) {
				return false
			}
		}
	}
	return true
}
