package latest

import (
	"bytes"
	"encoding/xml"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
)

// royalroad: novel; server-rendered fiction pages whose chapters table lists
// every chapter in the author's order, and a syndication feed of the newest
// (/fiction/syndication/<id>). Royal Road gives no chapter numbers: a
// chapter's number is the one its title gives, and the table's order orders
// them (docs/adr/0022).

// royalroadSite is the royalroad entry: its answers are methods, so they
// reach the entry (its hosts, its URL shape) without a package variable.
type royalroadSite struct{ *Site }

func newRoyalroad() *Site {
	rr := royalroadSite{new(Site)}
	*rr.Site = Site{
		Name:  "royalroad",
		Kind:  Novel,
		Hosts: []string{"royalroad.com"},
		// Royal Road publishes no rate limit; a page every two seconds is a
		// polite background reader of a site that serves people first.
		Pace:       DefaultPace,
		SeriesPath: rr.seriesPath,
		NoSeries:   rr.noSeries,
		Title:      rr.title,
		Latest:     func(b []byte, p *url.URL) (Chapter, error) { return latestOf(rr.chapters(b, p)) },
		Cover:      rr.cover,
		Chapters:   rr.chapters,
		Content:    rr.content,
		PollURL:    rr.pollURL,
		Listing:    &Listing{Path: "/fictions/latest-updates", Read: rr.listing},
	}
	return rr.Site
}

// pollURL is the fiction's syndication feed: a few kilobytes where the
// fiction page is a few hundred, read once the Series has its Cover.
func (rr royalroadSite) pollURL(seriesURL string) (string, bool) {
	ref, err := rr.ResolveOn(seriesURL)
	if err != nil {
		return "", false
	}
	_, id, _ := SplitKey(ref.Key)
	return "https://www." + rr.Hosts[0] + "/fiction/syndication/" + id, true
}

// chapterURL is a chapter's address in one form whoever lists it:
// /fiction/<id>/<slug>/chapter/<cid>, without the chapter's own slug (which
// follows its title, and which the feed's short links lack), so the table
// and the feed name a chapter alike. fiction is the fiction's path.
func (rr royalroadSite) chapterURL(base *url.URL, ref, fiction string) (string, bool) {
	link, ok := rr.siteURL(base, ref)
	if !ok {
		return "", false
	}
	u, err := url.Parse(link)
	if err != nil {
		return "", false
	}
	var buf [maxPathParts]string
	p, ok := pathParts(u, &buf)
	var cid string
	switch {
	case !ok:
		return "", false
	case len(p) >= 5 && p[0] == "fiction" && isDigits(p[1]) && validSlug(p[2]) && p[3] == "chapter" && isDigits(p[4]):
		fiction, cid = "/fiction/"+p[1]+"/"+p[2], p[4]
	case len(p) == 3 && p[0] == "fiction" && p[1] == "chapter" && isDigits(p[2]) && fiction != "":
		cid = p[2]
	default:
		return "", false
	}
	return "https://" + u.Host + fiction + "/chapter/" + cid, true
}

