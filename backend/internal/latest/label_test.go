package latest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseChapterNumber(t *testing.T) {
	t.Parallel()
	cases := []struct {
		label string
		want  float64
		ok    bool
	}{
		{"Chapter 105", 105, true},
		{"Ch. 12.5 - Title", 12.5, true},
		{"Ch.12", 12, true},
		{"Episode 3", 3, true},
		{"Ep. 7 The Return", 7, true},
		{"Vol. 2 Chapter 10", 10, true},
		{"Vol.2 Ch. 10.5", 10.5, true},
		{"Season 2 Episode 5", 5, true},
		{"Chapter 2301: The Long Night", 2301, true},
		{"Chapter 2299 - Forgotten Shore", 2299, true},
		{"chapter-105", 105, true},
		{"Chapter #42", 42, true},
		{"Chapter 1,234 - Finale", 1234, true},
		{"Chapter 0 - Prologue", 0, true},
		{"Chapter 105 (END)", 105, true},
		{"Chapter 5 Part 2", 5, true},
		{"第105话", 105, true},
		{"42", 42, true},
		{"#42", 42, true},
		{"12.5 - Side Story", 12.5, true},
		{"12. The Gate", 12, true},
		{"  Chapter\n 7  ", 7, true},
		// No number: none, never a guess.
		{"Prologue", 0, false},
		{"Oneshot Special", 0, false},
		{"Vol. 2", 0, false},
		{"The 3 Kingdoms", 0, false},
		{"Watch 5 minutes", 0, false},
		{"Chapter", 0, false},
		{"Chapter Five", 0, false},
		{"Chapter 1234567", 0, false},
		{"-1", 0, false},
		{"", 0, false},
	}
	for _, tc := range cases {
		n, ok := ParseChapterNumber(tc.label)
		require.Equal(t, tc.ok, ok, "%q", tc.label)
		if tc.ok {
			require.Equal(t, tc.want, n, "%q", tc.label)
		}
	}
}

func TestParseChapterNumberLongLabel(t *testing.T) {
	t.Parallel()
	// Only the head of a label is read: a number far down is not the chapter's.
	n, ok := ParseChapterNumber("Chapter 9 " + strings.Repeat("x", 10000) + " Chapter 10")
	require.True(t, ok)
	require.Equal(t, 9.0, n)
	_, ok = ParseChapterNumber(strings.Repeat("x", 10000) + " Chapter 10")
	require.False(t, ok)
}
