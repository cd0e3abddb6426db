package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Works through the API (issue 21): one story on several Sites, linked by
// its Reader, with one Progress and the newest chapter of any of its Sites.

// workBookmark is the Work part of a Bookmark object, written from the
// contract (docs/api.md) rather than taken from the code under test.
type workBookmark struct {
	Key                     string   `json:"key"`
	Site                    string   `json:"site"`
	Unread                  bool     `json:"unread"`
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

type apiWork struct {
	ID            string         `json:"id"`
	Keys          []string       `json:"keys"`
	Title         string         `json:"title"`
	Kind          string         `json:"kind"`
	Chapter       string         `json:"chapter"`
	ProgressSite  string         `json:"progress_site"`
	LatestChapter string         `json:"latest_chapter"`
	LatestSite    string         `json:"latest_site"`
	Dissolved     bool           `json:"dissolved"`
	Members       []workBookmark `json:"members"`
}

type refusal struct {
	Error string   `json:"error"`
	Keys  []string `json:"keys"`
}

const (
	orvAsura   = "asura:omniscient-readers-viewpoint"
	orvDemonic = "demonic:Omniscient-Readers-Viewpoint"
	mpDemonic  = "demonic:Martial-Peak"
	rivNovel   = "novelfull:reverend-insanity"
)

// holdORV gives token's Reader the story on asura and demonic (plus an
// unrelated manga and a novel), with Progress on asura.
func holdORV(t *testing.T, b *apptest.App, tok, asuraChapter string) {
	t.Helper()
	for _, p := range []struct {
		key  string
		body map[string]any
	}{
		{orvAsura, map[string]any{"site": "asura", "series_url": "https://asurascans.com/comics/omniscient-readers-viewpoint-5e6f7a8b",
			"title": "Omniscient Reader's Viewpoint", "chapter": asuraChapter,
			"chapter_url": "https://asurascans.com/comics/omniscient-readers-viewpoint-5e6f7a8b/chapter/120"}},
		{orvDemonic, map[string]any{"site": "demonic", "series_url": "https://demonicscans.org/manga/Omniscient-Readers-Viewpoint",
			"title": "Omniscient Reader’s Viewpoint"}},
		{mpDemonic, map[string]any{"site": "demonic", "series_url": "https://demonicscans.org/manga/Martial-Peak", "title": "Martial Peak"}},
		{rivNovel, map[string]any{"site": "novelfull", "series_url": "https://novelfull.com/reverend-insanity.html", "title": "Reverend Insanity"}},
	} {
		r := b.Do("PUT", "/api/bookmarks/"+p.key, tok, p.body)
		require.Contains(t, []int{http.StatusCreated, http.StatusOK}, r.Code, "%s: %s", p.key, r.Body)
	}
}

// pollFinds records a successful poll of key that found chapter n.
func pollFinds(t *testing.T, b *apptest.App, key, label string, n float64, chapterURL string) {
	t.Helper()
	_, err := b.Store.RecordPoll(context.Background(), key, store.PollResult{Status: store.PollOK, Success: true,
		Latest: &store.LatestChapter{Label: label, Number: &n, URL: chapterURL}})
	require.NoError(t, err)
}

func link(t *testing.T, b *apptest.App, tok string, keys ...string) apiWork {
	t.Helper()
	r := b.Do("POST", "/api/works", tok, map[string]any{"keys": keys})
	require.Equal(t, http.StatusCreated, r.Code, "%s", r.Body)
	var w apiWork
	r.JSON(t, &w)
	return w
}

func wb(t *testing.T, b *apptest.App, tok, key string) workBookmark {
	t.Helper()
	r := b.Do("GET", "/api/bookmarks/"+key, tok, nil)
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	var got workBookmark
	r.JSON(t, &got)
	return got
}

func TestWorkLinkUnlinkDissolve(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	tok := b.Token("ann", false)
	holdORV(t, b, tok, "Chapter 120")

	// Every Bookmark object carries the Work fields, empty when unlinked.
	var raw []map[string]any
	b.Do("GET", "/api/bookmarks", tok, nil).JSON(t, &raw)
	for _, f := range []string{"work", "work_chapter", "work_chapter_number", "work_chapter_url", "work_progress_site",
		"work_latest_chapter", "work_latest_chapter_number", "work_latest_chapter_url", "work_latest_site", "gone", "gone_reason"} {
		require.Contains(t, raw[0], f)
	}
	require.Equal(t, "", raw[0]["work"])

	w := link(t, b, tok, orvDemonic, orvAsura)
	require.NotEmpty(t, w.ID)
	require.Equal(t, []string{orvAsura, orvDemonic}, w.Keys)
	require.Equal(t, "manga", w.Kind)
	require.Equal(t, "Chapter 120", w.Chapter)
	require.Equal(t, "asura", w.ProgressSite)
	require.Len(t, w.Members, 2)

	d := wb(t, b, tok, orvDemonic)
	require.Equal(t, w.ID, *d.Work, "a member's work is the Work's id")
	require.Equal(t, "Chapter 120", d.WorkChapter, "the demonic Bookmark shows the Progress read on asura")
	require.Equal(t, "asura", d.WorkProgressSite)
	require.Contains(t, d.WorkChapterURL, "asurascans.com")
	require.Equal(t, "", *wb(t, b, tok, mpDemonic).Work)

	var works []apiWork
	b.Do("GET", "/api/works", tok, nil).JSON(t, &works)
	require.Len(t, works, 1)
	require.Equal(t, w.ID, works[0].ID)

	// A third member, then removals: the last-but-one dissolves.
	r := b.Do("POST", "/api/works/"+w.ID+"/keys", tok, map[string]any{"key": mpDemonic})
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	r.JSON(t, &w)
	require.Len(t, w.Keys, 3)

	r = b.Do("DELETE", "/api/works/"+w.ID+"/keys/"+url.PathEscape(mpDemonic), tok, nil)
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	r.JSON(t, &w)
	require.False(t, w.Dissolved)
	require.Equal(t, []string{orvAsura, orvDemonic}, w.Keys)

	r = b.Do("DELETE", "/api/works/"+w.ID+"/keys/"+orvAsura, tok, nil)
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	r.JSON(t, &w)
	require.True(t, w.Dissolved, "one member left is no Work")
	require.Equal(t, "", *wb(t, b, tok, orvDemonic).Work, "the last member is free again")
	require.Equal(t, "", wb(t, b, tok, orvDemonic).WorkChapter)
	b.Do("GET", "/api/works", tok, nil).JSON(t, &works)
	require.Empty(t, works)
	require.Equal(t, 0, b.Count(`SELECT count(*) FROM works`))
	require.Equal(t, http.StatusNotFound, b.Do("GET", "/api/works/"+w.ID, tok, nil).Code)

	// Deleting a member's Bookmark dissolves a two-member Work too.
	w = link(t, b, tok, orvAsura, orvDemonic)
	require.Equal(t, http.StatusNoContent, b.Do("DELETE", "/api/bookmarks/"+orvDemonic, tok, nil).Code)
	require.Equal(t, "", *wb(t, b, tok, orvAsura).Work)
	require.Equal(t, 0, b.Count(`SELECT count(*) FROM works`))
}

func TestWorkRefusals(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	ann := b.Token("ann", false)
	bob := b.Token("bob", false)
	holdORV(t, b, ann, "Chapter 1")
	holdORV(t, b, bob, "Chapter 2")

	refused := func(tok string, body any, wantKeys ...string) refusal {
		t.Helper()
		r := b.Do("POST", "/api/works", tok, body)
		require.Equal(t, http.StatusUnprocessableEntity, r.Code, "%s", r.Body)
		var got refusal
		r.JSON(t, &got)
		require.NotEmpty(t, got.Error)
		require.Equal(t, wantKeys, got.Keys, got.Error)
		return got
	}
	refused(ann, map[string]any{"keys": []string{orvAsura}}, orvAsura)
	refused(ann, map[string]any{"keys": []string{orvAsura, orvAsura}}, orvAsura)
	refused(ann, map[string]any{"keys": []string{orvAsura, "asura:not-held"}}, "asura:not-held")
	refused(ann, map[string]any{"keys": []string{orvAsura, "no colon"}}, "no colon")
	got := refused(ann, map[string]any{"keys": []string{orvAsura, rivNovel}}, rivNovel)
	require.Contains(t, got.Error, "Library")
	require.Equal(t, http.StatusBadRequest, b.Do("POST", "/api/works", ann, map[string]any{"keys": "x"}).Code)

	w := link(t, b, ann, orvAsura, orvDemonic)
	refused(ann, map[string]any{"keys": []string{mpDemonic, orvDemonic}}, orvDemonic)

	// bob's own Series keys are his: ann's Work is nothing to him.
	bw := link(t, b, bob, orvAsura, orvDemonic)
	require.NotEqual(t, w.ID, bw.ID)
	require.Equal(t, http.StatusNotFound, b.Do("GET", "/api/works/"+w.ID, bob, nil).Code)
	require.Equal(t, http.StatusNotFound, b.Do("POST", "/api/works/"+w.ID+"/keys", bob, map[string]any{"key": mpDemonic}).Code)
	require.Equal(t, http.StatusNotFound, b.Do("DELETE", "/api/works/"+w.ID+"/keys/"+orvAsura, bob, nil).Code)
	require.Equal(t, http.StatusNotFound, b.Do("DELETE", "/api/works/nonsense/keys/"+orvAsura, bob, nil).Code)
	require.Equal(t, http.StatusNotFound, b.Do("DELETE", "/api/works/"+w.ID+"/keys/"+mpDemonic, ann, nil).Code, "not a member")
	var works []apiWork
	b.Do("GET", "/api/works", bob, nil).JSON(t, &works)
	require.Len(t, works, 1)
	require.Equal(t, bw.ID, works[0].ID)

	// A key bob holds and ann does not is refused to ann by name.
	require.Equal(t, http.StatusCreated, b.Do("PUT", "/api/bookmarks/asura:solo-leveling", bob, soloPut("Chapter 3")).Code)
	r := b.Do("POST", "/api/works/"+w.ID+"/keys", ann, map[string]any{"key": "asura:solo-leveling"})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code, "%s", r.Body)
	var rf refusal
	r.JSON(t, &rf)
	require.Equal(t, []string{"asura:solo-leveling"}, rf.Keys)
	r = b.Do("POST", "/api/works/"+w.ID+"/keys", ann, map[string]any{"key": rivNovel})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code, "a novel does not join a manga Work: %s", r.Body)

	// The database itself refuses a Bookmark in another Reader's Work.
	_, err := b.Store.Pool.Exec(context.Background(), `
		UPDATE bookmarks SET work_id = $1 WHERE series_key = $2 AND reader_id = (SELECT id FROM readers WHERE name = 'bob')`,
		w.ID, mpDemonic)
	require.ErrorContains(t, err, "bookmarks_work_fk")
}

