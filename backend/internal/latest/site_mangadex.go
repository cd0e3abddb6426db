package latest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// mangadex: manga; read through its public JSON API on api.mangadex.org,
// never its pages, which are script shells. A title page
// (mangadex.org/title/<uuid>) is read as the manga record with its
// cover_art, its Latest Chapter from the chapter feed (English uploads, a
// second body), and a reader page (mangadex.org/chapter/<uuid>) as the
// MangaDex@Home server answer for the chapter. See docs/adr/0021.

// mangadexSite is the mangadex entry: its answers are methods, so they
// reach the entry (its hosts, its URL shape) without a package variable.
type mangadexSite struct {
	*Site
	// now is the clock a chapter's publishAt is judged by; a test's entry
	// may carry its own.
	now func() time.Time
}

const (
	mangadexWeb     = "mangadex.org"
	mangadexAPI     = "api.mangadex.org"
	mangadexUploads = "uploads.mangadex.org"
	// mangadexLanguage is the translation followed. A Reader-chosen
	// language is a later option; English is what most Readers of a
	// deployment read.
	mangadexLanguage = "en"
	// mangadexFeedPage is the feed's largest page (the API's limit for
	// /manga/{id}/feed); mangadexMaxPages bounds a full walk at 20 000
	// uploads.
	mangadexFeedPage = 500
	mangadexMaxPages = 40
)

// mangadexRatings are every content rating: the feed answers only safe,
// suggestive and erotica by default, so a pornographic manga's feed would
// otherwise look empty.
const mangadexRatings = "contentRating[]=safe&contentRating[]=suggestive&contentRating[]=erotica&contentRating[]=pornographic"

func newMangadex() *Site {
	md := mangadexSite{Site: new(Site), now: time.Now}
	*md.Site = Site{
		Name:  "mangadex",
		Kind:  Manga,
		Hosts: []string{mangadexWeb, mangadexAPI, mangadexUploads},
		// MangaDex allows about five requests a second per address and its
		// at-home endpoint forty a minute; one request every 1.5 s keeps
		// every endpoint of api.mangadex.org within both.
		Pace:       1500 * time.Millisecond,
		SeriesPath: md.seriesPath,
		NoSeries:   md.noSeries,
		ReadURL:    md.readURL,
		Title:      md.title,
		Latest:     md.latest,
		LatestOf:   md.latestOf,
		PollURL:    md.pollURL,
		Listing:    &Listing{Path: mangadexListingURL, Read: md.listing},
		Cover:      md.cover,
		Chapters:   md.chapters,
		ChapterList: func(ctx context.Context, fetch PageFetcher, seriesURL string, seriesBody []byte) ([]Chapter, error) {
			return md.chapterList(ctx, fetch, seriesURL, seriesBody)
		},
		Content:   md.content,
		Trackers:  md.trackers,
		AltTitles: md.altTitles,
	}
	return md.Site
}

// seriesPath: /title/<uuid>[/<slug>] on mangadex.org, /manga/<uuid>[/feed]
// on the API; the series page is always the title page.
func (md mangadexSite) seriesPath(u *url.URL) (string, string, bool) {
	var buf [maxPathParts]string
	p, ok := pathParts(u, &buf)
	if !ok || len(p) < 2 || !isUUID(p[1]) {
		return "", "", false
	}
	host := strings.TrimPrefix(u.Host, "www.")
	switch {
	case host == mangadexAPI && p[0] == "manga" && (len(p) == 2 || len(p) == 3 && p[2] == "feed"):
	case host == mangadexWeb && p[0] == "title" && len(p) <= 3:
	default:
		return "", "", false
	}
	id := strings.ToLower(p[1])
	return id, "https://" + mangadexWeb + "/title/" + id, true
}

func (md mangadexSite) noSeries(u *url.URL) string {
	var buf [maxPathParts]string
	if p, ok := pathParts(u, &buf); ok && len(p) == 2 && p[0] == "chapter" && isUUID(p[1]) {
		return "a MangaDex chapter URL names no manga: give its title URL (https://mangadex.org/title/<uuid>), linked from the chapter page"
	}
	return ""
}

