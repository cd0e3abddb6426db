package latest

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fixtureDir holds the Sites' fixtures at the repository root.
const fixtureDir = "../../../testdata/sites"

func readFixture(t testing.TB, site, file string) []byte {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(fixtureDir, site, file))
	require.NoError(t, err)
	return body
}

// row writes a Chapter as "label|number|url|locked" ("-" for no number), so
// a whole list is compared at once and a failure shows which field moved.
func row(c Chapter) string {
	n := "-"
	if c.Number != nil {
		n = strconv.FormatFloat(*c.Number, 'f', -1, 64)
	}
	return fmt.Sprintf("%s|%s|%s|%v", c.Label, n, c.URL, c.Locked)
}

func rows(cs []Chapter) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = row(c)
	}
	return out
}

// extractCase is one fixture read with one page URL. Series fixtures pin
// Latest, Cover and Chapters; chapter fixtures pin Content. A problem field
// names the Problem code the question must give instead of an answer.
type extractCase struct {
	site, file, pageURL string

	title                 string
	latest, latestProblem string
	cover, coverProblem   string
	chapters              []string
	chaptersProblem       string
	pages                 []string
	text, contentProblem  string
	series                bool // the fixture is a series page (or a non-page read as one)
	chapter               bool // the fixture is a chapter page (or a non-page read as one)
}

const (
	orv      = "https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b"
	orvOld   = "https://asuracomic.net/series/omniscient-readers-viewpoint-a1b2c3d4"
	smln     = "https://demonicscans.org/manga/Solo-Max-Level-Newbie"
	tged     = "https://comix.to/title/r8k2m-the-greatest-estate-developer"
	tower    = "https://kagane.to/series/0199a4c2-7d1e-7b3a-9f21-4be0c6d1a2f3"
	towerBk  = tower + "/reader/0199a4c3-0000-7000-8000-00000000000"
	shadow   = "https://www.lightnovelworld.com/novel/shadow-slave"
	mechanic = "https://novelfull.com/the-legendary-mechanic"
	salt     = "https://www.webtoons.com/en/fantasy/the-salt-cartographer"
	saltList = salt + "/list?title_no=7710"
	lamp     = "https://www.royalroad.com/fiction/48112/the-lamplighters-ledger"
	mdID     = "8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f"
	mdTitle  = "https://mangadex.org/title/" + mdID + "/tourou-no-deshi"
	mdRecord = "https://api.mangadex.org/manga/" + mdID + "?includes[]=cover_art"
	mdFeed   = "https://api.mangadex.org/manga/" + mdID + "/feed?translatedLanguage[]=en&order[readableAt]=desc&limit=100"
	mdCh     = "https://mangadex.org/chapter/c0000000-0000-4000-8000-000000000"
	mdAtHome = "https://api.mangadex.org/at-home/server/c0000000-0000-4000-8000-000000000105"
)

func saltEp(n int) string {
	return fmt.Sprintf("%s/episode-%d/viewer?title_no=7710&episode_no=%d", salt, n, n)
}

// webtoonsRows are the episodes of list page 1 (series.html), by number:
// 3 is a Daily Pass episode, 7 a Fast Pass one.
var webtoonsRows = []string{
	"Ep. 3 - A Chart of Nothing|3|" + saltEp(3) + "|true",
	"Ep. 4 - Soundings|4|" + saltEp(4) + "|false",
	"Ep. 5 - Brine|5|" + saltEp(5) + "|false",
	"Ep. 6 - The Lighthouse Map|6|" + saltEp(6) + "|false",
	"Ep. 7 - Low Tide|7|" + saltEp(7) + "|true",
}

// royalroadChapterRows is the fiction page's table, in its order: the
// Prologue and the Interlude have no number, and the order is the table's.
var royalroadChapterRows = []string{
	"Prologue|-|https://www.royalroad.com/fiction/48112/the-lamplighters-ledger/chapter/800001|false",
	"Chapter 1: The First Lamp|1|https://www.royalroad.com/fiction/48112/the-lamplighters-ledger/chapter/800002|false",
	"Chapter 2: Oil and Ash|2|https://www.royalroad.com/fiction/48112/the-lamplighters-ledger/chapter/800003|false",
	"Interlude: The Watchman|-|https://www.royalroad.com/fiction/48112/the-lamplighters-ledger/chapter/800004|false",
	"Chapter 27: Ember|27|https://www.royalroad.com/fiction/48112/the-lamplighters-ledger/chapter/800005|false",
	"Chapter 28: The Long Street|28|https://www.royalroad.com/fiction/48112/the-lamplighters-ledger/chapter/800006|false",
}

