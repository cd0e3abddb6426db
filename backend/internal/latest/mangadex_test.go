package latest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// MangaDex is read through its API: these pin which URLs a poll and a full
// listing fetch, and the rules of its chapter feed.

const (
	mdLatestFeed = "https://api.mangadex.org/manga/" + mdID + "/feed?translatedLanguage[]=en&order[readableAt]=desc&limit=100" +
		"&includeFuturePublishAt=0&includeEmptyPages=0&includeExternalUrl=0&" + mangadexRatings
)

func mdListFeed(offset int) string {
	return fmt.Sprintf("https://api.mangadex.org/manga/%s/feed?translatedLanguage[]=en&order[volume]=asc&order[chapter]=asc&limit=500&offset=%d&%s",
		mdID, offset, mangadexRatings)
}

func TestMangadexReadsItsPagesThroughTheAPI(t *testing.T) {
	t.Parallel()
	site, _ := reg.Lookup("mangadex")
	require.Equal(t, mdRecord, site.ReadFrom(mdTitle), "the title page is read as its record with the cover_art")
	require.Equal(t, mdRecord, site.ReadFrom("https://www.mangadex.org/title/"+mdID+"?tab=art"))
	require.Equal(t, mdAtHome, site.ReadFrom(mdCh+"105"), "a reader page as its at-home server answer")
	require.Equal(t, mdLatestFeed, site.ReadFrom(mdLatestFeed), "an API URL is read as it is")
	asura, _ := reg.Lookup("asura")
	require.Equal(t, orv, asura.ReadFrom(orv), "a Site without ReadURL reads its pages")
	for _, h := range []string{"mangadex.org", "api.mangadex.org", "uploads.mangadex.org"} {
		require.True(t, site.HasHost(h), h)
	}
}

// A poll reads two bodies: the record (fetched as the series page), then
// the feed, through the caller's fetcher.
func TestMangadexLatestReadsTheFeed(t *testing.T) {
	t.Parallel()
	site, _ := reg.Lookup("mangadex")
	require.NotNil(t, site.LatestOf)
	f := &fixtureFetcher{pages: map[string][]byte{mdLatestFeed: readFixture(t, "mangadex", "feed.json")}}
	c, err := site.LatestChapter(context.Background(), f, mdRecord, readFixture(t, "mangadex", "series.json"))
	require.NoError(t, err)
	require.Equal(t, mangadexChapterRows[5], row(c), "10.5: 11 is external, 12 is not out yet, 140 is another manga's")
	require.Equal(t, []string{mdLatestFeed}, f.asked, "one further request: the feed")

	// The feed probed alone answers by itself, without a fetch.
	f = &fixtureFetcher{}
	c, err = site.LatestChapter(context.Background(), f, mdFeed, readFixture(t, "mangadex", "feed.json"))
	require.NoError(t, err)
	require.Equal(t, mangadexChapterRows[5], row(c))
	require.Empty(t, f.asked)

	// An error answer for the record fetches nothing more.
	_, err = site.LatestChapter(context.Background(), f, mdRecord, readFixture(t, "mangadex", "error.json"))
	require.Equal(t, ProblemNotSeriesPage, ProblemCode(err))
	require.Empty(t, f.asked)

	// A refused feed is the poll's failure, not a problem of the body.
	f = &fixtureFetcher{failed: errNoSuchPage}
	_, err = site.LatestChapter(context.Background(), f, mdRecord, readFixture(t, "mangadex", "series.json"))
	require.ErrorIs(t, err, errNoSuchPage)
	require.Empty(t, ProblemCode(err))
}

// The full list walks the feed 500 at a time until its total; one number
// uploaded by two groups on two pages is still one chapter.
func TestMangadexChapterListWalksTheFeed(t *testing.T) {
	t.Parallel()
	site, _ := reg.Lookup("mangadex")
	page := func(offset, total int, chapters ...string) []byte {
		var data []string
		for _, c := range chapters {
			n, id, _ := strings.Cut(c, "=")
			data = append(data, fmt.Sprintf(`{"id":"c0000000-0000-4000-8000-000000000%s","type":"chapter","attributes":{"chapter":"%s","title":null,"translatedLanguage":"en","externalUrl":null,"publishAt":"2026-01-%02dT00:00:00+00:00","pages":5},"relationships":[{"id":"%s","type":"manga"}]}`,
				id, n, len(data)+1+offset, mdID))
		}
		return []byte(fmt.Sprintf(`{"result":"ok","response":"collection","data":[%s],"limit":500,"offset":%d,"total":%d}`, strings.Join(data, ","), offset, total))
	}
	f := &fixtureFetcher{pages: map[string][]byte{
		mdListFeed(0): page(0, 4, "1=201", "2=202"),
		mdListFeed(2): page(2, 4, "2=203", "3=204"),
	}}
	chapters, err := site.AllChapters(context.Background(), f, mdRecord, readFixture(t, "mangadex", "series.json"))
	require.NoError(t, err)
	require.Equal(t, []string{
		"Chapter 1|1|" + mdCh + "201|false",
		"Chapter 2|2|" + mdCh + "202|false",
		"Chapter 3|3|" + mdCh + "204|false",
	}, rows(chapters))
	require.Equal(t, []string{mdListFeed(0), mdListFeed(2)}, f.asked, "the walk stops at the total")
}