// readURL: a title page is read as its manga record with the cover_art,
// a reader page as the at-home server answer for the chapter.
func (md mangadexSite) readURL(u *url.URL) (string, bool) {
	if strings.TrimPrefix(u.Host, "www.") != mangadexWeb {
		return "", false
	}
	var buf [maxPathParts]string
	p, ok := pathParts(u, &buf)
	if !ok || len(p) < 2 || !isUUID(p[1]) {
		return "", false
	}
	id := strings.ToLower(p[1])
	switch {
	case p[0] == "title" && len(p) <= 3:
		return md.recordURL(id), true
	case p[0] == "chapter" && len(p) == 2:
		return "https://" + mangadexAPI + "/at-home/server/" + id, true
	}
	return "", false
}

// pollURL: once a Series has its title and Cover, a poll reads the feed
// alone, one request instead of two.
func (md mangadexSite) pollURL(seriesURL string) (string, bool) {
	ref, err := md.ResolveOn(seriesURL)
	if err != nil {
		return "", false
	}
	_, id, _ := SplitKey(ref.Key)
	return md.latestFeedURL(id), true
}

func (md mangadexSite) recordURL(id string) string {
	return "https://" + mangadexAPI + "/manga/" + id + "?includes[]=cover_art"
}

// latestFeedURL asks for the hundred uploads most recently readable in the
// language, without the ones that can never be the Latest Chapter: the
// newest chapter is among them whatever the Site's numbering, which
// order[chapter] (a string on MangaDex) would not promise.
func (md mangadexSite) latestFeedURL(id string) string {
	return "https://" + mangadexAPI + "/manga/" + id + "/feed?translatedLanguage[]=" + mangadexLanguage +
		"&order[readableAt]=desc&limit=100&includeFuturePublishAt=0&includeEmptyPages=0&includeExternalUrl=0&" + mangadexRatings
}

// listFeedURL is one page of the whole feed, oldest first, locked uploads
// included so the list shows them.
func (md mangadexSite) listFeedURL(id string, offset int) string {
	return "https://" + mangadexAPI + "/manga/" + id + "/feed?translatedLanguage[]=" + mangadexLanguage +
		"&order[volume]=asc&order[chapter]=asc&limit=" + strconv.Itoa(mangadexFeedPage) + "&offset=" + strconv.Itoa(offset) + "&" + mangadexRatings
}

// mangadexAnswer is every API answer extraction reads: the envelope, a
// manga record, a chapter collection and an at-home server answer.
type mangadexAnswer struct {
	Result   string          `json:"result"`
	Response string          `json:"response"`
	Data     json.RawMessage `json:"data"`
	Errors   []struct {
		Status any    `json:"status"`
		Title  string `json:"title"`
		Detail string `json:"detail"`
	} `json:"errors"`
	Total   *int   `json:"total"`
	Offset  int    `json:"offset"`
	BaseURL string `json:"baseUrl"`
	Chapter *struct {
		Hash string   `json:"hash"`
		Data []string `json:"data"`
	} `json:"chapter"`
}

type mangadexRel struct {
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	Attributes map[string]any `json:"attributes"`
}

type mangadexManga struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Attributes struct {
		Title            map[string]string   `json:"title"`
		AltTitles        []map[string]string `json:"altTitles"`
		Links            map[string]any      `json:"links"`
		OriginalLanguage string              `json:"originalLanguage"`
	} `json:"attributes"`
	Relationships []mangadexRel `json:"relationships"`
}

type mangadexChapter struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Attributes struct {
		Chapter            *string `json:"chapter"`
		Title              *string `json:"title"`
		TranslatedLanguage string  `json:"translatedLanguage"`
		ExternalURL        *string `json:"externalUrl"`
		PublishAt          string  `json:"publishAt"`
		ReadableAt         string  `json:"readableAt"`
		Pages              int     `json:"pages"`
	} `json:"attributes"`
	Relationships []mangadexRel `json:"relationships"`
}

