package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The panel refresh: compressed bodies, the list version behind the ETag,
// the cache of encoded lists, and two replicas on one database.

func seriesPut(n int, chapter int) map[string]any {
	return map[string]any{
		"site":        "asura",
		"series_url":  fmt.Sprintf("https://asurascans.com/comics/series-%d-1a2b3c4d", n),
		"title":       fmt.Sprintf("A Series Long Enough To Compress, Number %d", n),
		"chapter":     fmt.Sprintf("Chapter %d", chapter),
		"chapter_url": fmt.Sprintf("https://asurascans.com/comics/series-%d-1a2b3c4d/chapter/%d", n, chapter),
	}
}

func seriesKey(n int) string { return fmt.Sprintf("asura:series-%d", n) }

// putMany gives token's Reader Bookmarks on Series from..to-1.
func putMany(t *testing.T, b *apptest.App, token string, from, to int) {
	t.Helper()
	for n := from; n < to; n++ {
		r := b.Do("PUT", "/api/bookmarks/"+seriesKey(n), token, seriesPut(n, 3))
		require.Equal(t, http.StatusCreated, r.Code, "%s", r.Body)
	}
}

// decode undoes a response's Content-Encoding (apptest.Decode: the standard
// library's gzip and the reference zstd decoder, not the server's own code).
func decode(t *testing.T, r apptest.Response) []byte {
	t.Helper()
	out, err := apptest.Decode(r.Body, r.Header.Get("Content-Encoding"))
	require.NoError(t, err)
	return out
}

func TestCompressedAndIdentityBodiesDecodeToTheSameJSON(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	tok := b.Token("ann", false)
	putMany(t, b, tok, 0, 20)

	plain := b.Do("GET", "/api/bookmarks", tok, nil)
	require.Equal(t, http.StatusOK, plain.Code)
	require.Empty(t, plain.Header.Get("Content-Encoding"), "no Accept-Encoding: identity")
	var want []apptest.Bookmark
	plain.JSON(t, &want)
	require.Len(t, want, 20)

	etags := map[string]string{"": plain.Header.Get("ETag")}
	for _, tc := range []struct{ accept, enc string }{
		{"gzip", "gzip"},
		{"zstd", "zstd"},
		{"gzip, deflate, br, zstd", "zstd"},
		{"zstd;q=0.5, gzip", "gzip"},
		{"gzip;q=0, zstd;q=0", ""},
		{"br", ""},
		{"*", "zstd"},
	} {
		for range 2 { // the second answer comes from the cache
			r := b.Do("GET", "/api/bookmarks", tok, nil, "Accept-Encoding", tc.accept)
			require.Equal(t, http.StatusOK, r.Code, tc.accept)
			require.Equal(t, tc.enc, r.Header.Get("Content-Encoding"), tc.accept)
			require.Contains(t, r.Header.Values("Vary"), "Accept-Encoding", tc.accept)
			if tc.enc != "" {
				require.Less(t, len(r.Body), len(plain.Body)/3, "%s: compressed", tc.accept)
			}
			var got []apptest.Bookmark
			require.NoError(t, json.Unmarshal(decode(t, r), &got), tc.accept)
			require.Equal(t, want, got, tc.accept)
			if prev, ok := etags[tc.enc]; ok {
				require.Equal(t, prev, r.Header.Get("ETag"), "%s: one ETag per representation", tc.accept)
			}
			etags[tc.enc] = r.Header.Get("ETag")
		}
	}
	require.Len(t, map[string]bool{etags[""]: true, etags["gzip"]: true, etags["zstd"]: true}, 3,
		"a strong ETag per representation: the gzip and zstd bodies are other bytes")

	// Each representation revalidates with its own ETag.
	for enc, etag := range etags {
		r := b.Do("GET", "/api/bookmarks", tok, nil, "Accept-Encoding", enc, "If-None-Match", etag)
		require.Equal(t, http.StatusNotModified, r.Code, enc)
		require.Equal(t, etag, r.Header.Get("ETag"))
	}

	// Other JSON answers are compressed by the same negotiation; a small one
	// is not worth it.
	one := b.Do("GET", "/api/bookmarks/"+seriesKey(1), tok, nil, "Accept-Encoding", "gzip")
	require.Equal(t, http.StatusOK, one.Code)
	require.Empty(t, one.Header.Get("Content-Encoding"), "a body under 1 KiB goes as it is")
	exp := b.Do("GET", "/api/export", tok, nil, "Accept-Encoding", "gzip")
	require.Equal(t, http.StatusOK, exp.Code, "%s", exp.Body)
	require.Equal(t, "gzip", exp.Header.Get("Content-Encoding"))
	plainExp := b.Do("GET", "/api/export", tok, nil)
	var wantExp, gotExp map[string]any
	require.NoError(t, json.Unmarshal(plainExp.Body, &wantExp))
	require.NoError(t, json.Unmarshal(decode(t, exp), &gotExp))
	delete(wantExp, "exported_at")
	delete(gotExp, "exported_at")
	require.True(t, assert.ObjectsAreEqual(wantExp, gotExp), "the compressed export decodes to the same export")
	missing := b.Do("GET", "/api/bookmarks/asura:nobody-holds-this", tok, nil, "Accept-Encoding", "gzip")
	require.Equal(t, http.StatusNotFound, missing.Code)
	require.Empty(t, missing.Header.Get("Content-Encoding"))
	require.NotEmpty(t, missing.ErrorMsg(t))
}

