package latest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"github.com/chromedp/chromedp"
	"golang.org/x/net/html"
)

// novelfull: novel; a browser Site that may fall back to the plain fetcher.
// The series page shows the newest chapters in its "l-chapters" block and
// the list 50 to a page; the full list comes from its chapter-option
// endpoint, or failing that from the pages, through the ChapterList override.

// novelfullMaxListPages bounds the paginated walk (50 chapters a page).
const novelfullMaxListPages = 400

// novelfullSite is the novelfull entry: its answers are methods, so they reach the
// entry (its hosts, its URL shape) without a package variable.
type novelfullSite struct{ *Site }

func newNovelfull() *Site {
	novelfull := novelfullSite{new(Site)}
	*novelfull.Site = Site{
		Name:  "novelfull",
		Kind:  Novel,
		Hosts: []string{"novelfull.com", "novelfull.net"},
		Pace:  DefaultPace,
		SeriesPath: func(u *url.URL) (string, string, bool) {
			var buf [maxPathParts]string
			p, ok := pathParts(u, &buf)
			if !ok {
				return "", "", false
			}
			// /<slug>.html for the series, /<slug>/chapter-<n>[-title].html for a chapter.
			switch {
			case len(p) == 1 && strings.HasSuffix(p[0], ".html"):
				slug := strings.TrimSuffix(p[0], ".html")
				if !validSlug(slug) || novelfullPages[slug] {
					return "", "", false
				}
				return slug, "/" + slug + ".html", true
			case len(p) == 2 && strings.HasPrefix(p[1], "chapter-") && strings.HasSuffix(p[1], ".html") && validSlug(p[0]) && !novelfullPages[p[0]]:
				return p[0], "/" + p[0] + ".html", true
			}
			return "", "", false
		},
		Latest: novelfull.latest,
		Title: func(body []byte, _ *url.URL) (string, error) {
			doc, err := novelfullSeriesDoc(body)
			if err != nil {
				return "", err
			}
			return titleOf(doc.Find("h3.title").First().Text()), nil
		},
		Cover:       novelfull.cover,
		Chapters:    novelfull.chapters,
		Content:     novelfullContent,
		ChapterList: novelfull.chapterList,
		Listing:     &Listing{Path: "/latest-release-novel", Read: novelfull.listing},
		Browser: &Browser{
			Read:     novelfull.read,
			Arrived:  func(payload string) bool { return strings.TrimSpace(payload) != "" && !isChallenge([]byte(payload)) },
			Fallback: true,
		},
	}
	return novelfull.Site
}

// novelfullPages are root-level pages of novelfull that are not Series.
var novelfullPages = map[string]bool{
	"index": true, "latest-release-novel": true, "hot-novel": true, "completed-novel": true,
	"most-popular": true, "search": true, "genre": true, "author": true, "ajax": true,
}

// read stores the document of the tab, after pinning its location.
func (novelfull novelfullSite) read(pageURL string, payload *string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		u, err := parseSiteURL(pageURL)
		if err != nil || !novelfull.HasHost(u.Host) {
			return chromedp.Void{}, fmt.Errorf("novelfull read %q: %w", pageURL, ErrUnknownSite)
		}
		out, err := chromedp.Evaluate[string](pinJS(novelfull.Hosts)+`document.documentElement.outerHTML`)(ctx, t)
		if err != nil {
			return chromedp.Void{}, fmt.Errorf("novelfull read %s: %w", pageURL, err)
		}
		*payload = out
		return chromedp.Void{}, nil
	}
}

func novelfullSeriesDoc(body []byte) (*goquery.Document, error) {
	doc, err := parseHTML(body, ProblemNotSeriesPage)
	if err != nil {
		return nil, err
	}
	if doc.Find("#list-chapter").Length() == 0 || doc.Find("h3.title").Length() == 0 {
		return nil, Diagnose(body, ProblemNotSeriesPage, "no #list-chapter with h3.title")
	}
	return doc, nil
}

