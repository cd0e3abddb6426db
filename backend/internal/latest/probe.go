package latest

import (
	"context"
	"net/url"
	"unicode/utf8"
)

// The pages Probe reads.
const (
	PageSeries  = "series"
	PageChapter = "chapter"
)

// ProbeResult is everything the registry answers for one body: what
// `lectern probe` prints for an Owner debugging a Site that changed.
type ProbeResult struct {
	Site          string    `json:"site"`
	Key           string    `json:"key"`
	Page          string    `json:"page"`
	Title         string    `json:"title"`
	LatestChapter *Chapter  `json:"latest_chapter"`
	Cover         string    `json:"cover"`
	Chapters      []Chapter `json:"chapters"`
	Pages         []string  `json:"pages"`
	TextChars     int       `json:"text_chars"`
	// Text is a chapter page's whole text ("" for manga and series pages).
	Text string `json:"text"`
	// Problem is the code of the first Problem met ("" when every question
	// answered), Detail what it says.
	Problem   string `json:"problem"`
	Detail    string `json:"detail,omitempty"`
	BodyBytes int    `json:"body_bytes"`
	// Answered is false when the body is not the page asked for at all (a
	// challenge, an error page, another page): `lectern probe` exits 3.
	Answered bool `json:"-"`
}

// Probe asks site every question that applies to a body of the given page
// kind (PageSeries or PageChapter). pageURL is where the body came from, ""
// when unknown; it resolves relative links and names the key ("" when the
// URL names no Series: a chapter at a theme's root).
func Probe(site *Site, page, pageURL string, body []byte) ProbeResult {
	return ProbeWith(context.Background(), site, page, pageURL, body, nil)
}

// ProbeWith is Probe with the further bodies a Site's overrides ask for
// (LatestOf, ChapterList: madara's ajax chapter list) read through fetch,
// as the Poll reads them. With fetch nil only the one body is read.
func ProbeWith(ctx context.Context, site *Site, page, pageURL string, body []byte, fetch PageFetcher) ProbeResult {
	if fetch != nil {
		// Latest and the chapter list ask for the same further body: it is
		// fetched once.
		fetch = &memoFetcher{next: fetch, bodies: map[string][]byte{}}
	}
	r := ProbeResult{Site: site.Name, Page: page, Chapters: []Chapter{}, Pages: []string{}, BodyBytes: len(body), Answered: true}
	var pu *url.URL
	if pageURL != "" {
		if ref, err := site.ResolveOn(pageURL); err == nil {
			r.Key = ref.Key
		}
		pu, _ = url.Parse(pageURL)
	}
	note := func(err error) {
		if err == nil {
			return
		}
		p, ok := err.(*Problem)
		if !ok {
			p = &Problem{Code: "error", Detail: err.Error()}
		}
		if p.NotPage() {
			r.Answered = false
		}
		// The first problem is reported, unless a later one says the body is
		// not the page at all, which explains the others.
		if r.Problem == "" || p.NotPage() && !isNotPageCode(r.Problem) {
			r.Problem, r.Detail = p.Code, p.Detail
		}
	}
	switch page {
	case PageChapter:
		c, err := site.Content(body, pu)
		note(err)
		if c.Pages != nil {
			r.Pages = c.Pages
		}
		r.TextChars = utf8.RuneCountInString(c.Text)
		r.Text = c.Text
	default:
		r.Page = PageSeries
		title, err := site.Title(body, pu)
		note(err)
		r.Title = title
		var latest Chapter
		if fetch != nil && site.LatestOf != nil && pu != nil {
			latest, err = site.LatestOf(ctx, fetch, pu.String(), body)
		} else {
			latest, err = site.Latest(body, pu)
		}
		note(err)
		if err == nil {
			r.LatestChapter = &latest
		}
		cover, err := site.Cover(body, pu)
		note(err)
		r.Cover = cover
		var chapters []Chapter
		if fetch != nil && site.ChapterList != nil && pu != nil {
			chapters, err = site.AllChapters(ctx, fetch, pu.String(), body)
		} else {
			chapters, err = site.Chapters(body, pu)
		}
		note(err)
		if chapters != nil {
			r.Chapters = chapters
		}
	}
	return r
}

func isNotPageCode(code string) bool { return (&Problem{Code: code}).NotPage() }

// memoFetcher answers a repeated request from the first answer.
type memoFetcher struct {
	next   PageFetcher
	bodies map[string][]byte
}

func (m *memoFetcher) FetchPage(ctx context.Context, rawURL string) ([]byte, error) {
	if b, ok := m.bodies["GET "+rawURL]; ok {
		return b, nil
	}
	b, err := m.next.FetchPage(ctx, rawURL)
	if err == nil {
		m.bodies["GET "+rawURL] = b
	}
	return b, err
}

func (m *memoFetcher) PostForm(ctx context.Context, rawURL string, form url.Values) ([]byte, error) {
	k := "POST " + rawURL + "?" + form.Encode()
	if b, ok := m.bodies[k]; ok {
		return b, nil
	}
	b, err := m.next.PostForm(ctx, rawURL, form)
	if err == nil {
		m.bodies[k] = b
	}
	return b, err
}