// refresh asks for token's list as a panel does, with etag from its last
// answer, and returns the answer.
func refresh(t *testing.T, b *apptest.App, token, etag string) apptest.Response {
	t.Helper()
	return b.Do("GET", "/api/bookmarks", token, nil, "Accept-Encoding", "zstd, gzip", "If-None-Match", etag)
}

func listOf(t *testing.T, r apptest.Response) map[string]apptest.Bookmark {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	var list []apptest.Bookmark
	require.NoError(t, json.Unmarshal(decode(t, r), &list))
	out := map[string]apptest.Bookmark{}
	for _, b := range list {
		out[b.Key] = b
	}
	return out
}

func TestRefreshFollowsEveryChangeAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	ann := b.Reader("ann", false)
	phone, laptop := b.NewToken(ann), b.NewToken(ann)
	putMany(t, b, phone, 0, 5)
	bob := b.Token("bob", false)
	putMany(t, b, bob, 3, 8) // Series 3 and 4 are held by both

	r := refresh(t, b, phone, "")
	etag := r.Header.Get("ETag")
	listOf(t, r)
	unchanged := func(why string) {
		t.Helper()
		r := refresh(t, b, phone, etag)
		require.Equal(t, http.StatusNotModified, r.Code, why)
	}
	changed := func(why string) map[string]apptest.Bookmark {
		t.Helper()
		r := refresh(t, b, phone, etag)
		require.Equal(t, http.StatusOK, r.Code, why)
		require.NotEqual(t, etag, r.Header.Get("ETag"), why)
		etag = r.Header.Get("ETag")
		unchanged(why + ", asked again")
		return listOf(t, r)
	}
	unchanged("nothing changed")

	// A poll's new Latest Chapter on a Series ann holds.
	_, err := b.Store.RecordPoll(ctx, seriesKey(4), store.PollResult{Status: store.PollOK, Success: true,
		Latest: &store.LatestChapter{Label: "Chapter 9", Number: ptr(9.0), URL: "https://asurascans.com/comics/series-4-1a2b3c4d/chapter/9"}})
	require.NoError(t, err)
	list := changed("a poll found a new Latest Chapter")
	require.Equal(t, "Chapter 9", *list[seriesKey(4)].LatestChapter)
	require.True(t, *list[seriesKey(4)].Unread)

	// A poll that learned nothing new writes only its bookkeeping.
	_, err = b.Store.RecordPoll(ctx, seriesKey(4), store.PollResult{Status: store.PollNotModified, Success: true})
	require.NoError(t, err)
	unchanged("a poll's bookkeeping is not in the list")

	// A poll's title.
	_, err = b.Store.RecordPoll(ctx, seriesKey(2), store.PollResult{Status: store.PollOK, Success: true, Title: "The Real Title",
		Latest: &store.LatestChapter{Label: "Chapter 3", Number: ptr(3.0), URL: "https://asurascans.com/comics/series-2-1a2b3c4d/chapter/3"}})
	require.NoError(t, err)
	list = changed("a poll found the title and a Latest Chapter")
	require.Equal(t, "The Real Title", list[seriesKey(2)].Title)

	// A Cover arriving.
	sum := sha256.Sum256([]byte("cover bytes"))
	addr := hex.EncodeToString(sum[:])
	changedCover, err := b.Store.SetCover(ctx, seriesKey(0), store.CoverFacts{Address: addr, Type: "image/webp", Size: 11}, false)
	require.NoError(t, err)
	require.True(t, changedCover)
	list = changed("a Cover arrived")
	// The list names it by its short reference (docs/adr/0032).
	require.Contains(t, *list[seriesKey(0)].Cover, "/covers/"+addr[:20]+".webp")

	// Another device's PUT.
	require.Equal(t, http.StatusOK, b.Do("PUT", "/api/bookmarks/"+seriesKey(1), laptop, seriesPut(1, 4)).Code)
	list = changed("the laptop recorded Progress")
	require.Equal(t, "Chapter 4", list[seriesKey(1)].Chapter)

	// A DELETE from the other device.
	require.Equal(t, http.StatusNoContent, b.Do("DELETE", "/api/bookmarks/"+seriesKey(1), laptop, nil).Code)
	list = changed("the laptop removed a Bookmark")
	require.NotContains(t, list, seriesKey(1))

	// Another Reader's writes are not ann's list, even on a Series both hold.
	require.Equal(t, http.StatusOK, b.Do("PUT", "/api/bookmarks/"+seriesKey(3), bob, seriesPut(3, 5)).Code)
	require.Equal(t, http.StatusNoContent, b.Do("DELETE", "/api/bookmarks/"+seriesKey(7), bob, nil).Code)
	unchanged("bob's Progress is not in ann's list")

	// An import writes many Bookmarks in one transaction.
	imp := b.Do("POST", "/api/import?format=urls", laptop, "https://asurascans.com/comics/series-40-1a2b3c4d\n",
		"Content-Type", "text/plain")
	require.Equal(t, http.StatusOK, imp.Code, "%s", imp.Body)
	list = changed("an import added a Bookmark")
	require.Contains(t, list, seriesKey(40))
}

