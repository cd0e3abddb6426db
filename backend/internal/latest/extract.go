package latest

import (
	"bytes"
	"encoding/json"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Helpers shared by the Sites' extractors. Third-party bodies are hostile
// input: every helper is linear in the body, never panics, and answers
// "nothing" rather than a guess.

// parseHTML parses a body into a document. The parser refuses nesting deeper
// than 512 elements, which no real page reaches; such a body is named a
// problem of kind notPage rather than partly read.
func parseHTML(body []byte, notPage string) (*goquery.Document, error) {
	root, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return nil, problem(notPage, "the body is not parseable HTML: %v", err)
	}
	return goquery.NewDocumentFromNode(root), nil
}

// baseURL is what relative links of a body resolve against: the page it was
// fetched from when that is a page of the Site, otherwise the Site's current
// host, so a foreign page URL cannot lend links a foreign host.
func (s *Site) baseURL(page *url.URL) *url.URL {
	if page != nil && page.IsAbs() && (page.Scheme == "https" || page.Scheme == "http") && s.HasHost(page.Hostname()) {
		return page
	}
	return &url.URL{Scheme: "https", Host: s.Hosts[0], Path: "/"}
}

// absURL resolves ref against base and returns it absolute, with raw spaces
// and other characters a URL may not carry percent-encoded. Only http(s)
// URLs with a host are answers; a fragment is dropped.
func absURL(base *url.URL, ref string) (string, bool) {
	ref = strings.TrimSpace(ref)
	if ref == "" || len(ref) > 4096 {
		return "", false
	}
	ref = escapeLoose(ref)
	u, err := url.Parse(ref)
	if err != nil {
		return "", false
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return "", false
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String(), true
}

// escapeLoose percent-encodes the characters pages leave raw in URLs (spaces
// above all: demonic's Cover and page addresses carry them) and refuses none;
// control characters make url.Parse fail later, which is the answer for them.
func escapeLoose(s string) string {
	if !strings.ContainsAny(s, " \"<>\\^`{|}") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '"', '<', '>', '\\', '^', '`', '{', '|', '}':
			b.WriteByte('%')
			b.WriteByte("0123456789ABCDEF"[c>>4])
			b.WriteByte("0123456789ABCDEF"[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// siteURL resolves ref and keeps it only when it is on one of the Site's
// hosts: a chapter link elsewhere is not this Site's chapter.
func (s *Site) siteURL(base *url.URL, ref string) (string, bool) {
	abs, ok := absURL(base, ref)
	if !ok {
		return "", false
	}
	u, err := url.Parse(abs)
	if err != nil || !s.HasHost(u.Hostname()) {
		return "", false
	}
	return abs, true
}

// keyOf returns the Series key a URL resolves to on this Site, or "".
func (s *Site) keyOf(raw string) string {
	ref, err := s.ResolveOn(raw)
	if err != nil {
		return ""
	}
	return ref.Key
}

// pageKey is the Series key the body belongs to: from the page URL when it
// names a Series, otherwise from the page's own canonical address. "" when
// neither says, and then only the page structure scopes what is read.
func (s *Site) pageKey(page *url.URL, doc *goquery.Document) string {
	if page != nil {
		if k := s.keyOf(page.String()); k != "" {
			return k
		}
	}
	if doc == nil {
		return ""
	}
	if href, ok := doc.Find(`link[rel="canonical"]`).First().Attr("href"); ok {
		if k := s.keyOf(href); k != "" {
			return k
		}
	}
	if href, ok := doc.Find(`meta[property="og:url"]`).First().Attr("content"); ok {
		if k := s.keyOf(href); k != "" {
			return k
		}
	}
	return ""
}

// metaContent returns the content of the first <meta> whose property or name
// is key.
func metaContent(doc *goquery.Document, key string) string {
	v, _ := doc.Find(`meta[property="` + key + `"], meta[name="` + key + `"]`).First().Attr("content")
	return strings.TrimSpace(v)
}

// coverURL makes the first usable published Cover address absolute; the
// candidates are in order of preference. It encodes what must be encoded
// and changes nothing else: inventing a rendition by editing a URL is a
// guess that breaks silently. "" when none is usable.
func coverURL(base *url.URL, candidates ...string) string {
	for _, ref := range candidates {
		if u, ok := absURL(base, ref); ok {
			return u
		}
	}
	return ""
}

// titleOf is a title as shown: white space folded, bounded.
func titleOf(s string) string {
	s = collapseSpace(s)
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "")
	}
	return s
}

// collapseSpace trims s and folds every run of white space into one space.
func collapseSpace(s string) string {
	s = strings.TrimSpace(s)
	if !strings.ContainsAny(s, "\t\n\r\f\v\u00a0") && !strings.Contains(s, "  ") {
		return s
	}
	return strings.Join(strings.FieldsFunc(s, isSpace), " ")
}

func isSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\f', '\v', '\u00a0':
		return true
	}
	return false
}