// decode reads an API answer. A body that is not the API's JSON, or an
// answer with result "error", is not the page (notPage names which).
func (md mangadexSite) decode(body []byte, notPage string) (mangadexAnswer, error) {
	trimmed := bytes.TrimSpace(body)
	if !bytes.HasPrefix(trimmed, []byte("{")) {
		return mangadexAnswer{}, Diagnose(body, notPage, "not an answer of the MangaDex API")
	}
	var a mangadexAnswer
	if err := json.Unmarshal(trimmed, &a); err != nil {
		return mangadexAnswer{}, problem(notPage, "the MangaDex API answer is not JSON of its shape: %v", err)
	}
	if a.Result != "ok" {
		why := "no result"
		if len(a.Errors) > 0 {
			why = collapseSpace(fmt.Sprint(a.Errors[0].Status, " ", a.Errors[0].Title, ": ", a.Errors[0].Detail))
		} else if a.Result != "" {
			why = "result " + strconv.Quote(a.Result)
		}
		return mangadexAnswer{}, problem(notPage, "the MangaDex API answered an error (%s)", why)
	}
	return a, nil
}

// wantID is the manga the page URL names, "" when unknown.
func (md mangadexSite) wantID(page *url.URL) string {
	if page == nil {
		return ""
	}
	_, id, _ := SplitKey(md.keyOf(page.String()))
	return id
}

// manga reads a manga record about the page's manga. ok is false for an
// answer that is not one record (a chapter feed).
func (md mangadexSite) manga(body []byte, page *url.URL) (mangadexManga, bool, error) {
	a, err := md.decode(body, ProblemNotSeriesPage)
	if err != nil {
		return mangadexManga{}, false, err
	}
	if a.Response != "entity" || !bytes.HasPrefix(bytes.TrimSpace(a.Data), []byte("{")) {
		return mangadexManga{}, false, nil
	}
	var m mangadexManga
	if err := json.Unmarshal(a.Data, &m); err != nil || m.Type != "manga" || !isUUID(m.ID) {
		return mangadexManga{}, false, problem(ProblemNotSeriesPage, "the MangaDex answer is not a manga record")
	}
	if want := md.wantID(page); want != "" && !strings.EqualFold(want, m.ID) {
		return mangadexManga{}, false, problem(ProblemNotSeriesPage, "the record is manga %s, not %s", m.ID, want)
	}
	return m, true, nil
}

func (md mangadexSite) title(body []byte, page *url.URL) (string, error) {
	m, ok, err := md.manga(body, page)
	if err != nil || !ok {
		return "", err
	}
	a := m.Attributes
	if t := a.Title[mangadexLanguage]; t != "" {
		return titleOf(t), nil
	}
	for _, alt := range a.AltTitles {
		if t := alt[mangadexLanguage]; t != "" {
			return titleOf(t), nil
		}
	}
	// The original title, romanised first; otherwise the first by
	// language code, so one record always gives one title.
	for _, lang := range []string{a.OriginalLanguage + "-ro", a.OriginalLanguage} {
		if t := a.Title[lang]; t != "" {
			return titleOf(t), nil
		}
	}
	langs := make([]string, 0, len(a.Title))
	for k := range a.Title {
		langs = append(langs, k)
	}
	slices.Sort(langs)
	for _, k := range langs {
		if t := a.Title[k]; t != "" {
			return titleOf(t), nil
		}
	}
	return "", nil
}

// maxAltTitles bounds what one record's alternative titles may store.
const maxAltTitles = 40

