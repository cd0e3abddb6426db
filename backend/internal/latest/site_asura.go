package latest

import (
	"encoding/json"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/PuerkitoBio/goquery"
)

// asura: manga; Astro pages since about March 2026, Next.js before. See
// /testdata/sites/asura/ for both structures.

// asuraSite is the asura entry: its answers are methods, so they reach the
// entry (its hosts, its URL shape) without a package variable.
type asuraSite struct{ *Site }

func newAsura() *Site {
	asura := asuraSite{new(Site)}
	*asura.Site = Site{
		Name: "asura",
		Kind: Manga,
		// api.asurascans.com answers the listing (asuraListingURL).
		Hosts: []string{"asurascans.com", "asuracomic.net", asuraAPI},
		// Peers pace asura at about one request a second.
		Pace: time.Second,
		SeriesPath: func(u *url.URL) (string, string, bool) {
			var buf [maxPathParts]string
			p, ok := pathParts(u, &buf)
			if !ok {
				return "", "", false
			}
			// /comics/<slug>-<suffix>[/chapter/<n>] now; /series/<slug>-<hex> before,
			// whose chapter links lacked the /series/ prefix.
			switch {
			case (len(p) == 2 || len(p) == 4 && p[2] == "chapter") && (p[0] == "comics" || p[0] == "series"):
				if !validSlug(p[1]) {
					return "", "", false
				}
				return asuraSlug(p[1]), "/" + p[0] + "/" + p[1], true
			case len(p) == 3 && p[1] == "chapter" && validSlug(p[0]) && p[0] != "comics" && p[0] != "series":
				return asuraSlug(p[0]), "/series/" + p[0], true
			}
			return "", "", false
		},
		Latest: func(body []byte, page *url.URL) (Chapter, error) {
			return latestOf(asura.chapters(body, page))
		},
		Title:    asura.title,
		Cover:    asura.cover,
		Chapters: asura.chapters,
		Content:  asura.content,
		Listing:  &Listing{Path: asuraListingURL, Read: asura.listing},
	}
	return asura.Site
}

// asuraSlug removes the rotating 8-character suffix (lowercase alphanumerics
// now, hex before) from a series slug: the key is the slug without it.
//
// A suffix is told from a last word of the title by shape. One with a digit
// is a suffix. One without (about 7% of random suffixes) is a suffix unless
// it reads like a word: two or more vowels and no run of more than three
// consonants ("ragnarok", "champion"), which random letters rarely do.
// Keeping a word is the safe side: stripping one could merge two Series
// ("solo-leveling-ragnarok" into "solo-leveling"), while keeping a rare
// word-like suffix only gives a rotated URL a second key.
func asuraSlug(s string) string {
	i := len(s) - 9
	if i < 1 || s[i] != '-' {
		return s
	}
	suffix := s[i+1:]
	digit := false
	for j := 0; j < len(suffix); j++ {
		c := suffix[j]
		if !isLowerAlnum(c) {
			return s
		}
		if c >= '0' && c <= '9' {
			digit = true
		}
	}
	if digit || !wordLike(suffix) {
		return s[:i]
	}
	return s
}

// wordLike reports whether lowercase letters look like an English word: at
// least two vowels and no run of more than three consonants.
func wordLike(s string) bool {
	vowels, run := 0, 0
	for i := 0; i < len(s); i++ {
		if strings.IndexByte("aeiouy", s[i]) >= 0 {
			vowels++
			run = 0
			continue
		}
		run++
		if run > 3 {
			return false
		}
	}
	return vowels >= 2
}

// wantSlug is the slug (without suffix) of the Series the page is
// about: from the page URL or canonical link, else from the chapter list
// island. "" when the page names none.
func (asura asuraSite) wantSlug(doc *goquery.Document, page *url.URL, islands []astroIsland) string {
	if _, slug, ok := SplitKey(asura.pageKey(page, doc)); ok {
		return slug
	}
	for _, isl := range islands {
		if isl.is("ChapterListReact") {
			if s := stringOf(firstOf(isl.props(), "seriesSlug", "series_slug")); s != "" {
				return asuraSlug(s)
			}
		}
	}
	return ""
}

// seriesURL is the series page chapter URLs are built on: the page's
// own (its suffix is the current one), else the island's slug on the
// current host, whose server redirects an old suffix to the current one.
func (asura asuraSite) seriesURL(page *url.URL, islandSlug string) string {
	if page != nil {
		if ref, err := asura.ResolveOn(page.String()); err == nil {
			return ref.SeriesURL
		}
	}
	if validSlug(islandSlug) {
		return "https://" + asura.Hosts[0] + "/comics/" + islandSlug
	}
	return ""
}