// ownText is the text of n's direct text children, collapsed: a chapter link
// whose date sits in a child span reads "Chapter 12", not "Chapter 12 2025-01-03".
func ownText(sel *goquery.Selection) string {
	var b strings.Builder
	for _, n := range sel.Nodes {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.TextNode {
				b.WriteString(c.Data)
				b.WriteByte(' ')
			}
		}
	}
	return collapseSpace(b.String())
}

// chapterOf builds a Chapter; the number is the Site's own when it gives one,
// otherwise the one the label carries.
func chapterOf(label string, number *float64, link string, locked bool) Chapter {
	label = collapseSpace(label)
	if len(label) > 300 {
		label = strings.ToValidUTF8(label[:300], "")
	}
	if number == nil {
		if n, ok := ParseChapterNumber(label); ok {
			number = &n
		}
	}
	return Chapter{Label: label, Number: number, URL: link, Locked: locked}
}

// numberOf reads a chapter number a Site gives as a JSON number or string.
func numberOf(v any) *float64 {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case string:
		x = strings.TrimSpace(x)
		n, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return nil
		}
		f = n
	default:
		return nil
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > maxChapterNumber {
		return nil
	}
	return &f
}

// formatNumber writes a chapter number as Sites put it in URLs: 12, 12.5.
func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// latestOf is the newest of chapters listed oldest first.
func latestOf(chapters []Chapter, err error) (Chapter, error) {
	if err != nil {
		return Chapter{}, err
	}
	if len(chapters) == 0 {
		return Chapter{}, problem(ProblemNoChapters, "the series page lists no chapter")
	}
	return chapters[len(chapters)-1], nil
}

// tidyChapters drops repeated chapter URLs, keeping the first (a page that
// lists a chapter twice, as a "first chapter" button or a "new" badge, lists
// it once), and chapters without a label or URL, which name nothing a
// Reader could recognise.
func tidyChapters(chapters []Chapter) []Chapter {
	seen := make(map[string]bool, len(chapters))
	out := chapters[:0]
	for _, c := range chapters {
		if seen[c.URL] || c.URL == "" || c.Label == "" {
			continue
		}
		seen[c.URL] = true
		out = append(out, c)
	}
	return out
}

// orderedNumbers is the rule for a Site whose list order is canonical but
// which gives no numbers of its own (Royal Road): a number read from a
// label counts only while it goes up along the list, oldest first. A label
// whose number does not (a "Book 2, Chapter 1" after "Chapter 50", a second
// "Chapter 5") keeps its label and loses the number, so unread falls back to
// the chapter URL instead of calling a newer chapter read (docs/adr/0022).
func orderedNumbers(chapters []Chapter) []Chapter {
	top := -1.0
	for i := range chapters {
		n := chapters[i].Number
		if n == nil {
			continue
		}
		if *n <= top {
			chapters[i].Number = nil
			continue
		}
		top = *n
	}
	return chapters
}

// reversed returns chapters in the opposite order (Sites that list newest
// first are read into oldest first).
func reversed(chapters []Chapter) []Chapter {
	slices.Reverse(chapters)
	return chapters
}

// textOptions says which elements of a chapter container are not the
// chapter's text.
type textOptions struct {
	// drop reports an element that is removed with everything inside it (ads,
	// navigation, share bars).
	drop func(n *html.Node) bool
	// stop reports the element where the text ends (a comment thread): it and
	// everything after it in document order is cut off.
	stop func(n *html.Node) bool
}

