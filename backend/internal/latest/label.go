package latest

import (
	"regexp"
	"strconv"
	"strings"
)

// chapterNumberRe finds the number that follows a chapter word; volume numbers
// ("Vol. 2") are skipped because they come before the chapter word.
var chapterNumberRe = regexp.MustCompile(`(?i)\b(?:chapter|chap|ch|episode|ep)\b\.?\s*#?\s*(\d{1,6}(?:\.\d{1,3})?)`)

var bareNumberRe = regexp.MustCompile(`^\s*#?(\d{1,6}(?:\.\d{1,3})?)\b`)

// ParseChapterNumber reads the chapter number from a label as a Site shows it:
// "Chapter 105" → 105, "Ch. 12.5 - Title" → 12.5, "Episode 3" → 3,
// "Vol. 2 Chapter 10" → 10, "42" → 42. ok is false when the label has none;
// a guess would make unread badges lie.
func ParseChapterNumber(label string) (n float64, ok bool) {
	if len(label) > 512 {
		label = label[:512]
	}
	m := chapterNumberRe.FindStringSubmatch(label)
	if m == nil {
		m = bareNumberRe.FindStringSubmatch(strings.TrimSpace(label))
	}
	if m == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	return f, true
}
