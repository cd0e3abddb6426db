package latest

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/PuerkitoBio/goquery"
)

// madara: the Madara / WP-Manga WordPress theme, manga and novels. The
// series page is /manga/<slug>/ (the prefix varies by install); chapters are
// /manga/<slug>/<chapter>/. The chapter list is either in the page
// (li.wp-manga-chapter inside .listing-chapters_wrap) or, on installs that
// load it by script, the answer to a POST to <series_url>ajax/chapters/ or to
// /wp-admin/admin-ajax.php with action=manga_get_chapters and the manga id
// the page names. The sidebar and the related-series block carry other
// Series' chapters and Covers, so every read is scoped to the main block.

type madaraSite struct {
	*Site
	o familyOptions
}

const (
	madaraMark    = "div.profile-manga, div.tab-summary, div.summary_image, div.post-title"
	madaraMissing = "no div.profile-manga (not a Madara series page)"
	// madaraList scopes the chapter list to the Series' own block.
	madaraList = "div.listing-chapters_wrap, div.page-content-listing.single-page, div#manga-chapters-holder"
)

func buildMadara(s *Site, o familyOptions) {
	m := madaraSite{Site: s, o: o}
	s.SeriesPath = familyPath(o.seriesPaths, true)
	s.Title = m.title
	s.Cover = m.cover
	s.Chapters = m.pageChapters
	s.Latest = func(body []byte, page *url.URL) (Chapter, error) { return latestOf(m.pageChapters(body, page)) }
	s.ChapterList = m.allChapters
	s.LatestOf = func(ctx context.Context, fetch PageFetcher, seriesURL string, body []byte) (Chapter, error) {
		return latestOf(m.allChapters(ctx, fetch, seriesURL, body))
	}
	s.Content = m.content
	s.Listing = &Listing{Path: "/", Read: m.listing}
}

func (m madaraSite) doc(body []byte) (*goquery.Document, error) {
	return themeDoc(body, ProblemNotSeriesPage, madaraMark, madaraMissing)
}

func (m madaraSite) title(body []byte, _ *url.URL) (string, error) {
	doc, err := m.doc(body)
	if err != nil {
		return "", err
	}
	h := doc.Find("div.post-title h1, div.post-title h3").First()
	// The theme puts badges (HOT, NEW) in spans inside the heading.
	if t := ownText(h); t != "" {
		return titleOf(t), nil
	}
	return titleOf(h.Text()), nil
}

func (m madaraSite) cover(body []byte, page *url.URL) (string, error) {
	doc, err := m.doc(body)
	if err != nil {
		return "", err
	}
	// Only the summary's own image: og:image on a Series without a Cover is
	// the site's default banner, and the sidebar's images are other Series'.
	img := doc.Find("div.summary_image img").First()
	return imageOf(m.baseURL(page), img), nil
}

// pageChapters reads the chapters the series page lists, oldest first; an
// empty list (no error) when the page loads them by ajax.
func (m madaraSite) pageChapters(body []byte, page *url.URL) ([]Chapter, error) {
	doc, err := m.doc(body)
	if err != nil {
		return nil, err
	}
	base := m.baseURL(page)
	return m.listed(doc.Find(madaraList).First(), base, m.pageKey(page, doc)), nil
}

// listed reads li.wp-manga-chapter entries under root, newest first in the
// theme, into oldest first. key, when known, keeps only links of that Series.
func (m madaraSite) listed(root *goquery.Selection, base *url.URL, key string) []Chapter {
	var out []Chapter
	root.Find("li.wp-manga-chapter").Each(func(_ int, li *goquery.Selection) {
		a := li.Find("a").First()
		link := m.chapterLink(base, a.AttrOr("href", ""))
		if link != "" && key != "" && m.keyOf(link) != key {
			return
		}
		label := ownText(a)
		if label == "" {
			label = collapseSpace(a.Text())
		}
		locked := lockedMark(li)
		if link == "" && !locked {
			return
		}
		out = append(out, chapterOf(label, nil, link, locked))
	})
	return tidyFamilyChapters(reversed(out))
}