// skipAlways are elements that never hold a chapter's text.
var skipAlways = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Iframe: true, atom.Template: true,
	atom.Svg: true, atom.Math: true, atom.Button: true, atom.Form: true, atom.Input: true, atom.Select: true,
	atom.Textarea: true, atom.Nav: true, atom.Ins: true, atom.Object: true, atom.Embed: true, atom.Img: true,
	atom.Video: true, atom.Audio: true, atom.Canvas: true, atom.Head: true, atom.Aside: true,
}

// brMark stands for a <br> in a paragraph being gathered; the parser never
// leaves NUL in text, and text nodes are cleaned of it anyway.
const brMark = "\x00"

// brRun is two or more <br> with only white space between.
var brRun = regexp.MustCompile(`\x00[\s\x00]*\x00`)

// blockAtoms end a paragraph where they start and where they end.
var blockAtoms = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true,
	atom.H5: true, atom.H6: true, atom.Li: true, atom.Ul: true, atom.Ol: true, atom.Blockquote: true,
	atom.Section: true, atom.Article: true, atom.Pre: true, atom.Tr: true, atom.Table: true, atom.Hr: true,
	atom.Figure: true, atom.Header: true, atom.Footer: true, atom.Main: true, atom.Dd: true, atom.Dt: true,
}

// paragraphText renders the text under root as plain paragraphs separated by
// one blank line. It walks iteratively so a deep tree costs no stack.
func paragraphText(root *html.Node, opt textOptions) string {
	var paras []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() == 0 {
			return
		}
		// One <br> is a line break inside a paragraph; two or more in a row
		// (how many Sites separate paragraphs) end it.
		for _, block := range brRun.Split(cur.String(), -1) {
			var lines []string
			for line := range strings.SplitSeq(block, brMark) {
				if l := collapseSpace(line); l != "" {
					lines = append(lines, l)
				}
			}
			if len(lines) > 0 {
				paras = append(paras, strings.Join(lines, "\n"))
			}
		}
		cur.Reset()
	}
	type frame struct {
		n     *html.Node
		leave bool
	}
	stack := []frame{{n: root}}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := f.n
		if f.leave {
			flush()
			continue
		}
		switch n.Type {
		case html.TextNode:
			cur.WriteString(strings.ReplaceAll(n.Data, brMark, ""))
			continue
		case html.ElementNode:
			if n != root {
				if opt.stop != nil && opt.stop(n) {
					flush()
					return strings.Join(paras, "\n\n")
				}
				if skipAlways[n.DataAtom] || (opt.drop != nil && opt.drop(n)) {
					if blockAtoms[n.DataAtom] {
						// A removed block still separates the text around it.
						flush()
					}
					continue
				}
			}
			if n.DataAtom == atom.Br {
				cur.WriteString(brMark)
				continue
			}
			if blockAtoms[n.DataAtom] {
				flush()
				stack = append(stack, frame{n: n, leave: true})
			}
		case html.DocumentNode:
		default:
			continue
		}
		// Children go on the stack last first, so they are visited in order.
		last := len(stack)
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			stack = append(stack, frame{n: c})
		}
		slices.Reverse(stack[last:])
	}
	flush()
	return strings.Join(paras, "\n\n")
}

// hasClass reports whether the element carries any of the classes.
func hasClass(n *html.Node, classes ...string) bool {
	for _, a := range n.Attr {
		if a.Key != "class" {
			continue
		}
		for f := range strings.FieldsSeq(a.Val) {
			if slices.Contains(classes, f) {
				return true
			}
		}
	}
	return false
}

// attr returns the value of an element's attribute.
func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// jsonObject decodes a JSON object from a script body or attribute. A body
// that is not one answers nil.
func jsonObject(data string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &m); err != nil {
		return nil
	}
	return m
}

// The accessors below read decoded JSON of unknown shape without panicking.

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func listOf(v any) []any {
	l, _ := v.([]any)
	return l
}

func stringOf(v any) string {
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x)
	case float64:
		return formatNumber(x)
	}
	return ""
}

func boolOf(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x == "true" || x == "1"
	}
	return false
}

// firstOf returns the first of keys that m holds with a non-null value.
func firstOf(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil {
			return v
		}
	}
	return nil
}
