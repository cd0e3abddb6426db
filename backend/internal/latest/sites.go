// Package latest knows the Sites: the registry of what each supported reading
// Site answers (Series key, Latest Chapter, Cover, chapters, chapter content),
// and the Poll that asks it.
//
// The registry is one table of records keyed by the site string; see
// docs/adr/0004-site-registry.md for why the question set is fixed and an
// unusual Site owns an override instead of widening it.
package latest

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Kind is the Library a Series belongs to, decided by its Site.
type Kind string

// The two Libraries.
const (
	Manga Kind = "manga"
	Novel Kind = "novel"
)

// Site is one supported reading Site: the answers it gives to the fixed questions.
type Site struct {
	// Name is the stored site string, the first half of every Series key.
	Name string
	// Kind is the Library the Site's Series belong to.
	Kind Kind
	// Hosts are the hostnames a Site URL may carry, current first. Every fetch of
	// a Site page is pinned to them, redirects included.
	Hosts []string

	// seriesPath maps the path of any Site URL (series or chapter page) to the
	// Series slug and the series page path. ok is false for pages that do not
	// name one Series.
	seriesPath func(u *url.URL) (slug, path string, ok bool)
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

var registry = map[string]*Site{}

// register adds a Site; it panics on a duplicate name or host because the
// registry is built at init and such a mistake must fail every test at once.
func register(s *Site) {
	if _, dup := registry[s.Name]; dup {
		panic("latest: duplicate site " + s.Name)
	}
	for _, h := range s.Hosts {
		if other := siteForHost(h); other != nil {
			panic(fmt.Sprintf("latest: host %s claimed by %s and %s", h, other.Name, s.Name))
		}
	}
	registry[s.Name] = s
}

// Lookup returns the Site named by a stored site string.
func Lookup(name string) (*Site, bool) {
	s, ok := registry[name]
	return s, ok
}

// Sites returns every registered Site, ordered by name.
func Sites() []*Site {
	out := make([]*Site, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// HasHost reports whether host (already lower-cased, without port) is one of
// the Site's hostnames, ignoring a leading "www.".
func (s *Site) HasHost(host string) bool {
	return slices.Contains(s.Hosts, strings.TrimPrefix(host, "www."))
}

func siteForHost(host string) *Site {
	host = strings.TrimPrefix(host, "www.")
	for _, s := range registry {
		if slices.Contains(s.Hosts, host) {
			return s
		}
	}
	return nil
}

// Resolve derives the Series a Site URL belongs to. It accepts series and
// chapter pages and normalises scheme, "www.", query, fragment and trailing
// slash, so every URL of one Series gives one key.
func Resolve(raw string) (Ref, error) {
	u, err := parseSiteURL(raw)
	if err != nil {
		return Ref{}, err
	}
	site := siteForHost(u.Hostname())
	if site == nil {
		return Ref{}, fmt.Errorf("%w: %s", ErrUnknownSite, u.Hostname())
	}
	return site.resolve(u)
}

// ResolveOn derives the Series for a URL that must belong to the named Site.
func (s *Site) ResolveOn(raw string) (Ref, error) {
	u, err := parseSiteURL(raw)
	if err != nil {
		return Ref{}, err
	}
	if !s.HasHost(u.Hostname()) {
		return Ref{}, fmt.Errorf("%w: host %s is not one of %s's (%s)", ErrUnknownSite, u.Hostname(), s.Name, strings.Join(s.Hosts, ", "))
	}
	return s.resolve(u)
}

func (s *Site) resolve(u *url.URL) (Ref, error) {
	slug, path, ok := s.seriesPath(u)
	if !ok || slug == "" {
		return Ref{}, fmt.Errorf("%w on %s: %s", ErrNotSeriesURL, s.Name, u.EscapedPath())
	}
	series := url.URL{Scheme: "https", Host: strings.TrimPrefix(u.Hostname(), "www."), Path: path}
	return Ref{Key: s.Name + ":" + slug, Site: s.Name, Kind: s.Kind, SeriesURL: series.String()}, nil
}

// SplitKey splits a Series key into its site and slug.
func SplitKey(key string) (site, slug string, ok bool) {
	site, slug, ok = strings.Cut(key, ":")
	return site, slug, ok && site != "" && slug != ""
}

func parseSiteURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" || len(raw) > 2048 {
		return nil, ErrBadURL
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return nil, ErrBadURL
	}
	if p := u.Port(); p != "" && p != "443" && p != "80" {
		return nil, fmt.Errorf("%w: unexpected port %s", ErrBadURL, p)
	}
	u.Host = strings.ToLower(u.Hostname())
	u.RawQuery, u.Fragment, u.RawFragment = "", "", ""
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// pathParts splits a cleaned path into its non-empty segments.
func pathParts(u *url.URL) []string {
	var out []string
	for _, p := range strings.Split(u.Path, "/") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// asura's series slugs carry a rotating 8-character suffix (hex on the old
// host, lowercase alphanumerics now). The key is the slug without it. A suffix
// without a digit is kept: "solo-leveling-ragnarok" ends in an 8-letter word,
// and merging two Series is worse than a rotated hash creating a second key.
var asuraSuffix = regexp.MustCompile(`^(.+)-([a-z0-9]{8})$`)

func asuraSlug(s string) string {
	m := asuraSuffix.FindStringSubmatch(s)
	if m == nil || !strings.ContainsAny(m[2], "0123456789") {
		return s
	}
	return m[1]
}

var slugRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._~%-]*$`)

func validSlug(s string) bool { return len(s) <= 200 && slugRe.MatchString(s) }

var uuidRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

var comixTitle = regexp.MustCompile(`^([A-Za-z0-9]+)-[A-Za-z0-9-]+$|^([A-Za-z0-9]+)$`)

func init() {
	register(&Site{
		Name:  "asura",
		Kind:  Manga,
		Hosts: []string{"asurascans.com", "asuracomic.net"},
		seriesPath: func(u *url.URL) (string, string, bool) {
			p := pathParts(u)
			// /comics/<slug>-<suffix>[/chapter/<n>] now; /series/<slug>-<hex> before,
			// whose chapter links lacked the /series/ prefix.
			switch {
			case len(p) >= 2 && (p[0] == "comics" || p[0] == "series") && (len(p) == 2 || p[2] == "chapter"):
				if !validSlug(p[1]) {
					return "", "", false
				}
				return asuraSlug(p[1]), "/" + p[0] + "/" + p[1], true
			case len(p) >= 3 && p[1] == "chapter" && validSlug(p[0]):
				return asuraSlug(p[0]), "/series/" + p[0], true
			}
			return "", "", false
		},
	})
	register(&Site{
		Name:  "demonic",
		Kind:  Manga,
		Hosts: []string{"demonicscans.org"},
		seriesPath: func(u *url.URL) (string, string, bool) {
			p := pathParts(u)
			// /manga/<Title-With-Dashes>; the reader is /title/<Title>/chapter/<n>/<suffix>.
			// /chaptered.php?manga=<id> names a numeric id no URL maps back from.
			switch {
			case len(p) == 2 && p[0] == "manga" && validSlug(p[1]):
				return p[1], "/manga/" + p[1], true
			case len(p) >= 3 && p[0] == "title" && p[2] == "chapter" && validSlug(p[1]):
				return p[1], "/manga/" + p[1], true
			}
			return "", "", false
		},
	})
	register(&Site{
		Name:  "comix",
		Kind:  Manga,
		Hosts: []string{"comix.to", "comix.ws"},
		seriesPath: func(u *url.URL) (string, string, bool) {
			p := pathParts(u)
			// /title/<hid>-<slug>[/<chapterId>-chapter-<n>]; the hid is stable
			// while the slug follows the title, so the key is the hid.
			if len(p) < 2 || len(p) > 3 || p[0] != "title" {
				return "", "", false
			}
			m := comixTitle.FindStringSubmatch(p[1])
			if m == nil {
				return "", "", false
			}
			hid := m[1] + m[2]
			return hid, "/title/" + p[1], true
		},
	})
	register(&Site{
		Name:  "kagane",
		Kind:  Manga,
		Hosts: []string{"kagane.to", "kagane.org"},
		seriesPath: func(u *url.URL) (string, string, bool) {
			p := pathParts(u)
			// /series/<uuid>[/reader/<bookUuid>]
			if len(p) < 2 || p[0] != "series" || !uuidRe.MatchString(p[1]) || (len(p) > 2 && p[2] != "reader") {
				return "", "", false
			}
			id := strings.ToLower(p[1])
			return id, "/series/" + id, true
		},
	})
	register(&Site{
		Name:  "lightnovelworld",
		Kind:  Novel,
		Hosts: []string{"lightnovelworld.com", "lightnovelworld.co"},
		seriesPath: func(u *url.URL) (string, string, bool) {
			p := pathParts(u)
			// /novel/<slug>[/chapter-<n> | /chapters[/page-<n>]]
			if len(p) < 2 || p[0] != "novel" || !validSlug(p[1]) {
				return "", "", false
			}
			return p[1], "/novel/" + p[1], true
		},
	})
	register(&Site{
		Name:  "novelfull",
		Kind:  Novel,
		Hosts: []string{"novelfull.com", "novelfull.net"},
		seriesPath: func(u *url.URL) (string, string, bool) {
			p := pathParts(u)
			// /<slug>.html for the series, /<slug>/chapter-<n>[-title].html for a chapter.
			switch {
			case len(p) == 1 && strings.HasSuffix(p[0], ".html"):
				slug := strings.TrimSuffix(p[0], ".html")
				if !validSlug(slug) || novelfullPages[slug] {
					return "", "", false
				}
				return slug, "/" + slug + ".html", true
			case len(p) == 2 && strings.HasPrefix(p[1], "chapter-") && strings.HasSuffix(p[1], ".html") && validSlug(p[0]):
				return p[0], "/" + p[0] + ".html", true
			}
			return "", "", false
		},
	})
}

// novelfullPages are root-level .html pages of novelfull that are not Series.
var novelfullPages = map[string]bool{"index": true, "latest-release-novel": true, "hot-novel": true, "completed-novel": true, "most-popular": true, "search": true}