// Reading on one Site moves the Work's Progress and the other Site's
// unread; a poll of one Site moves every member's work_latest_*; the list
// version (ETag) moves with link, unlink, a member's PUT and a member's
// poll.
func TestWorkProgressLatestAndListVersion(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	tok := b.Token("ann", false)
	holdORV(t, b, tok, "Chapter 119")
	pollFinds(t, b, orvAsura, "Chapter 120", 120, "https://asurascans.com/comics/omniscient-readers-viewpoint-5e6f7a8b/chapter/120")
	pollFinds(t, b, orvDemonic, "Chapter 120", 120, "https://demonicscans.org/title/Omniscient-Readers-Viewpoint/chapter/120/1")

	etag := func() string {
		r := b.Do("GET", "/api/bookmarks", tok, nil)
		require.Equal(t, http.StatusOK, r.Code)
		return r.Header.Get("ETag")
	}
	moved := func(before, what string) string {
		t.Helper()
		after := etag()
		require.NotEqual(t, before, after, "the list version moves on %s", what)
		require.Equal(t, http.StatusNotModified, b.Do("GET", "/api/bookmarks", tok, nil, "If-None-Match", after).Code)
		return after
	}
	tag := etag()
	require.True(t, wb(t, b, tok, orvDemonic).Unread, "unlinked: demonic's 120 is unread (no Progress there)")

	w := link(t, b, tok, orvAsura, orvDemonic)
	tag = moved(tag, "link")
	d := wb(t, b, tok, orvDemonic)
	require.True(t, d.Unread, "the Work's Progress is 119: 120 is unread")
	require.Equal(t, "asura", d.WorkLatestSite, "both have 120; asura had it first")

	// Reading 120 on asura marks demonic's 120 read.
	r := b.Do("PUT", "/api/bookmarks/"+orvAsura, tok, map[string]any{"site": "asura",
		"series_url": "https://asurascans.com/comics/omniscient-readers-viewpoint-5e6f7a8b", "chapter": "Chapter 120",
		"chapter_url": "https://asurascans.com/comics/omniscient-readers-viewpoint-5e6f7a8b/chapter/120"})
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	var put workBookmark
	r.JSON(t, &put)
	require.Equal(t, w.ID, *put.Work, "a PUT answers with the Work's fields too")
	tag = moved(tag, "a member's PUT")
	d = wb(t, b, tok, orvDemonic)
	require.False(t, d.Unread, "read on asura: demonic's 120 is read")
	require.Equal(t, 120.0, *d.WorkChapterNumber)
	require.Equal(t, "asura", d.WorkProgressSite)

	// demonic finds 121 first: every member's work_latest_* says so.
	pollFinds(t, b, orvDemonic, "Chapter 121", 121, "https://demonicscans.org/title/Omniscient-Readers-Viewpoint/chapter/121/1")
	tag = moved(tag, "a member's poll")
	for _, k := range []string{orvAsura, orvDemonic} {
		m := wb(t, b, tok, k)
		require.Equal(t, "Chapter 121", m.WorkLatestChapter, k)
		require.Equal(t, 121.0, *m.WorkLatestChapterNumber, k)
		require.Equal(t, "demonic", m.WorkLatestSite, k)
		require.Contains(t, m.WorkLatestChapterURL, "demonicscans.org", k)
	}
	require.True(t, wb(t, b, tok, orvDemonic).Unread)
	require.False(t, wb(t, b, tok, orvAsura).Unread, "asura's own newest (120) is read")
	// asura catching up does not take the Work's newest from demonic.
	pollFinds(t, b, orvAsura, "Chapter 121", 121, "https://asurascans.com/comics/omniscient-readers-viewpoint-5e6f7a8b/chapter/121")
	tag = moved(tag, "the other member's poll")
	require.Equal(t, "demonic", wb(t, b, tok, orvAsura).WorkLatestSite)

	r = b.Do("DELETE", "/api/works/"+w.ID+"/keys/"+orvAsura, tok, nil)
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	moved(tag, "unlink")
	require.True(t, wb(t, b, tok, orvDemonic).Unread, "unlinked again: demonic has no Progress of its own")
}

