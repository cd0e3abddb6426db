package web_test

import (
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/store"
)

var feedURLPattern = regexp.MustCompile(`/feed\.atom\?key=lecf_[A-Za-z0-9_-]{43}`)

type feedDoc struct {
	XMLName xml.Name `xml:"http://www.w3.org/2005/Atom feed"`
	ID      string   `xml:"http://www.w3.org/2005/Atom id"`
	Updated string   `xml:"http://www.w3.org/2005/Atom updated"`
	Entries []struct {
		Title string `xml:"http://www.w3.org/2005/Atom title"`
	} `xml:"http://www.w3.org/2005/Atom entry"`
}

type feedResponse struct {
	code   int
	header http.Header
	body   []byte
}

// fetchFeed is a feed reader: no cookies, only the URL and validators.
func fetchFeed(t *testing.T, u string, hdr ...string) feedResponse {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return feedResponse{code: resp.StatusCode, header: resp.Header, body: body}
}

// recordPoll writes a poll's outcome through the Poll's own store path.
func (b *testBundle) recordPoll(key, title, label string, n float64) {
	b.T.Helper()
	_, err := b.Store.RecordPoll(context.Background(), key, store.PollResult{
		Status: store.PollOK, Success: true, Title: title,
		Latest: &store.LatestChapter{Label: label, Number: &n, URL: asuraChapter("https://asurascans.com/comics/solo-leveling", int(n))},
	})
	require.NoError(b.T, err)
}

func TestFeedURLIsShownOnceAndHonoursValidators(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.Reader("ann", false)
	b.bookmark(ann.ID, soloURL, "Solo Leveling", "Chapter 1", "")
	c := b.Browser()
	c.SignIn("ann", password)

	settings := c.Get("/settings")
	require.Equal(t, 1, settings.Doc.Find(`[data-testid="feed-create"]`).Length())
	made := c.PostForm("/settings", "/settings/feed", nil)
	require.Equal(t, http.StatusOK, made.Code, made.Body)
	feedURL := text(made, `[data-testid="new-feed-url"]`)
	require.Regexp(t, `^`+regexp.QuoteMeta(b.Config.PublicBaseURL)+feedURLPattern.String()+`$`, feedURL)
	again := c.Get("/settings")
	require.Empty(t, feedURLPattern.FindAllString(again.Body, -1), "the URL is shown once only")
	require.Contains(t, text(again, `[data-testid="feed-state"]`), "never")

	res := fetchFeed(t, feedURL)
	require.Equal(t, http.StatusOK, res.code, "%s", res.body)
	require.Equal(t, "application/atom+xml; charset=utf-8", res.header.Get("Content-Type"))
	require.Equal(t, "private, no-cache", res.header.Get("Cache-Control"))
	var doc feedDoc
	require.NoError(t, xml.Unmarshal(res.body, &doc))
	require.Empty(t, doc.Entries)
	etag, modified := res.header.Get("ETag"), res.header.Get("Last-Modified")
	require.NotEmpty(t, etag)
	require.NotEmpty(t, modified)
	require.Contains(t, text(c.Get("/settings"), `[data-testid="feed-state"]`), "just now", "the read is recorded")

	// Unchanged: 304 by ETag and by date, with no body.
	res = fetchFeed(t, feedURL, "If-None-Match", etag)
	require.Equal(t, http.StatusNotModified, res.code)
	require.Empty(t, res.body)
	require.Equal(t, etag, res.header.Get("ETag"))
	res = fetchFeed(t, feedURL, "If-Modified-Since", modified)
	require.Equal(t, http.StatusNotModified, res.code)
	res = fetchFeed(t, feedURL, "If-None-Match", `"something-else"`, "If-Modified-Since", modified)
	require.Equal(t, http.StatusOK, res.code, "If-None-Match decides when both are sent")

	// A new Latest Chapter changes the feed.
	b.recordPoll(soloKey, "Solo Leveling", "Chapter 200", 200)
	b.recordPoll(soloKey, "Solo Leveling", "Chapter 201", 201)
	res = fetchFeed(t, feedURL, "If-None-Match", etag)
	require.Equal(t, http.StatusOK, res.code)
	require.NotEqual(t, etag, res.header.Get("ETag"))
	require.NoError(t, xml.Unmarshal(res.body, &doc))
	require.Len(t, doc.Entries, 1)
	require.Equal(t, "Solo Leveling: Chapter 201", doc.Entries[0].Title)
	etag = res.header.Get("ETag")
	require.Equal(t, http.StatusNotModified, fetchFeed(t, feedURL, "If-None-Match", "W/"+etag).code)

	// A new URL ends the old one; revoking ends both.
	remade := c.PostForm("/settings", "/settings/feed", nil)
	newURL := text(remade, `[data-testid="new-feed-url"]`)
	require.NotEqual(t, feedURL, newURL)
	require.Equal(t, http.StatusNotFound, fetchFeed(t, feedURL).code)
	require.Equal(t, http.StatusOK, fetchFeed(t, newURL).code)
	revoked := c.PostForm("/settings", "/settings/feed/revoke", nil)
	require.Equal(t, http.StatusSeeOther, revoked.Code)
	require.Equal(t, http.StatusNotFound, fetchFeed(t, newURL).code)

	for _, bad := range []string{"/feed.atom", "/feed.atom?key=x", "/feed.atom?key=lecf_nope", "/feed.atom?key=lecf_" + strings.Repeat("a", 500)} {
		require.Equal(t, http.StatusNotFound, fetchFeed(t, b.URL+bad).code, bad)
	}
}