// royalroadText is chapter.html's text: no author's note, no paragraph or
// span a <style> rule hides.
const royalroadText = "The street was longer at night, as it always was.\n\n" +
	"Oren lit the first lamp and wrote its number in the ledger:\none, and then the date.\n\n" +
	"“Who keeps count of the counting?” the watchman asked & laughed.\n\n" +
	"Oren did not answer."

// mangadexChapterRows is feed.json read oldest first: chapter 2's second
// upload (another group's) is the same chapter; 9 (no pages), 11 (on an
// external site) and 12 (published in 2099) are listed locked; the oneshot
// keeps its place in time; 140 belongs to another manga.
var mangadexChapterRows = []string{
	"Chapter 1 - The Lamp|1|" + mdCh + "101|false",
	"Chapter 2|2|" + mdCh + "102|false",
	"Chapter 9|9|" + mdCh + "109|true",
	"Chapter 10 - Ten Lanterns|10|" + mdCh + "110|false",
	"Winter Oneshot|-|" + mdCh + "100|false",
	"Chapter 10.5 - Side Story|10.5|" + mdCh + "105|false",
	"Chapter 11 - Across the River|11|" + mdCh + "111|true",
	"Chapter 12 - The Festival|12|" + mdCh + "112|true",
}

var asuraChapterRows = []string{
	"Chapter 1 - Prologue|1|" + orv + "/chapter/1|false",
	"Chapter 2 - The Three Ways to Survive|2|" + orv + "/chapter/2|false",
	"Chapter 249 - Epilogue (1)|249|" + orv + "/chapter/249|false",
	"Chapter 250 - Epilogue (2)|250|" + orv + "/chapter/250|false",
	// early_access_until has passed: readable.
	"Chapter 250.5 - Side Story|250.5|" + orv + "/chapter/250.5|false",
	// is_premium with an open early-access window.
	"Chapter 251|251|" + orv + "/chapter/251|true",
	"Chapter 252 - The Last Reader|252|" + orv + "/chapter/252|true",
}

var demonicChapterRows = []string{
	"Chapter 1|1|https://demonicscans.org/chaptered.php?manga=4812&chapter=1|false",
	"Chapter 2|2|https://demonicscans.org/chaptered.php?manga=4812&chapter=2|false",
	"Chapter 180|180|https://demonicscans.org/chaptered.php?manga=4812&chapter=180|false",
	"Chapter 180.5|180.5|https://demonicscans.org/chaptered.php?manga=4812&chapter=180.5|false",
	"Chapter 181|181|https://demonicscans.org/chaptered.php?manga=4812&chapter=181|false",
	"Chapter 182|182|https://demonicscans.org/chaptered.php?manga=4812&chapter=182|false",
}

// demonicORVRows is asura's story on demonic (Works: one story on two Sites).
var demonicORVRows = []string{
	"Chapter 1|1|https://demonicscans.org/chaptered.php?manga=5120&chapter=1|false",
	"Chapter 2|2|https://demonicscans.org/chaptered.php?manga=5120&chapter=2|false",
	"Chapter 249|249|https://demonicscans.org/chaptered.php?manga=5120&chapter=249|false",
	"Chapter 250|250|https://demonicscans.org/chaptered.php?manga=5120&chapter=250|false",
	"Chapter 251|251|https://demonicscans.org/chaptered.php?manga=5120&chapter=251|false",
}

var comixChapterRows = []string{
	"Chapter 1 - Prologue|1|" + tged + "/5500001-chapter-1|false",
	"Chapter 2 - Lloyd Frontera|2|" + tged + "/5500002-chapter-2|false",
	"Chapter 204|204|" + tged + "/5551000-chapter-204|false",
	"Chapter 204.5 - Side Story|204.5|" + tged + "/5551001-chapter-204.5|false",
	// Two groups uploaded 205 and 206: the newest upload of each is kept
	// (Asura's 205 "6 days ago" over Flame's "1 week ago", listed first).
	"Chapter 205 - The Dam|205|" + tged + "/5551985-chapter-205|false",
	"Chapter 206|206|" + tged + "/5552210-chapter-206|false",
}

var kaganeChapterRows = []string{
	"Vol. 1 Chapter 1|1|" + towerBk + "1|false",
	"Chapter 2|2|" + towerBk + "2|false",
	"Chapter 3|3|" + towerBk + "3|false",
	"Ch. 4.5 - Extra|4.5|" + towerBk + "4|false",
	"Chapter 5: The Tower|5|" + towerBk + "5|false",
	// Listed newest by sort_no, and without a chapter number: none is made up.
	"Oneshot Special|-|" + towerBk + "6|false",
}