// links reads chapter links under sel that belong to the page's
// Series, in page order.
func (novelfull novelfullSite) links(sel *goquery.Selection, base *url.URL, key string) []Chapter {
	var out []Chapter
	sel.Each(func(_ int, a *goquery.Selection) {
		link, ok := novelfull.siteURL(base, a.AttrOr("href", a.AttrOr("value", "")))
		if !ok {
			return
		}
		if k := novelfull.keyOf(link); k == "" || key != "" && k != key || !strings.Contains(link, "/chapter-") {
			return
		}
		label := collapseSpace(a.AttrOr("title", ""))
		if label == "" {
			label = collapseSpace(a.Text())
		}
		out = append(out, chapterOf(label, nil, link, false))
	})
	return tidyChapters(out)
}

// chapters reads the page of the chapter list this body shows,
// oldest first.
func (novelfull novelfullSite) chapters(body []byte, page *url.URL) ([]Chapter, error) {
	doc, err := novelfullSeriesDoc(body)
	if err != nil {
		return nil, err
	}
	return novelfull.links(doc.Find("#list-chapter ul.list-chapter li a"), novelfull.baseURL(page), novelfull.pageKey(page, doc)), nil
}

// novelfullLastPage is the number of chapter list pages the pagination
// names (its data-page is 0-based; the href's page parameter is not), 1
// when the list has no pagination.
func novelfullLastPage(doc *goquery.Document, base *url.URL) int {
	last := doc.Find("#list-chapter .pagination .last a").First()
	if last.Length() == 0 {
		return 1
	}
	if u, ok := absURL(base, last.AttrOr("href", "")); ok {
		if pu, err := url.Parse(u); err == nil {
			if n, err := strconv.Atoi(pu.Query().Get("page")); err == nil && n >= 1 {
				return n
			}
		}
	}
	if n, err := strconv.Atoi(last.AttrOr("data-page", "")); err == nil && n >= 0 {
		return n + 1
	}
	return 1
}

// novelfullCurrentPage is the page of the list this body shows.
func novelfullCurrentPage(doc *goquery.Document) int {
	if n, err := strconv.Atoi(collapseSpace(doc.Find("#list-chapter .pagination li.active").First().Text())); err == nil && n >= 1 {
		return n
	}
	return 1
}

func (novelfull novelfullSite) latest(body []byte, page *url.URL) (Chapter, error) {
	doc, err := novelfullSeriesDoc(body)
	if err != nil {
		return Chapter{}, err
	}
	base := novelfull.baseURL(page)
	key := novelfull.pageKey(page, doc)
	// The "l-chapters" block lists the newest chapters, newest first.
	if latest := novelfull.links(doc.Find("ul.l-chapters li a"), base, key); len(latest) > 0 {
		return latest[0], nil
	}
	// Without it, the list answers only when this is its last page.
	list := novelfull.links(doc.Find("#list-chapter ul.list-chapter li a"), base, key)
	if last := novelfullLastPage(doc, base); novelfullCurrentPage(doc) < last {
		return Chapter{}, problem(ProblemNoChapters, "no latest-chapters block, and the chapter list continues to page %d", last)
	}
	return latestOf(list, nil)
}

func (novelfull novelfullSite) cover(body []byte, page *url.URL) (string, error) {
	doc, err := novelfullSeriesDoc(body)
	if err != nil {
		return "", err
	}
	return coverURL(novelfull.baseURL(page), metaContent(doc, "image"), doc.Find("div.book > img").First().AttrOr("src", "")), nil
}

