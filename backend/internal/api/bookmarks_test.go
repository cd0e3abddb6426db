package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
)

// The Bookmark API through the composed server (apptest), as the panel
// calls it: in process, over a fresh database, jobs queued and none run.

// testBase is PUBLIC_BASE_URL of these tests.
const testBase = "https://lectern.example.net"

func soloPut(chapter string) map[string]any {
	return map[string]any{
		"site":        "asura",
		"series_url":  "https://asurascans.com/comics/solo-leveling-1a2b3c4d",
		"title":       "Solo Leveling",
		"chapter":     chapter,
		"chapter_url": "https://asurascans.com/comics/solo-leveling-1a2b3c4d/chapter/" + strings.TrimPrefix(chapter, "Chapter "),
	}
}

func TestPutCreatesThenUpdatesProgress(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	tok := b.Token("ann", false)

	r := b.Do("PUT", "/api/bookmarks/asura:solo-leveling", tok, soloPut("Chapter 12"))
	require.Equal(t, http.StatusCreated, r.Code, "%s", r.Body)
	var got apptest.Bookmark
	r.JSON(t, &got)
	require.Equal(t, "asura:solo-leveling", got.Key)
	require.Equal(t, "asura", got.Site)
	require.Equal(t, "manga", got.Kind)
	require.Equal(t, "Solo Leveling", got.Title, "the client's title is shown to its Reader while the Series has none")
	require.Equal(t, "https://asurascans.com/comics/solo-leveling-1a2b3c4d", got.SeriesURL)
	require.Equal(t, "Chapter 12", got.Chapter)
	require.NotNil(t, got.ChapterNumber)
	require.Equal(t, 12.0, *got.ChapterNumber, "the number is parsed from the label when the client sends none")
	require.NotNil(t, got.ProgressAt)
	require.NotNil(t, got.Cover)
	require.Equal(t, "", *got.Cover, "no Cover bytes yet: empty, not an address that 404s")
	require.NotNil(t, got.Unread)
	require.False(t, *got.Unread)

	r = b.Do("PUT", "/api/bookmarks/asura:solo-leveling", tok, soloPut("Chapter 12.5"))
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	r.JSON(t, &got)
	require.Equal(t, "Chapter 12.5", got.Chapter)
	require.Equal(t, 12.5, *got.ChapterNumber)

	r = b.Do("GET", "/api/bookmarks", tok, nil)
	require.Equal(t, http.StatusOK, r.Code)
	var list []apptest.Bookmark
	r.JSON(t, &list)
	require.Len(t, list, 1)
	require.Equal(t, "Chapter 12.5", list[0].Chapter)

	// Every field of the wire contract is present, even when empty.
	var raw []map[string]any
	r.JSON(t, &raw)
	for _, f := range []string{"key", "site", "kind", "title", "series_url", "cover", "chapter", "chapter_number",
		"chapter_url", "progress_at", "latest_chapter", "latest_chapter_number", "latest_chapter_url", "latest_at",
		"unread", "created_at", "updated_at"} {
		require.Contains(t, raw[0], f)
	}
}

func TestPutWithoutChapterKeepsProgress(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	tok := b.Token("ann", false)
	require.Equal(t, http.StatusCreated, b.Do("PUT", "/api/bookmarks/asura:solo-leveling", tok, soloPut("Chapter 40")).Code)

	body := soloPut("")
	delete(body, "chapter_url")
	r := b.Do("PUT", "/api/bookmarks/asura:solo-leveling", tok, body)
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	var got apptest.Bookmark
	r.JSON(t, &got)
	require.Equal(t, "Chapter 40", got.Chapter, "a PUT without a chapter must not erase recorded Progress")
}