var lnwChapterRows = []string{
	"Chapter 2299 - Forgotten Shore|2299|" + shadow + "/chapter-2299|false",
	"Chapter 2300: Dawn of Ash|2300|" + shadow + "/chapter-2300|false",
	"Chapter 2301: The Long Night|2301|" + shadow + "/chapter-2301|false",
}

func novelfullRows(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("Chapter %d - Part %d|%d|%s/chapter-%d.html|false", i, i, i, mechanic, i))
	}
	return out
}

// notPage fills every question of a case with the same problem: a body that
// is not the page gives no Cover, no chapter and no content.
func notPage(c extractCase, code string) extractCase {
	c.series, c.chapter = true, true
	c.latestProblem, c.coverProblem, c.chaptersProblem, c.contentProblem = code, code, code, code
	if code == ProblemNotSeriesPage {
		c.contentProblem = ProblemNotChapterPage
	}
	return c
}

var extractCases = []extractCase{
	// asura
	{site: "asura", file: "series.html", pageURL: orv, series: true, title: "Omniscient Reader's Viewpoint",
		latest: asuraChapterRows[6], cover: "https://cdn.asurascans.com/asura-images/covers/omniscient-readers-viewpoint.7f3k9a2b.webp", chapters: asuraChapterRows},
	// Without a page URL the canonical link names the Series.
	{site: "asura", file: "series.html", series: true, title: "Omniscient Reader's Viewpoint",
		latest: asuraChapterRows[6], cover: "https://cdn.asurascans.com/asura-images/covers/omniscient-readers-viewpoint.7f3k9a2b.webp", chapters: asuraChapterRows},
	{site: "asura", file: "series-nocover.html", pageURL: orv, series: true, title: "Omniscient Reader's Viewpoint",
		latest: asuraChapterRows[3], cover: "", chapters: asuraChapterRows[:4]},
	{site: "asura", file: "series-old.html", pageURL: orvOld, series: true, title: "Omniscient Reader's Viewpoint",
		latest: "Chapter 120 - The Fourth Wall|120|" + orvOld + "/chapter/120|true",
		cover:  "https://gg.asuracomic.net/storage/media/1234/conversions/01J6-optimized.webp",
		chapters: []string{
			"Chapter 1 - Prologue|1|" + orvOld + "/chapter/1|false",
			"Chapter 2|2|" + orvOld + "/chapter/2|false",
			"Chapter 118 - Dokja's Choice|118|" + orvOld + "/chapter/118|false",
			"Chapter 119|119|" + orvOld + "/chapter/119|false",
			"Chapter 120 - The Fourth Wall|120|" + orvOld + "/chapter/120|true",
		}},
	{site: "asura", file: "chapter.html", pageURL: orv + "/chapter/250", chapter: true, pages: []string{
		"https://cdn.asurascans.com/asura-images/chapters/omniscient-readers-viewpoint/250/01.webp",
		"https://cdn.asurascans.com/asura-images/chapters/omniscient-readers-viewpoint/250/02.webp",
		"https://cdn.asurascans.com/asura-images/chapters/omniscient-readers-viewpoint/250/03.webp",
	}},
	{site: "asura", file: "chapter-old.html", pageURL: orvOld + "/chapter/118", chapter: true, pages: []string{
		"https://gg.asuracomic.net/storage/media/9001/01.webp",
		"https://gg.asuracomic.net/storage/media/9002/02.webp",
		"https://gg.asuracomic.net/storage/media/9003/03.webp",
		"https://gg.asuracomic.net/storage/media/9004/04.webp",
	}},
	{site: "asura", file: "chapter-locked.html", pageURL: orv + "/chapter/252", chapter: true, contentProblem: ProblemLocked},
	// A series page is not a chapter page, and a chapter page not a series page.
	{site: "asura", file: "chapter.html", pageURL: orv + "/chapter/250", series: true,
		latestProblem: ProblemNotSeriesPage, coverProblem: ProblemNotSeriesPage, chaptersProblem: ProblemNotSeriesPage},
	{site: "asura", file: "series.html", pageURL: orv, chapter: true, contentProblem: ProblemNotChapterPage},
	notPage(extractCase{site: "asura", file: "challenge.html", pageURL: orv}, ProblemChallenge),

	// demonic
	{site: "demonic", file: "series.html", pageURL: smln, series: true, title: "Solo Max-Level Newbie",
		latest: demonicChapterRows[5], cover: "https://readermc.org/images/thumbnails/Solo%20Max-Level%20Newbie.webp", chapters: demonicChapterRows},
	{site: "demonic", file: "series-nocover.html", pageURL: smln, series: true, title: "Solo Max-Level Newbie",
		latest: demonicChapterRows[5], cover: "", chapters: demonicChapterRows},
	{site: "demonic", file: "chapter.html", pageURL: "https://demonicscans.org/title/Solo-Max-Level-Newbie/chapter/180/20260101", chapter: true, pages: []string{
		"https://cdn.demoniclibs.com/mangas/Solo%20Max-Level%20Newbie/0180/01.jpg?v=3",
		"https://cdn.demoniclibs.com/mangas/Solo%20Max-Level%20Newbie/0180/02.jpg?v=3",
		"https://cdn.demoniclibs.com/mangas/Solo%20Max-Level%20Newbie/0180/03.jpg?v=3",
		"https://cdn.demoniclibs.com/mangas/Solo%20Max-Level%20Newbie/0180/04.jpg?v=3",
	}},
	notPage(extractCase{site: "demonic", file: "error.html", pageURL: smln}, ProblemNotFound),
	{site: "demonic", file: "series-orv.html", pageURL: "https://demonicscans.org/manga/Omniscient-Readers-Viewpoint", series: true,
		title: "Omniscient Reader's Viewpoint", latest: demonicORVRows[4],
		cover: "https://readermc.org/images/thumbnails/Omniscient%20Reader's%20Viewpoint.webp", chapters: demonicORVRows},
	{site: "demonic", file: "chapter-orv.html", pageURL: "https://demonicscans.org/title/Omniscient-Readers-Viewpoint/chapter/251/20261027", chapter: true, pages: []string{
		"https://cdn.demoniclibs.com/mangas/Omniscient%20Reader's%20Viewpoint/0251/01.jpg?v=1",
		"https://cdn.demoniclibs.com/mangas/Omniscient%20Reader's%20Viewpoint/0251/02.jpg?v=1",
	}},

	// comix
	{site: "comix", file: "series.html", pageURL: tged, series: true, title: "The Greatest Estate Developer",
		latest: comixChapterRows[5], cover: "https://static.comix.to/r8k2m/poster-medium.webp", chapters: comixChapterRows},
	{site: "comix", file: "series.html", series: true, title: "The Greatest Estate Developer",
		latest: comixChapterRows[5], cover: "https://static.comix.to/r8k2m/poster-medium.webp", chapters: comixChapterRows},
	{site: "comix", file: "series-nocover.html", pageURL: tged, series: true, title: "The Greatest Estate Developer",
		latest: comixChapterRows[5], cover: "", chapters: comixChapterRows},
	{site: "comix", file: "chapter.html", pageURL: tged + "/5551985-chapter-205", chapter: true, pages: []string{
		"https://static.comix.to/ch/5551985/001.webp", "https://static.comix.to/ch/5551985/002.webp",
		"https://static.comix.to/ch/5551985/003.webp", "https://static.comix.to/ch/5551985/004.webp",
	}},
	{site: "comix", file: "chapter-scrambled.html", pageURL: tged + "/5552210-chapter-206", chapter: true, contentProblem: ProblemScrambled},
	// A page URL of another Series: its detail is not on this page.
	{site: "comix", file: "series.html", pageURL: "https://comix.to/title/x9q1z-nano-machine", series: true,
		latestProblem: ProblemNotSeriesPage, coverProblem: ProblemNotSeriesPage, chaptersProblem: ProblemNotSeriesPage},
	notPage(extractCase{site: "comix", file: "challenge.html", pageURL: tged}, ProblemChallenge),

	// kagane: bodies as read in the tab
	{site: "kagane", file: "series.json", pageURL: tower, series: true, title: "The Tower of Nine Gates",
		latest: kaganeChapterRows[5], cover: "https://kagane.to/api/v2/image/0199a4c2-cccc-7ddd-8eee-ffff00001111", chapters: kaganeChapterRows},
	{site: "kagane", file: "series.json", pageURL: "https://kagane.org/series/0199a4c2-7d1e-7b3a-9f21-4be0c6d1a2f3", series: true, title: "The Tower of Nine Gates",
		latest:   strings.Replace(kaganeChapterRows[5], "kagane.to", "kagane.org", 1),
		cover:    "https://yuzuki.kagane.org/api/v2/image/0199a4c2-cccc-7ddd-8eee-ffff00001111",
		chapters: replaceAll(kaganeChapterRows, "kagane.to", "kagane.org")},
	{site: "kagane", file: "series-nocover.json", pageURL: tower, series: true, title: "The Tower of Nine Gates",
		latest: kaganeChapterRows[5], cover: "", chapters: kaganeChapterRows},
	{site: "kagane", file: "chapter.html", pageURL: towerBk + "5", chapter: true, contentProblem: ProblemLocked},
	{site: "kagane", file: "chapter-manifest.json", pageURL: towerBk + "5", chapter: true, pages: []string{
		"https://kagane.to/api/v2/books/0199a4c3-0000-7000-8000-000000000005/file/1.jxl",
		"https://kagane.to/api/v2/books/0199a4c3-0000-7000-8000-000000000005/file/2.jxl",
		"https://kagane.to/api/v2/books/0199a4c3-0000-7000-8000-000000000005/file/3.jxl",
	}},
	notPage(extractCase{site: "kagane", file: "error.json", pageURL: tower}, ProblemNotFound),
	notPage(extractCase{site: "kagane", file: "challenge.html", pageURL: tower}, ProblemChallenge),

	// mangadex: API answers. The record names the title and the Cover, the
	// feed the chapters; a chapter's body is its at-home server answer.
	{site: "mangadex", file: "series.json", pageURL: mdRecord, series: true, title: "The Lantern Keeper's Apprentice",
		latestProblem: ProblemNoChapters, cover: "https://uploads.mangadex.org/covers/" + mdID + "/5e1f2a9b-7c3d-4e8f-a0b1-c2d3e4f5a6b7.jpg.512.jpg",
		chaptersProblem: ProblemNoChapters},
	{site: "mangadex", file: "series.json", pageURL: mdTitle, series: true, title: "The Lantern Keeper's Apprentice",
		latestProblem: ProblemNoChapters, cover: "https://uploads.mangadex.org/covers/" + mdID + "/5e1f2a9b-7c3d-4e8f-a0b1-c2d3e4f5a6b7.jpg.512.jpg",
		chaptersProblem: ProblemNoChapters},
	{site: "mangadex", file: "series-nocover.json", pageURL: mdRecord, series: true, title: "The Lantern Keeper's Apprentice",
		latestProblem: ProblemNoChapters, cover: "", chaptersProblem: ProblemNoChapters},
	// The record of another manga than the page URL names is not its page.
	notPage(extractCase{site: "mangadex", file: "series.json", pageURL: "https://mangadex.org/title/1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9"}, ProblemNotSeriesPage),
	{site: "mangadex", file: "feed.json", pageURL: mdFeed, series: true, latest: mangadexChapterRows[5], cover: "", chapters: mangadexChapterRows},
	// Without a page URL the manga most of the feed names is the one read.
	{site: "mangadex", file: "feed.json", series: true, latest: mangadexChapterRows[5], cover: "", chapters: mangadexChapterRows},
	{site: "mangadex", file: "chapter.json", pageURL: mdAtHome, chapter: true, pages: []string{
		"https://uploads.mangadex.org/data/4e6d0c8a2b1f3e5d7c9a0b2d4f6e8a1c/1-0f1e2d3c4b5a69788796a5b4c3d2e1f0.png",
		"https://uploads.mangadex.org/data/4e6d0c8a2b1f3e5d7c9a0b2d4f6e8a1c/2-1f2e3d4c5b6a798897a6b5c4d3e2f1a0.png",
		"https://uploads.mangadex.org/data/4e6d0c8a2b1f3e5d7c9a0b2d4f6e8a1c/3-2f3e4d5c6b7a8998a7b6c5d4e3f2a1b0.png",
	}},
	notPage(extractCase{site: "mangadex", file: "error.json", pageURL: mdRecord}, ProblemNotSeriesPage),
	// The pages a Reader opens are script shells, for the panel: the
	// backend reads the API, and a shell read as a page answers nothing.
	notPage(extractCase{site: "mangadex", file: "title-page.html", pageURL: mdTitle}, ProblemNotSeriesPage),
	notPage(extractCase{site: "mangadex", file: "chapter-page.html", pageURL: mdCh + "105"}, ProblemNotSeriesPage),

	// webtoons: the Latest Chapter is the newest episode a reader can open
	// (7 is behind a Fast Pass).
	{site: "webtoons", file: "series.html", pageURL: saltList, series: true, title: "The Salt Cartographer",
		latest: webtoonsRows[3], cover: "https://swebtoon-phinf.pstatic.net/20260301_12/1709280000000_JPEG/7710_share.jpg?type=crop540_540",
		chapters: webtoonsRows},
	{site: "webtoons", file: "series.html", series: true, title: "The Salt Cartographer",
		latest: webtoonsRows[3], cover: "https://swebtoon-phinf.pstatic.net/20260301_12/1709280000000_JPEG/7710_share.jpg?type=crop540_540",
		chapters: webtoonsRows},
	{site: "webtoons", file: "series-nocover.html", pageURL: saltList, series: true, title: "The Salt Cartographer",
		latest: webtoonsRows[3], cover: "", chapters: webtoonsRows},
	{site: "webtoons", file: "series-page-2.html", pageURL: saltList + "&page=2", series: true, title: "The Salt Cartographer",
		latest: "Ep. 2 - The Guild|2|" + saltEp(2) + "|false", cover: "https://swebtoon-phinf.pstatic.net/20260301_12/1709280000000_JPEG/7710_share.jpg?type=crop540_540",
		chapters: []string{"Ep. 1 - Salt|1|" + saltEp(1) + "|false", "Ep. 2 - The Guild|2|" + saltEp(2) + "|false"}},
	// A list page of another title is not this one's.
	notPage(extractCase{site: "webtoons", file: "series.html", pageURL: "https://www.webtoons.com/en/romance/tide-and-tea/list?title_no=8801"}, ProblemNotSeriesPage),
	{site: "webtoons", file: "feed.xml", pageURL: salt + "/rss?title_no=7710", series: true, title: "The Salt Cartographer",
		latest: webtoonsRows[3], cover: "", chapters: webtoonsRows[1:4]},
	{site: "webtoons", file: "chapter.html", pageURL: saltEp(6), chapter: true, pages: []string{
		"https://webtoon-phinf.pstatic.net/20261124_7/7710_6_01.jpg?type=q90",
		"https://webtoon-phinf.pstatic.net/20261124_7/7710_6_02.jpg?type=q90",
		"https://webtoon-phinf.pstatic.net/20261124_7/7710_6_03.jpg?type=q90",
	}},
	notPage(extractCase{site: "webtoons", file: "error.html", pageURL: saltList}, ProblemNotSeriesPage),

	// royalroad
	{site: "royalroad", file: "series.html", pageURL: lamp, series: true, title: "The Lamplighter's Ledger",
		latest: royalroadChapterRows[5], cover: "https://www.royalroadcdn.com/public/covers-large/48112-the-lamplighters-ledger.jpg?time=1700000001",
		chapters: royalroadChapterRows},
	// Without a page URL, links resolve against the Site's first host.
	{site: "royalroad", file: "series.html", series: true, title: "The Lamplighter's Ledger",
		latest:   strings.Replace(royalroadChapterRows[5], "www.", "", 1),
		cover:    "https://www.royalroadcdn.com/public/covers-large/48112-the-lamplighters-ledger.jpg?time=1700000001",
		chapters: replaceAll(royalroadChapterRows, "www.", "")},
	// The placeholder Royal Road shows for a fiction without a cover is none.
	{site: "royalroad", file: "series-nocover.html", pageURL: lamp, series: true, title: "The Lamplighter's Ledger",
		latest: royalroadChapterRows[5], cover: "", chapters: royalroadChapterRows},
	// The feed lists the newest chapters; their short links are made long
	// with the channel's link, so the feed and the table name them alike.
	{site: "royalroad", file: "feed.xml", pageURL: "https://www.royalroad.com/fiction/syndication/48112", series: true, title: "The Lamplighter's Ledger",
		latest: royalroadChapterRows[5], cover: "", chapters: royalroadChapterRows[3:]},
	notPage(extractCase{site: "royalroad", file: "feed.xml", pageURL: "https://www.royalroad.com/fiction/syndication/777"}, ProblemNotSeriesPage),
	{site: "royalroad", file: "chapter.html", pageURL: lamp + "/chapter/800006/chapter-28-the-long-street", chapter: true, text: royalroadText},
	notPage(extractCase{site: "royalroad", file: "challenge.html", pageURL: lamp}, ProblemChallenge),

	// lightnovelworld
	{site: "lightnovelworld", file: "series.html", pageURL: shadow, series: true, title: "Shadow Slave",
		latest: lnwChapterRows[2], cover: "https://static.lightnovelworld.com/bookcover/300x400/shadow-slave.jpg", chapters: lnwChapterRows},
	{site: "lightnovelworld", file: "series-nocover.html", pageURL: shadow, series: true, title: "Shadow Slave",
		latest: lnwChapterRows[2], cover: "", chapters: lnwChapterRows},
	{site: "lightnovelworld", file: "chapter.html", pageURL: shadow + "/chapter-2301", chapter: true,
		text: "Sunny opened his eyes to darkness.\n\n" +
			"The night was long, and the shadows whispered his name.\n\n" +
			"“Not again,” he muttered & stood up.\n\n" +
			"Somewhere, a bell rang\nthree times."},
	notPage(extractCase{site: "lightnovelworld", file: "challenge.html", pageURL: shadow}, ProblemChallenge),
	notPage(extractCase{site: "lightnovelworld", file: "login.html", pageURL: shadow + "/chapter-2301"}, ProblemLoginWall),

	// novelfull: bodies as read in the tab
	{site: "novelfull", file: "series.html", pageURL: mechanic + ".html", series: true, title: "The Legendary Mechanic",
		latest: "Chapter 1463 - The End|1463|" + mechanic + "/chapter-1463-end.html|false",
		cover:  "https://novelfull.com/uploads/thumbs/the-legendary-mechanic-c5f6d3e0b5.jpg", chapters: novelfullRows(1, 6)},
	{site: "novelfull", file: "series-nocover.html", pageURL: mechanic + ".html", series: true, title: "The Legendary Mechanic",
		latest: "Chapter 1463 - The End|1463|" + mechanic + "/chapter-1463-end.html|false", cover: "", chapters: novelfullRows(1, 6)},
	// Page 1 of 30 without the latest-chapters block does not hold the
	// Latest Chapter: a problem, never chapter 6.
	{site: "novelfull", file: "series-nolatest.html", pageURL: mechanic + ".html", series: true, title: "The Legendary Mechanic", latestProblem: ProblemNoChapters,
		cover: "https://novelfull.com/uploads/thumbs/the-legendary-mechanic-c5f6d3e0b5.jpg", chapters: novelfullRows(1, 6)},
	{site: "novelfull", file: "chapter.html", pageURL: mechanic + "/chapter-1462.html", chapter: true,
		text: "Han Xiao looked at the stars one last time.\n\n" +
			"\"It is over,\" he said.\n\n" +
			"The fleet turned home.\n\n" +
			"Nobody spoke\nfor a long while."},
	notPage(extractCase{site: "novelfull", file: "challenge.html", pageURL: mechanic + ".html"}, ProblemChallenge),
	notPage(extractCase{site: "novelfull", file: "access-denied.html", pageURL: mechanic + ".html"}, ProblemAccessDenied),
}