func ptr[T any](v T) *T { return &v }

func TestTwoReplicasAgree(t *testing.T) {
	t.Parallel()
	one := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	two := one.Replica()
	tok := one.Token("ann", false)
	putMany(t, one, tok, 0, 5)

	a, b := refresh(t, one, tok, ""), refresh(t, two, tok, "")
	require.Equal(t, a.Header.Get("ETag"), b.Header.Get("ETag"), "the ETag is built on Postgres' version, not a replica's")
	require.Equal(t, listOf(t, a), listOf(t, b))
	etag := a.Header.Get("ETag")
	require.Equal(t, http.StatusNotModified, refresh(t, two, tok, etag).Code)

	// A write through one replica is seen by the other, whose cache holds
	// the old body, on the very next request.
	require.Equal(t, http.StatusOK, two.Do("PUT", "/api/bookmarks/"+seriesKey(2), tok, seriesPut(2, 7)).Code)
	a, b = refresh(t, one, tok, etag), refresh(t, two, tok, etag)
	require.Equal(t, http.StatusOK, a.Code)
	require.Equal(t, http.StatusOK, b.Code)
	require.Equal(t, a.Header.Get("ETag"), b.Header.Get("ETag"))
	require.Equal(t, "Chapter 7", listOf(t, a)[seriesKey(2)].Chapter)
	require.Equal(t, listOf(t, a), listOf(t, b))

	// A poll recorded by either (the store is shared) reaches both.
	etag = a.Header.Get("ETag")
	_, err := two.Store.RecordPoll(context.Background(), seriesKey(3), store.PollResult{Status: store.PollOK, Success: true,
		Latest: &store.LatestChapter{Label: "Chapter 30", URL: "https://asurascans.com/comics/series-3-1a2b3c4d/chapter/30"}})
	require.NoError(t, err)
	for _, app := range []*apptest.App{one, two} {
		r := refresh(t, app, tok, etag)
		require.Equal(t, "Chapter 30", *listOf(t, r)[seriesKey(3)].LatestChapter)
	}
}

func TestCacheNeverServesOneReadersListToAnother(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	ann, bob := b.Token("ann", false), b.Token("bob", false)
	// The same number of writes gives both Readers the same list version,
	// Library and coding: only the Reader tells their cached lists apart.
	putMany(t, b, ann, 0, 3)
	putMany(t, b, bob, 10, 13)
	var versions []int64
	require.NoError(t, b.Store.Pool.QueryRow(context.Background(),
		`SELECT array_agg(version ORDER BY reader_id) FROM reader_lists`).Scan(&versions))
	require.Len(t, versions, 2)
	require.Equal(t, versions[0], versions[1], "the test needs equal versions to mean anything")

	for range 2 {
		for _, tc := range []struct {
			token string
			want  []string
		}{{ann, []string{seriesKey(0), seriesKey(1), seriesKey(2)}}, {bob, []string{seriesKey(10), seriesKey(11), seriesKey(12)}}} {
			for _, enc := range []string{"", "gzip", "zstd"} {
				r := b.Do("GET", "/api/bookmarks", tc.token, nil, "Accept-Encoding", enc)
				list := listOf(t, r)
				require.Len(t, list, 3)
				for _, k := range tc.want {
					require.Contains(t, list, k, enc)
				}
			}
		}
	}
	// Nor is one Reader's ETag another's.
	require.NotEqual(t, refresh(t, b, ann, "").Header.Get("ETag"), refresh(t, b, bob, "").Header.Get("ETag"))
}
