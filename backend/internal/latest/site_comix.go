package latest

import (
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/PuerkitoBio/goquery"
)

// comix: manga; the series page embeds its state as JSON in
// <script id="initial-data">, whose "queries" map holds this Series under a
// key containing "detail", its chapters under one containing "chapters", and
// other Series under one containing "recommended", never read.

// comixSite is the comix entry: its answers are methods, so they reach the
// entry (its hosts, its URL shape) without a package variable.
type comixSite struct{ *Site }

func newComix() *Site {
	comix := comixSite{new(Site)}
	*comix.Site = Site{
		Name:  "comix",
		Kind:  Manga,
		Hosts: []string{"comix.to", "comix.ws"},
		// Peers go up to five requests a second; Cloudflare is in front, so
		// a background reader stays well below.
		Pace: 500 * time.Millisecond,
		SeriesPath: func(u *url.URL) (string, string, bool) {
			var buf [maxPathParts]string
			p, ok := pathParts(u, &buf)
			// /title/<hid>-<slug>[/<chapterId>-chapter-<n>]; the hid is stable
			// while the slug follows the title, so the key is the hid.
			if !ok || len(p) < 2 || len(p) > 3 || p[0] != "title" || !validSlug(p[1]) {
				return "", "", false
			}
			if len(p) == 3 && !strings.Contains(p[2], "-chapter-") {
				return "", "", false
			}
			hid, _, _ := strings.Cut(p[1], "-")
			for i := 0; i < len(hid); i++ {
				if !isAlnum(hid[i]) {
					return "", "", false
				}
			}
			return hid, "/title/" + p[1], true
		},
		Latest: comix.latest,
		Title: func(body []byte, page *url.URL) (string, error) {
			_, detail, _, err := comix.series(body, page)
			if err != nil {
				return "", err
			}
			return titleOf(stringOf(detail["title"])), nil
		},
		Cover:    comix.cover,
		Chapters: comix.chapters,
		Content:  comix.content,
	}
	return comix.Site
}

// comixState is the decoded initial-data blob of a page.
type comixState struct {
	queries map[string]any
}

func comixRead(body []byte, notPage string) (*goquery.Document, comixState, error) {
	doc, err := parseHTML(body, notPage)
	if err != nil {
		return nil, comixState{}, err
	}
	script := doc.Find("script#initial-data").First()
	if script.Length() == 0 {
		return nil, comixState{}, Diagnose(body, notPage, "no script#initial-data")
	}
	state := jsonObject(script.Text())
	queries := mapOf(state["queries"])
	if queries == nil {
		return nil, comixState{}, problem(notPage, "script#initial-data holds no queries map")
	}
	return doc, comixState{queries: queries}, nil
}

// unwrapData returns a query's payload: the value itself, or what it holds
// under "data" (react-query's dehydrated shape), at most two levels down.
func unwrapData(v any) any {
	for range 2 {
		m := mapOf(v)
		d, ok := m["data"]
		if m == nil || !ok || d == nil {
			return v
		}
		v = d
	}
	return v
}

// comixQuery is one entry of the queries map.
type comixQuery struct {
	key  string
	data any
}

// query returns the queries whose key contains part and none of not, in key
// order so the choice never depends on map order.
func (s comixState) query(part string, not ...string) []comixQuery {
	keys := make([]string, 0, len(s.queries))
	for k := range s.queries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []comixQuery
next:
	for _, k := range keys {
		if !strings.Contains(k, part) {
			continue
		}
		for _, n := range not {
			if strings.Contains(k, n) {
				continue next
			}
		}
		out = append(out, comixQuery{key: k, data: unwrapData(s.queries[k])})
	}
	return out
}

// detail is this Series' detail object: the one whose hid the page names,
// or the only one.
func (s comixState) detail(hid string) map[string]any {
	cands := s.query(`"detail"`, "recommended")
	if len(cands) == 0 {
		cands = s.query("detail", "recommended")
	}
	for _, c := range cands {
		m := mapOf(c.data)
		if m == nil {
			continue
		}
		if hid == "" && len(cands) == 1 || hid != "" && stringOf(m["hid"]) == hid {
			return m
		}
	}
	return nil
}

func (comix comixSite) hid(doc *goquery.Document, page *url.URL) string {
	_, hid, _ := SplitKey(comix.pageKey(page, doc))
	return hid
}

