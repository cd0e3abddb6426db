package latest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/net/html"
)

// Problem is why a body gave no answer. Extractors return it instead of a
// guess, so the Poll can log the code with the body length and the Owner can
// see which Sites changed.
type Problem struct {
	// Code is stable and machine-readable: one of the Problem* constants.
	Code string
	// Detail says what was (not) found, for a person.
	Detail string
}

// The Problem codes. They are logged and shown to the Owner, so they never
// change meaning.
const (
	// ProblemChallenge: a JavaScript challenge interstitial (Cloudflare's
	// "Just a moment...") instead of the page.
	ProblemChallenge = "challenge"
	// ProblemAccessDenied: the Site refused the request (a block page, 403).
	ProblemAccessDenied = "access_denied"
	// ProblemLoginWall: the Site asks to sign in before showing the page.
	ProblemLoginWall = "login_wall"
	// ProblemEmptyBody: nothing, or only whitespace, came back.
	ProblemEmptyBody = "empty_body"
	// ProblemNotSeriesPage: the body is not the Site's series page as known
	// (an error page, another page, or a changed structure).
	ProblemNotSeriesPage = "not_series_page"
	// ProblemNotChapterPage: the body is not the Site's chapter page as known.
	ProblemNotChapterPage = "not_chapter_page"
	// ProblemNoChapters: a series page that lists no chapter.
	ProblemNoChapters = "no_chapters"
	// ProblemLocked: a chapter the Site withholds (premium, early access, or
	// pages behind a per-book token).
	ProblemLocked = "locked"
	// ProblemScrambled: the Site serves the chapter's images encrypted or
	// scrambled, so storing them would store garbage.
	ProblemScrambled = "scrambled"
	// ProblemNotFound: the Site's own not-found page ("404", "Page not
	// found"), whatever status it came with: through a browser a 404 has no
	// status to read, so the page says it. Like an HTTP 404, retrying will
	// not change it.
	ProblemNotFound = "not_found"
)

func (p *Problem) Error() string {
	if p.Detail == "" {
		return p.Code
	}
	return p.Code + ": " + p.Detail
}

// NotPage reports whether the problem means the body is not the page that was
// asked for at all, as opposed to a real page that has no answer (a Series
// without chapters, a locked chapter).
func (p *Problem) NotPage() bool {
	switch p.Code {
	case ProblemChallenge, ProblemAccessDenied, ProblemLoginWall, ProblemEmptyBody, ProblemNotSeriesPage, ProblemNotChapterPage, ProblemNotFound:
		return true
	}
	return false
}

func problem(code, format string, args ...any) *Problem {
	return &Problem{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// ProblemCode returns the code of the Problem in err's chain, or "".
func ProblemCode(err error) string {
	var p *Problem
	if errors.As(err, &p) {
		return p.Code
	}
	return ""
}

// IsBackoffProblem reports whether err means the Site is refusing this
// deployment (a challenge that did not clear, or an access-denied page), so
// the Poll should back the whole Site off rather than retry the Series.
func IsBackoffProblem(err error) bool {
	switch ProblemCode(err) {
	case ProblemChallenge, ProblemAccessDenied:
		return true
	}
	return false
}

// diagnoseScan bounds how much of a body diagnose looks at: challenge and
// error pages are small, and a real page that failed extraction is named by
// its head.
const diagnoseScan = 64 << 10

// Diagnose names why body, which gave no answer, is not the page wanted.
// It runs only after extraction failed: real pages also load Cloudflare's
// challenge-platform script, so those markers prove nothing on a page that
// answered. notPage is the code for a body that is none of the known
// non-pages, with what the extractor missed as detail.
func Diagnose(body []byte, notPage, missing string) *Problem {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return problem(ProblemEmptyBody, "the body is empty")
	}
	head := trimmed
	if len(head) > diagnoseScan {
		head = head[:diagnoseScan]
	}
	low := strings.ToLower(string(head))
	title := collapseSpace(htmlTitle(string(head)))
	lt := strings.ToLower(title)
	switch {
	case strings.Contains(lt, "just a moment") || strings.Contains(low, "window._cf_chl_opt") || strings.Contains(low, "cf-browser-verification") ||
		strings.Contains(lt, "checking your browser") || strings.Contains(lt, "ddos-guard"):
		return problem(ProblemChallenge, "a JavaScript challenge interstitial (%d bytes, title %q)", len(body), title)
	case strings.Contains(lt, "access denied") || strings.Contains(low, "error code: 1020") || strings.Contains(low, "error code 1020") ||
		strings.Contains(low, "error 1020") || strings.Contains(lt, "403 forbidden") || strings.Contains(lt, "you have been blocked") ||
		strings.Contains(lt, "attention required"):
		return problem(ProblemAccessDenied, "the Site refused access (title %q)", title)
	case strings.Contains(low, `type="password"`) || strings.Contains(low, `type=password`) || strings.Contains(low, `type='password'`):
		return problem(ProblemLoginWall, "a sign-in form instead of the page (title %q)", title)
	}
	for _, e := range notFoundTitles {
		if strings.Contains(lt, e) {
			return problem(ProblemNotFound, "the Site's not-found page (title %q)", title)
		}
	}
	for _, e := range errorTitles {
		if strings.Contains(lt, e) {
			return problem(notPage, "an error page (title %q)", title)
		}
	}
	if title != "" {
		return problem(notPage, "%s (title %q)", missing, title)
	}
	return problem(notPage, "%s", missing)
}

// notFoundTitles are the titles of a Site's own not-found page; errorTitles
// those of pages a retry may get past.
var notFoundTitles = []string{"404", "not found", "does not exist", "doesn't exist", "no longer available"}

var errorTitles = []string{"500", "internal server error", "502", "bad gateway", "503", "service unavailable", "504", "gateway time", "error"}

// htmlTitle returns the text of the first <title> element of a body, or "". The tokenizer skips comments and script text, so a title
// mentioned there does not count.
func htmlTitle(low string) string {
	z := html.NewTokenizer(strings.NewReader(low))
	depth := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "svg":
				depth++
			case "title":
				if depth == 0 && z.Next() == html.TextToken {
					t := z.Text()
					if len(t) > 512 {
						t = t[:512]
					}
					return string(t)
				}
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); string(name) == "svg" && depth > 0 {
				depth--
			}
		}
	}
}