// A Series whose Site the Owner removed is gone, with the reason, and its
// Bookmark stays.
func TestGoneSeriesKeepsItsBookmark(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	tok := b.Token("ann", false)
	holdORV(t, b, tok, "Chapter 5")
	_, err := b.Store.Pool.Exec(context.Background(), `UPDATE series SET gone_at = now(), gone_reason = $2 WHERE key = $1`,
		orvDemonic, store.GoneSiteRemoved)
	require.NoError(t, err)
	d := wb(t, b, tok, orvDemonic)
	require.True(t, *d.Gone)
	require.Equal(t, "site removed", *d.GoneReason)
	a := wb(t, b, tok, orvAsura)
	require.False(t, *a.Gone)
	require.Equal(t, "", *a.GoneReason)
}

// The JSON export labels each Work's entries; an import links entries
// sharing a label; export → import → export is the same file.
func TestWorksExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann, annTok := b.reader("ann")
	b.put(ann, "https://asurascans.com/comics/omniscient-readers-viewpoint-5e6f7a8b", "Omniscient Reader's Viewpoint", "Chapter 120")
	b.put(ann, "https://demonicscans.org/manga/Omniscient-Readers-Viewpoint", "Omniscient Reader’s Viewpoint", "")
	b.put(ann, "https://demonicscans.org/manga/Martial-Peak", "Martial Peak", "Chapter 3")
	b.put(ann, "https://asurascans.com/comics/solo-leveling-1a2b3c4d", "Solo Leveling", "Chapter 9")
	_, err := b.lib.Link(context.Background(), ann, []string{orvAsura, orvDemonic})
	require.NoError(t, err)
	_, err = b.lib.Link(context.Background(), ann, []string{mpDemonic, "asura:solo-leveling"})
	require.NoError(t, err)
	exported := b.do(http.MethodGet, "/export", annTok, nil).body
	var doc struct {
		Bookmarks []struct {
			Key  string  `json:"key"`
			Work *string `json:"work"`
		} `json:"bookmarks"`
	}
	require.NoError(t, json.Unmarshal(exported, &doc))
	labels := map[string]string{}
	for _, e := range doc.Bookmarks {
		require.NotNil(t, e.Work, "every entry has a work label, empty or not")
		labels[e.Key] = *e.Work
	}
	require.Equal(t, map[string]string{orvAsura: "work-1", orvDemonic: "work-1", mpDemonic: "work-2", "asura:solo-leveling": "work-2"}, labels)

	bob, bobTok := b.reader("bob")
	res := b.do(http.MethodPost, "/import?format=lectern", bobTok, bytes.NewReader(exported))
	require.Equal(t, http.StatusOK, res.code, "%s", res.body)
	var rep struct {
		WorksLinked int `json:"works_linked"`
	}
	require.NoError(t, json.Unmarshal(res.body, &rep))
	require.Equal(t, 2, rep.WorksLinked)
	works, err := b.lib.Works(context.Background(), bob)
	require.NoError(t, err)
	require.Len(t, works, 2)
	require.Equal(t, []string{orvAsura, orvDemonic}, works[0].Keys)
	again := b.do(http.MethodGet, "/export", bobTok, nil).body
	require.Equal(t, stripExportedAt(t, exported), stripExportedAt(t, again), "export → import → export is the same file")

	// Importing the same file again links nothing new and breaks nothing.
	res = b.do(http.MethodPost, "/import?format=lectern", bobTok, bytes.NewReader(exported))
	require.Equal(t, http.StatusOK, res.code, "%s", res.body)
	require.NoError(t, json.Unmarshal(res.body, &rep))
	require.Zero(t, rep.WorksLinked)
	require.Equal(t, stripExportedAt(t, exported), stripExportedAt(t, b.do(http.MethodGet, "/export", bobTok, nil).body))

	// The CSV export carries the labels in its work column too.
	carol, carolTok := b.reader("carol")
	csvBody := b.do(http.MethodGet, "/export?format=csv", annTok, nil).body
	res = b.do(http.MethodPost, "/import?format=lectern", carolTok, bytes.NewReader(csvBody))
	require.Equal(t, http.StatusOK, res.code, "%s", res.body)
	works, err = b.lib.Works(context.Background(), carol)
	require.NoError(t, err)
	require.Len(t, works, 2)
	require.Equal(t, string(csvBody), string(b.do(http.MethodGet, "/export?format=csv", carolTok, nil).body))
}

