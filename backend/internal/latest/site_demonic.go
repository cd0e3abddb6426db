package latest

import (
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/PuerkitoBio/goquery"
)

// demonic: manga; server-rendered PHP pages. Covers and page images are
// served from other hosts than the pages.

// demonicSite is the demonic entry: its answers are methods, so they reach the
// entry (its hosts, its URL shape) without a package variable.
type demonicSite struct{ *Site }

func newDemonic() *Site {
	demonic := demonicSite{new(Site)}
	*demonic.Site = Site{
		Name:  "demonic",
		Kind:  Manga,
		Hosts: []string{"demonicscans.org"},
		// Peers pace demonic at about two requests a second.
		Pace: 500 * time.Millisecond,
		SeriesPath: func(u *url.URL) (string, string, bool) {
			var buf [maxPathParts]string
			p, ok := pathParts(u, &buf)
			if !ok {
				return "", "", false
			}
			// /manga/<Title-With-Dashes>; the reader is /title/<Title>/chapter/<n>/<suffix>.
			// /chaptered.php?manga=<id> names a numeric id no URL maps back from.
			switch {
			case len(p) == 2 && p[0] == "manga" && validSlug(p[1]):
				return p[1], "/manga/" + p[1], true
			case len(p) >= 4 && len(p) <= 5 && p[0] == "title" && p[2] == "chapter" && validSlug(p[1]):
				return p[1], "/manga/" + p[1], true
			}
			return "", "", false
		},
		Latest: func(body []byte, page *url.URL) (Chapter, error) {
			return latestOf(demonic.chapters(body, page))
		},
		Title: func(body []byte, _ *url.URL) (string, error) {
			doc, err := demonicSeriesDoc(body)
			if err != nil {
				return "", err
			}
			return titleOf(doc.Find("div#manga-info-container h1.big-fat-titles").First().Text()), nil
		},
		Cover:    demonic.cover,
		Chapters: demonic.chapters,
		Content:  demonic.content,
		Listing:  &Listing{Path: "/lastupdates.php", Read: demonic.listing},
	}
	return demonic.Site
}

const demonicMissing = "no div#manga-info-container"

func demonicSeriesDoc(body []byte) (*goquery.Document, error) {
	doc, err := parseHTML(body, ProblemNotSeriesPage)
	if err != nil {
		return nil, err
	}
	if doc.Find("div#manga-info-container").Length() == 0 {
		return nil, Diagnose(body, ProblemNotSeriesPage, demonicMissing)
	}
	return doc, nil
}

func (demonic demonicSite) chapters(body []byte, page *url.URL) ([]Chapter, error) {
	doc, err := demonicSeriesDoc(body)
	if err != nil {
		return nil, err
	}
	base := demonic.baseURL(page)
	// Every chapter link names the Series' numeric id; the info block's own
	// reading buttons name it too, and a link with another id belongs to
	// another Series even inside the list.
	id := ""
	doc.Find(`div#manga-info-container a[href*="chaptered.php"]`).EachWithBreak(func(_ int, a *goquery.Selection) bool {
		id = demonicMangaID(base, a.AttrOr("href", ""))
		return id == ""
	})
	var out []Chapter
	doc.Find("div#chapters-list").First().Find("a.chplinks").Each(func(_ int, a *goquery.Selection) {
		link, ok := demonic.siteURL(base, a.AttrOr("href", ""))
		if !ok {
			return
		}
		linkID := demonicMangaID(base, link)
		if linkID == "" {
			return
		}
		if id == "" {
			id = linkID
		}
		if linkID != id {
			return
		}
		out = append(out, chapterOf(ownText(a), nil, link, false))
	})
	// Listed newest first.
	return tidyChapters(reversed(out)), nil
}

// demonicMangaID is the manga parameter of a chaptered.php link, or "".
func demonicMangaID(base *url.URL, href string) string {
	abs, ok := absURL(base, href)
	if !ok {
		return ""
	}
	u, err := url.Parse(abs)
	if err != nil || path.Base(u.Path) != "chaptered.php" {
		return ""
	}
	return u.Query().Get("manga")
}

func (demonic demonicSite) cover(body []byte, page *url.URL) (string, error) {
	doc, err := demonicSeriesDoc(body)
	if err != nil {
		return "", err
	}
	img := doc.Find("div#manga-page img").First()
	return coverURL(demonic.baseURL(page), metaContent(doc, "og:image"), img.AttrOr("data-src", ""), img.AttrOr("src", "")), nil
}

// demonicAdName matches the file names of the ads demonic puts among page
// images with the same class (free_ads.jpg).
var demonicAdName = regexp.MustCompile(`(?i)(^|[_.-])ads?([_.-]|$)`)

func (demonic demonicSite) content(body []byte, page *url.URL) (Content, error) {
	doc, err := parseHTML(body, ProblemNotChapterPage)
	if err != nil {
		return Content{}, err
	}
	base := demonic.baseURL(page)
	var pages []string
	imgs := doc.Find("img.imgholder")
	imgs.Each(func(_ int, img *goquery.Selection) {
		src := strings.TrimSpace(img.AttrOr("data-src", ""))
		if src == "" {
			src = img.AttrOr("src", "")
		}
		u, ok := absURL(base, src)
		if !ok || demonic.ad(u) {
			return
		}
		pages = append(pages, u)
	})
	if len(pages) == 0 {
		if imgs.Length() > 0 {
			return Content{}, problem(ProblemNotChapterPage, "the chapter page shows only ad images")
		}
		return Content{}, Diagnose(body, ProblemNotChapterPage, "no img.imgholder")
	}
	return Content{Pages: pages}, nil
}

// ad reports an ad image: site furniture under /img/ on demonic's
// own host, or a file named as an ad.
func (demonic demonicSite) ad(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return true
	}
	if demonic.HasHost(u.Hostname()) && strings.HasPrefix(u.Path, "/img/") {
		return true
	}
	name := path.Base(u.Path)
	name = strings.TrimSuffix(name, path.Ext(name))
	return demonicAdName.MatchString(name)
}