func (asura asuraSite) chapters(body []byte, page *url.URL) ([]Chapter, error) {
	doc, err := parseHTML(body, ProblemNotSeriesPage)
	if err != nil {
		return nil, err
	}
	islands := astroIslands(doc)
	want := asura.wantSlug(doc, page, islands)
	if chapters, ok := asura.islandChapters(islands, page, want); ok {
		return chapters, nil
	}
	if chapters, ok := asura.oldChapters(doc, page, want); ok {
		return chapters, nil
	}
	return nil, Diagnose(body, ProblemNotSeriesPage, "no ChapterListReact island and no scrollbar-thumb-themecolor chapter list")
}

// islandChapters reads the ChapterListReact island of the current
// structure. ok is false when the page has none.
func (asura asuraSite) islandChapters(islands []astroIsland, page *url.URL, want string) ([]Chapter, bool) {
	for _, isl := range islands {
		if !isl.is("ChapterListReact") {
			continue
		}
		props := isl.props()
		if props == nil {
			continue
		}
		islandSlug := stringOf(firstOf(props, "seriesSlug", "series_slug"))
		if want != "" && islandSlug != "" && asuraSlug(islandSlug) != want {
			// A chapter list of another Series (a related block reusing the component).
			continue
		}
		var out []Chapter
		series := ""
		for _, v := range listOf(props["chapters"]) {
			c := mapOf(v)
			n := numberOf(c["number"])
			if c == nil || n == nil {
				continue
			}
			slug := stringOf(firstOf(c, "series_slug", "seriesSlug"))
			if want != "" && slug != "" && asuraSlug(slug) != want {
				continue
			}
			if islandSlug == "" {
				islandSlug = slug
			}
			if series == "" {
				series = asura.seriesURL(page, islandSlug)
			}
			if series == "" {
				continue
			}
			out = append(out, asuraChapter(c, n, series))
		}
		sortByNumber(out)
		return tidyChapters(out), true
	}
	return nil, false
}

// asuraChapter is one chapter record of asura's, numbered n, of the Series
// at series: the series page's island and the API's listing name its
// fields alike.
func asuraChapter(c map[string]any, n *float64, series string) Chapter {
	label := "Chapter " + formatNumber(*n)
	if t := collapseSpace(stringOf(c["title"])); t != "" {
		label += " - " + t
	}
	locked := boolOf(c["is_premium"]) || boolOf(c["is_locked"]) || earlyAccess(stringOf(c["early_access_until"]))
	return chapterOf(label, n, series+"/chapter/"+formatNumber(*n), locked)
}

// earlyAccess reports whether an early-access window is still open.
func earlyAccess(until string) bool {
	if until == "" {
		return false
	}
	t, err := time.Parse(time.RFC3339, until)
	if err != nil {
		// A window the page states but in a form not understood is taken as
		// open: calling a chapter readable when it is not is the worse error.
		return true
	}
	return t.After(time.Now())
}

// oldChapters reads the Next.js structure used before March 2026.
func (asura asuraSite) oldChapters(doc *goquery.Document, page *url.URL, want string) ([]Chapter, bool) {
	list := doc.Find("div.scrollbar-thumb-themecolor").First()
	if list.Length() == 0 {
		return nil, false
	}
	base := asura.baseURL(page)
	var out []Chapter
	list.ChildrenFiltered("div.group").Each(func(_ int, g *goquery.Selection) {
		href, ok := g.Find("a[href]").First().Attr("href")
		if !ok {
			return
		}
		link, ok := asura.siteURL(base, href)
		if !ok {
			return
		}
		if _, slug, ok := SplitKey(asura.keyOf(link)); !ok || want != "" && slug != want {
			return
		}
		h3 := g.Find("h3").First()
		label := ownText(h3)
		if t := collapseSpace(h3.Find("span").First().Text()); t != "" {
			label += " - " + t
		}
		out = append(out, chapterOf(label, nil, link, g.Find("svg").Length() > 0))
	})
	// Listed newest first.
	return tidyChapters(reversed(out)), true
}

// sortByNumber orders chapters oldest first when every one has a number;
// otherwise it keeps the page's order, which is then the only evidence.
func sortByNumber(chapters []Chapter) {
	for _, c := range chapters {
		if c.Number == nil {
			return
		}
	}
	sort.SliceStable(chapters, func(i, j int) bool { return *chapters[i].Number < *chapters[j].Number })
}

// seriesIslands parses a series page and returns its islands and the
// slug of its Series, or the problem when the body is not a series page.
func (asura asuraSite) seriesIslands(body []byte, page *url.URL) (*goquery.Document, []astroIsland, string, error) {
	doc, err := parseHTML(body, ProblemNotSeriesPage)
	if err != nil {
		return nil, nil, "", err
	}
	islands := astroIslands(doc)
	want := asura.wantSlug(doc, page, islands)
	_, current := asura.islandChapters(islands, page, want)
	if !current && doc.Find("div.scrollbar-thumb-themecolor").Length() == 0 {
		return nil, nil, "", Diagnose(body, ProblemNotSeriesPage, "no ChapterListReact island and no scrollbar-thumb-themecolor chapter list")
	}
	return doc, islands, want, nil
}

