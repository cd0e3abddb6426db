package latest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// kagane: manga; a browser Site that never falls back. Its data exists only
// in its JSON API, which the in-tab read calls from inside the cleared page
// so the request carries the clearance cookie: the series "body" is the API
// JSON, not HTML.

// kaganeSite is the kagane entry: its answers are methods, so they reach the
// entry (its hosts, its URL shape) without a package variable.
type kaganeSite struct{ *Site }

func newKagane() *Site {
	kagane := kaganeSite{new(Site)}
	*kagane.Site = Site{
		Name:  "kagane",
		Kind:  Manga,
		Hosts: []string{"kagane.to", "kagane.org"},
		// Peers pace kagane at about three requests a second; a browser read
		// is heavier than a plain fetch, so stay at two.
		Pace: 500 * time.Millisecond,
		SeriesPath: func(u *url.URL) (string, string, bool) {
			var buf [maxPathParts]string
			p, ok := pathParts(u, &buf)
			// /series/<uuid>[/reader/<bookUuid>]
			if !ok || len(p) < 2 || p[0] != "series" || !isUUID(p[1]) || len(p) > 2 && (p[2] != "reader" || len(p) != 4) {
				return "", "", false
			}
			id := strings.ToLower(p[1])
			return id, "/series/" + id, true
		},
		Latest: func(body []byte, page *url.URL) (Chapter, error) {
			return latestOf(kagane.chapters(body, page))
		},
		Title: func(body []byte, page *url.URL) (string, error) {
			s, _, err := kagane.decode(body, page)
			if err != nil {
				return "", err
			}
			return titleOf(s.Title), nil
		},
		Cover:    kagane.cover,
		Chapters: kagane.chapters,
		Content:  kagane.content,
		Browser: &Browser{
			Read:     kagane.read,
			Arrived:  kaganeArrived,
			Fallback: false,
		},
	}
	return kagane.Site
}

// apiBase is where a host's API lives: same origin on kagane.to, the
// yuzuki subdomain on the former kagane.org.
func (kagane kaganeSite) apiBase(host string) string {
	if host == "kagane.org" {
		return "https://yuzuki.kagane.org/api/v2"
	}
	return "https://" + host + "/api/v2"
}

// read is the in-tab read. For a series page it calls the series API
// from inside the page (credentials included) and stores the JSON text; for
// a reader page it stores the document, which names the chapter but holds
// no images (those need tokens). Both the URL and the tab's location are
// pinned to kagane's hosts.
func (kagane kaganeSite) read(pageURL string, payload *string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		u, err := parseSiteURL(pageURL)
		if err != nil || !kagane.HasHost(u.Host) {
			return chromedp.Void{}, fmt.Errorf("kagane read %q: %w", pageURL, ErrUnknownSite)
		}
		id, _, ok := kagane.SeriesPath(u)
		if !ok {
			return chromedp.Void{}, fmt.Errorf("kagane read %q: %w", pageURL, ErrNotSeriesURL)
		}
		var buf [maxPathParts]string
		p, _ := pathParts(u, &buf)
		pin := pinJS(kagane.Hosts)
		var script string
		if len(p) == 2 {
			// id is a validated UUID, so it is safe inside the script.
			script = pin + `(async () => {
				const r = await fetch("/api/v2/series/` + id + `", {credentials: "include", headers: {accept: "application/json"}});
				return await r.text();
			})()`
		} else {
			script = pin + `document.documentElement.outerHTML`
		}
		out, err := chromedp.Evaluate[string](script, chromedp.EvalAwaitPromise)(ctx, t)
		if err != nil {
			return chromedp.Void{}, fmt.Errorf("kagane read %s: %w", pageURL, err)
		}
		*payload = out
		return chromedp.Void{}, nil
	}
}