// seriesURL is the series page chapter URLs are built on.
func (comix comixSite) seriesURL(base *url.URL, page *url.URL, detail map[string]any) string {
	if page != nil {
		if ref, err := comix.ResolveOn(page.String()); err == nil {
			return ref.SeriesURL
		}
	}
	if u, ok := comix.siteURL(base, stringOf(detail["url"])); ok {
		if ref, err := comix.ResolveOn(u); err == nil {
			return ref.SeriesURL
		}
	}
	return ""
}

func (comix comixSite) series(body []byte, page *url.URL) (comixState, map[string]any, *url.URL, error) {
	doc, state, err := comixRead(body, ProblemNotSeriesPage)
	if err != nil {
		return comixState{}, nil, nil, err
	}
	hid := comix.hid(doc, page)
	detail := state.detail(hid)
	if detail == nil {
		return comixState{}, nil, nil, problem(ProblemNotSeriesPage, "initial-data holds no detail query for %q", hid)
	}
	return state, detail, comix.baseURL(page), nil
}

func (comix comixSite) chapters(body []byte, page *url.URL) ([]Chapter, error) {
	state, detail, base, err := comix.series(body, page)
	if err != nil {
		return nil, err
	}
	hid := stringOf(detail["hid"])
	series := comix.seriesURL(base, page, detail)
	type candidate struct {
		c   Chapter
		age float64
		pos int
	}
	best := map[float64]candidate{}
	var unnumbered []Chapter
	pos := 0
	for _, q := range state.query("chapters", "recommended") {
		if hid != "" && !strings.Contains(q.key, hid) {
			// The chapters of another Series.
			continue
		}
		items := listOf(q.data)
		if items == nil {
			items = listOf(firstOf(mapOf(q.data), "items", "chapters", "list"))
		}
		for _, v := range items {
			it := mapOf(v)
			if it == nil {
				continue
			}
			link := comix.chapterURL(base, series, hid, it)
			if link == "" {
				continue
			}
			n := numberOf(firstOf(it, "number", "chapter", "chap"))
			name := collapseSpace(stringOf(firstOf(it, "name", "title")))
			label := name
			if _, ok := ParseChapterNumber(name); !ok && n != nil {
				label = "Chapter " + formatNumber(*n)
				if name != "" {
					label += " - " + name
				}
			}
			c := chapterOf(label, n, link, boolOf(firstOf(it, "isLocked", "is_locked", "locked")))
			pos++
			if c.Number == nil {
				unnumbered = append(unnumbered, c)
				continue
			}
			// The same number once per scanlation group: keep the newest
			// upload, and of equals the one listed first (newest first).
			cand := candidate{c: c, age: comixAge(firstOf(it, "createdAt", "created_at", "updatedAt", "date")), pos: pos}
			if old, ok := best[*c.Number]; !ok || cand.age < old.age {
				best[*c.Number] = cand
			}
		}
	}
	out := make([]Chapter, 0, len(best)+len(unnumbered))
	for _, cand := range best {
		out = append(out, cand.c)
	}
	sort.Slice(out, func(i, j int) bool { return *out[i].Number < *out[j].Number })
	// Chapters without a number cannot be placed; they stay out of the list
	// rather than be put somewhere wrong, unless they are all there is.
	if len(out) == 0 {
		out = reversed(unnumbered)
	}
	return tidyChapters(out), nil
}

// chapterURL is a chapter's page: its own url when it gives one on
// this Series, else /title/<hid>-<slug>/<chapterId>-chapter-<n>.
func (comix comixSite) chapterURL(base *url.URL, series, hid string, it map[string]any) string {
	if raw := stringOf(firstOf(it, "url", "href", "link")); raw != "" {
		if u, ok := comix.siteURL(base, raw); ok && (hid == "" || comix.keyOf(u) == "comix:"+hid) {
			return u
		}
		return ""
	}
	id := stringOf(firstOf(it, "chapterId", "chapter_id", "id"))
	n := numberOf(firstOf(it, "number", "chapter"))
	if series == "" || !validSlug(id) || n == nil {
		return ""
	}
	return series + "/" + id + "-chapter-" + formatNumber(*n)
}

// comixAge reads how long ago a chapter was uploaded, in seconds, from a
// relative date ("3 days ago"), an RFC 3339 time or a Unix time. Unknown is
// infinitely old, so a dated duplicate wins.
func comixAge(v any) float64 {
	switch x := v.(type) {
	case float64:
		if x > 1e12 {
			x /= 1000
		}
		return time.Since(time.Unix(int64(x), 0)).Seconds()
	case string:
		if t, err := time.Parse(time.RFC3339, x); err == nil {
			return time.Since(t).Seconds()
		}
		return relativeAge(x)
	}
	return math.Inf(1)
}