// asuraOwnIslands are the props of the islands about this Series.
func asuraOwnIslands(islands []astroIsland, want string) []map[string]any {
	var out []map[string]any
	if want == "" {
		return nil
	}
	for _, isl := range islands {
		props := isl.props()
		if slug := stringOf(firstOf(props, "seriesSlug", "series_slug")); slug != "" && asuraSlug(slug) == want {
			out = append(out, props)
		}
	}
	return out
}

func (asura asuraSite) title(body []byte, page *url.URL) (string, error) {
	doc, islands, want, err := asura.seriesIslands(body, page)
	if err != nil {
		return "", err
	}
	for _, props := range asuraOwnIslands(islands, want) {
		if t := titleOf(stringOf(props["title"])); t != "" {
			return t, nil
		}
	}
	return titleOf(metaContent(doc, "og:title")), nil
}

func (asura asuraSite) cover(body []byte, page *url.URL) (string, error) {
	doc, islands, want, err := asura.seriesIslands(body, page)
	if err != nil {
		return "", err
	}
	// This Series' island first (the address the page itself renders), then
	// the metadata tag, then the old structure's poster.
	var candidates []string
	for _, props := range asuraOwnIslands(islands, want) {
		candidates = append(candidates, stringOf(props["coverUrl"]))
	}
	candidates = append(candidates, metaContent(doc, "og:image"), doc.Find(`img[alt="poster"]`).First().AttrOr("src", ""))
	return coverURL(asura.baseURL(page), candidates...), nil
}

func (asura asuraSite) content(body []byte, page *url.URL) (Content, error) {
	doc, err := parseHTML(body, ProblemNotChapterPage)
	if err != nil {
		return Content{}, err
	}
	base := asura.baseURL(page)
	for _, isl := range astroIslands(doc) {
		if !isl.is("ChapterReader") {
			continue
		}
		props := isl.props()
		chapter := mapOf(props["chapter"])
		if boolOf(firstOf(props, "is_locked", "isLocked")) || boolOf(firstOf(chapter, "is_locked", "isLocked")) {
			return Content{}, problem(ProblemLocked, "asura marks the chapter locked (premium or early access)")
		}
		return asuraPages(listOf(props["pages"]), base)
	}
	if pages, ok := nextPages(doc); ok {
		return asuraPages(pages, base)
	}
	return Content{}, Diagnose(body, ProblemNotChapterPage, "no ChapterReader island and no Next.js pages data")
}

// asuraPages reads pages[] ({order, url}); a page that has tiles instead of
// a url is a locked chapter whose images need a token.
func asuraPages(pages []any, base *url.URL) (Content, error) {
	type page struct {
		order float64
		url   string
	}
	var out []page
	ordered := true
	for i, v := range pages {
		p := mapOf(v)
		raw := stringOf(p["url"])
		if raw == "" {
			if p["tiles"] != nil {
				return Content{}, problem(ProblemLocked, "asura serves this chapter as tiles behind a token")
			}
			continue
		}
		u, ok := absURL(base, raw)
		if !ok {
			continue
		}
		o := numberOf(p["order"])
		if o == nil {
			ordered = false
			o = new(float64(i))
		}
		out = append(out, page{order: *o, url: u})
	}
	if len(out) == 0 {
		return Content{}, problem(ProblemNotChapterPage, "the chapter reader lists no page image")
	}
	if ordered {
		sort.SliceStable(out, func(i, j int) bool { return out[i].order < out[j].order })
	}
	urls := make([]string, len(out))
	for i, p := range out {
		urls[i] = p.url
	}
	return Content{Pages: urls}, nil
}

// nextPages reads the pages array the old Next.js reader streamed in
// self.__next_f.push([1, "<payload>"]) scripts.
func nextPages(doc *goquery.Document) ([]any, bool) {
	const prefix = "self.__next_f.push("
	var payload strings.Builder
	doc.Find("script").Each(func(_ int, s *goquery.Selection) {
		text := strings.TrimSpace(s.Text())
		if !strings.HasPrefix(text, prefix) {
			return
		}
		arg := strings.TrimSuffix(strings.TrimSuffix(text[len(prefix):], ";"), ")")
		var push []any
		if json.Unmarshal([]byte(arg), &push) != nil || len(push) != 2 {
			return
		}
		if s, ok := push[1].(string); ok {
			payload.WriteString(s)
		}
	})
	data := payload.String()
	// Only the first few occurrences are tried, so a body stuffed with the
	// marker cannot make the search quadratic.
	for range 4 {
		i := strings.Index(data, `"pages":[`)
		if i < 0 {
			return nil, false
		}
		data = data[i+len(`"pages":`):]
		var pages []any
		if json.NewDecoder(strings.NewReader(data)).Decode(&pages) == nil && len(pages) > 0 && stringOf(mapOf(pages[0])["url"]) != "" {
			return pages, true
		}
	}
	return nil, false
}