// A chapter whose every upload is locked stays listed, locked; a readable
// upload of the same number replaces a locked one.
func TestMangadexGroupsOfOneNumber(t *testing.T) {
	t.Parallel()
	site, _ := reg.Lookup("mangadex")
	body := readFixture(t, "mangadex", "feed.json")
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	data := listOf(m["data"])
	// A second, readable upload of chapter 11 by another group.
	var again map[string]any
	raw, _ := json.Marshal(data[1])
	require.NoError(t, json.Unmarshal(raw, &again))
	again["id"] = "c0000000-0000-4000-8000-000000000211"
	attrs := mapOf(again["attributes"])
	attrs["externalUrl"], attrs["pages"], attrs["publishAt"] = nil, 18.0, "2026-03-10T12:00:00+00:00"
	m["data"] = append(data, again)
	body, _ = json.Marshal(m)
	c, err := site.Latest(body, mustParse(t, mdFeed))
	require.NoError(t, err)
	require.Equal(t, "Chapter 11 - Across the River|11|"+mdCh+"211|false", row(c))
	chapters, err := site.Chapters(body, mustParse(t, mdFeed))
	require.NoError(t, err)
	require.Len(t, chapters, len(mangadexChapterRows), "still one chapter 11")
}

// Every question on the record answers through Trackers too: the links.
func TestMangadexTrackers(t *testing.T) {
	t.Parallel()
	site, _ := reg.Lookup("mangadex")
	got := site.Trackers(readFixture(t, "mangadex", "series.json"), mustParse(t, mdRecord))
	// mu "w7jdpwo" is base 36.
	require.Equal(t, map[string]string{"anilist": "154321", "myanimelist": "149876", "mangaupdates": "70112850792"}, got)
	require.Nil(t, site.Trackers(readFixture(t, "mangadex", "feed.json"), mustParse(t, mdFeed)))
	require.Nil(t, site.Trackers(readFixture(t, "mangadex", "error.json"), mustParse(t, mdRecord)))
}

// The probe of the bodies one at a time, in the poll's order.
func TestMangadexProbe(t *testing.T) {
	t.Parallel()
	site, _ := reg.Lookup("mangadex")
	r := Probe(site, PageSeries, mdRecord, readFixture(t, "mangadex", "series.json"))
	require.True(t, r.Answered)
	require.Equal(t, "mangadex:"+mdID, r.Key)
	require.Equal(t, "The Lantern Keeper's Apprentice", r.Title)
	require.Equal(t, ProblemNoChapters, r.Problem, "the record alone names no chapter")
	r = Probe(site, PageSeries, mdFeed, readFixture(t, "mangadex", "feed.json"))
	require.True(t, r.Answered)
	require.Equal(t, mangadexChapterRows[5], row(*r.LatestChapter))
	r = Probe(site, PageChapter, mdAtHome, readFixture(t, "mangadex", "chapter.json"))
	require.True(t, r.Answered)
	require.Len(t, r.Pages, 3)
	r = Probe(site, PageSeries, mdRecord, readFixture(t, "mangadex", "error.json"))
	require.False(t, r.Answered, "an error answer is not a page: exit 3")
	require.True(t, bytes.Contains([]byte(r.Detail), []byte("Manga could not be found")), r.Detail)
}

// The record's other titles, for the Works suggestions: every language's
// title and every altTitles entry, without the one Title answers.
func TestMangadexAltTitles(t *testing.T) {
	t.Parallel()
	site, _ := reg.Lookup("mangadex")
	title, err := site.Title(readFixture(t, "mangadex", "series.json"), mustParse(t, mdRecord))
	require.NoError(t, err)
	got := site.AltTitles(readFixture(t, "mangadex", "series.json"), mustParse(t, mdRecord))
	require.Equal(t, []string{"Tourou no Deshi", "灯籠の弟子", "등롱지기의 제자"}, got, "title %q", title)
	require.NotContains(t, got, title)
	require.Nil(t, site.AltTitles(readFixture(t, "mangadex", "error.json"), mustParse(t, mdRecord)))
}
