package latest

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
)

// A family is a registry entry template for a website theme many Sites
// share (Madara, MangaThemesia, LightNovel WP). An Owner makes a Site of a
// family by naming it and giving its hosts, its Library and a few options;
// the Site answers the same fixed questions as a built-in one. Options are
// closed sets the family validates: the Owner never types a selector, because
// a wrong selector is a silent wrong answer (docs/adr/0019).

// Family describes one family: what an Owner may choose when adding a Site.
type Family struct {
	// Name is the family's word: madara, mangathemesia, lightnovelwp.
	Name string `json:"family"`
	// Kinds are the Libraries the theme serves, the first the usual one.
	Kinds []Kind `json:"kinds"`
	// Options are the option names the family accepts, each with its
	// allowed values ("" in the list: any path segment) and default.
	Options []FamilyOption `json:"options"`
	// About says, for the Owner, which Sites the family fits.
	About string `json:"about"`

	build func(s *Site, o familyOptions)
}

// FamilyOption is one option of a family.
type FamilyOption struct {
	Name string `json:"name"`
	// Values are the allowed values; nil means a path segment (lower-case
	// letters, digits and hyphens).
	Values  []string `json:"values,omitempty"`
	Default string   `json:"default"`
	About   string   `json:"about"`
}

// UsualSeriesPaths are the series path prefixes families recognise without
// the series_path option: the ones the themes' installs use most.
var UsualSeriesPaths = []string{"manga", "series", "comic", "novel", "webtoon"}

// The options every family shares.
const (
	OptSeriesPath = "series_path"
	OptChapters   = "chapters"
)

// madara's chapter-list sources.
const (
	ChaptersAuto      = "auto"
	ChaptersPage      = "page"
	ChaptersAjax      = "ajax"
	ChaptersAdminAjax = "admin-ajax"
)

var seriesPathOption = FamilyOption{Name: OptSeriesPath, Default: "",
	About: "the series path prefix (manga for /manga/<slug>/); unset: any of " + strings.Join(UsualSeriesPaths, ", ")}

// families is the table of families, by name.
var families = map[string]*Family{
	"madara": {
		Name: "madara", Kinds: []Kind{Manga, Novel},
		About: "the Madara / WP-Manga WordPress theme: series under /manga/<slug>/, chapters under the series, listed in the page or by its ajax endpoint",
		Options: []FamilyOption{seriesPathOption, {Name: OptChapters, Values: []string{ChaptersAuto, ChaptersPage, ChaptersAjax, ChaptersAdminAjax}, Default: ChaptersAuto,
			About: "where the chapter list comes from: auto (the page, else <series_url>ajax/chapters/), page, ajax, admin-ajax (admin-ajax.php with the manga id)"}},
		build: buildMadara,
	},
	"mangathemesia": {
		Name: "mangathemesia", Kinds: []Kind{Manga},
		About:   "Themesia's MangaReader / MangaStream theme: series under /manga/<slug>/, chapters at the root (/<slug>-chapter-12/), listed in #chapterlist",
		Options: []FamilyOption{seriesPathOption},
		build:   buildMangathemesia,
	},
	"lightnovelwp": {
		Name: "lightnovelwp", Kinds: []Kind{Novel},
		About:   "Themesia's LightNovel WordPress theme: series under /series/<slug>/, chapters at the root, listed in .eplister",
		Options: []FamilyOption{seriesPathOption},
		build:   buildLightnovelwp,
	},
}