// chapterList asks the chapter-option endpoint for the whole list,
// and walks the list pages when it does not answer.
func (novelfull novelfullSite) chapterList(ctx context.Context, fetch PageFetcher, seriesURL string, seriesBody []byte) ([]Chapter, error) {
	ref, err := novelfull.ResolveOn(seriesURL)
	if err != nil {
		return nil, fmt.Errorf("novelfull chapter list of %s: %w", seriesURL, err)
	}
	doc, err := novelfullSeriesDoc(seriesBody)
	if err != nil {
		return nil, err
	}
	series, _ := url.Parse(ref.SeriesURL)
	id := strings.TrimSpace(doc.Find("#rating[data-novel-id]").First().AttrOr("data-novel-id", ""))
	var ajaxErr error
	if _, err := strconv.ParseUint(id, 10, 64); err == nil {
		for _, path := range []string{"/ajax-chapter-option?novelId=", "/ajax/chapter-option?novelId="} {
			endpoint := "https://" + series.Host + path + id
			body, err := fetch.FetchPage(ctx, endpoint)
			if err == nil {
				var chapters []Chapter
				if chapters, err = novelfull.options(body, series, ref.Key); err == nil {
					return chapters, nil
				}
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			ajaxErr = errors.Join(ajaxErr, fmt.Errorf("novelfull chapter options %s: %w", endpoint, err))
		}
	}
	chapters, err := novelfull.paged(ctx, fetch, ref, series, doc)
	if err != nil {
		return nil, errors.Join(ajaxErr, err)
	}
	return chapters, nil
}

// options reads the endpoint's <select>: option values are chapter
// paths, their text the chapter names, oldest first.
func (novelfull novelfullSite) options(body []byte, base *url.URL, key string) ([]Chapter, error) {
	doc, err := parseHTML(body, ProblemNoChapters)
	if err != nil {
		return nil, err
	}
	chapters := novelfull.links(doc.Find("select option[value]"), base, key)
	if len(chapters) == 0 {
		return nil, Diagnose(body, ProblemNoChapters, "the chapter options list no chapter")
	}
	return chapters, nil
}

// paged walks ?page=N&per-page=50 from the series body's page count.
func (novelfull novelfullSite) paged(ctx context.Context, fetch PageFetcher, ref Ref, series *url.URL, first *goquery.Document) ([]Chapter, error) {
	last := min(novelfullLastPage(first, series), novelfullMaxListPages)
	var all []Chapter
	seen := map[string]bool{}
	for n := 1; n <= last; n++ {
		pageURL := ref.SeriesURL + "?page=" + strconv.Itoa(n) + "&per-page=50"
		body, err := fetch.FetchPage(ctx, pageURL)
		if err != nil {
			return nil, fmt.Errorf("novelfull chapter list page %s: %w", pageURL, err)
		}
		chapters, err := novelfull.chapters(body, series)
		if err != nil {
			return nil, fmt.Errorf("novelfull chapter list page %s: %w", pageURL, err)
		}
		for _, c := range chapters {
			if !seen[c.URL] {
				seen[c.URL] = true
				all = append(all, c)
			}
		}
	}
	if len(all) == 0 {
		return nil, problem(ProblemNoChapters, "the chapter list pages list no chapter")
	}
	return all, nil
}

// novelfullContent reads the chapter text from #chapter-content, without
// its ad blocks, notices and proxied images.
func novelfullContent(body []byte, page *url.URL) (Content, error) {
	doc, err := parseHTML(body, ProblemNotChapterPage)
	if err != nil {
		return Content{}, err
	}
	box := doc.Find("#chapter-content").First()
	if box.Length() == 0 {
		return Content{}, Diagnose(body, ProblemNotChapterPage, "no #chapter-content")
	}
	text := paragraphText(box.Nodes[0], textOptions{
		drop: func(n *html.Node) bool {
			if a, ok := attr(n, "align"); ok && strings.EqualFold(a, "left") && n.Data == "div" {
				return true
			}
			return hasClass(n, "ads", "ads-holder", "adsbygoogle")
		},
		stop: isCommentThread,
	})
	if text == "" {
		return Content{}, problem(ProblemNotChapterPage, "#chapter-content holds no text")
	}
	return Content{Text: text}, nil
}
