package api_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExportOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id, tok := b.reader("ann")
	b.put(id, "https://asurascans.com/comics/solo-leveling-1a2b3c4d", "Solo Leveling", "Chapter 179.5")
	b.put(id, "https://novelfull.com/reverend-insanity.html", "Reverend, Insanity", "")

	res := b.do(http.MethodGet, "/export", tok, nil)
	require.Equal(t, http.StatusOK, res.code, "%s", res.body)
	require.Equal(t, "application/json; charset=utf-8", res.header.Get("Content-Type"))
	require.Regexp(t, `^attachment; filename="lectern-export-\d{4}-\d{2}-\d{2}\.json"$`, res.header.Get("Content-Disposition"))
	require.Equal(t, "no-store", res.header.Get("Cache-Control"))
	var doc struct {
		Format    string `json:"format"`
		Version   int    `json:"version"`
		Bookmarks []struct {
			Key, Site, SeriesURL, Title, Chapter string
			ChapterNumber                        *float64 `json:"chapter_number"`
			ProgressAt                           *string  `json:"progress_at"`
			CreatedAt                            string   `json:"created_at"`
		} `json:"bookmarks"`
	}
	require.NoError(t, json.Unmarshal(res.body, &doc))
	require.Equal(t, "lectern-export", doc.Format)
	require.Equal(t, 1, doc.Version)
	require.Len(t, doc.Bookmarks, 2)
	require.Equal(t, "asura:solo-leveling", doc.Bookmarks[0].Key)
	require.Equal(t, 179.5, *doc.Bookmarks[0].ChapterNumber)
	require.NotNil(t, doc.Bookmarks[0].ProgressAt)
	require.Nil(t, doc.Bookmarks[1].ProgressAt)

	res = b.do(http.MethodGet, "/export?format=csv", tok, nil)
	require.Equal(t, http.StatusOK, res.code)
	require.Equal(t, "text/csv; charset=utf-8", res.header.Get("Content-Type"))
	recs, err := csv.NewReader(bytes.NewReader(res.body)).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 3)
	require.Equal(t, []string{"format_version", "key", "site", "kind", "title", "series_url"}, recs[0][:6])
	require.Equal(t, "Reverend, Insanity", recs[2][4])

	require.Equal(t, http.StatusBadRequest, b.do(http.MethodGet, "/export?format=xml", tok, nil).code)
	require.Equal(t, http.StatusUnauthorized, b.do(http.MethodGet, "/export", "", nil).code)

	// Another Reader's export holds only their own Bookmarks.
	_, other := b.reader("bob")
	res = b.do(http.MethodGet, "/export", other, nil)
	require.NoError(t, json.Unmarshal(res.body, &doc))
	require.Empty(t, doc.Bookmarks)
}