type apiSuggestion struct {
	Keys     []string `json:"keys"`
	Titles   []string `json:"titles"`
	Sites    []string `json:"sites"`
	Work     string   `json:"work"`
	Evidence []struct {
		Kind   string `json:"kind"`
		Detail string `json:"detail"`
	} `json:"evidence"`
}

// Suggestions are offered, never linked; accepting is a link, dismissing
// hides the pair; the panel asks about a Series page it does not hold.
func TestWorkSuggestions(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	tok := b.Token("ann", false)
	holdORV(t, b, tok, "Chapter 120")
	// The Series have no titles of their own yet: the Reader's hints are
	// what the suggestions compare, as the list shows.
	var got []apiSuggestion
	r := b.Do("GET", "/api/works/suggestions", tok, nil)
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	r.JSON(t, &got)
	require.Len(t, got, 1)
	require.Equal(t, []string{orvAsura, orvDemonic}, got[0].Keys)
	require.Equal(t, []string{"asura", "demonic"}, got[0].Sites)
	require.Equal(t, "same_title", got[0].Evidence[0].Kind)
	require.Equal(t, "", got[0].Work)
	require.Equal(t, "", *wb(t, b, tok, orvAsura).Work, "never linked automatically")

	// A shared tracker id is evidence on its own.
	_, err := b.Store.Pool.Exec(context.Background(), `
		INSERT INTO series_tracker_ids (series_key, tracker, entry_id) VALUES ($1, 'anilist', '30013'), ($2, 'anilist', '30013')`,
		mpDemonic, orvAsura)
	require.NoError(t, err)
	b.Do("GET", "/api/works/suggestions", tok, nil).JSON(t, &got)
	require.Len(t, got, 2)
	require.Equal(t, []string{orvAsura, mpDemonic}, got[0].Keys)
	require.Equal(t, "tracker", got[0].Evidence[0].Kind)
	require.Equal(t, "anilist:30013", got[0].Evidence[0].Detail)

	// Dismissed: gone for good. Accepted (linked): gone too.
	r = b.Do("POST", "/api/works/suggestions/dismiss", tok, map[string]any{"keys": []string{mpDemonic, orvAsura}})
	require.Equal(t, http.StatusNoContent, r.Code, "%s", r.Body)
	require.Equal(t, http.StatusUnprocessableEntity, b.Do("POST", "/api/works/suggestions/dismiss", tok, map[string]any{"keys": []string{orvAsura}}).Code)
	b.Do("GET", "/api/works/suggestions", tok, nil).JSON(t, &got)
	require.Len(t, got, 1)
	w := link(t, b, tok, got[0].Keys...)
	b.Do("GET", "/api/works/suggestions", tok, nil).JSON(t, &got)
	require.Empty(t, got)

	// The panel on a Series page not held yet: the Work it would join.
	q := url.Values{"key": {"comix:x1y2z-omniscient-readers-viewpoint"}, "title": {"OMNISCIENT READER'S VIEWPOINT"}}
	r = b.Do("GET", "/api/works/suggestions?"+q.Encode(), tok, nil)
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	r.JSON(t, &got)
	require.Len(t, got, 2, "both members look like it")
	for _, s := range got {
		require.Equal(t, "comix:x1y2z-omniscient-readers-viewpoint", s.Keys[0])
		require.Equal(t, w.ID, s.Work)
	}
	q = url.Values{"key": {"novelfull:omniscient-readers-viewpoint"}, "title": {"Omniscient Reader's Viewpoint"}}
	b.Do("GET", "/api/works/suggestions?"+q.Encode(), tok, nil).JSON(t, &got)
	require.Empty(t, got, "a novel is not the manga's Work")
	require.Equal(t, http.StatusUnprocessableEntity, b.Do("GET", "/api/works/suggestions?key=nonsense&title=x", tok, nil).Code)

	// Another Reader sees none of this.
	bob := b.Token("bob", false)
	b.Do("GET", "/api/works/suggestions", bob, nil).JSON(t, &got)
	require.Empty(t, got)
}