// pinJS returns a statement that throws unless the tab's location.hostname
// (without www.) is one of hosts: a redirect may have taken the tab
// elsewhere since its URL was pinned.
func pinJS(hosts []string) string {
	list, _ := json.Marshal(hosts)
	return `if (!` + string(list) + `.includes(location.hostname.replace(/^www\./, ""))) { throw new Error("host pin: " + location.hostname); }
`
}

// kaganeArrived: the API answered with JSON (a challenge answers HTML), or a
// reader document that is not an interstitial.
func kaganeArrived(payload string) bool {
	trimmed := strings.TrimSpace(payload)
	if strings.HasPrefix(trimmed, "{") {
		return json.Valid([]byte(trimmed))
	}
	return trimmed != "" && !isChallenge([]byte(trimmed))
}

// isChallenge reports a challenge interstitial.
func isChallenge(body []byte) bool {
	return Diagnose(body, ProblemNotSeriesPage, "").Code == ProblemChallenge
}

// kaganeSeries is the part of the series API answer extraction reads.
type kaganeSeries struct {
	SeriesID     string `json:"series_id"`
	ID           string `json:"id"`
	Title        string `json:"title"`
	SeriesCovers []struct {
		ImageID string `json:"image_id"`
	} `json:"series_covers"`
	SeriesBooks []struct {
		BookID    string `json:"book_id"`
		Title     string `json:"title"`
		ChapterNo any    `json:"chapter_no"`
		VolumeNo  any    `json:"volume_no"`
		SortNo    any    `json:"sort_no"`
	} `json:"series_books"`
	// Error answers carry these instead.
	Message    any `json:"message"`
	Error      any `json:"error"`
	StatusCode any `json:"statusCode"`
}

// kaganeNotFound reports the API's error answer for a thing that does not
// exist: {"statusCode": 404, ...}.
func kaganeNotFound(status any) bool {
	switch v := status.(type) {
	case float64:
		return v == 404
	case string:
		return v == "404"
	}
	return false
}

func (kagane kaganeSite) decode(body []byte, page *url.URL) (kaganeSeries, string, error) {
	trimmed := bytes.TrimSpace(body)
	if !bytes.HasPrefix(trimmed, []byte("{")) {
		return kaganeSeries{}, "", Diagnose(body, ProblemNotSeriesPage, "not the series API's JSON")
	}
	var s kaganeSeries
	if err := json.Unmarshal(trimmed, &s); err != nil {
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) {
			return kaganeSeries{}, "", problem(ProblemNotSeriesPage, "the series API answer is not valid JSON: %v", err)
		}
		return kaganeSeries{}, "", problem(ProblemNotSeriesPage, "the series API answer has an unknown shape: %v", err)
	}
	if s.SeriesBooks == nil && s.Title == "" {
		msg := collapseSpace(fmt.Sprint(firstNonNil(s.Message, s.Error, s.StatusCode)))
		if kaganeNotFound(s.StatusCode) {
			// The API's own 404, read in the tab where no HTTP status is
			// seen: permanent, like a plain Site's 404.
			return kaganeSeries{}, "", problem(ProblemNotFound, "the API answered that the series does not exist (%s)", msg)
		}
		return kaganeSeries{}, "", problem(ProblemNotSeriesPage, "the API answered without a series (%s)", msg)
	}
	id := ""
	if page != nil {
		if ref, err := kagane.ResolveOn(page.String()); err == nil {
			_, id, _ = SplitKey(ref.Key)
		}
	}
	if id == "" {
		for _, c := range []string{s.SeriesID, s.ID} {
			if isUUID(c) {
				id = strings.ToLower(c)
				break
			}
		}
	}
	return s, id, nil
}

func firstNonNil(vs ...any) any {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return "no message"
}

