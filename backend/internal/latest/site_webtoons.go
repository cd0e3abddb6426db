package latest

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/PuerkitoBio/goquery"
)

// webtoons: manga (webtoons); server-rendered list pages, newest first and
// paginated (/list?title_no=N&page=n), a viewer page per episode whose
// images answer only with a Referer on the Site, and an RSS feed per title
// (/rss?title_no=N), which the Poll reads once a Series has its Cover. The
// Series is named by the query's title_no, the episode by episode_no.

// webtoonsSite is the webtoons entry: its answers are methods, so they
// reach the entry (its hosts, its URL shape) without a package variable.
type webtoonsSite struct{ *Site }

// wtMaxListPages bounds the list walk (ten episodes a page).
const wtMaxListPages = 300

func newWebtoons() *Site {
	wt := webtoonsSite{new(Site)}
	*wt.Site = Site{
		Name:  "webtoons",
		Kind:  Manga,
		Hosts: []string{"webtoons.com"},
		// WEBTOON publishes no rate limit for its pages; one a second is a
		// polite reader of a site built to serve millions.
		Pace:        DefaultPace / 2,
		SeriesPath:  wt.seriesPath,
		Title:       wt.title,
		Latest:      wt.latest,
		Cover:       wt.cover,
		Chapters:    wt.chapters,
		ChapterList: wt.chapterList,
		Content:     wt.content,
		PollURL:     wt.pollURL,
	}
	return wt.Site
}

// queryNumber reads a decimal query parameter (title_no, episode_no).
func queryNumber(q, key string) string {
	v, err := url.ParseQuery(q)
	if err != nil {
		return ""
	}
	n := v.Get(key)
	if !isDigits(n) {
		return ""
	}
	return n
}

// seriesPath: /<lang>/<genre>/<slug>/list, /<lang>/<genre>/<slug>/<episode>/viewer
// and /<lang>/<genre>/<slug>/rss with title_no, and the bare /rss and
// /episodeList?titleNo=N. The series page is the list page.
func (wt webtoonsSite) seriesPath(u *url.URL) (string, string, bool) {
	var buf [maxPathParts]string
	p, ok := pathParts(u, &buf)
	if !ok || len(p) == 0 {
		return "", "", false
	}
	host := "https://" + strings.TrimPrefix(u.Host, "www.")
	if len(p) == 1 && (p[0] == "rss" || p[0] == "episodeList") {
		n := queryNumber(u.RawQuery, "title_no")
		if n == "" {
			n = queryNumber(u.RawQuery, "titleNo")
		}
		if n == "" {
			return "", "", false
		}
		return n, host + "/episodeList?titleNo=" + n, true
	}
	last := p[len(p)-1]
	switch {
	case len(p) == 4 && (last == "list" || last == "rss"), len(p) == 5 && last == "viewer":
	default:
		return "", "", false
	}
	if p[1] == "canvas" || p[1] == "challenge" || !validSlug(p[0]) || !validSlug(p[1]) || !validSlug(p[2]) {
		// Canvas titles number apart from Originals: not these Series.
		return "", "", false
	}
	n := queryNumber(u.RawQuery, "title_no")
	if n == "" {
		return "", "", false
	}
	return n, host + "/" + p[0] + "/" + p[1] + "/" + p[2] + "/list?title_no=" + n, true
}

// pollURL is the title's RSS feed beside its list page.
func (wt webtoonsSite) pollURL(seriesURL string) (string, bool) {
	u, err := url.Parse(seriesURL)
	if err != nil || !strings.HasSuffix(u.Path, "/list") {
		return "", false
	}
	n := queryNumber(u.RawQuery, "title_no")
	if n == "" {
		return "", false
	}
	return "https://www." + strings.TrimPrefix(u.Host, "www.") + strings.TrimSuffix(u.Path, "/list") + "/rss?title_no=" + n, true
}