func replaceAll(in []string, old, new string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = strings.ReplaceAll(s, old, new)
	}
	return out
}

func TestExtract(t *testing.T) {
	t.Parallel()
	for _, tc := range extractCases {
		name := tc.site + "/" + tc.file
		if tc.pageURL == "" {
			name += "/no-page-url"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			site, ok := reg.Lookup(tc.site)
			require.True(t, ok)
			body := readFixture(t, tc.site, tc.file)
			var page *url.URL
			if tc.pageURL != "" {
				var err error
				page, err = url.Parse(tc.pageURL)
				require.NoError(t, err)
			}
			require.True(t, tc.series || tc.chapter, "a case pins some question")
			if tc.series {
				// The title is a page-level answer like the Cover: it has
				// the Cover's problem.
				title, err := site.Title(body, page)
				checkProblem(t, "Title", err, tc.coverProblem)
				require.Equal(t, tc.title, title)

				latest, err := site.Latest(body, page)
				checkProblem(t, "Latest", err, tc.latestProblem)
				if tc.latestProblem == "" {
					require.Equal(t, tc.latest, row(latest))
				} else {
					require.Equal(t, Chapter{}, latest, "no Latest Chapter beside a problem")
				}

				cover, err := site.Cover(body, page)
				checkProblem(t, "Cover", err, tc.coverProblem)
				require.Equal(t, tc.cover, cover)

				chapters, err := site.Chapters(body, page)
				checkProblem(t, "Chapters", err, tc.chaptersProblem)
				if tc.chaptersProblem == "" {
					require.Equal(t, tc.chapters, rows(chapters))
				} else {
					require.Empty(t, chapters)
				}
			}
			if tc.chapter {
				content, err := site.Content(body, page)
				checkProblem(t, "Content", err, tc.contentProblem)
				require.Equal(t, tc.pages, content.Pages)
				require.Equal(t, tc.text, content.Text)
			}
		})
	}
}

