package web

import (
	"net/url"
	"strings"
	"unicode"
)

// coverView is what the "cover" template draws: the Cover image over the
// monogram placeholder, the same tile the userscript panel draws when a
// Bookmark has no Cover ("" on the wire) or its image fails to load.
type coverView struct {
	Src           string
	Monogram      string
	Width, Height int
	Large         bool
}

// Cover sizes keep the panel's 5:7 tile (40×56 there).
func newCover(src, title, key string, large bool) coverView {
	c := coverView{Src: httpURL(src), Monogram: monogram(title, key), Width: 80, Height: 112, Large: large}
	if large {
		c.Width, c.Height = 160, 224
	}
	return c
}

// monogram is the placeholder's text, computed as the panel's monogram()
// does (userscripts/src/core/bookmarks.js): the first letter or digit of each
// of the title's first two words, upper-cased; with no title, the same from
// the Series key's slug with - and _ read as spaces; "?" when nothing is left.
func monogram(title, key string) string {
	source := strings.Join(strings.Fields(title), " ")
	if source == "" {
		if _, slug, ok := strings.Cut(key, ":"); ok {
			source = strings.NewReplacer("-", " ", "_", " ").Replace(slug)
		}
	}
	var out []rune
	for _, word := range strings.Fields(source) {
		for _, r := range word {
			if unicode.IsLetter(r) || unicode.IsNumber(r) {
				out = append(out, r)
				break
			}
		}
		if len(out) == 2 {
			break
		}
	}
	if len(out) == 0 {
		return "?"
	}
	return strings.ToUpper(string(out))
}

// httpURL returns s when it is an absolute http(s) URL without credentials,
// else "": only such URLs become an href or a src.
func httpURL(s string) string {
	if s == "" || len(s) > 4096 {
		return ""
	}
	v, err := url.Parse(s)
	if err != nil || (v.Scheme != "http" && v.Scheme != "https") || v.Host == "" || v.User != nil {
		return ""
	}
	return s
}
