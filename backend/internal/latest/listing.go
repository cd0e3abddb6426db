package latest

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/PuerkitoBio/goquery"
)

// The listing question (docs/adr/0028-site-listings.md): a Site that
// publishes a Site-wide "recent updates" body (a home page's latest block, a
// /latest list) answers, from that one body, the newest chapter of every
// Series it names. The Poll reads it every few minutes and polls only the
// held Series it shows with a chapter newer than the stored Latest Chapter;
// a listing entry never writes a Series fact itself, the series poll does.
// Like ChapterList and PollURL it is optional: a Site without one is planned
// Series by Series.

// ProblemNotListingPage is the code of a body that is not the Site's listing
// (its shape changed, or it is another page): the Poll hands the Site back to
// per-Series planning and shows the Owner why.
const ProblemNotListingPage = "not_listing_page"

// Listing is a Site's answer to "what was updated lately".
type Listing struct {
	// Path is the listing's path on the Site's current host ("/" for a home
	// page's latest block), or a whole https URL on another of its hosts
	// (MangaDex's global chapter feed on its API host).
	Path string
	// Read reads every entry of a listing body, newest first. page is where
	// the body was fetched from; now dates the relative times ("2 hours
	// ago") entries carry. A body that is not the listing is a *Problem
	// (ProblemNotListingPage, or the challenge / access-denied code).
	Read func(body []byte, page *url.URL, now time.Time) (ListingPage, error)
}

// ListingPage is what one listing body shows.
type ListingPage struct {
	// Updates are the entries, newest first as the Site lists them; a
	// Series appears once, with its newest chapter.
	Updates []Update
	// Reach is the time of the oldest entry: the listing shows every update
	// since Reach. Zero when the entries carry no time.
	Reach time.Time
}

// Update is one listing entry.
type Update struct {
	// Key is the Series key, SeriesURL its series page.
	Key       string
	SeriesURL string
	// Chapter is the newest chapter the entry names (label, number, URL,
	// locked as on a series page).
	Chapter Chapter
	// At is when the Site says the chapter came out; zero when it does not.
	At time.Time
}

// NewerThan reports whether the entry names a chapter past the stored
// Latest Chapter (label and number; number nil when unknown). A number
// decides when both have one; otherwise a different label is newer, since a
// listing shows a Series only when it changed. Nothing stored is never
// newer: that Series has not had its first poll, which is due anyway.
func (u Update) NewerThan(label string, number *float64) bool {
	if label == "" && number == nil {
		return false
	}
	if u.Chapter.Number != nil && number != nil {
		return *u.Chapter.Number > *number
	}
	return collapseSpace(u.Chapter.Label) != collapseSpace(label)
}

// ListingURL is the Site's listing address, false when it has none.
func (s *Site) ListingURL() (string, bool) {
	if s.Listing == nil {
		return "", false
	}
	if strings.HasPrefix(s.Listing.Path, "https://") {
		return s.Listing.Path, true
	}
	return (&url.URL{Scheme: "https", Host: s.Hosts[0], Path: s.Listing.Path}).String(), true
}

// listingDoc parses a listing body: it must hold mark, else it is diagnosed
// (a challenge, an error page, or a page of another shape).
func listingDoc(body []byte, mark, missing string) (*goquery.Document, error) {
	doc, err := parseHTML(body, ProblemNotListingPage)
	if err != nil {
		return nil, err
	}
	if doc.Find(mark).Length() == 0 {
		return nil, Diagnose(body, ProblemNotListingPage, missing)
	}
	return doc, nil
}

// listingCollector gathers a listing's entries: one per Series (the first
// seen, which is its newest), only Series of the Site, and the reach.
type listingCollector struct {
	site *Site
	page ListingPage
	seen map[string]bool
	// untimed is set once an entry carries no time: the reach is then
	// unknown.
	untimed bool
}

func (c *listingCollector) add(seriesHref string, base *url.URL, ch Chapter, at time.Time) {
	link, ok := c.site.siteURL(base, seriesHref)
	if !ok {
		return
	}
	ref, err := c.site.ResolveOn(link)
	if err != nil || c.seen[ref.Key] || ch.Label == "" || announcement(ch) {
		return
	}
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	c.seen[ref.Key] = true
	c.page.Updates = append(c.page.Updates, Update{Key: ref.Key, SeriesURL: ref.SeriesURL, Chapter: ch, At: at})
	switch {
	case at.IsZero():
		c.untimed = true
	case c.page.Reach.IsZero() || at.Before(c.page.Reach):
		c.page.Reach = at
	}
}

func (c *listingCollector) result() ListingPage {
	if c.untimed {
		c.page.Reach = time.Time{}
	}
	return c.page
}