func TestReadersAreIsolated(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	ann := b.Token("ann", false)
	bob := b.Token("bob", false)
	require.Equal(t, http.StatusCreated, b.Do("PUT", "/api/bookmarks/asura:solo-leveling", ann, soloPut("Chapter 3")).Code)

	var list []apptest.Bookmark
	b.Do("GET", "/api/bookmarks", bob, nil).JSON(t, &list)
	require.Empty(t, list, "bob sees none of ann's Bookmarks")

	require.Equal(t, http.StatusNotFound, b.Do("GET", "/api/bookmarks/asura:solo-leveling", bob, nil).Code)
	require.Equal(t, http.StatusNotFound, b.Do("DELETE", "/api/bookmarks/asura:solo-leveling", bob, nil).Code)

	// bob bookmarking the same Series creates his own Bookmark and leaves ann's Progress alone.
	require.Equal(t, http.StatusCreated, b.Do("PUT", "/api/bookmarks/asura:solo-leveling", bob, soloPut("Chapter 99")).Code)
	var annB apptest.Bookmark
	b.Do("GET", "/api/bookmarks/asura:solo-leveling", ann, nil).JSON(t, &annB)
	require.Equal(t, "Chapter 3", annB.Chapter)
	b.Do("GET", "/api/bookmarks", ann, nil).JSON(t, &list)
	require.Len(t, list, 1)
}

func TestDeleteThenGet(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	tok := b.Token("ann", false)
	require.Equal(t, http.StatusCreated, b.Do("PUT", "/api/bookmarks/asura:solo-leveling", tok, soloPut("Chapter 3")).Code)
	r := b.Do("DELETE", "/api/bookmarks/asura:solo-leveling", tok, nil)
	require.Equal(t, http.StatusNoContent, r.Code)
	require.Empty(t, r.Body)

	var list []apptest.Bookmark
	r = b.Do("GET", "/api/bookmarks", tok, nil)
	r.JSON(t, &list)
	require.Empty(t, list)
	require.Equal(t, "[]\n", string(r.Body), "an empty library is an empty array, not null")

	r = b.Do("DELETE", "/api/bookmarks/asura:solo-leveling", tok, nil)
	require.Equal(t, http.StatusNotFound, r.Code)
	require.Contains(t, r.ErrorMsg(t), "no bookmark asura:solo-leveling")
}

