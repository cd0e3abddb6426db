package latest

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SlugTitle is a title made of a series URL's slug, for pages to show
// while no poll has read the Series' own title: the last path segment's
// words, capitalised, without the ids Sites append or prepend
// ("omniscient-readers-viewpoint-7f3k9a2b" is "Omniscient Readers
// Viewpoint"). A slug that is only an id gives "": the caller says
// "Untitled" then, never the Series key.
func SlugTitle(seriesURL string) string {
	u, err := url.Parse(seriesURL)
	if err != nil {
		return ""
	}
	segs := strings.FieldsFunc(u.Path, func(r rune) bool { return r == '/' })
	if len(segs) == 0 {
		return ""
	}
	slug, err := url.PathUnescape(segs[len(segs)-1])
	if err != nil {
		return ""
	}
	for _, ext := range []string{".html", ".htm", ".php"} {
		slug = strings.TrimSuffix(slug, ext)
	}
	var words []string
	for _, w := range strings.FieldsFunc(slug, func(r rune) bool { return r == '-' || r == '_' || r == '+' || unicode.IsSpace(r) }) {
		if slugID(w) {
			continue
		}
		r, n := utf8.DecodeRuneInString(w)
		words = append(words, string(unicode.ToUpper(r))+w[n:])
	}
	return strings.Join(words, " ")
}

// slugID reports a slug token that is an id, not a word: letters mixed with
// digits, five or more of them (7f3k9a2b, r8k2m) or hexadecimal (a UUID's
// 7d1e), or a long number.
func slugID(w string) bool {
	var letters, digits int
	hex := true
	for _, r := range w {
		switch {
		case unicode.IsDigit(r):
			digits++
		case unicode.IsLetter(r):
			letters++
			hex = hex && strings.ContainsRune("abcdefABCDEF", r)
		}
	}
	mixed := digits > 0 && letters > 0
	return mixed && (len(w) >= 5 || hex) || digits >= 5 && letters == 0
}

// DisplayTitle is the title pages and exports show for a Series: its own,
// else its slug's words, else "Untitled"; never the Series key.
func DisplayTitle(title, seriesURL string) string {
	if title != "" {
		return title
	}
	if t := SlugTitle(seriesURL); t != "" {
		return t
	}
	return "Untitled"
}