// Families returns every family, ordered by name.
func Families() []Family {
	out := make([]Family, 0, len(families))
	for _, f := range families {
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LookupFamily returns the named family.
func LookupFamily(name string) (Family, bool) {
	f, ok := families[name]
	if !ok {
		return Family{}, false
	}
	return *f, true
}

// familyOptions are a Site's validated options, defaults filled in.
type familyOptions struct {
	seriesPaths []string
	chapters    string
}

// NewFamilySite builds the registry entry of a Site of a family. It refuses
// an unknown family, a Library the family does not serve, an option the
// family does not know or a value outside its set, an invalid name and an
// invalid host, each with an error that names the fault (errors.Is
// ErrInvalidSite), so the API answers 422 with it.
func NewFamilySite(name, family string, hosts []string, kind Kind, options map[string]string) (*Site, error) {
	f, ok := families[family]
	if !ok {
		return nil, fmt.Errorf("%w: unknown family %q (known: %s)", ErrInvalidSite, family, strings.Join(familyNames(), ", "))
	}
	if err := ValidSiteName(name); err != nil {
		return nil, err
	}
	if kind == "" {
		kind = f.Kinds[0]
	}
	if !slices.Contains(f.Kinds, kind) {
		return nil, fmt.Errorf("%w: family %s serves %s, not %q", ErrInvalidSite, family, kindList(f.Kinds), kind)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("%w: a Site needs at least one host", ErrInvalidSite)
	}
	clean := make([]string, 0, len(hosts))
	for _, h := range hosts {
		h, err := ValidHost(h)
		if err != nil {
			return nil, err
		}
		if slices.Contains(clean, h) {
			return nil, fmt.Errorf("%w: host %s given twice", ErrInvalidSite, h)
		}
		clean = append(clean, h)
	}
	o, norm, err := f.options(options)
	if err != nil {
		return nil, err
	}
	s := &Site{Name: name, Kind: kind, Hosts: clean, Family: family, Options: norm}
	f.build(s, o)
	return s, nil
}

// ErrInvalidSite is the class of a refused Site definition.
var ErrInvalidSite = fmt.Errorf("invalid Site")

func (f *Family) options(in map[string]string) (familyOptions, map[string]string, error) {
	var o familyOptions
	norm := make(map[string]string, len(in))
	for k, v := range in {
		i := slices.IndexFunc(f.Options, func(opt FamilyOption) bool { return opt.Name == k })
		if i < 0 {
			var names []string
			for _, opt := range f.Options {
				names = append(names, opt.Name)
			}
			return o, nil, fmt.Errorf("%w: family %s has no option %q (its options: %s)", ErrInvalidSite, f.Name, k, strings.Join(names, ", "))
		}
		opt := f.Options[i]
		switch {
		case opt.Values == nil:
			v = strings.Trim(strings.ToLower(strings.TrimSpace(v)), "/")
			if !validSegment(v) {
				return o, nil, fmt.Errorf("%w: option %s=%q must be one path segment of lower-case letters, digits and hyphens", ErrInvalidSite, k, in[k])
			}
		case !slices.Contains(opt.Values, v):
			return o, nil, fmt.Errorf("%w: option %s=%q is not one of %s", ErrInvalidSite, k, v, strings.Join(opt.Values, ", "))
		}
		norm[k] = v
		switch k {
		case OptSeriesPath:
			o.seriesPaths = []string{v}
		case OptChapters:
			o.chapters = v
		}
	}
	if o.seriesPaths == nil {
		o.seriesPaths = UsualSeriesPaths
	}
	if o.chapters == "" {
		o.chapters = ChaptersAuto
	}
	return o, norm, nil
}

func familyNames() []string {
	var out []string
	for _, f := range Families() {
		out = append(out, f.Name)
	}
	return out
}

func kindList(kinds []Kind) string {
	var s []string
	for _, k := range kinds {
		s = append(s, string(k))
	}
	return strings.Join(s, " and ")
}

func validSegment(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isLowerAlnum(c) && c != '-' {
			return false
		}
	}
	return true
}

// ValidSiteName checks an added Site's name: lower-case letters, digits and
// hyphens, starting with a letter, at most 40 characters, and not a built-in
// Site's name.
func ValidSiteName(name string) error {
	if name == "" || len(name) > 40 || name[0] < 'a' || name[0] > 'z' || strings.HasSuffix(name, "-") {
		return fmt.Errorf("%w: name %q must be lower-case letters, digits and hyphens, starting with a letter", ErrInvalidSite, name)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isLowerAlnum(c) && c != '-' {
			return fmt.Errorf("%w: name %q must be lower-case letters, digits and hyphens, starting with a letter", ErrInvalidSite, name)
		}
	}
	if IsBuiltIn(name) {
		return fmt.Errorf("%w: %s is a built-in Site", ErrInvalidSite, name)
	}
	return nil
}

var builtInNames = func() map[string]bool {
	m := map[string]bool{}
	for _, s := range BuiltIn() {
		m[s.Name] = true
	}
	return m
}()

// IsBuiltIn reports whether name is a Site compiled into Lectern.
func IsBuiltIn(name string) bool { return builtInNames[name] }

// ValidHost checks and normalises an added Site's host: any syntactically
// valid DNS name of two labels or more (reserved test TLDs included, so an
// Owner may add a Site on .test or .example), lower-cased, without a
// "www." prefix; no IP address, port, wildcard or trailing dot.
func ValidHost(raw string) (string, error) {
	h := strings.ToLower(strings.TrimSpace(raw))
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%w: host %q %s", ErrInvalidSite, raw, why)
	}
	switch {
	case h == "":
		return bad("is empty")
	case strings.Contains(h, "*"):
		return bad("is a wildcard; name each host")
	case strings.ContainsAny(h, ":/"):
		return bad("must be a bare host name, without scheme, port or path")
	case net.ParseIP(h) != nil:
		return bad("is an IP address; a Site is named by its host")
	case len(h) > 253:
		return bad("is longer than 253 characters")
	}
	h = strings.TrimPrefix(h, "www.")
	labels := strings.Split(h, ".")
	if len(labels) < 2 {
		return bad("needs a dot (example.com)")
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return bad("is not a valid DNS name")
		}
		for i := 0; i < len(l); i++ {
			if c := l[i]; !isLowerAlnum(c) && c != '-' {
				return bad("is not a valid DNS name")
			}
		}
	}
	if tld := labels[len(labels)-1]; tld[0] >= '0' && tld[0] <= '9' {
		return bad("is not a valid DNS name")
	}
	return h, nil
}