func isDigits(s string) bool {
	if s == "" || len(s) > 12 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// seriesPath: /fiction/<id>[/<slug>[/chapter/<cid>[/<slug>]]] and the feed
// /fiction/syndication/<id>; the series page is /fiction/<id>/<slug>, or
// /fiction/<id> where the URL names no slug (Royal Road redirects it).
func (rr royalroadSite) seriesPath(u *url.URL) (string, string, bool) {
	var buf [maxPathParts]string
	p, ok := pathParts(u, &buf)
	if !ok || len(p) < 2 || p[0] != "fiction" {
		return "", "", false
	}
	if p[1] == "syndication" {
		if len(p) == 3 && isDigits(p[2]) {
			return p[2], "/fiction/" + p[2], true
		}
		return "", "", false
	}
	if !isDigits(p[1]) {
		return "", "", false
	}
	switch {
	case len(p) == 2:
		return p[1], "/fiction/" + p[1], true
	case !validSlug(p[2]):
		return "", "", false
	case len(p) == 3, (len(p) == 5 || len(p) == 6) && p[3] == "chapter" && isDigits(p[4]):
		return p[1], "/fiction/" + p[1] + "/" + p[2], true
	}
	return "", "", false
}

func (rr royalroadSite) noSeries(u *url.URL) string {
	var buf [maxPathParts]string
	if p, ok := pathParts(u, &buf); ok && len(p) == 3 && p[0] == "fiction" && p[1] == "chapter" && isDigits(p[2]) {
		return "a short Royal Road chapter link names no fiction: give the fiction's URL or the chapter's long URL"
	}
	return ""
}

// isFeed reports a syndication feed body (RSS), as opposed to a page.
func isFeed(body []byte) bool {
	head := bytes.TrimSpace(body[:min(len(body), 512)])
	return bytes.HasPrefix(head, []byte("<?xml")) || bytes.HasPrefix(head, []byte("<rss"))
}

type rrFeed struct {
	Channel struct {
		Title string `xml:"title"`
		// Links: the channel's <link> and its atom:link, which the
		// decoder matches by local name alike.
		Links []string `xml:"link"`
		Items []struct {
			Title string `xml:"title"`
			Link  string `xml:"link"`
		} `xml:"item"`
	} `xml:"channel"`
}

// rrMaxFeedItems bounds what a feed is read for: Royal Road's lists the
// newest few.
const rrMaxFeedItems = 500

// feed reads a syndication feed: its title, and its items oldest first
// (the feed lists newest first), their short links as given.
func (rr royalroadSite) feed(body []byte, page *url.URL) (string, []Chapter, error) {
	var f rrFeed
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = false
	if err := dec.Decode(&f); err != nil {
		return "", nil, problem(ProblemNotSeriesPage, "the syndication feed is not RSS: %v", err)
	}
	want := ""
	if page != nil {
		want = rr.keyOf(page.String())
	}
	for _, l := range f.Channel.Links {
		if k := rr.keyOf(strings.TrimSpace(l)); want != "" && k != "" && k != want {
			return "", nil, problem(ProblemNotSeriesPage, "the feed is about %s, not %s", k, want)
		}
	}
	base := rr.baseURL(page)
	// The channel's link is the fiction page: its path makes the items'
	// short links long.
	fiction := ""
	for _, l := range f.Channel.Links {
		if u, err := url.Parse(strings.TrimSpace(l)); err == nil && rr.HasHost(u.Hostname()) {
			if _, path, ok := rr.seriesPath(&url.URL{Path: u.Path}); ok && strings.Count(path, "/") == 3 {
				fiction = path
				break
			}
		}
	}
	var out []Chapter
	for i, it := range f.Channel.Items {
		if i == rrMaxFeedItems {
			break
		}
		link, ok := rr.chapterURL(base, strings.TrimSpace(it.Link), fiction)
		if !ok {
			continue
		}
		out = append(out, chapterOf(it.Title, nil, link, false))
	}
	slices.Reverse(out)
	return titleOf(f.Channel.Title), orderedNumbers(tidyChapters(out)), nil
}

func (rr royalroadSite) seriesDoc(body []byte) (*goquery.Document, error) {
	doc, err := parseHTML(body, ProblemNotSeriesPage)
	if err != nil {
		return nil, err
	}
	if doc.Find(".fic-title h1").Length() == 0 && doc.Find("table#chapters").Length() == 0 {
		return nil, Diagnose(body, ProblemNotSeriesPage, "no .fic-title h1 nor table#chapters")
	}
	return doc, nil
}

func (rr royalroadSite) title(body []byte, page *url.URL) (string, error) {
	if isFeed(body) {
		t, _, err := rr.feed(body, page)
		return t, err
	}
	doc, err := rr.seriesDoc(body)
	if err != nil {
		return "", err
	}
	if t := titleOf(doc.Find(".fic-title h1").First().Text()); t != "" {
		return t, nil
	}
	return titleOf(metaContent(doc, "og:title")), nil
}

// chapters reads the chapters table in its order, which is the author's:
// no sort by the numbers titles carry (a "Book 2, Chapter 1" after
// "Chapter 50" stays after it). A feed gives its newest items.
func (rr royalroadSite) chapters(body []byte, page *url.URL) ([]Chapter, error) {
	if isFeed(body) {
		_, list, err := rr.feed(body, page)
		return list, err
	}
	doc, err := rr.seriesDoc(body)
	if err != nil {
		return nil, err
	}
	key := rr.pageKey(page, doc)
	base := rr.baseURL(page)
	var out []Chapter
	doc.Find("table#chapters").First().Find("tr.chapter-row").Each(func(_ int, tr *goquery.Selection) {
		a := tr.Find("td a[href]").First()
		link, ok := rr.chapterURL(base, a.AttrOr("href", tr.AttrOr("data-url", "")), "")
		if !ok {
			return
		}
		if k := rr.keyOf(link); k == "" || key != "" && k != key {
			return
		}
		out = append(out, chapterOf(a.Text(), nil, link, false))
	})
	return orderedNumbers(tidyChapters(out)), nil
}

// cover is the page's cover image (covers-large, the rendition the page
// shows), never Royal Road's no-cover placeholder.
func (rr royalroadSite) cover(body []byte, page *url.URL) (string, error) {
	if isFeed(body) {
		if _, _, err := rr.feed(body, page); err != nil {
			return "", err
		}
		return "", nil
	}
	doc, err := rr.seriesDoc(body)
	if err != nil {
		return "", err
	}
	img := doc.Find(".cover-art-container img").First().AttrOr("src", "")
	c := coverURL(rr.baseURL(page), img, metaContent(doc, "og:image"))
	if strings.Contains(c, "/nocover") {
		return "", nil
	}
	return c, nil
}

// rrDropClasses are blocks inside a chapter that are not its text.
var rrDropClasses = []string{"author-note-portlet", "author-note", "portlet", "nav-buttons"}

// content reads the chapter text without the author's notes and without
// the elements a <style> rule of the page hides: Royal Road marks the
// copied-text warnings it plants in a chapter with a random class hidden
// that way, and a faithful archive holds what a reader sees.
func (rr royalroadSite) content(body []byte, page *url.URL) (Content, error) {
	doc, err := parseHTML(body, ProblemNotChapterPage)
	if err != nil {
		return Content{}, err
	}
	box := doc.Find(".chapter-inner.chapter-content").First()
	if box.Length() == 0 {
		box = doc.Find(".chapter-content").First()
	}
	if box.Length() == 0 {
		return Content{}, Diagnose(body, ProblemNotChapterPage, "no .chapter-content")
	}
	hidden := hiddenClasses(doc)
	text := paragraphText(box.Nodes[0], textOptions{
		drop: func(n *html.Node) bool { return hasClass(n, rrDropClasses...) || hasClass(n, hidden...) },
		stop: isCommentThread,
	})
	if text == "" {
		return Content{}, problem(ProblemNotChapterPage, "the chapter holds no text")
	}
	return Content{Text: text}, nil
}

// maxStyleBytes bounds the style text read for hidden classes.
const maxStyleBytes = 256 << 10

var displayNone = regexp.MustCompile(`(?i)display\s*:\s*none`)

// hiddenClasses are the classes that top-level rules of the page's <style>
// elements hide with display: none. Rules inside an at-rule (@media) hide
// only sometimes and are not counted.
func hiddenClasses(doc *goquery.Document) []string {
	var css strings.Builder
	doc.Find("style").EachWithBreak(func(_ int, s *goquery.Selection) bool {
		css.WriteString(s.Text())
		css.WriteByte('\n')
		return css.Len() < maxStyleBytes
	})
	src := css.String()
	if len(src) > maxStyleBytes {
		src = src[:maxStyleBytes]
	}
	var out []string
	depth, start, sel := 0, 0, ""
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '{':
			if depth == 0 {
				sel = src[start:i]
				start = i + 1
			}
			depth++
		case '}':
			if depth == 0 {
				start = i + 1
				continue
			}
			depth--
			if depth == 0 {
				block := src[start:i]
				if !strings.Contains(block, "{") && !strings.HasPrefix(strings.TrimSpace(sel), "@") && displayNone.MatchString(block) {
					out = append(out, selectorClasses(sel)...)
				}
				start = i + 1
			}
		}
	}
	return out
}

// selectorClasses are the classes of a selector list's simple class
// selectors (".a, p.b"); a compound or descendant selector hides only in a
// context and is left out.
func selectorClasses(sel string) []string {
	var out []string
	for part := range strings.SplitSeq(sel, ",") {
		part = strings.TrimSpace(part)
		if strings.ContainsAny(part, " >+~:[") {
			continue
		}
		_, class, ok := strings.Cut(part, ".")
		if ok && class != "" && !strings.Contains(class, ".") && validSlug(class) {
			out = append(out, class)
		}
	}
	return out
}