func checkProblem(t *testing.T, question string, err error, want string) {
	t.Helper()
	if want == "" {
		require.NoError(t, err, question)
		return
	}
	require.Error(t, err, question)
	require.Equal(t, want, ProblemCode(err), "%s: %v", question, err)
}

// Every answer is absolute, on https or http, and the extractors keep to
// their rules on every fixture: chapter URLs on the Site's hosts, oldest
// first when numbered, no markup in novel text.
func TestExtractInvariants(t *testing.T) {
	t.Parallel()
	for _, tc := range extractCases {
		site, _ := reg.Lookup(tc.site)
		body := readFixture(t, tc.site, tc.file)
		page, _ := url.Parse(tc.pageURL)
		if tc.pageURL == "" {
			page = nil
		}
		chapters, _ := site.Chapters(body, page)
		for i, c := range chapters {
			u, err := url.Parse(c.URL)
			require.NoError(t, err)
			require.True(t, u.IsAbs() && site.HasHost(u.Hostname()), "%s: %s", tc.file, c.URL)
			require.NotEmpty(t, c.Label)
			if i > 0 && c.Number != nil && chapters[i-1].Number != nil {
				require.Less(t, *chapters[i-1].Number, *c.Number, "%s: oldest first, one per number", tc.file)
			}
		}
		if cover, _ := site.Cover(body, page); cover != "" {
			u, err := url.Parse(cover)
			require.NoError(t, err)
			require.True(t, u.IsAbs())
			require.NotContains(t, cover, " ")
		}
		content, _ := site.Content(body, page)
		for _, p := range content.Pages {
			require.NotContains(t, p, " ")
			u, err := url.Parse(p)
			require.NoError(t, err)
			require.True(t, u.IsAbs())
		}
		require.NotContains(t, content.Text, "<")
		require.NotContains(t, content.Text, "\n\n\n")
	}
}