// ---- shared by the families ----

// familyPath is a family Site's SeriesPath: /<prefix>/<slug> is the series
// page, and, when chaptersUnder, /<prefix>/<slug>/<chapter...> a chapter of
// it. Themes that put chapters at the root name no Series by a chapter URL.
func familyPath(prefixes []string, chaptersUnder bool) func(u *url.URL) (string, string, bool) {
	return func(u *url.URL) (string, string, bool) {
		var buf [maxPathParts]string
		p, ok := pathParts(u, &buf)
		if !ok || len(p) < 2 || !slices.Contains(prefixes, p[0]) || !validSlug(p[1]) {
			return "", "", false
		}
		if len(p) == 2 || chaptersUnder {
			// Series URLs keep the theme's trailing slash: WordPress
			// redirects the bare path to it, a request the pace would pay.
			return p[1], "/" + p[0] + "/" + p[1] + "/", true
		}
		return "", "", false
	}
}

// themeDoc parses a series page of a theme: the body must carry one of the
// marks of the theme's series page, else it is diagnosed (challenge, the
// theme's 404 page, another page).
func themeDoc(body []byte, notPage, mark, missing string) (*goquery.Document, error) {
	doc, err := parseHTML(body, notPage)
	if err != nil {
		return nil, err
	}
	if doc.Find("body.error404").Length() > 0 {
		return nil, problem(notPage, "the theme's 404 page (title %q)", collapseSpace(doc.Find("title").First().Text()))
	}
	if doc.Find(mark).Length() == 0 {
		return nil, Diagnose(body, notPage, missing)
	}
	return doc, nil
}

// imageOf is the real image address of an <img>: lazy-loading attributes
// before src, the widest srcset candidate before a plain src, never a
// placeholder (a data: URI, a theme's lazy-load stand-in).
// The widest srcset rendition is the one the theme would show a large screen.
func imageOf(base *url.URL, img *goquery.Selection) string {
	if img.Length() == 0 {
		return ""
	}
	var cands []string
	for _, a := range []string{"data-srcset", "data-lazy-srcset", "srcset"} {
		cands = append(cands, widestSrcset(img.AttrOr(a, "")))
	}
	for _, a := range []string{"data-src", "data-lazy-src", "data-original", "data-cfsrc"} {
		cands = append(cands, img.AttrOr(a, ""))
	}
	cands = append(cands, img.AttrOr("src", ""))
	for _, c := range cands {
		c = strings.TrimSpace(c)
		if c == "" || placeholderImage(c) {
			continue
		}
		if u, ok := absURL(base, c); ok {
			return u
		}
	}
	return ""
}