// episodeOf reads a viewer link of the page's title: its URL and episode
// number. ok is false for another title's link or not a viewer link.
func (wt webtoonsSite) episodeOf(base *url.URL, ref, want string) (string, *float64, bool) {
	link, ok := wt.siteURL(base, ref)
	if !ok {
		return "", nil, false
	}
	u, err := url.Parse(link)
	if err != nil || !strings.HasSuffix(u.Path, "/viewer") {
		return "", nil, false
	}
	if want != "" && wt.keyOf(link) != want {
		return "", nil, false
	}
	n := numberOf(queryNumber(u.RawQuery, "episode_no"))
	if n == nil {
		return "", nil, false
	}
	return link, n, true
}

// listDoc parses a list page, which must be about the title the page URL
// names when it names one (its og:url says which it is).
func (wt webtoonsSite) listDoc(body []byte, page *url.URL) (*goquery.Document, error) {
	doc, err := parseHTML(body, ProblemNotSeriesPage)
	if err != nil {
		return nil, err
	}
	if doc.Find("ul#_listUl").Length() == 0 {
		return nil, Diagnose(body, ProblemNotSeriesPage, "no ul#_listUl")
	}
	if page != nil {
		want, own := wt.keyOf(page.String()), wt.keyOf(metaContent(doc, "og:url"))
		if want != "" && own != "" && want != own {
			return nil, problem(ProblemNotSeriesPage, "the list page is %s's, not %s's", own, want)
		}
	}
	return doc, nil
}

func (wt webtoonsSite) title(body []byte, page *url.URL) (string, error) {
	if isFeed(body) {
		t, _, err := wt.feed(body, page)
		return t, err
	}
	doc, err := wt.listDoc(body, page)
	if err != nil {
		return "", err
	}
	if t := titleOf(doc.Find(".detail_header .info h1.subj").First().Text()); t != "" {
		return t, nil
	}
	return titleOf(metaContent(doc, "og:title")), nil
}

// cover is the list page's og:image, the title's share image: not the
// character art beside it nor the recommendations below.
func (wt webtoonsSite) cover(body []byte, page *url.URL) (string, error) {
	if isFeed(body) {
		_, _, err := wt.feed(body, page)
		return "", err
	}
	doc, err := wt.listDoc(body, page)
	if err != nil {
		return "", err
	}
	return coverURL(wt.baseURL(page), metaContent(doc, "og:image")), nil
}

// chapters reads one list page, oldest first by episode number; an episode
// behind a Fast Pass or a Daily Pass is listed locked.
func (wt webtoonsSite) chapters(body []byte, page *url.URL) ([]Chapter, error) {
	if isFeed(body) {
		_, list, err := wt.feed(body, page)
		return list, err
	}
	doc, err := wt.listDoc(body, page)
	if err != nil {
		return nil, err
	}
	return wt.list(doc, page), nil
}

func (wt webtoonsSite) list(doc *goquery.Document, page *url.URL) []Chapter {
	want := wt.pageKey(page, doc)
	base := wt.baseURL(page)
	var out []Chapter
	doc.Find("ul#_listUl").First().Find("li._episodeItem").Each(func(_ int, li *goquery.Selection) {
		a := li.Find("a[href]").First()
		link, n, ok := wt.episodeOf(base, a.AttrOr("href", ""), want)
		if !ok {
			return
		}
		label := collapseSpace(li.Find(".subj span").First().Text())
		if label == "" {
			label = "Episode " + formatNumber(*n)
		}
		locked := li.Find(".ico_fastpass, .ico_dailypass, .ico_paid").Length() > 0
		out = append(out, chapterOf(label, n, link, locked))
	})
	sortByNumber(out)
	return tidyChapters(out)
}

// latest is the newest episode a reader can open: a Fast Pass episode is
// listed (locked) but is not the Latest Chapter, and the RSS feed, which
// leaves it out, names the same one.
func (wt webtoonsSite) latest(body []byte, page *url.URL) (Chapter, error) {
	list, err := wt.chapters(body, page)
	if err != nil {
		return Chapter{}, err
	}
	for i := len(list) - 1; i >= 0; i-- {
		if !list[i].Locked {
			return list[i], nil
		}
	}
	return Chapter{}, problem(ProblemNoChapters, "the page lists no episode a reader can open")
}

type wtFeed struct {
	Channel struct {
		Title string   `xml:"title"`
		Links []string `xml:"link"`
		Items []struct {
			Title string `xml:"title"`
			Link  string `xml:"link"`
		} `xml:"item"`
	} `xml:"channel"`
}