func TestErrors(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	tok := b.Token("ann", false)

	revoked := b.Token("rex", false)
	rex, err := b.Store.ReaderByName(context.Background(), "rex")
	require.NoError(t, err)
	toks, err := b.Store.ListTokens(context.Background(), rex.ID)
	require.NoError(t, err)
	require.NoError(t, b.Store.RevokeToken(context.Background(), rex.ID, toks[0].ID))

	big := soloPut("Chapter 1")
	big["title"] = strings.Repeat("x", 70<<10)

	foreign := soloPut("Chapter 1")
	foreign["series_url"] = "https://example.com/comics/solo-leveling-1a2b3c4d"

	wrongSite := soloPut("Chapter 1")
	wrongSite["site"] = "demonic"

	unknownSite := soloPut("Chapter 1")
	unknownSite["site"] = "tapas"

	badChapterURL := soloPut("Chapter 1")
	badChapterURL["chapter_url"] = "javascript:alert(1)"

	notSeries := soloPut("Chapter 1")
	notSeries["series_url"] = "https://asurascans.com/about"

	cases := []struct {
		name        string
		method      string
		path, token string
		body        any
		code        int
		msg         string
	}{
		{"no token", "GET", "/api/bookmarks", "", nil, 401, "missing bearer token"},
		{"not bearer", "GET", "/api/bookmarks", "", nil, 401, "missing bearer token"},
		{"unknown token", "GET", "/api/bookmarks", "lec_nope", nil, 401, "unknown or revoked token"},
		{"revoked token", "GET", "/api/bookmarks", revoked, nil, 401, "unknown or revoked token"},
		{"malformed JSON", "PUT", "/api/bookmarks/asura:solo-leveling", tok, `{"site": "asura",`, 400, "malformed JSON"},
		{"not an object", "PUT", "/api/bookmarks/asura:solo-leveling", tok, `[1,2]`, 400, "malformed JSON"},
		{"wrong field type", "PUT", "/api/bookmarks/asura:solo-leveling", tok, `{"site": 5}`, 400, "site must be a string"},
		{"trailing data", "PUT", "/api/bookmarks/asura:solo-leveling", tok, `{"site":"asura"} {}`, 400, "unexpected data"},
		{"empty body", "PUT", "/api/bookmarks/asura:solo-leveling", tok, "", 400, "request body is empty"},
		{"body over 64 KiB", "PUT", "/api/bookmarks/asura:solo-leveling", tok, big, 413, "larger than 65536 bytes"},
		{"key mismatch", "PUT", "/api/bookmarks/asura:other", tok, soloPut("Chapter 1"), 422, `expected "asura:solo-leveling"`},
		{"unknown site", "PUT", "/api/bookmarks/tapas:x", tok, unknownSite, 422, `unknown site "tapas"`},
		{"foreign host", "PUT", "/api/bookmarks/asura:solo-leveling", tok, foreign, 422, "host example.com is not one of asura's"},
		{"host of another site", "PUT", "/api/bookmarks/asura:solo-leveling", tok, wrongSite, 422, "is not one of demonic's"},
		{"not a series page", "PUT", "/api/bookmarks/asura:solo-leveling", tok, notSeries, 422, "not a series or chapter page"},
		{"hostile chapter_url", "PUT", "/api/bookmarks/asura:solo-leveling", tok, badChapterURL, 422, "chapter_url"},
		{"NUL in title", "PUT", "/api/bookmarks/asura:solo-leveling", tok, `{"site":"asura","series_url":"https://asurascans.com/comics/solo-leveling-1a2b3c4d","title":"a\u0000b","chapter":"Chapter 1"}`, 422, "title must be valid UTF-8 text without NUL"},
		{"missing site", "PUT", "/api/bookmarks/asura:solo-leveling", tok, `{"series_url":"https://asurascans.com/comics/x"}`, 422, "site is required"},
		{"malformed key", "PUT", "/api/bookmarks/nokey", tok, soloPut("Chapter 1"), 422, "malformed key"},
		{"unknown bookmark", "GET", "/api/bookmarks/asura:nothing", tok, nil, 404, "no bookmark asura:nothing"},
		{"unknown bookmark delete", "DELETE", "/api/bookmarks/asura:nothing", tok, nil, 404, "no bookmark"},
		{"bad kind", "GET", "/api/bookmarks?kind=comics", tok, nil, 400, "kind must be manga or novel"},
		{"resolve without url", "GET", "/api/resolve", tok, nil, 400, "url is required"},
		{"resolve unknown site", "GET", "/api/resolve?url=https://example.com/x", tok, nil, 422, "not a page of a supported Site"},
		{"unknown endpoint", "GET", "/api/nothing", tok, nil, 404, "no such endpoint"},
		{"wrong method", "POST", "/api/bookmarks", tok, `{}`, 405, "not allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r apptest.Response
			if c.name == "not bearer" {
				r = b.Do(c.method, c.path, "", c.body, "Authorization", "Basic YW5uOnB3")
			} else {
				r = b.Do(c.method, c.path, c.token, c.body)
			}
			require.Equal(t, c.code, r.Code, "%s", r.Body)
			require.Contains(t, r.ErrorMsg(t), c.msg)
			require.Equal(t, "application/json; charset=utf-8", r.Header.Get("Content-Type"))
		})
	}

	// None of the refused writes left anything behind.
	var list []apptest.Bookmark
	b.Do("GET", "/api/bookmarks", tok, nil).JSON(t, &list)
	require.Empty(t, list)

	// A key mismatch says which key was expected, as a field too.
	var e struct {
		ExpectedKey string `json:"expected_key"`
	}
	b.Do("PUT", "/api/bookmarks/asura:other", tok, soloPut("Chapter 1")).JSON(t, &e)
	require.Equal(t, "asura:solo-leveling", e.ExpectedKey)
}

func TestCoverFromClientIsIgnored(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	tok := b.Token("ann", false)
	body := soloPut("Chapter 1")
	body["cover"] = "https://evil.example/tracker.png"

	r := b.Do("PUT", "/api/bookmarks/asura:solo-leveling", tok, body)
	require.Equal(t, http.StatusCreated, r.Code, "%s", r.Body)
	var got apptest.Bookmark
	r.JSON(t, &got)
	require.Equal(t, "", *got.Cover)

	body["cover"] = map[string]any{"any": "shape"}
	r = b.Do("PUT", "/api/bookmarks/asura:solo-leveling", tok, body)
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	r.JSON(t, &got)
	require.Equal(t, "", *got.Cover)

	var addr, src string
	require.NoError(t, b.Store.Pool.QueryRow(context.Background(),
		`SELECT cover_address, cover_source_url FROM series WHERE key = 'asura:solo-leveling'`).Scan(&addr, &src))
	require.Empty(t, addr)
	require.Empty(t, src)
}