// widestSrcset is the candidate of a srcset with the largest width (or
// density) descriptor; the first when none has one.
func widestSrcset(srcset string) string {
	best, bestW := "", -1.0
	for _, part := range strings.Split(srcset, ",") {
		f := strings.Fields(part)
		if len(f) == 0 {
			continue
		}
		w := 0.0
		if len(f) > 1 {
			d := strings.TrimRight(f[1], "wx")
			fmt.Sscanf(d, "%g", &w)
		}
		if w > bestW {
			best, bestW = f[0], w
		}
	}
	return best
}

// placeholderImage reports a lazy-load stand-in or a theme's default image:
// no Series' Cover and no chapter's page.
func placeholderImage(src string) bool {
	low := strings.ToLower(src)
	if strings.HasPrefix(low, "data:") {
		return true
	}
	name := low
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	for _, w := range []string{"placeholder", "lazy", "loading", "dflazy", "blank", "default-cover", "no-image", "noimage", "nocover", "default.jpg", "default.png"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// announcementWords are the labels of list entries that are not chapters
// ("Notice", "Hiatus"): such an entry without a chapter number is left out.
var announcementWords = []string{"notice", "announcement", "hiatus", "on break", "break", "delay", "recruit", "info", "update"}

func announcement(c Chapter) bool {
	if c.Number != nil {
		return false
	}
	low := strings.ToLower(c.Label)
	for _, w := range announcementWords {
		if strings.Contains(low, w) {
			return true
		}
	}
	return false
}

// tidyFamilyChapters is tidyChapters for themes that list locked chapters
// without a link: a locked chapter may have URL "" and is kept, once per
// label; announcements are left out.
func tidyFamilyChapters(chapters []Chapter) []Chapter {
	seenURL := map[string]bool{}
	seenLabel := map[string]bool{}
	out := chapters[:0]
	for _, c := range chapters {
		switch {
		case c.Label == "" || announcement(c):
			continue
		case c.URL == "":
			if !c.Locked || seenLabel[c.Label] {
				continue
			}
		case seenURL[c.URL]:
			continue
		}
		seenURL[c.URL], seenLabel[c.Label] = true, true
		out = append(out, c)
	}
	return out
}

// lockedMark reports a list entry the theme marks as premium, coin or locked.
func lockedMark(sel *goquery.Selection) bool {
	for _, n := range sel.Nodes {
		if hasClass(n, "premium", "premium-block", "locked", "lock", "coin", "vip", "paid") {
			return true
		}
	}
	return sel.Find(".premium, .premium-block, .locked, .lock, .coin, .fa-lock, .icon-lock, .chapter-lock").Length() > 0
}

// chapterLink resolves a chapter entry's href on the Site's hosts; "" for
// the theme's stand-ins of a locked chapter ("#", "javascript:").
func (s *Site) chapterLink(base *url.URL, href string) string {
	href = strings.TrimSpace(href)
	if href == "" || strings.HasPrefix(href, "#") || strings.HasPrefix(strings.ToLower(href), "javascript:") {
		return ""
	}
	link, ok := s.siteURL(base, href)
	if !ok {
		return ""
	}
	return link
}

// textDrop is what families drop from a chapter's text: ads, share bars,
// promotions, navigation, the theme's unlock buttons.
func textDrop(n *html.Node) bool {
	if hasClass(n, "ads", "ad", "adsbygoogle", "code-block", "sharedaddy", "jp-relatedposts", "nav-links", "nav-previous", "nav-next",
		"wp-block-buttons", "unlock-buttons", "chapter-nav", "naveps", "bottomnav", "select-pagination", "entry-meta", "kofi-button", "patreon",
		"promo", "promotion", "related-posts", "social-share", "wp-block-embed") {
		return true
	}
	if id, ok := attr(n, "id"); ok && (strings.HasPrefix(id, "div-gpt") || strings.HasPrefix(id, "ad-") || strings.HasPrefix(id, "ads")) {
		return true
	}
	return false
}

// textStop ends a chapter's text at the comment thread.
func textStop(n *html.Node) bool {
	if id, ok := attr(n, "id"); ok && (id == "comments" || id == "disqus_thread") {
		return true
	}
	return hasClass(n, "comments-area", "wpdiscuz_top_clearing")
}