// allChapters is the full list: the page's, or, when the page lists none
// (or the chapters option says so), the ajax answer, fetched through the
// caller's pinned, paced fetcher.
func (m madaraSite) allChapters(ctx context.Context, fetch PageFetcher, seriesURL string, body []byte) ([]Chapter, error) {
	page, err := url.Parse(seriesURL)
	if err != nil {
		return nil, fmt.Errorf("chapters of %s: %w", seriesURL, ErrBadURL)
	}
	doc, err := m.doc(body)
	if err != nil {
		return nil, err
	}
	base := m.baseURL(page)
	key := m.pageKey(page, doc)
	if m.o.chapters == ChaptersAuto || m.o.chapters == ChaptersPage {
		if inline := m.listed(doc.Find(madaraList).First(), base, key); len(inline) > 0 || m.o.chapters == ChaptersPage {
			return inline, nil
		}
	}
	if fetch == nil {
		return nil, problem(ProblemNoChapters, "the series page lists no chapter and loads them by ajax, which needs a second request")
	}
	listURL, form, err := m.ajaxRequest(doc, base, seriesURL)
	if err != nil {
		return nil, err
	}
	answer, err := fetch.PostForm(ctx, listURL, form)
	if err != nil {
		return nil, fmt.Errorf("madara chapter list of %s: %w", seriesURL, err)
	}
	list, err := parseHTML(answer, ProblemNoChapters)
	if err != nil {
		return nil, err
	}
	chapters := m.listed(list.Selection, base, key)
	if len(chapters) == 0 && list.Find("li.wp-manga-chapter").Length() == 0 {
		return nil, Diagnose(answer, ProblemNoChapters, "the ajax chapter list holds no li.wp-manga-chapter")
	}
	return chapters, nil
}

// madaraIDRe finds the manga id in the theme's script data.
var madaraIDRe = regexp.MustCompile(`"manga_id"\s*:\s*"?(\d{1,12})`)

// ajaxRequest is where the chapter list is asked for: the newer endpoint
// under the series URL (an empty POST), or admin-ajax.php with the manga id.
func (m madaraSite) ajaxRequest(doc *goquery.Document, base *url.URL, seriesURL string) (string, url.Values, error) {
	if m.o.chapters != ChaptersAdminAjax {
		return strings.TrimRight(seriesURL, "/") + "/ajax/chapters/", url.Values{}, nil
	}
	id := strings.TrimSpace(doc.Find("div#manga-chapters-holder").AttrOr("data-id", ""))
	if id == "" {
		id = strings.TrimSpace(doc.Find("input.rating-post-id").AttrOr("value", ""))
	}
	if id == "" {
		if sm := madaraIDRe.FindStringSubmatch(doc.Find("script#wp-manga-js-extra").Text()); sm != nil {
			id = sm[1]
		}
	}
	for i := 0; i < len(id); i++ {
		if id[i] < '0' || id[i] > '9' {
			id = ""
			break
		}
	}
	if id == "" {
		return "", nil, problem(ProblemNoChapters, "the series page names no manga id for admin-ajax.php")
	}
	u := url.URL{Scheme: "https", Host: base.Hostname(), Path: "/wp-admin/admin-ajax.php"}
	return u.String(), url.Values{"action": {"manga_get_chapters"}, "manga": {id}}, nil
}

func (m madaraSite) content(body []byte, page *url.URL) (Content, error) {
	doc, err := parseHTML(body, ProblemNotChapterPage)
	if err != nil {
		return Content{}, err
	}
	if doc.Find("body.error404").Length() > 0 {
		return Content{}, problem(ProblemNotChapterPage, "the theme's 404 page")
	}
	reading := doc.Find("div.reading-content").First()
	if reading.Length() == 0 {
		return Content{}, Diagnose(body, ProblemNotChapterPage, "no div.reading-content")
	}
	if m.Kind == Novel {
		root := reading.Find("div.text-left").First()
		if root.Length() == 0 {
			root = reading
		}
		text := paragraphText(root.Nodes[0], textOptions{drop: textDrop, stop: textStop})
		if text == "" {
			if lockedMark(reading) || doc.Find(".premium-block, .wp-manga-chapter-locked").Length() > 0 {
				return Content{}, problem(ProblemLocked, "the chapter is locked")
			}
			return Content{}, problem(ProblemNotChapterPage, "the chapter page holds no text")
		}
		return Content{Text: text}, nil
	}
	base := m.baseURL(page)
	var pages []string
	reading.Find("div.page-break img, img.wp-manga-chapter-img").Each(func(_ int, img *goquery.Selection) {
		if u := imageOf(base, img); u != "" {
			pages = append(pages, u)
		}
	})
	if len(pages) == 0 {
		if doc.Find(".premium-block, .wp-manga-chapter-locked, .c-chapter-locked").Length() > 0 {
			return Content{}, problem(ProblemLocked, "the chapter is locked")
		}
		return Content{}, problem(ProblemNotChapterPage, "the chapter page shows no page image")
	}
	return Content{Pages: pages}, nil
}
