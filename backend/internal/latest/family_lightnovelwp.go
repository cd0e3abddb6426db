package latest

import (
	"net/url"
	"strings"

	"github.com/PuerkitoBio/goquery"
)

// lightnovelwp: Themesia's LightNovel WordPress theme, novels. The series
// page is /series/<slug>/; chapters sit at the root (/<slug>-chapter-12/).
// The list is div.eplister li, newest first: div.epl-num ("Chapter 12"),
// div.epl-title, and div.epl-price, which reads "Free" unless the chapter
// costs coins. A chapter's text is div.epcontent (entry-content), with the
// theme's unlock buttons, ads and navigation around it.

type lnwpSite struct {
	*Site
}

const (
	lnwpMark    = "div.eplister, div.sertoinfo, div.sertobody"
	lnwpMissing = "no div.eplister (not a LightNovel WP series page)"
	lnwpMain    = "div.sertobody, div.sertoinfo, div.bigcontent, article"
)

func buildLightnovelwp(s *Site, o familyOptions) {
	l := lnwpSite{Site: s}
	s.SeriesPath = familyPath(o.seriesPaths, false)
	s.Title = l.title
	s.Cover = l.cover
	s.Chapters = l.chapters
	s.Latest = func(body []byte, page *url.URL) (Chapter, error) { return latestOf(l.chapters(body, page)) }
	s.Content = l.content
	s.Listing = &Listing{Path: "/", Read: l.listing}
}

func (l lnwpSite) doc(body []byte) (*goquery.Document, error) {
	return themeDoc(body, ProblemNotSeriesPage, lnwpMark, lnwpMissing)
}

func (l lnwpSite) title(body []byte, _ *url.URL) (string, error) {
	doc, err := l.doc(body)
	if err != nil {
		return "", err
	}
	return titleOf(doc.Find("h1.entry-title").First().Text()), nil
}

func (l lnwpSite) cover(body []byte, page *url.URL) (string, error) {
	doc, err := l.doc(body)
	if err != nil {
		return "", err
	}
	img := doc.Find("div.sertothumb img").First()
	if img.Length() == 0 {
		img = doc.Find(lnwpMain).First().Find("div.thumb img").First()
	}
	return imageOf(l.baseURL(page), img), nil
}

func (l lnwpSite) chapters(body []byte, page *url.URL) ([]Chapter, error) {
	doc, err := l.doc(body)
	if err != nil {
		return nil, err
	}
	base := l.baseURL(page)
	var out []Chapter
	doc.Find("div.eplister").First().Find("li").Each(func(_ int, li *goquery.Selection) {
		a := li.Find("a").First()
		link := l.chapterLink(base, a.AttrOr("href", ""))
		num := collapseSpace(li.Find("div.epl-num").First().Text())
		title := collapseSpace(li.Find("div.epl-title").First().Text())
		label := num
		switch {
		case label == "":
			label = title
		case title != "" && !strings.Contains(title, num):
			label = num + " - " + title
		case title != "":
			label = title
		}
		price := strings.ToLower(collapseSpace(li.Find("div.epl-price").First().Text()))
		locked := lockedMark(li) || price != "" && price != "free"
		if link == "" && !locked {
			return
		}
		c := chapterOf(label, nil, link, locked)
		if c.Number == nil {
			if n, ok := ParseChapterNumber(num); ok {
				c.Number = &n
			}
		}
		out = append(out, c)
	})
	return tidyFamilyChapters(reversed(out)), nil
}

func (l lnwpSite) content(body []byte, _ *url.URL) (Content, error) {
	doc, err := parseHTML(body, ProblemNotChapterPage)
	if err != nil {
		return Content{}, err
	}
	if doc.Find("body.error404").Length() > 0 {
		return Content{}, problem(ProblemNotChapterPage, "the theme's 404 page")
	}
	root := doc.Find("div.epcontent").First()
	if root.Length() == 0 {
		return Content{}, Diagnose(body, ProblemNotChapterPage, "no div.epcontent")
	}
	text := paragraphText(root.Nodes[0], textOptions{drop: textDrop, stop: textStop})
	if text == "" {
		if root.Find(".unlock-buttons, .lock, .locked").Length() > 0 || lockedMark(root) {
			return Content{}, problem(ProblemLocked, "the chapter is locked")
		}
		return Content{}, problem(ProblemNotChapterPage, "the chapter page holds no text")
	}
	return Content{Text: text}, nil
}
