package latest

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Royal Road plants copied-text warnings in its chapters under a random
// class that a <style> rule hides; the archive keeps what a reader sees.
func TestRoyalroadDropsWhatItsStyleHides(t *testing.T) {
	t.Parallel()
	site, _ := reg.Lookup("royalroad")
	page := mustParse(t, lamp+"/chapter/800006/chapter-28-the-long-street")
	body := readFixture(t, "royalroad", "chapter.html")
	c, err := site.Content(body, page)
	require.NoError(t, err)
	require.Equal(t, royalroadText, c.Text)
	for _, planted := range []string{"unlawfully", "Stolen content", "Royal Road", "Thank you for the reviews", "Patreon", "First!"} {
		require.NotContains(t, c.Text, planted)
	}

	// The same page without its style rule shows the warnings: the class
	// alone, which changes every page, decides nothing.
	unstyled := regexp.MustCompile(`(?s)<style>\s*\.cmVhZGVyLXdhcm5pbmc\{.*?</style>`).ReplaceAll(body, nil)
	require.NotEqual(t, len(body), len(unstyled))
	c, err = site.Content(unstyled, page)
	require.NoError(t, err)
	require.Contains(t, c.Text, "This narrative has been unlawfully taken from Royal Road.")
	require.Contains(t, c.Text, "Stolen content warning")

	// A rule that hides only on small screens (@media) hides nothing on a
	// page a reader sees whole; a compound selector hides only in a context.
	media := bytes.Replace(body, []byte(".hidden-xs { display: none }"), []byte("@media (max-width: 767px) { .hidden-xs { display: none } } .x .y { display: none }"), 1)
	c, err = site.Content(media, page)
	require.NoError(t, err)
	require.Contains(t, c.Text, "Tap to open the chapter menu.")
	require.NotContains(t, c.Text, "unlawfully")
}

func TestRoyalroadHiddenClasses(t *testing.T) {
	t.Parallel()
	for css, want := range map[string]string{
		`.a{display:none}`: "a",
		`.a, p.b { color: red; display : NONE !important }`: "a b",
		`.a{display:block} .b{visibility:hidden}`:           "",
		`@font-face{font-family:x} .c{display:none}`:        "c",
		`@media print{.d{display:none}} .e{display:none}`:   "e",
		`}}}.f{display:none}`:                               "f",
		`.g{display:none`:                                   "",
	} {
		doc, err := parseHTML([]byte("<html><head><style>"+css+"</style></head><body><p>x</p></body></html>"), ProblemNotChapterPage)
		require.NoError(t, err)
		require.Equal(t, want, strings.Join(hiddenClasses(doc), " "), css)
	}
}

// The table's order is the author's: no sort by the numbers titles carry,
// and a number that goes back along it (a new book restarting the count)
// is dropped, so unread compares URLs, never a smaller number.
func TestRoyalroadKeepsTheTablesOrder(t *testing.T) {
	t.Parallel()
	site, _ := reg.Lookup("royalroad")
	body := readFixture(t, "royalroad", "series.html")
	// A new book restarts the numbering after chapter 28.
	extra := `<tr class="chapter-row"><td><a href="/fiction/48112/the-lamplighters-ledger/chapter/800007/book-2-chapter-1">Book 2, Chapter 1: Dawn</a></td></tr>`
	body = bytes.Replace(body, []byte("</tbody></table>"), []byte(extra+"</tbody></table>"), 1)
	c, err := site.Latest(body, mustParse(t, lamp))
	require.NoError(t, err)
	require.Equal(t, "Book 2, Chapter 1: Dawn|-|"+lamp+"/chapter/800007|false", row(c))
	list, err := site.Chapters(body, mustParse(t, lamp))
	require.NoError(t, err)
	require.Equal(t, append(append([]string{}, royalroadChapterRows...), row(c)), rows(list))
}

func TestOrderedNumbers(t *testing.T) {
	t.Parallel()
	var list []Chapter
	for _, label := range []string{"Prologue", "Chapter 1", "Chapter 1.5", "Chapter 2", "Chapter 2", "Interlude", "Book 2, Chapter 1", "Chapter 3"} {
		list = append(list, chapterOf(label, nil, "https://royalroad.com/fiction/1/x/chapter/"+label, false))
	}
	var got []string
	for _, c := range orderedNumbers(list) {
		n := "-"
		if c.Number != nil {
			n = formatNumber(*c.Number)
		}
		got = append(got, c.Label+"="+n)
	}
	require.Equal(t, []string{"Prologue=-", "Chapter 1=1", "Chapter 1.5=1.5", "Chapter 2=2", "Chapter 2=-", "Interlude=-", "Book 2, Chapter 1=-", "Chapter 3=3"}, got)
}
