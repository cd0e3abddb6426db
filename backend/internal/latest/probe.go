package latest

import (
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
// when unknown; it resolves relative links and names the key.
func Probe(site *Site, page, pageURL string, body []byte) ProbeResult {
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
	default:
		r.Page = PageSeries
		title, err := site.Title(body, pu)
		note(err)
		r.Title = title
		latest, err := site.Latest(body, pu)
		note(err)
		if err == nil {
			r.LatestChapter = &latest
		}
		cover, err := site.Cover(body, pu)
		note(err)
		r.Cover = cover
		chapters, err := site.Chapters(body, pu)
		note(err)
		if chapters != nil {
			r.Chapters = chapters
		}
	}
	return r
}

func isNotPageCode(code string) bool { return (&Problem{Code: code}).NotPage() }
