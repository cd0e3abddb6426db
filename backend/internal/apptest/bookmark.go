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
	// Works (docs/api.md "Works").
	Work                    *string  `json:"work"`
	WorkChapter             string   `json:"work_chapter"`
	WorkChapterNumber       *float64 `json:"work_chapter_number"`
	WorkChapterURL          string   `json:"work_chapter_url"`
	WorkProgressSite        string   `json:"work_progress_site"`
	WorkLatestChapter       string   `json:"work_latest_chapter"`
	WorkLatestChapterNumber *float64 `json:"work_latest_chapter_number"`
	WorkLatestChapterURL    string   `json:"work_latest_chapter_url"`
	WorkLatestSite          string   `json:"work_latest_site"`
	Gone                    *bool    `json:"gone"`
	GoneReason              *string  `json:"gone_reason"`
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
