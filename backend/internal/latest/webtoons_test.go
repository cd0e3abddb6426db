package latest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// The full list walks the list pages (&page=n) while the pager links the
// next one; the first is the series page the poll already has.
func TestWebtoonsChapterListWalksItsPages(t *testing.T) {
	t.Parallel()
	site, _ := reg.Lookup("webtoons")
	series := "https://webtoons.com/en/fantasy/the-salt-cartographer/list?title_no=7710"
	f := &fixtureFetcher{pages: map[string][]byte{series + "&page=2": readFixture(t, "webtoons", "series-page-2.html")}}
	list, err := site.AllChapters(context.Background(), f, series, readFixture(t, "webtoons", "series.html"))
	require.NoError(t, err)
	want := []string{"Ep. 1 - Salt|1|" + saltEp(1) + "|false", "Ep. 2 - The Guild|2|" + saltEp(2) + "|false"}
	require.Equal(t, append(want, webtoonsRows...), rows(list))
	require.Equal(t, []string{series + "&page=2"}, f.asked, "page 2 links no page 3: the walk stops")
}

// Once a Series has its Cover, the Poll reads the title's RSS feed.
func TestWebtoonsPollsItsFeed(t *testing.T) {
	t.Parallel()
	site, _ := reg.Lookup("webtoons")
	got, ok := site.PollURL("https://webtoons.com/en/fantasy/the-salt-cartographer/list?title_no=7710")
	require.True(t, ok)
	require.Equal(t, salt+"/rss?title_no=7710", got)
	_, ok = site.PollURL("https://webtoons.com/episodeList?titleNo=7710")
	require.False(t, ok, "a series URL without its genre and slug has no feed address")
	// The feed and the page name the same Latest Chapter.
	fromFeed, err := site.Latest(readFixture(t, "webtoons", "feed.xml"), mustParse(t, got))
	require.NoError(t, err)
	fromPage, err := site.Latest(readFixture(t, "webtoons", "series.html"), mustParse(t, saltList))
	require.NoError(t, err)
	require.Equal(t, fromPage, fromFeed)

	md, _ := reg.Lookup("mangadex")
	feed, ok := md.PollURL("https://mangadex.org/title/" + mdID)
	require.True(t, ok)
	require.Equal(t, mdLatestFeed, feed)
	rr, _ := reg.Lookup("royalroad")
	feed, ok = rr.PollURL("https://royalroad.com/fiction/48112/the-lamplighters-ledger")
	require.True(t, ok)
	require.Equal(t, "https://www.royalroad.com/fiction/syndication/48112", feed)
	fromFeed, err = rr.Latest(readFixture(t, "royalroad", "feed.xml"), mustParse(t, feed))
	require.NoError(t, err)
	fromPage, err = rr.Latest(readFixture(t, "royalroad", "series.html"), mustParse(t, lamp))
	require.NoError(t, err)
	require.Equal(t, fromPage, fromFeed, "the feed's short link is the table's chapter")
}
