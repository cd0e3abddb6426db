package latest

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
)

// lightnovelworld: novel; the series page shows only the newest chapters,
// the full list is paginated on its own pages (/novel/<slug>/chapters/page-<n>,
// or /chapters?page=<n> on .co), which its ChapterList override walks.

// lnwMaxListPages bounds the chapter list walk (about 100 chapters a page).
const lnwMaxListPages = 500

// lightnovelworldSite is the lightnovelworld entry: its answers are methods, so they reach the
// entry (its hosts, its URL shape) without a package variable.
type lightnovelworldSite struct{ *Site }

func newLightnovelworld() *Site {
	lightnovelworld := lightnovelworldSite{new(Site)}
	*lightnovelworld.Site = Site{
		Name:  "lightnovelworld",
		Kind:  Novel,
		Hosts: []string{"lightnovelworld.com", "lightnovelworld.co"},
		Pace:  DefaultPace,
		SeriesPath: func(u *url.URL) (string, string, bool) {
			var buf [maxPathParts]string
			p, ok := pathParts(u, &buf)
			if !ok || len(p) < 2 || p[0] != "novel" || !validSlug(p[1]) {
				return "", "", false
			}
			// /novel/<slug>[/chapter-<n> | /chapters[/page-<n>]]
			switch {
			case len(p) == 2:
			case len(p) == 3 && (strings.HasPrefix(p[2], "chapter-") || p[2] == "chapters"):
			case len(p) == 4 && p[2] == "chapters" && strings.HasPrefix(p[3], "page-"):
			default:
				return "", "", false
			}
			return p[1], "/novel/" + p[1], true
		},
		Latest: func(body []byte, page *url.URL) (Chapter, error) {
			return latestOf(lightnovelworld.chapters(body, page))
		},
		Title: func(body []byte, _ *url.URL) (string, error) {
			doc, err := lnwSeriesDoc(body)
			if err != nil {
				return "", err
			}
			return titleOf(doc.Find("h1.novel-title").First().Text()), nil
		},
		Cover:       lightnovelworld.cover,
		Chapters:    lightnovelworld.chapters,
		Content:     lnwContent,
		ChapterList: lightnovelworld.chapterList,
	}
	return lightnovelworld.Site
}

func lnwSeriesDoc(body []byte) (*goquery.Document, error) {
	doc, err := parseHTML(body, ProblemNotSeriesPage)
	if err != nil {
		return nil, err
	}
	if doc.Find("h1.novel-title").Length() == 0 {
		return nil, Diagnose(body, ProblemNotSeriesPage, "no h1.novel-title")
	}
	return doc, nil
}

// chapters reads the newest chapters the series page shows, oldest first.
func (lightnovelworld lightnovelworldSite) chapters(body []byte, page *url.URL) ([]Chapter, error) {
	doc, err := lnwSeriesDoc(body)
	if err != nil {
		return nil, err
	}
	return lightnovelworld.list(doc, page), nil
}

// list reads ul.chapter-list items that belong to the page's Series. When
// the page names no Series, only the first list is read: a sidebar's list
// is another Series'.
func (lightnovelworld lightnovelworldSite) list(doc *goquery.Document, page *url.URL) []Chapter {
	key := lightnovelworld.pageKey(page, doc)
	base := lightnovelworld.baseURL(page)
	lists := doc.Find("ul.chapter-list")
	if key == "" {
		lists = lists.First()
	}
	var out []Chapter
	lists.Find("li").Each(func(_ int, li *goquery.Selection) {
		a := li.Find("a[href]").First()
		link, ok := lightnovelworld.siteURL(base, a.AttrOr("href", ""))
		if !ok {
			return
		}
		k := lightnovelworld.keyOf(link)
		if k == "" || key != "" && k != key || !strings.Contains(link, "/chapter-") {
			return
		}
		n := numberOf(collapseSpace(li.Find(".chapter-no").First().Text()))
		label := collapseSpace(li.Find(".chapter-title").First().Text())
		if label == "" {
			label = collapseSpace(a.AttrOr("title", ""))
		}
		if label == "" && n != nil {
			label = "Chapter " + formatNumber(*n)
		}
		out = append(out, chapterOf(label, n, link, false))
	})
	// The series page lists newest first; list pages oldest first. Numbers,
	// when every chapter has one, settle the order either way.
	if len(out) > 1 && out[0].Number != nil && out[len(out)-1].Number != nil && *out[0].Number > *out[len(out)-1].Number {
		reversed(out)
	}
	sortByNumber(out)
	return tidyChapters(out)
}

