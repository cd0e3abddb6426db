package portability

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCellRoundTrips(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "=1+1", "+x", "-Shadow Slave-", "@me", "\tx", "'quoted", "''", "'=x", "a=b"} {
		c := cell(s)
		if s != "" && strings.ContainsRune("=+-@\t", rune(s[0])) {
			require.Equal(t, byte('\''), c[0], "%q is defused", s)
		}
		require.Equal(t, s, uncell(c), "%q survives", s)
	}
}

func TestURLListLines(t *testing.T) {
	t.Parallel()
	got, bad, err := parse(URLs, []byte("\ufeff# c\r\n\r\nhttps://a.example/x \t Chapter 12 \r\nhttps://b.example/y\n"))
	require.NoError(t, err)
	require.Empty(t, bad)
	require.Len(t, got, 2)
	require.Equal(t, 3, got[0].Line)
	require.Equal(t, "https://a.example/x", got[0].URL)
	require.Equal(t, "Chapter 12", got[0].Chapter)
	require.Equal(t, 4, got[1].Line)
	require.Empty(t, got[1].Chapter)
}

func TestParseRefusesWhatIsNotText(t *testing.T) {
	t.Parallel()
	for _, f := range Formats {
		_, _, err := parse(f, []byte("https://a.example/x\x00"))
		require.ErrorIs(t, err, ErrUnreadable, f)
		_, _, err = parse(f, []byte{0xff, 0xfe, 'x'})
		require.ErrorIs(t, err, ErrUnreadable, f)
	}
}

func TestTooManyEntries(t *testing.T) {
	t.Parallel()
	body := bytes.Repeat([]byte("https://a.example/x\n"), MaxEntries+1)
	_, _, err := parse(URLs, body)
	require.ErrorIs(t, err, ErrTooMany)
}

// Whatever the bytes, parsing answers with entries, line errors or an
// error, never a panic, and every line it names is a line of the file.
func FuzzParse(f *testing.F) {
	f.Add("lectern", `{"format":"lectern-export","version":1,"bookmarks":[{"series_url":"https://a/x","chapter_number":1}]}`)
	f.Add("lectern", "format_version,series_url,chapter_number\n1,https://a/x,2\n")
	f.Add("kenmei", "title,series_url,last_chapter_read\n\"a,b\",https://a/x,3\n")
	f.Add("urls", "https://a/x\tChapter 1\n# c\n")
	f.Fuzz(func(t *testing.T, format, body string) {
		fm, err := ParseFormat(format)
		if err != nil {
			return
		}
		entries, bad, err := parse(fm, []byte(body))
		if err != nil {
			return
		}
		lines := strings.Count(body, "\n") + 1
		for _, e := range entries {
			if e.Line < 1 || e.Line > lines {
				t.Fatalf("entry on line %d of %d", e.Line, lines)
			}
		}
		for _, e := range bad {
			if e.Line < 1 || e.Line > lines {
				t.Fatalf("error on line %d of %d", e.Line, lines)
			}
		}
	})
}