// feed reads the RSS feed: the title, and its episodes by number.
func (wt webtoonsSite) feed(body []byte, page *url.URL) (string, []Chapter, error) {
	var f wtFeed
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = false
	if err := dec.Decode(&f); err != nil {
		return "", nil, problem(ProblemNotSeriesPage, "the RSS feed is not RSS: %v", err)
	}
	want := ""
	if page != nil {
		want = wt.keyOf(page.String())
	}
	for _, l := range f.Channel.Links {
		if k := wt.keyOf(strings.TrimSpace(l)); want != "" && k != "" && k != want {
			return "", nil, problem(ProblemNotSeriesPage, "the feed is about %s, not %s", k, want)
		}
	}
	base := wt.baseURL(page)
	var out []Chapter
	for i, it := range f.Channel.Items {
		if i == rrMaxFeedItems {
			break
		}
		link, n, ok := wt.episodeOf(base, strings.TrimSpace(it.Link), want)
		if !ok {
			continue
		}
		out = append(out, chapterOf(it.Title, n, link, false))
	}
	sortByNumber(out)
	return titleOf(f.Channel.Title), tidyChapters(out), nil
}

// chapterList walks the list pages (&page=n) until one adds nothing or
// links no next page.
func (wt webtoonsSite) chapterList(ctx context.Context, fetch PageFetcher, seriesURL string, seriesBody []byte) ([]Chapter, error) {
	ref, err := wt.ResolveOn(seriesURL)
	if err != nil {
		return nil, fmt.Errorf("webtoons episode list of %s: %w", seriesURL, err)
	}
	seen := map[string]bool{}
	var all []Chapter
	add := func(list []Chapter) int {
		added := 0
		for _, c := range list {
			if !seen[c.URL] {
				seen[c.URL] = true
				all = append(all, c)
				added++
			}
		}
		return added
	}
	body := seriesBody
	for n := 1; n <= wtMaxListPages; n++ {
		pageURL := ref.SeriesURL + "&page=" + strconv.Itoa(n)
		if n > 1 || isFeed(body) {
			if body, err = fetch.FetchPage(ctx, pageURL); err != nil {
				return nil, fmt.Errorf("webtoons list page %s: %w", pageURL, err)
			}
		}
		pu, _ := url.Parse(pageURL)
		doc, err := wt.listDoc(body, pu)
		if err != nil {
			return nil, err
		}
		if add(wt.list(doc, pu)) == 0 || !wt.linksPage(doc, n+1) {
			break
		}
	}
	sortByNumber(all)
	return all, nil
}

// linksPage reports whether the list's pager links page n.
func (wt webtoonsSite) linksPage(doc *goquery.Document, n int) bool {
	want := "page=" + strconv.Itoa(n)
	found := false
	doc.Find("div.paginate a[href]").EachWithBreak(func(_ int, a *goquery.Selection) bool {
		if u, err := url.Parse(a.AttrOr("href", "")); err == nil {
			for kv := range strings.SplitSeq(u.RawQuery, "&") {
				if kv == want {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// content reads the viewer's images in order: data-url, the address the
// page loads as it scrolls (src is a placeholder until then).
func (wt webtoonsSite) content(body []byte, page *url.URL) (Content, error) {
	doc, err := parseHTML(body, ProblemNotChapterPage)
	if err != nil {
		return Content{}, err
	}
	list := doc.Find("#_imageList").First()
	if list.Length() == 0 {
		return Content{}, Diagnose(body, ProblemNotChapterPage, "no #_imageList")
	}
	base := wt.baseURL(page)
	var pages []string
	list.Find("img._images").Each(func(_ int, img *goquery.Selection) {
		if u, ok := absURL(base, img.AttrOr("data-url", "")); ok && strings.HasPrefix(u, "https://") {
			pages = append(pages, u)
		}
	})
	if len(pages) == 0 {
		return Content{}, problem(ProblemLocked, "the viewer shows no image: a Fast Pass or Daily Pass episode")
	}
	return Content{Pages: pages}, nil
}