// "Move these Bookmarks to another Site": one reviewed request moves the
// Progress and links each pair; a bad pair moves nothing.
func TestMoveProgressToAnotherSite(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	tok := b.Token("ann", false)
	holdORV(t, b, tok, "Chapter 120")
	r := b.Do("POST", "/api/works/move", tok, map[string]any{"moves": []map[string]string{
		{"from": orvAsura, "to": orvDemonic}, {"from": orvAsura, "to": "asura:not-held"}}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code, "%s", r.Body)
	var rf refusal
	r.JSON(t, &rf)
	require.Equal(t, []string{"asura:not-held"}, rf.Keys)
	require.Equal(t, "", wb(t, b, tok, orvDemonic).WorkChapter, "nothing moved")

	r = b.Do("POST", "/api/works/move", tok, map[string]any{"moves": []map[string]string{{"from": orvAsura, "to": orvDemonic}}})
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	d := b.Bookmark(tok, orvDemonic)
	require.Equal(t, "Chapter 120", d.Chapter, "the Progress moved")
	require.Equal(t, 120.0, *d.ChapterNumber)
	require.Equal(t, "", d.ChapterURL, "a chapter URL of another Site is not this Site's")
	require.Equal(t, *wb(t, b, tok, orvAsura).Work, *wb(t, b, tok, orvDemonic).Work)
	require.NotEqual(t, "", *wb(t, b, tok, orvAsura).Work)

	r = b.Do("POST", "/api/works/move", tok, map[string]any{"moves": []map[string]string{{"from": orvAsura, "to": rivNovel}}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code, "%s", r.Body)
}

// The review behind "Move these Bookmarks to another Site": each Bookmark
// on the dying Site with its Work's other members and its suggestions.
func TestMoveCandidates(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	ann := b.Reader("ann", false)
	tok := b.NewToken(ann)
	holdORV(t, b, tok, "Chapter 120")
	lib := b.Server.Library()
	got, err := lib.MoveCandidates(context.Background(), ann.ID, "demonic")
	require.NoError(t, err)
	require.Len(t, got, 2, "ann's two demonic Bookmarks")
	byKey := map[string][]string{}
	for _, mc := range got {
		for _, c := range mc.Candidates {
			byKey[mc.From.Key] = append(byKey[mc.From.Key], c.Keys[1]+" "+c.Evidence[0].Kind)
		}
	}
	require.Equal(t, []string{orvAsura + " same_title"}, byKey[orvDemonic])
	require.Empty(t, byKey[mpDemonic])

	link(t, b, tok, orvAsura, orvDemonic)
	got, err = lib.MoveCandidates(context.Background(), ann.ID, "demonic")
	require.NoError(t, err)
	for _, mc := range got {
		if mc.From.Key == orvDemonic {
			require.Len(t, mc.Candidates, 1)
			require.Equal(t, "work", mc.Candidates[0].Evidence[0].Kind, "the Work's other member")
		}
	}
}
