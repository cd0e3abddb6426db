package apptest

import (
	"net/http"

	"github.com/stretchr/testify/require"
)

// Bookmark is a Bookmark as the API's wire carries it, written here from
// the contract (docs/api.md) rather than taken from the code under test.
type Bookmark struct {
	Key                 string   `json:"key"`
	Site                string   `json:"site"`
	Kind                string   `json:"kind"`
	Title               string   `json:"title"`
	SeriesURL           string   `json:"series_url"`
	Cover               *string  `json:"cover"`
	Chapter             string   `json:"chapter"`
	ChapterNumber       *float64 `json:"chapter_number"`
	ChapterURL          string   `json:"chapter_url"`
	ProgressAt          *string  `json:"progress_at"`
	LatestChapter       *string  `json:"latest_chapter"`
	LatestChapterNumber *float64 `json:"latest_chapter_number"`
	LatestChapterURL    *string  `json:"latest_chapter_url"`
	LatestAt            *string  `json:"latest_at"`
	Unread              *bool    `json:"unread"`
	CreatedAt           string   `json:"created_at"`
	UpdatedAt           string   `json:"updated_at"`
}

// Bookmark is the Reader's Bookmark on key, read through the API with
// token; it must exist.
func (a *App) Bookmark(token, key string) Bookmark {
	a.T.Helper()
	r := a.Do(http.MethodGet, "/api/bookmarks/"+key, token, nil)
	require.Equal(a.T, http.StatusOK, r.Code, "%s", r.Body)
	var b Bookmark
	r.JSON(a.T, &b)
	return b
}
