package bookmark

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/store"
)

func num(f float64) *float64 { return &f }

func TestUnread(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		b    store.Bookmark
		want bool
	}{
		{"no latest chapter yet", store.Bookmark{Chapter: "Chapter 3", ChapterNumber: num(3)}, false},
		{"numbers: behind", store.Bookmark{ChapterNumber: num(12), LatestLabel: "Chapter 13", LatestNumber: num(13)}, true},
		{"numbers: 12.5 is behind 13", store.Bookmark{ChapterNumber: num(12.5), LatestLabel: "x", LatestNumber: num(13)}, true},
		{"numbers: 13 is not behind 12.5", store.Bookmark{ChapterNumber: num(13), LatestLabel: "x", LatestNumber: num(12.5)}, false},
		{"numbers compare numerically, not as text", store.Bookmark{ChapterNumber: num(9), LatestLabel: "x", LatestNumber: num(10)}, true},
		{"numbers: caught up", store.Bookmark{ChapterNumber: num(13), LatestLabel: "x", LatestNumber: num(13)}, false},
		{"no numbers: same URL modulo scheme and slash", store.Bookmark{Chapter: "Prologue", ChapterURL: "http://www.a.com/x/",
			LatestLabel: "Prologue", LatestURL: "https://a.com/x"}, false},
		{"no numbers: URLs differ", store.Bookmark{Chapter: "Prologue", ChapterURL: "https://a.com/x",
			LatestLabel: "Epilogue", LatestURL: "https://a.com/y"}, true},
		{"only latest has a number: URLs decide", store.Bookmark{Chapter: "Side story", ChapterURL: "https://a.com/c/5",
			LatestLabel: "Chapter 5", LatestNumber: num(5), LatestURL: "https://a.com/c/5"}, false},
		{"no progress at all", store.Bookmark{LatestLabel: "Chapter 1", LatestNumber: num(1), LatestURL: "https://a.com/c/1"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, Unread(c.b))
		})
	}
}