func TestETagAnd304(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	tok := b.Token("ann", false)
	require.Equal(t, http.StatusCreated, b.Do("PUT", "/api/bookmarks/asura:solo-leveling", tok, soloPut("Chapter 1")).Code)

	r := b.Do("GET", "/api/bookmarks", tok, nil)
	require.Equal(t, http.StatusOK, r.Code)
	etag := r.Header.Get("ETag")
	require.NotEmpty(t, etag)

	r = b.Do("GET", "/api/bookmarks", tok, nil, "If-None-Match", etag)
	require.Equal(t, http.StatusNotModified, r.Code)
	require.Empty(t, r.Body)

	// Another Library has its own ETag.
	novel := b.Do("GET", "/api/bookmarks?kind=novel", tok, nil)
	require.NotEqual(t, etag, novel.Header.Get("ETag"))

	require.Equal(t, http.StatusOK, b.Do("PUT", "/api/bookmarks/asura:solo-leveling", tok, soloPut("Chapter 2")).Code)
	r = b.Do("GET", "/api/bookmarks", tok, nil, "If-None-Match", etag)
	require.Equal(t, http.StatusOK, r.Code, "a PUT changes the ETag")
	require.NotEqual(t, etag, r.Header.Get("ETag"))

	// A Series fact written by the backend changes it too.
	etag = r.Header.Get("ETag")
	_, err := b.Store.Pool.Exec(context.Background(),
		`UPDATE series SET latest_label = 'Chapter 3', latest_number = 3, updated_at = now() WHERE key = 'asura:solo-leveling'`)
	require.NoError(t, err)
	r = b.Do("GET", "/api/bookmarks", tok, nil, "If-None-Match", etag)
	require.Equal(t, http.StatusOK, r.Code)
	var list []apptest.Bookmark
	r.JSON(t, &list)
	require.True(t, *list[0].Unread, "Latest Chapter 3 is beyond Progress 2")

	// A delete changes it.
	etag = r.Header.Get("ETag")
	require.Equal(t, http.StatusNoContent, b.Do("DELETE", "/api/bookmarks/asura:solo-leveling", tok, nil).Code)
	require.Equal(t, http.StatusOK, b.Do("GET", "/api/bookmarks", tok, nil, "If-None-Match", etag).Code)
}

func TestNewSeriesQueuesOneAcquisition(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	ann := b.Token("ann", false)
	bob := b.Token("bob", false)
	require.Equal(t, http.StatusCreated, b.Do("PUT", "/api/bookmarks/asura:solo-leveling", ann, soloPut("Chapter 1")).Code)
	require.Equal(t, http.StatusOK, b.Do("PUT", "/api/bookmarks/asura:solo-leveling", ann, soloPut("Chapter 2")).Code)
	require.Equal(t, http.StatusCreated, b.Do("PUT", "/api/bookmarks/asura:solo-leveling", bob, soloPut("Chapter 1")).Code)

	var n, prio int
	var args string
	require.NoError(t, b.Store.Pool.QueryRow(context.Background(),
		`SELECT count(*), min(priority), min(args::text) FROM river_job WHERE kind = 'poll_series'`).Scan(&n, &prio, &args))
	require.Equal(t, 1, n, "exactly one Acquisition for a new Series, none for later Bookmarks on it")
	require.Equal(t, 1, prio)
	require.Contains(t, args, `"asura:solo-leveling"`)

	var readers int
	require.NoError(t, b.Store.Pool.QueryRow(context.Background(),
		`SELECT readers FROM series WHERE key = 'asura:solo-leveling'`).Scan(&readers))
	require.Equal(t, 2, readers)
}

func TestResolve(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	tok := b.Token("ann", false)
	r := b.Do("GET", "/api/resolve?url="+
		"http%3A%2F%2Fwww.asurascans.com%2Fcomics%2Fsolo-leveling-1a2b3c4d%2Fchapter%2F12%3Fx%3D1", tok, nil)
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	var ref map[string]string
	r.JSON(t, &ref)
	require.Equal(t, map[string]string{
		"key": "asura:solo-leveling", "site": "asura", "kind": "manga",
		"series_url": "https://asurascans.com/comics/solo-leveling-1a2b3c4d",
	}, ref)
}