// altTitles: every title of the record in any language, and every
// altTitles entry, once each, in the record's order (the title map by
// language code), leaving out the one title answers. Nil for a body that is
// no manga record.
func (md mangadexSite) altTitles(body []byte, page *url.URL) []string {
	m, ok, err := md.manga(body, page)
	if err != nil || !ok {
		return nil
	}
	main, _ := md.title(body, page)
	seen := map[string]bool{main: true, "": true}
	var out []string
	add := func(t string) {
		if t = titleOf(t); !seen[t] && len(out) < maxAltTitles {
			seen[t] = true
			out = append(out, t)
		}
	}
	langs := make([]string, 0, len(m.Attributes.Title))
	for k := range m.Attributes.Title {
		langs = append(langs, k)
	}
	slices.Sort(langs)
	for _, k := range langs {
		add(m.Attributes.Title[k])
	}
	for _, alt := range m.Attributes.AltTitles {
		langs = langs[:0]
		for k := range alt {
			langs = append(langs, k)
		}
		slices.Sort(langs)
		for _, k := range langs {
			add(alt[k])
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// cover is the 512 px thumbnail MangaDex publishes beside every cover
// file: what a card shows, a fraction of the original's bytes.
func (md mangadexSite) cover(body []byte, page *url.URL) (string, error) {
	m, ok, err := md.manga(body, page)
	if err != nil || !ok {
		return "", err
	}
	for _, r := range m.Relationships {
		if r.Type != "cover_art" {
			continue
		}
		file := stringOf(r.Attributes["fileName"])
		if validSlug(file) && strings.Contains(file, ".") {
			return "https://" + mangadexUploads + "/covers/" + strings.ToLower(m.ID) + "/" + file + ".512.jpg", nil
		}
	}
	return "", nil
}

// trackers reads the record's links: al (AniList), mal (MyAnimeList) and
// mu (MangaUpdates, a base-36 id of its current site, converted to the API's
// decimal id; an all-digit mu is an id of its former site, which the
// current API does not know, so it is left out).
func (md mangadexSite) trackers(body []byte, page *url.URL) map[string]string {
	m, ok, err := md.manga(body, page)
	if err != nil || !ok {
		return nil
	}
	out := map[string]string{}
	digits := func(s string) bool {
		return s != "" && len(s) <= 20 && strings.Trim(s, "0123456789") == ""
	}
	if v := stringOf(m.Attributes.Links["al"]); digits(v) {
		out["anilist"] = v
	}
	if v := stringOf(m.Attributes.Links["mal"]); digits(v) {
		out["myanimelist"] = v
	}
	if v := strings.ToLower(stringOf(m.Attributes.Links["mu"])); v != "" && len(v) <= 13 && !digits(v) {
		if n, ok := new(big.Int).SetString(v, 36); ok {
			out["mangaupdates"] = n.String()
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// feed reads a chapter collection of the page's manga into chapters,
// oldest first: several groups' uploads of one number are one chapter (the
// first readable upload), an upload on an external site, without pages or
// published in the future is locked, chapter null is an unnumbered oneshot.
// total is the collection's total, for a walk.
func (md mangadexSite) feed(body []byte, page *url.URL) (chapters []Chapter, listed, total int, err error) {
	a, err := md.decode(body, ProblemNotSeriesPage)
	if err != nil {
		return nil, 0, 0, err
	}
	if a.Response != "collection" || !bytes.HasPrefix(bytes.TrimSpace(a.Data), []byte("[")) {
		if _, _, err := md.manga(body, page); err != nil {
			return nil, 0, 0, err
		}
		return nil, 0, 0, problem(ProblemNoChapters, "the manga record lists no chapter: its chapter feed (/manga/{id}/feed) does")
	}
	var raw []mangadexChapter
	if err := json.Unmarshal(a.Data, &raw); err != nil {
		return nil, 0, 0, problem(ProblemNotSeriesPage, "the chapter feed is not of its shape: %v", err)
	}
	want := md.wantID(page)
	if want == "" {
		want = feedManga(raw)
	}
	now := md.now()
	type upload struct {
		c  Chapter
		at time.Time
	}
	uploads := make([]upload, 0, len(raw))
	for _, ch := range raw {
		if ch.Type != "chapter" || !isUUID(ch.ID) || ch.Attributes.TranslatedLanguage != mangadexLanguage || !md.ofManga(ch, want) {
			continue
		}
		at := mangadexTime(ch.Attributes.PublishAt)
		if at.IsZero() {
			at = mangadexTime(ch.Attributes.ReadableAt)
		}
		locked := ch.Attributes.ExternalURL != nil && *ch.Attributes.ExternalURL != "" || ch.Attributes.Pages <= 0 || at.After(now)
		title := ""
		if ch.Attributes.Title != nil {
			title = collapseSpace(*ch.Attributes.Title)
		}
		var number *float64
		label := title
		if ch.Attributes.Chapter != nil {
			number = numberOf(*ch.Attributes.Chapter)
		}
		switch {
		case number != nil && title != "":
			label = "Chapter " + formatNumber(*number) + " - " + title
		case number != nil:
			label = "Chapter " + formatNumber(*number)
		case label == "":
			label = "Oneshot"
		}
		if len(label) > 300 {
			label = strings.ToValidUTF8(label[:300], "")
		}
		link := "https://" + mangadexWeb + "/chapter/" + strings.ToLower(ch.ID)
		uploads = append(uploads, upload{c: Chapter{Label: label, Number: number, URL: link, Locked: locked}, at: at})
	}
	// Oldest upload first, so one number's first upload comes first and a
	// oneshot keeps its place in time among numbered chapters.
	sort.SliceStable(uploads, func(i, j int) bool { return uploads[i].at.Before(uploads[j].at) })
	byNumber := map[float64]int{}
	out := make([]Chapter, 0, len(uploads))
	for _, u := range uploads {
		if u.c.Number == nil {
			out = append(out, u.c)
			continue
		}
		if i, seen := byNumber[*u.c.Number]; seen {
			// Another group's upload of a number already listed: it stands
			// in only for a locked one.
			if out[i].Locked && !u.c.Locked {
				out[i] = u.c
			}
			continue
		}
		byNumber[*u.c.Number] = len(out)
		out = append(out, u.c)
	}
	// Numbered chapters in number order, in the places numbered chapters
	// hold: a oneshot stays where its date put it.
	var slots []int
	var numbered []Chapter
	for i, c := range out {
		if c.Number != nil {
			slots = append(slots, i)
			numbered = append(numbered, c)
		}
	}
	sort.SliceStable(numbered, func(i, j int) bool { return *numbered[i].Number < *numbered[j].Number })
	for k, i := range slots {
		out[i] = numbered[k]
	}
	total = len(raw)
	if a.Total != nil {
		total = *a.Total
	}
	return tidyChapters(out), len(raw), total, nil
}

// feedManga is the manga most of a feed's chapters belong to: the one a
// feed read without its URL is about.
func feedManga(raw []mangadexChapter) string {
	count := map[string]int{}
	best := ""
	for _, ch := range raw {
		for _, r := range ch.Relationships {
			if r.Type == "manga" && isUUID(r.ID) {
				id := strings.ToLower(r.ID)
				count[id]++
				if count[id] > count[best] || count[id] == count[best] && id < best {
					best = id
				}
				break
			}
		}
	}
	return best
}

// ofManga reports whether a chapter belongs to the manga want ("" when
// unknown: any).
func (md mangadexSite) ofManga(ch mangadexChapter, want string) bool {
	if want == "" {
		return true
	}
	for _, r := range ch.Relationships {
		if r.Type == "manga" {
			return strings.EqualFold(r.ID, want)
		}
	}
	return false
}

func mangadexTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}
	}
	return t
}

func (md mangadexSite) chapters(body []byte, page *url.URL) ([]Chapter, error) {
	out, _, _, err := md.feed(body, page)
	return out, err
}

// latest is the newest readable chapter of a chapter feed: never a locked
// one, which a Reader could not open.
func (md mangadexSite) latest(body []byte, page *url.URL) (Chapter, error) {
	list, _, _, err := md.feed(body, page)
	if err != nil {
		return Chapter{}, err
	}
	for i := len(list) - 1; i >= 0; i-- {
		if !list[i].Locked {
			return list[i], nil
		}
	}
	return Chapter{}, problem(ProblemNoChapters, "the feed lists no readable %s chapter", mangadexLanguage)
}

// seriesID is the manga a body read for a series page is about: the page
// URL's, or the record's own id.
func (md mangadexSite) seriesID(seriesURL string, body []byte) (string, *url.URL, error) {
	pu, _ := url.Parse(seriesURL)
	if id := md.wantID(pu); id != "" {
		return id, pu, nil
	}
	m, ok, err := md.manga(body, nil)
	if err != nil {
		return "", nil, err
	}
	if !ok {
		return "", nil, problem(ProblemNotSeriesPage, "neither the URL nor the body names the manga")
	}
	return strings.ToLower(m.ID), pu, nil
}

// latestOf reads the manga record's Latest Chapter from its feed, the
// second body of a poll. A feed body given as the series body (probed
// alone) answers by itself.
func (md mangadexSite) latestOf(ctx context.Context, fetch PageFetcher, seriesURL string, seriesBody []byte) (Chapter, error) {
	pu, _ := url.Parse(seriesURL)
	if c, err := md.latest(seriesBody, pu); ProblemCode(err) != ProblemNoChapters || !md.isRecord(seriesBody) {
		return c, err
	}
	id, _, err := md.seriesID(seriesURL, seriesBody)
	if err != nil {
		return Chapter{}, err
	}
	feedURL := md.latestFeedURL(id)
	body, err := fetch.FetchPage(ctx, feedURL)
	if err != nil {
		return Chapter{}, fmt.Errorf("mangadex feed of %s: %w", id, err)
	}
	fu, _ := url.Parse(feedURL)
	return md.latest(body, fu)
}

func (md mangadexSite) isRecord(body []byte) bool {
	_, ok, err := md.manga(body, nil)
	return err == nil && ok
}

// chapterList walks the whole feed, oldest first, a page of 500 at a time,
// until the feed's total is reached or a page adds nothing.
func (md mangadexSite) chapterList(ctx context.Context, fetch PageFetcher, seriesURL string, seriesBody []byte) ([]Chapter, error) {
	id, _, err := md.seriesID(seriesURL, seriesBody)
	if err != nil {
		if list, ferr := md.chapters(seriesBody, nil); ferr == nil {
			return list, nil
		}
		return nil, err
	}
	var bodies [][]byte
	for page, offset := 0, 0; page < mangadexMaxPages; page++ {
		feedURL := md.listFeedURL(id, offset)
		body, err := fetch.FetchPage(ctx, feedURL)
		if err != nil {
			return nil, fmt.Errorf("mangadex feed of %s at %d: %w", id, offset, err)
		}
		fu, _ := url.Parse(feedURL)
		_, listed, total, err := md.feed(body, fu)
		if err != nil {
			return nil, err
		}
		bodies = append(bodies, body)
		offset += listed
		if listed == 0 || offset >= total {
			break
		}
	}
	return md.merge(bodies, id)
}

// merge reads the walked pages as one feed, so the rule of one chapter per
// number holds across page boundaries.
func (md mangadexSite) merge(bodies [][]byte, id string) ([]Chapter, error) {
	var all []json.RawMessage
	for _, b := range bodies {
		a, err := md.decode(b, ProblemNotSeriesPage)
		if err != nil {
			return nil, err
		}
		var part []json.RawMessage
		if err := json.Unmarshal(a.Data, &part); err != nil {
			return nil, problem(ProblemNotSeriesPage, "the chapter feed is not of its shape: %v", err)
		}
		all = append(all, part...)
	}
	joined, err := json.Marshal(map[string]any{"result": "ok", "response": "collection", "data": all})
	if err != nil {
		return nil, fmt.Errorf("mangadex feed of %s: %w", id, err)
	}
	u, _ := url.Parse("https://" + mangadexAPI + "/manga/" + id + "/feed")
	return md.chapters(joined, u)
}

// content reads an at-home server answer: baseUrl + /data/<hash>/<file>,
// the original files, in order. A chapter with no files (external, or not
// yet published) is locked.
func (md mangadexSite) content(body []byte, page *url.URL) (Content, error) {
	a, err := md.decode(body, ProblemNotChapterPage)
	if err != nil {
		return Content{}, err
	}
	if a.Chapter == nil {
		return Content{}, problem(ProblemNotChapterPage, "not an at-home server answer (no chapter)")
	}
	base, err := url.Parse(a.BaseURL)
	if err != nil || base.Scheme != "https" || base.Host == "" || base.User != nil || strings.ContainsAny(a.BaseURL, " ?#") {
		return Content{}, problem(ProblemNotChapterPage, "the at-home answer's baseUrl %q is not an https origin", a.BaseURL)
	}
	if !validSlug(a.Chapter.Hash) {
		return Content{}, problem(ProblemNotChapterPage, "the at-home answer's chapter hash is not one")
	}
	root := strings.TrimRight(base.String(), "/")
	pages := make([]string, 0, len(a.Chapter.Data))
	for _, f := range a.Chapter.Data {
		if validSlug(f) {
			pages = append(pages, root+"/data/"+a.Chapter.Hash+"/"+f)
		}
	}
	if len(pages) == 0 {
		return Content{}, problem(ProblemLocked, "MangaDex serves no page of this chapter (an external or unpublished chapter)")
	}
	return Content{Pages: pages}, nil
}