func (kagane kaganeSite) chapters(body []byte, page *url.URL) ([]Chapter, error) {
	s, id, err := kagane.decode(body, page)
	if err != nil {
		return nil, err
	}
	base := kagane.baseURL(page)
	if id == "" {
		return nil, problem(ProblemNotSeriesPage, "neither the page URL nor the answer names the series id")
	}
	type book struct {
		c    Chapter
		sort float64
	}
	books := make([]book, 0, len(s.SeriesBooks))
	sorted := true
	for i, b := range s.SeriesBooks {
		if !validSlug(b.BookID) {
			continue
		}
		n := numberOf(b.ChapterNo)
		label := collapseSpace(b.Title)
		if label == "" && n != nil {
			label = "Chapter " + formatNumber(*n)
		}
		link := "https://" + base.Hostname() + "/series/" + id + "/reader/" + b.BookID
		key := numberOf(b.SortNo)
		if key == nil {
			sorted = false
			key = new(float64(i))
		}
		books = append(books, book{c: chapterOf(label, n, link, false), sort: *key})
	}
	if sorted {
		sort.SliceStable(books, func(i, j int) bool { return books[i].sort < books[j].sort })
	}
	out := make([]Chapter, len(books))
	for i, b := range books {
		out[i] = b.c
	}
	if !sorted {
		sortByNumber(out)
	}
	return tidyChapters(out), nil
}

func (kagane kaganeSite) cover(body []byte, page *url.URL) (string, error) {
	s, _, err := kagane.decode(body, page)
	if err != nil {
		return "", err
	}
	for _, c := range s.SeriesCovers {
		if validSlug(c.ImageID) {
			return kagane.apiBase(kagane.baseURL(page).Hostname()) + "/image/" + c.ImageID, nil
		}
	}
	return "", nil
}

// content reads a book manifest ({"pages": [...]}) when one is given.
// The reader page itself holds no images: they need an integrity token and
// a per-book access token, so archive skips kagane chapters with "locked".
func (kagane kaganeSite) content(body []byte, page *url.URL) (Content, error) {
	trimmed := bytes.TrimSpace(body)
	if !bytes.HasPrefix(trimmed, []byte("{")) {
		p := Diagnose(body, ProblemNotChapterPage, "not a kagane reader page")
		if p.Code == ProblemNotChapterPage && kagane.isReader(body) {
			return Content{}, problem(ProblemLocked, "kagane serves page images only with an integrity token and a per-book access token")
		}
		return Content{}, p
	}
	manifest := jsonObject(string(trimmed))
	if manifest == nil {
		return Content{}, problem(ProblemNotChapterPage, "the book manifest is not a JSON object")
	}
	list, ok := manifest["pages"]
	if !ok {
		if kaganeNotFound(manifest["statusCode"]) {
			return Content{}, problem(ProblemNotFound, "the API answered that the chapter does not exist")
		}
		return Content{}, problem(ProblemNotChapterPage, "the JSON is not a book manifest (no pages)")
	}
	base := kagane.baseURL(page)
	var pages []string
	for _, v := range listOf(list) {
		raw := stringOf(v)
		if m := mapOf(v); m != nil {
			raw = stringOf(firstOf(m, "url", "image_url", "src"))
		}
		if u, ok := absURL(base, raw); ok {
			pages = append(pages, u)
		}
	}
	if len(pages) == 0 {
		return Content{}, problem(ProblemLocked, "kagane's book answer lists no page image (%s)", collapseSpace(fmt.Sprint(firstNonNil(manifest["message"], manifest["error"]))))
	}
	return Content{Pages: pages}, nil
}

// isReader reports a kagane reader document: its canonical or og:url
// is a reader URL.
func (kagane kaganeSite) isReader(body []byte) bool {
	doc, err := parseHTML(body, ProblemNotChapterPage)
	if err != nil {
		return false
	}
	for _, sel := range []string{`link[rel="canonical"]`, `meta[property="og:url"]`} {
		n := doc.Find(sel).First()
		v := n.AttrOr("href", n.AttrOr("content", ""))
		if strings.Contains(v, "/reader/") && kagane.keyOf(v) != "" {
			return true
		}
	}
	return false
}