var relativeTimeRe = regexp.MustCompile(`(?i)^(an?|\d{1,4})\s*(sec|second|min|minute|mins|hour|hr|day|week|month|year)s?\s+ago$`)

// whenOf reads the time a listing entry shows: RFC 3339 or Unix seconds (a
// datetime attribute), a date ("November 20, 2026"), or a relative time
// ("2 hours ago", "a day ago", "just now") counted back from now. Zero when
// it reads none.
func whenOf(s string, now time.Time) time.Time {
	s = collapseSpace(s)
	if s == "" {
		return time.Time{}
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 1e9 && n < 1e11 {
		return time.Unix(n, 0).UTC()
	}
	for _, layout := range []string{"January 2, 2006", "Jan 2, 2006", "2006-01-02", "02/01/2006"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	low := strings.ToLower(s)
	if low == "just now" || low == "now" {
		return now
	}
	m := relativeTimeRe.FindStringSubmatch(low)
	if m == nil {
		return time.Time{}
	}
	n := 1
	if m[1] != "a" && m[1] != "an" {
		n, _ = strconv.Atoi(m[1])
	}
	unit := map[string]time.Duration{"sec": time.Second, "second": time.Second, "min": time.Minute, "mins": time.Minute, "minute": time.Minute,
		"hour": time.Hour, "hr": time.Hour, "day": 24 * time.Hour, "week": 7 * 24 * time.Hour, "month": 30 * 24 * time.Hour, "year": 365 * 24 * time.Hour}[m[2]]
	return now.Add(-time.Duration(n) * unit)
}

// ---- the families' listings: each theme's home page ----

// madaraListing reads a Madara home page: div.page-item-detail blocks, each
// a Series with its newest chapters (div.chapter-item), newest first.
func (m madaraSite) listing(body []byte, page *url.URL, now time.Time) (ListingPage, error) {
	doc, err := listingDoc(body, "div.page-item-detail", "no div.page-item-detail (not a Madara home page)")
	if err != nil {
		return ListingPage{}, err
	}
	base := m.baseURL(page)
	c := listingCollector{site: m.Site}
	doc.Find("div.page-item-detail").Each(func(_ int, item *goquery.Selection) {
		series := item.Find("div.post-title a, h3 a").First().AttrOr("href", "")
		ci := item.Find("div.chapter-item").First()
		a := ci.Find("span.chapter a, a").First()
		locked := lockedMark(ci) || lockedMark(ci.Find("span.chapter"))
		link := m.chapterLink(base, a.AttrOr("href", ""))
		if link == "" && !locked {
			return
		}
		when := ci.Find("span.post-on").First()
		at := whenOf(when.Find("a").AttrOr("title", ""), now)
		if at.IsZero() {
			at = whenOf(when.Text(), now)
		}
		c.add(series, base, chapterOf(a.Text(), nil, link, locked), at)
	})
	return c.result(), nil
}

// themesiaListing reads a MangaThemesia home page's "Latest Update" block:
// div.utao > div.uta, each a Series with its newest chapters in ul li.
func (t themesiaSite) listing(body []byte, page *url.URL, now time.Time) (ListingPage, error) {
	doc, err := listingDoc(body, "div.listupd div.utao", "no div.listupd div.utao (not a MangaThemesia home page)")
	if err != nil {
		return ListingPage{}, err
	}
	base := t.baseURL(page)
	c := listingCollector{site: t.Site}
	doc.Find("div.listupd div.utao div.uta").Each(func(_ int, item *goquery.Selection) {
		series := item.Find("a.series").First().AttrOr("href", "")
		li := item.Find("ul li").First()
		a := li.Find("a").First()
		locked := lockedMark(li)
		link := t.chapterLink(base, a.AttrOr("href", ""))
		if link == "" && !locked {
			return
		}
		c.add(series, base, chapterOf(a.Text(), nil, link, locked), whenOf(li.Find("span, i").Last().Text(), now))
	})
	return c.result(), nil
}

// lnwpListing reads a LightNovel WP home page's latest block: article.maindet
// entries, each a Series (div.mdinfo h2 a) and its newest chapter
// (span.nchapter a, span.datech). The least certain of the shapes: it follows
// the theme's 1.1 markup as installs served it, and its fixture says so.
func (l lnwpSite) listing(body []byte, page *url.URL, now time.Time) (ListingPage, error) {
	doc, err := listingDoc(body, "div.listupd article.maindet", "no div.listupd article.maindet (not a LightNovel WP home page)")
	if err != nil {
		return ListingPage{}, err
	}
	base := l.baseURL(page)
	c := listingCollector{site: l.Site}
	doc.Find("div.listupd article.maindet").Each(func(_ int, item *goquery.Selection) {
		series := item.Find("div.mdinfo h2 a, h2 a").First().AttrOr("href", "")
		ch := item.Find("span.nchapter").First()
		a := ch.Find("a").First()
		locked := lockedMark(ch) || lockedMark(item.Find("div.mdinfodet"))
		link := l.chapterLink(base, a.AttrOr("href", ""))
		if link == "" && !locked {
			return
		}
		c.add(series, base, chapterOf(a.Text(), nil, link, locked), whenOf(item.Find("span.datech").First().Text(), now))
	})
	return c.result(), nil
}

// ---- built-in Sites ----

// royalroadListing reads /fictions/latest-updates: div.fiction-list-item,
// each a fiction (h2.fiction-title a) and its newest chapters (li.list-item,
// newest first) with a <time unixtime> each.
func (rr royalroadSite) listing(body []byte, page *url.URL, _ time.Time) (ListingPage, error) {
	doc, err := listingDoc(body, "div.fiction-list-item", "no div.fiction-list-item (not Royal Road's latest updates)")
	if err != nil {
		return ListingPage{}, err
	}
	base := rr.baseURL(page)
	c := listingCollector{site: rr.Site}
	doc.Find("div.fiction-list-item").Each(func(_ int, item *goquery.Selection) {
		fiction := item.Find("h2.fiction-title a").First().AttrOr("href", "")
		li := item.Find("li.list-item").First()
		a := li.Find("a").First()
		fu, ok := rr.siteURL(base, fiction)
		if !ok {
			return
		}
		fp, _ := url.Parse(fu)
		link, ok := rr.chapterURL(base, a.AttrOr("href", ""), fp.Path)
		if !ok || rr.keyOf(link) != rr.keyOf(fu) {
			// A chapter of another fiction is no answer for this one.
			return
		}
		label := collapseSpace(a.Find("span").First().Text())
		if label == "" {
			label = ownText(a)
		}
		tm := li.Find("time").First()
		at := whenOf(tm.AttrOr("unixtime", ""), time.Time{})
		if at.IsZero() {
			at = whenOf(tm.AttrOr("datetime", ""), time.Time{})
		}
		c.add(fiction, base, chapterOf(label, nil, link, false), at)
	})
	return c.result(), nil
}

// novelfullListing reads /latest-release-novel: div.list-truyen div.row, each
// a novel (h3.truyen-title a) and its newest chapter (div.text-info a). The
// list carries no time, so its reach is unknown and the Poll measures it by
// the overlap of two reads.
func (n novelfullSite) listing(body []byte, page *url.URL, _ time.Time) (ListingPage, error) {
	doc, err := listingDoc(body, "div.list-truyen", "no div.list-truyen (not novelfull's latest releases)")
	if err != nil {
		return ListingPage{}, err
	}
	base := n.baseURL(page)
	c := listingCollector{site: n.Site}
	doc.Find("div.list-truyen div.row").Each(func(_ int, row *goquery.Selection) {
		novel := row.Find("h3.truyen-title a").First().AttrOr("href", "")
		a := row.Find("div.text-info a").First()
		link, ok := n.siteURL(base, a.AttrOr("href", ""))
		if !ok {
			return
		}
		label := a.AttrOr("title", "")
		if label == "" {
			label = a.Text()
		}
		c.add(novel, base, chapterOf(label, nil, link, false), time.Time{})
	})
	return c.result(), nil
}

// onHosts reports whether raw is an https URL on one of the Site's hosts.
func (s *Site) onHosts(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme == "https" && s.HasHost(u.Hostname())
}

// demonicListing reads lastupdates.php: div#updates-container >
// div.updates-element, each a Series (div.updates-element-info a) and its
// newest chapters (a.chplinks, "Chapter N" with a yyyy-MM-dd span), newest
// first. Entries carrying the Site's novel badge (.toffee-badge) are not
// manga and are skipped. Its fixture says how uncertain the shape is.
func (d demonicSite) listing(body []byte, page *url.URL, now time.Time) (ListingPage, error) {
	doc, err := listingDoc(body, "div#updates-container", "no div#updates-container (not demonic's latest updates)")
	if err != nil {
		return ListingPage{}, err
	}
	base := d.baseURL(page)
	c := listingCollector{site: d.Site}
	doc.Find("div#updates-container > div.updates-element").Each(func(_ int, item *goquery.Selection) {
		if item.Find(".toffee-badge").Length() > 0 {
			return
		}
		series := item.Find("div.updates-element-info a").First().AttrOr("href", "")
		a := item.Find("a.chplinks").First()
		link := d.chapterLink(base, a.AttrOr("href", ""))
		if link == "" {
			return
		}
		c.add(series, base, chapterOf(ownText(a), nil, link, false), whenOf(a.Find("span").First().Text(), now))
	})
	return c.result(), nil
}

// mangadexListingURL is the global chapter feed: the hundred uploads most
// recently readable in the language, with the same exclusions as a
// Series' own feed, so an entry's newest chapter is the one its poll reads.
const mangadexListingURL = "https://" + mangadexAPI + "/chapter?translatedLanguage[]=" + mangadexLanguage +
	"&order[readableAt]=desc&limit=100&includeFuturePublishAt=0&includeEmptyPages=0&includeExternalUrl=0&" + mangadexRatings

// listing reads the global chapter feed: each manga it names, newest
// first, with the Latest Chapter its own feed would give (md.latest on the
// uploads of that manga) and the newest upload's time.
func (md mangadexSite) listing(body []byte, _ *url.URL, _ time.Time) (ListingPage, error) {
	a, err := md.decode(body, ProblemNotListingPage)
	if err != nil {
		return ListingPage{}, err
	}
	var raw []mangadexChapter
	if a.Response != "collection" || json.Unmarshal(a.Data, &raw) != nil {
		return ListingPage{}, problem(ProblemNotListingPage, "the MangaDex API answer is not a chapter collection")
	}
	c := listingCollector{site: md.Site}
	done := map[string]bool{}
	for _, ch := range raw {
		id := ""
		for _, r := range ch.Relationships {
			if r.Type == "manga" && isUUID(r.ID) {
				id = strings.ToLower(r.ID)
				break
			}
		}
		if id == "" || done[id] || ch.Type != "chapter" {
			continue
		}
		done[id] = true
		feedURL, _ := url.Parse("https://" + mangadexAPI + "/manga/" + id + "/feed")
		latest, err := md.latest(body, feedURL)
		if err != nil {
			continue
		}
		at := mangadexTime(ch.Attributes.ReadableAt)
		c.add("https://"+mangadexWeb+"/title/"+id, nil, latest, at)
	}
	return c.result(), nil
}

// asuraAPI is the host of the API asura's own pages read from.
const asuraAPI = "api.asurascans.com"

// asuraListingURL is the series list of asura's API ordered by latest
// update: each Series with its newest chapters. The shape follows peers
// that read it (keiyoushi's AsuraScans: sort=latest, offset/limit, data[]
// with public_url and slug, meta.has_more; a tracker's notes: latest_chapters
// with number, is_premium, early_access_until, published_at); its fixture
// says so.
const asuraListingURL = "https://" + asuraAPI + "/api/series?sort=latest&order=desc&offset=0&limit=20"

// listing reads the API's series list: per Series its public page
// (public_url, with the current suffix) and the highest-numbered of its
// latest_chapters, the chapter its series page would give as the Latest
// Chapter, locked as there while premium or in early access.
func (asura asuraSite) listing(body []byte, _ *url.URL, _ time.Time) (ListingPage, error) {
	trimmed := bytes.TrimSpace(body)
	if !bytes.HasPrefix(trimmed, []byte("{")) {
		return ListingPage{}, Diagnose(body, ProblemNotListingPage, "not an answer of asura's API")
	}
	var a struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.Unmarshal(trimmed, &a); err != nil || a.Data == nil {
		return ListingPage{}, problem(ProblemNotListingPage, "asura's API answer is not a series list (no data[])")
	}
	c := listingCollector{site: asura.Site}
	for _, s := range a.Data {
		path := stringOf(s["public_url"])
		if path == "" && validSlug(stringOf(s["slug"])) {
			path = "/comics/" + stringOf(s["slug"])
		}
		if !strings.HasPrefix(path, "/") || strings.HasPrefix(path, "//") {
			continue
		}
		ref, err := asura.ResolveOn("https://" + asura.Hosts[0] + path)
		if err != nil {
			continue
		}
		series := ref.SeriesURL
		var newest map[string]any
		var num *float64
		for _, v := range listOf(s["latest_chapters"]) {
			ch := mapOf(v)
			if n := numberOf(ch["number"]); n != nil && (num == nil || *n > *num) {
				newest, num = ch, n
			}
		}
		if newest == nil {
			continue
		}
		at := whenOf(stringOf(firstOf(newest, "published_at", "created_at")), time.Time{})
		if at.IsZero() {
			at = whenOf(stringOf(s["last_chapter_at"]), time.Time{})
		}
		c.add(series, nil, asuraChapter(newest, num, series), at)
	}
	return c.result(), nil
}