func (lightnovelworld lightnovelworldSite) cover(body []byte, page *url.URL) (string, error) {
	doc, err := lnwSeriesDoc(body)
	if err != nil {
		return "", err
	}
	// The placeholder src is a data: URL, which coverURL refuses.
	img := doc.Find("figure.cover > img").First()
	return coverURL(lightnovelworld.baseURL(page), metaContent(doc, "og:image"), img.AttrOr("data-src", ""), img.AttrOr("src", "")), nil
}

// lnwListPageURL is the n-th page of a Series' chapter list on its host.
func lnwListPageURL(ref Ref, n int) string {
	if strings.HasSuffix(strings.TrimPrefix(mustHost(ref.SeriesURL), "www."), ".co") {
		return ref.SeriesURL + "/chapters?page=" + strconv.Itoa(n)
	}
	return ref.SeriesURL + "/chapters/page-" + strconv.Itoa(n)
}

func mustHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// chapterList walks the chapter list pages until one adds nothing new or
// links no next page.
func (lightnovelworld lightnovelworldSite) chapterList(ctx context.Context, fetch PageFetcher, seriesURL string, seriesBody []byte) ([]Chapter, error) {
	ref, err := lightnovelworld.ResolveOn(seriesURL)
	if err != nil {
		return nil, fmt.Errorf("lightnovelworld chapter list of %s: %w", seriesURL, err)
	}
	if _, err := lnwSeriesDoc(seriesBody); err != nil {
		return nil, err
	}
	var all []Chapter
	seen := map[string]bool{}
	for n := 1; n <= lnwMaxListPages; n++ {
		pageURL := lnwListPageURL(ref, n)
		body, err := fetch.FetchPage(ctx, pageURL)
		if err != nil {
			return nil, fmt.Errorf("lightnovelworld chapter list page %s: %w", pageURL, err)
		}
		doc, err := parseHTML(body, ProblemNotSeriesPage)
		if err != nil {
			return nil, err
		}
		pu, _ := url.Parse(pageURL)
		chapters := lightnovelworld.list(doc, pu)
		if n == 1 && len(chapters) == 0 {
			return nil, Diagnose(body, ProblemNoChapters, "the first chapter list page lists no chapter")
		}
		added := 0
		for _, c := range chapters {
			if !seen[c.URL] {
				seen[c.URL] = true
				all = append(all, c)
				added++
			}
		}
		if added == 0 || !linksTo(doc, pu, lnwListPageURL(ref, n+1)) {
			break
		}
	}
	sortByNumber(all)
	return all, nil
}

// linksTo reports whether the document links to target.
func linksTo(doc *goquery.Document, base *url.URL, target string) bool {
	found := false
	doc.Find("a[href]").EachWithBreak(func(_ int, a *goquery.Selection) bool {
		if u, ok := absURL(base, a.AttrOr("href", "")); ok && strings.TrimPrefix(u, "https://www.") == strings.TrimPrefix(target, "https://www.") {
			found = true
		}
		return !found
	})
	return found
}

var lnwDrop = []string{"adsbox", "ad-container", "OUTBRAIN", "noveltopads", "chadsticky", "ads", "ad", "adsbygoogle"}

// lnwContent reads the chapter text, cut at the comment thread and cleaned
// of ad blocks.
func lnwContent(body []byte, page *url.URL) (Content, error) {
	doc, err := parseHTML(body, ProblemNotChapterPage)
	if err != nil {
		return Content{}, err
	}
	box := doc.Find("#chapter-container").First()
	if box.Length() == 0 {
		box = doc.Find(".chapter-content").First()
	}
	if box.Length() == 0 {
		return Content{}, Diagnose(body, ProblemNotChapterPage, "no #chapter-container or .chapter-content")
	}
	text := paragraphText(box.Nodes[0], textOptions{
		drop: func(n *html.Node) bool { return hasClass(n, lnwDrop...) },
		stop: isCommentThread,
	})
	if text == "" {
		return Content{}, problem(ProblemNotChapterPage, "the chapter container holds no text")
	}
	return Content{Text: text}, nil
}

// isCommentThread reports the start of a comment thread.
func isCommentThread(n *html.Node) bool {
	if id, ok := attr(n, "id"); ok {
		switch strings.ToLower(id) {
		case "comments", "comment-container", "disqus_thread", "comment-list":
			return true
		}
	}
	return hasClass(n, "comment-list", "comments", "comment-wrap", "comment-area", "chapter-comments", "comment-container")
}