var ageUnits = map[string]float64{
	"second": 1, "sec": 1, "minute": 60, "min": 60, "hour": 3600, "hr": 3600, "day": 86400,
	"week": 7 * 86400, "month": 30 * 86400, "year": 365 * 86400,
}

// relativeAge reads "3 days ago", "an hour ago", "just now", "yesterday".
func relativeAge(s string) float64 {
	f := strings.Fields(strings.ToLower(s))
	switch {
	case len(f) == 0:
		return math.Inf(1)
	case f[0] == "just" || f[0] == "now":
		return 0
	case f[0] == "yesterday":
		return 86400
	case len(f) < 2:
		return math.Inf(1)
	}
	n, err := strconv.ParseFloat(f[0], 64)
	if f[0] == "a" || f[0] == "an" {
		n, err = 1, nil
	}
	unit, ok := ageUnits[strings.TrimSuffix(f[1], "s")]
	if err != nil || !ok || n < 0 {
		return math.Inf(1)
	}
	return n * unit
}

func (comix comixSite) latest(body []byte, page *url.URL) (Chapter, error) {
	chapters, err := comix.chapters(body, page)
	if err != nil || len(chapters) > 0 {
		return latestOf(chapters, err)
	}
	// No chapter list in the blob: the detail's own latest chapter link,
	// which the Site renders as "Chapter N".
	_, detail, base, err := comix.series(body, page)
	if err != nil {
		return Chapter{}, err
	}
	link, ok := comix.siteURL(base, stringOf(firstOf(detail, "latestChapterUrl", "latest_chapter_url")))
	if !ok || comix.keyOf(link) != "comix:"+stringOf(detail["hid"]) {
		return Chapter{}, problem(ProblemNoChapters, "initial-data lists no chapter")
	}
	last := link[strings.LastIndexByte(link, '/')+1:]
	_, num, _ := strings.Cut(last, "-chapter-")
	n := numberOf(num)
	if n == nil {
		return Chapter{}, problem(ProblemNoChapters, "initial-data lists no chapter")
	}
	return chapterOf("Chapter "+formatNumber(*n), n, link, false), nil
}

func (comix comixSite) cover(body []byte, page *url.URL) (string, error) {
	_, detail, base, err := comix.series(body, page)
	if err != nil {
		return "", err
	}
	poster := mapOf(detail["poster"])
	// medium (about 36 KB) is the smaller published rendition fit for a
	// card; large is full size; small is too small for one.
	return coverURL(base, stringOf(poster["medium"]), stringOf(poster["large"]), stringOf(poster["small"]), stringOf(detail["poster"])), nil
}

func (comix comixSite) content(body []byte, page *url.URL) (Content, error) {
	_, state, err := comixRead(body, ProblemNotChapterPage)
	if err != nil {
		return Content{}, err
	}
	base := comix.baseURL(page)
	for _, q := range state.query("chapter", "chapters", "recommended") {
		ch := mapOf(q.data)
		if inner := mapOf(ch["chapter"]); inner != nil {
			ch = inner
		}
		if ch == nil {
			continue
		}
		images := firstOf(ch, "images", "pages")
		if images == nil {
			continue
		}
		if boolOf(firstOf(ch, "scrambled", "isScrambled", "encrypted")) {
			return Content{}, problem(ProblemScrambled, "comix serves this chapter's images scrambled")
		}
		if _, enc := images.(string); enc {
			return Content{}, problem(ProblemScrambled, "comix serves this chapter's image list encrypted")
		}
		var pages []string
		for _, v := range listOf(images) {
			raw := stringOf(v)
			if m := mapOf(v); m != nil {
				if boolOf(firstOf(m, "scrambled", "isScrambled")) {
					return Content{}, problem(ProblemScrambled, "comix serves this chapter's images scrambled")
				}
				raw = stringOf(firstOf(m, "url", "src"))
			}
			if u, ok := absURL(base, raw); ok {
				pages = append(pages, u)
			}
		}
		if len(pages) == 0 {
			return Content{}, problem(ProblemScrambled, "comix lists this chapter's images without clear URLs")
		}
		return Content{Pages: pages}, nil
	}
	return Content{}, problem(ProblemNotChapterPage, "initial-data holds no chapter images")
}