// Each fixture says what page it stands for, its URL shape and the date of
// the structure it follows, so a Site that changes can be told from one
// that never looked like this.
func TestFixturesNameTheirPage(t *testing.T) {
	t.Parallel()
	var n int
	for _, s := range []string{"asura", "demonic", "comix", "kagane", "lightnovelworld", "mangadex", "novelfull", "royalroad", "webtoons"} {
		entries, err := os.ReadDir(filepath.Join(fixtureDir, s))
		require.NoError(t, err)
		kinds := map[string]bool{}
		for _, e := range entries {
			body := readFixture(t, s, e.Name())
			head := string(body[:min(len(body), 1500)])
			switch filepath.Ext(e.Name()) {
			case ".html":
				require.True(t, strings.HasPrefix(head, "<!-- Fixture: "), "%s/%s starts with its comment", s, e.Name())
			case ".json":
				require.True(t, strings.HasPrefix(head, "{\n \"_fixture\": \""), "%s/%s starts with a _fixture field", s, e.Name())
			case ".xml":
				require.Regexp(t, `^<\?xml [^>]*\?>\n<!-- Fixture: `, head, "%s/%s starts with its comment after the declaration", s, e.Name())
			default:
				t.Fatalf("unexpected fixture %s/%s", s, e.Name())
			}
			require.Contains(t, head, "URL", "%s/%s names its URL shape", s, e.Name())
			require.Regexp(t, `20\d\d-\d\d`, head, "%s/%s dates its structure", s, e.Name())
			for _, k := range []string{"series", "chapter", "challenge", "error", "denied", "nocover"} {
				if strings.Contains(e.Name(), k) {
					kinds[k] = true
				}
			}
			n++
		}
		require.True(t, kinds["series"] && kinds["chapter"] && kinds["nocover"], "%s has a series page, a chapter page and a page without a Cover", s)
		require.True(t, kinds["challenge"] || kinds["error"] || kinds["denied"], "%s has a challenge or error body", s)
	}
	require.Greater(t, n, 30)
}

func mustParse(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u
}

// A published Cover address that cannot be used (a script URL, a data:
// placeholder, blanks) is skipped for the next source, never returned.
func TestCoverSkipsUnusableCandidates(t *testing.T) {
	t.Parallel()
	demonic, _ := reg.Lookup("demonic")
	body := []byte(`<html><head><meta property="og:image" content="javascript:alert(1)"></head><body>
<div id="manga-info-container"><div id="manga-page"><img data-src="  " src="/covers/Solo Max.webp"></div></div></body></html>`)
	cover, err := demonic.Cover(body, mustParse(t, smln))
	require.NoError(t, err)
	require.Equal(t, "https://demonicscans.org/covers/Solo%20Max.webp", cover)

	lnw, _ := reg.Lookup("lightnovelworld")
	body = []byte(`<html><body><h1 class="novel-title">T</h1><figure class="cover"><img src="data:image/gif;base64,R0lGOD" data-src=""></figure></body></html>`)
	cover, err = lnw.Cover(body, mustParse(t, shadow))
	require.NoError(t, err)
	require.Empty(t, cover, "a data: placeholder is no Cover")
}
