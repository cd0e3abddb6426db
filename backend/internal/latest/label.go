package latest

import (
	"regexp"
	"strconv"
	"strings"
)

// maxChapterNumber bounds the numbers read as chapter numbers: larger ones are
// ids or years, not chapters.
const maxChapterNumber = 1e6

// A chapter number: digits, optionally grouped by thousands ("1,234"), with
// an optional decimal part ("12.5").
const numberPattern = `(\d{1,3}(?:,\d{3})+|\d{1,6})(?:\.(\d{1,3}))?`

// chapterNumberRe finds the number that follows a chapter word. Volume and
// season numbers ("Vol. 2", "Season 2") are skipped because only the chapter
// word anchors a match.
var chapterNumberRe = regexp.MustCompile(`(?i)\b(?:chapter|chap|ch|episode|ep)\b\.?[\s:#-]{0,3}` + numberPattern + `\b`)

// cjkNumberRe reads "第105话" / "第105話" / "第105章".
var cjkNumberRe = regexp.MustCompile(`第\s*` + numberPattern + `\s*[话話章回]`)

// bareNumberRe reads a label that is only a number, or starts with one
// ("42", "#42", "12.5 - Title").
var bareNumberRe = regexp.MustCompile(`^#?` + numberPattern + `(?:$|[^\d.,]|\.(?:$|\D))`)

// ParseChapterNumber reads the chapter number from a label as a Site shows it:
// "Chapter 105" → 105, "Ch. 12.5 - Title" → 12.5, "Episode 3" → 3,
// "Vol. 2 Chapter 10" → 10, "Chapter 1,234" → 1234, "42" → 42. ok is false
// when the label has none ("Prologue", "Vol. 2"): a guess would make unread
// badges lie.
func ParseChapterNumber(label string) (n float64, ok bool) {
	if len(label) > 512 {
		label = label[:512]
	}
	m := chapterNumberRe.FindStringSubmatch(label)
	if m == nil {
		m = cjkNumberRe.FindStringSubmatch(label)
	}
	if m == nil {
		m = bareNumberRe.FindStringSubmatch(strings.TrimSpace(label))
	}
	if m == nil {
		return 0, false
	}
	digits := strings.ReplaceAll(m[1], ",", "")
	if m[2] != "" {
		digits += "." + m[2]
	}
	f, err := strconv.ParseFloat(digits, 64)
	if err != nil || f > maxChapterNumber {
		return 0, false
	}
	return f, true
}
