package latest

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/PuerkitoBio/goquery"
)

// mangathemesia: Themesia's MangaReader theme (and its MangaStream forks).
// The series page is /manga/<slug>/; chapters sit at the root
// (/<slug>-chapter-12/), so a chapter URL names no Series. The list is
// div#chapterlist li, newest first, each with data-num and span.chapternum;
// a premium chapter carries a lock mark and, on some installs, no link. A
// chapter's pages are in ts_reader.run({...}) (the page's own script, which
// lazy-loads the <img>s) and in div#readerarea.

type themesiaSite struct {
	*Site
}

const (
	themesiaMark    = "div#chapterlist, div.bigcontent, div.seriestucontent"
	themesiaMissing = "no div#chapterlist (not a MangaThemesia series page)"
	// themesiaMain scopes reads to the Series' own block, away from the
	// sidebar (#sidebar, .serieslist) and the related series (.listupd).
	themesiaMain = "div.bigcontent, div.seriestucontent, div.main-info, div.animefull"
)

func buildMangathemesia(s *Site, o familyOptions) {
	t := themesiaSite{Site: s}
	s.SeriesPath = familyPath(o.seriesPaths, false)
	s.Title = t.title
	s.Cover = t.cover
	s.Chapters = t.chapters
	s.Latest = func(body []byte, page *url.URL) (Chapter, error) { return latestOf(t.chapters(body, page)) }
	s.Content = t.content
	s.Listing = &Listing{Path: "/", Read: t.listing}
}

func (t themesiaSite) doc(body []byte) (*goquery.Document, error) {
	return themeDoc(body, ProblemNotSeriesPage, themesiaMark, themesiaMissing)
}

func (t themesiaSite) title(body []byte, _ *url.URL) (string, error) {
	doc, err := t.doc(body)
	if err != nil {
		return "", err
	}
	return titleOf(doc.Find("h1.entry-title").First().Text()), nil
}

func (t themesiaSite) cover(body []byte, page *url.URL) (string, error) {
	doc, err := t.doc(body)
	if err != nil {
		return "", err
	}
	img := doc.Find(themesiaMain).First().Find("div.thumb img").First()
	if img.Length() == 0 {
		img = doc.Find("div.thumb img").Not("#sidebar div.thumb img").First()
	}
	return imageOf(t.baseURL(page), img), nil
}

func (t themesiaSite) chapters(body []byte, page *url.URL) ([]Chapter, error) {
	doc, err := t.doc(body)
	if err != nil {
		return nil, err
	}
	base := t.baseURL(page)
	var out []Chapter
	doc.Find("div#chapterlist").First().Find("li").Each(func(_ int, li *goquery.Selection) {
		a := li.Find("a").First()
		link := t.chapterLink(base, a.AttrOr("href", ""))
		label := collapseSpace(li.Find("span.chapternum").First().Text())
		if label == "" {
			label = ownText(a)
		}
		locked := lockedMark(li)
		if link == "" && !locked {
			return
		}
		out = append(out, chapterOf(label, numberOf(strings.TrimSpace(li.AttrOr("data-num", ""))), link, locked))
	})
	return tidyFamilyChapters(reversed(out)), nil
}

// themesiaReaderRe finds the argument of ts_reader.run(...).
var themesiaReaderRe = regexp.MustCompile(`ts_reader\.run\((\{.*?\})\);`)

func (t themesiaSite) content(body []byte, page *url.URL) (Content, error) {
	doc, err := parseHTML(body, ProblemNotChapterPage)
	if err != nil {
		return Content{}, err
	}
	if doc.Find("body.error404").Length() > 0 {
		return Content{}, problem(ProblemNotChapterPage, "the theme's 404 page")
	}
	base := t.baseURL(page)
	var pages []string
	doc.Find("script").EachWithBreak(func(_ int, s *goquery.Selection) bool {
		sm := themesiaReaderRe.FindStringSubmatch(s.Text())
		if sm == nil {
			return true
		}
		for _, src := range listOf(firstOf(jsonObject(sm[1]), "sources")) {
			for _, img := range listOf(mapOf(src)["images"]) {
				if u, ok := absURL(base, stringOf(img)); ok && !placeholderImage(u) {
					pages = append(pages, u)
				}
			}
			if len(pages) > 0 {
				break
			}
		}
		return len(pages) == 0
	})
	if len(pages) == 0 {
		doc.Find("div#readerarea img").Each(func(_ int, img *goquery.Selection) {
			if u := imageOf(base, img); u != "" {
				pages = append(pages, u)
			}
		})
	}
	if len(pages) == 0 {
		if doc.Find("div#readerarea").Length() > 0 {
			if lockedMark(doc.Find("div#readerarea")) {
				return Content{}, problem(ProblemLocked, "the chapter is locked")
			}
			return Content{}, problem(ProblemNotChapterPage, "the chapter page shows no page image")
		}
		return Content{}, Diagnose(body, ProblemNotChapterPage, "no div#readerarea")
	}
	return Content{Pages: pages}, nil
}
