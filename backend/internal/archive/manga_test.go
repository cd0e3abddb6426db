package archive_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/archive"
)

// demonic's series fixture lists these chapters, oldest first.
var mangaChapters = []string{"1", "2", "180", "180.5", "181", "182"}

type comicInfoXML struct {
	Title     string `xml:"Title"`
	Series    string `xml:"Series"`
	Number    string `xml:"Number"`
	Count     int    `xml:"Count"`
	Web       string `xml:"Web"`
	PageCount int    `xml:"PageCount"`
	Pages     struct {
		Page []struct {
			Image       int    `xml:"Image,attr"`
			ImageWidth  int    `xml:"ImageWidth,attr"`
			ImageHeight int    `xml:"ImageHeight,attr"`
			Bookmark    string `xml:"Bookmark,attr"`
		} `xml:"Page"`
	} `xml:"Pages"`
}

// A whole manga Series archived from the loopback Site over real Postgres
// and files: every chapter visible in the Site's order with its pages in
// order and their sizes, identical pages stored once, images fetched with
// the chapter as Referer and ads never fetched; read in the web UI with a
// session, recorded as Progress, and exported as CBZ (one chapter, and
// several) through the API with a token.
func TestMangaSeriesArchivedReadAndExported(t *testing.T) {
	r := setup(t)
	ctx := context.Background()
	rd, token := r.reader("ada", false, true)
	key := r.hold(rd, mangaURL, "Solo Max-Level Newbie")
	require.Equal(t, mangaKey, key)

	code, _, body := r.apiDo(http.MethodPost, seriesAPI(key, "/archive"), token, map[string]any{"scope": "all"})
	require.Equal(t, http.StatusAccepted, code, string(body))
	var accepted archive.RequestStatus
	require.NoError(t, json.Unmarshal(body, &accepted))
	req, err := r.st.ArchiveRequestByID(ctx, accepted.ID)
	require.NoError(t, err)
	r.settled(req)

	got, err := r.st.ArchivedChapters(ctx, key)
	require.NoError(t, err)
	require.Len(t, got, len(mangaChapters), r.jobsDump())
	for i, c := range got {
		require.Equal(t, mangaChapterURL(mangaChapters[i]), c.URL, "chapter %d in the Site's order", i)
		require.Equal(t, "Chapter "+mangaChapters[i], c.Label)
		require.Equal(t, 4, c.PageCount)
		pages, err := r.st.ArchivePagesOf(ctx, c.ID)
		require.NoError(t, err)
		require.Len(t, pages, 4)
		for j, p := range pages {
			n := j + 1
			require.Equal(t, j, p.Index)
			require.Equal(t, fmt.Sprintf("https://cdn.demoniclibs.com/mangas/Solo%%20Max-Level%%20Newbie/%s/%02d.jpg?v=3", mangaChapters[i], n), p.SourceURL)
			require.Equal(t, "image/jpeg", p.ContentType)
			require.Equal(t, 60+n, p.Width, "width recorded when stored")
			require.Equal(t, 90, p.Height)
			f, err := r.svc.Pages.Open(context.Background(), p.Address)
			require.NoError(t, err)
			f.Close()
			require.Equal(t, int64(len(PageImage(mangaChapters[i], n))), f.Size())
		}
		// The chapter is the Referer of its images.
		key := hitKey(imageHost, "/mangas/Solo Max-Level Newbie/"+mangaChapters[i]+"/01.jpg", "v=3")
		require.Equal(t, 1, r.site.Hits(key))
		require.Equal(t, mangaChapterURL(mangaChapters[i]), r.site.Referer(key))
	}
	require.Zero(t, r.site.HitsPrefix("demonicscans.org/img/"), "the ad image among the pages is never fetched")
	require.Zero(t, r.count(`SELECT count(*) FROM archive_staging`), "checkpoints go when chapters commit")

	// Page 4 of every chapter is the same image: six rows, one file.
	require.Equal(t, 24, r.count(`SELECT count(*) FROM archive_pages`))
	require.Equal(t, 19, r.count(`SELECT count(DISTINCT address) FROM archive_pages`))
	files := 0
	require.NoError(t, filepath.WalkDir(r.dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files++
		}
		return err
	}))
	require.Equal(t, 19, files, "identical pages are stored once")
	totals, err := r.st.ArchiveTotalsAll(ctx)
	require.NoError(t, err)
	require.Equal(t, 6, totals.Chapters)
	require.Less(t, totals.StoredBytes, totals.Bytes)

	// The status the API answers.
	code, _, body = r.apiDo(http.MethodGet, seriesAPI(key, "/archive"), token, nil)
	require.Equal(t, http.StatusOK, code, string(body))
	var st archive.Status
	require.NoError(t, json.Unmarshal(body, &st))
	require.Equal(t, 6, st.ChaptersArchived)
	require.NotNil(t, st.ChaptersListed)
	require.Equal(t, 6, *st.ChaptersListed)
	require.Equal(t, 24, st.Pages)
	require.Zero(t, st.ChaptersFailed)
	require.Equal(t, r.app.URL+"/api/series/"+url.PathEscape(key)+"/archive.cbz", st.Export)

	t.Run("cbz of one chapter", func(t *testing.T) {
		code, hdr, body := r.apiDo(http.MethodGet, seriesAPI(key, "/archive.cbz?chapters=180"), token, nil)
		require.Equal(t, http.StatusOK, code, string(body))
		require.Equal(t, "application/vnd.comicbook+zip", hdr.Get("Content-Type"))
		require.Contains(t, hdr.Get("Content-Disposition"), `filename="Solo Max-Level Newbie - Chapter 180.cbz"`)
		zr := openZip(t, body)
		require.Equal(t, []string{"0001.jpg", "0002.jpg", "0003.jpg", "0004.jpg", "ComicInfo.xml"}, names(zr))
		for i, f := range zr.File[:4] {
			require.Equal(t, uint16(0), f.Method, "pages are stored, not deflated")
			require.Zero(t, f.Flags&0x8, "a page entry needs no data descriptor: its CRC is known")
			require.Equal(t, PageImage("180", i+1), readEntry(t, f), "page %d in order", i+1)
		}
		var ci comicInfoXML
		require.NoError(t, xml.Unmarshal(readEntry(t, zr.File[4]), &ci))
		require.Equal(t, "Solo Max-Level Newbie", ci.Series)
		require.Equal(t, "180", ci.Number)
		require.Equal(t, "Chapter 180", ci.Title)
		require.Equal(t, mangaChapterURL("180"), ci.Web)
		require.Equal(t, 4, ci.PageCount)
		require.Equal(t, 6, ci.Count, "the chapters the Site lists")
		require.Len(t, ci.Pages.Page, 4)
		for i, p := range ci.Pages.Page {
			require.Equal(t, i, p.Image)
			require.Equal(t, 61+i, p.ImageWidth)
			require.Equal(t, 90, p.ImageHeight)
		}
	})

	t.Run("cbz of several chapters", func(t *testing.T) {
		code, _, body := r.apiDo(http.MethodGet, seriesAPI(key, "/archive.cbz?chapters=1-2,181"), token, nil)
		require.Equal(t, http.StatusOK, code, string(body))
		zr := openZip(t, body)
		want := []string{}
		for c := 1; c <= 3; c++ {
			for p := 1; p <= 4; p++ {
				want = append(want, fmt.Sprintf("%04d/%04d.jpg", c, p))
			}
		}
		require.Equal(t, append(want, "ComicInfo.xml"), names(zr))
		for i, ch := range []string{"1", "2", "181"} {
			for p := 1; p <= 4; p++ {
				require.Equal(t, PageImage(ch, p), readEntry(t, zr.File[i*4+p-1]))
			}
		}
		var ci comicInfoXML
		require.NoError(t, xml.Unmarshal(readEntry(t, zr.File[12]), &ci))
		require.Equal(t, 12, ci.PageCount)
		require.Equal(t, 6, ci.Count)
		require.Empty(t, ci.Number)
		require.Equal(t, mangaURL, ci.Web)
		require.Len(t, ci.Pages.Page, 12)
		require.Equal(t, "Chapter 1", ci.Pages.Page[0].Bookmark)
		require.Equal(t, "Chapter 181", ci.Pages.Page[8].Bookmark)
		require.Empty(t, ci.Pages.Page[1].Bookmark)
	})

	t.Run("export errors", func(t *testing.T) {
		code, _, body := r.apiDo(http.MethodGet, seriesAPI(key, "/archive.cbz?chapters=999"), token, nil)
		require.Equal(t, http.StatusNotFound, code, string(body))
		code, _, body = r.apiDo(http.MethodGet, seriesAPI(key, "/archive.epub"), token, nil)
		require.Equal(t, http.StatusBadRequest, code, string(body))
		code, _, body = r.apiDo(http.MethodGet, seriesAPI(key, "/archive.cbz?chapters=7-2"), token, nil)
		require.Equal(t, http.StatusUnprocessableEntity, code, string(body))
	})

	t.Run("read in the web UI and record Progress", func(t *testing.T) {
		b := r.signIn("ada")
		p := b.Get("/series/" + url.PathEscape(key))
		require.Equal(t, http.StatusOK, p.Code)
		link, ok := p.Doc.Find(`[data-testid="archive-link"]`).Attr("href")
		require.True(t, ok, "the Series page links its archive")

		p = b.Get(link)
		require.Equal(t, http.StatusOK, p.Code, p.Body)
		require.Equal(t, 6, p.Doc.Find(`[data-testid="archived-row"]`).Length())
		require.Contains(t, p.Doc.Find(`[data-testid="archived-count"]`).Text(), "6 of 6 chapters")
		read, ok := p.Doc.Find(`[data-testid="archived-row"] [data-testid="read"]`).Eq(2).Attr("href")
		require.True(t, ok)
		c180 := r.chapter(mangaChapterURL("180"))
		require.Equal(t, archive.ChapterPath(key, c180.ID), read)

		p = b.Get(read)
		require.Equal(t, http.StatusOK, p.Code, p.Body)
		imgs := p.Doc.Find(`[data-testid="strip"] img[data-testid="page"]`)
		require.Equal(t, 4, imgs.Length())
		pages, err := r.st.ArchivePagesOf(ctx, c180.ID)
		require.NoError(t, err)
		for i := range 4 {
			img := imgs.Eq(i)
			require.Equal(t, archive.PagePath(key, pages[i].Address), img.AttrOr("src", ""))
			require.Equal(t, strconv.Itoa(61+i), img.AttrOr("width", ""), "the size is reserved before the image loads")
			require.Equal(t, "90", img.AttrOr("height", ""))
			want := "lazy"
			if i < 2 {
				want = "eager"
			}
			require.Equal(t, want, img.AttrOr("loading", ""))
		}
		prev, _ := p.Doc.Find(`[data-testid="prev-chapter"]`).Attr("href")
		next, _ := p.Doc.Find(`[data-testid="next-chapter"]`).Attr("href")
		require.Equal(t, archive.ChapterPath(key, r.chapter(mangaChapterURL("2")).ID), prev)
		require.Equal(t, archive.ChapterPath(key, r.chapter(mangaChapterURL("180.5")).ID), next)

		img := b.Get(archive.PagePath(key, pages[2].Address))
		require.Equal(t, http.StatusOK, img.Code)
		require.Equal(t, "image/jpeg", img.Header.Get("Content-Type"))
		require.Contains(t, img.Header.Get("Cache-Control"), "private")
		require.Equal(t, PageImage("180", 3), []byte(img.Body))

		paged := b.Get(read + "?view=paged&p=2")
		require.Equal(t, http.StatusOK, paged.Code)
		require.Equal(t, archive.PagePath(key, pages[1].Address), paged.Doc.Find(`[data-testid="paged"] img`).AttrOr("src", ""))
		require.Equal(t, read+"?view=paged&p=3", paged.Doc.Find(`[data-testid="next-page"]`).AttrOr("href", ""))

		dl := b.Get(link + ".cbz?chapters=180")
		require.Equal(t, http.StatusOK, dl.Code)
		require.Equal(t, PageImage("180", 1), readEntry(t, openZip(t, []byte(dl.Body)).File[0]), "the same download with the session")

		res := b.PostForm(read, read+"/progress", nil)
		require.Equal(t, http.StatusSeeOther, res.Code, res.Body)
		bm, err := r.st.GetBookmark(ctx, rd.ID, key)
		require.NoError(t, err)
		require.Equal(t, "Chapter 180", bm.Chapter)
		require.Equal(t, mangaChapterURL("180"), bm.ChapterURL)
		require.NotNil(t, bm.ChapterNumber)
		require.Equal(t, 180.0, *bm.ChapterNumber)
		require.Equal(t, 1, b.Get(read).Doc.Find(`[data-testid="is-progress"]`).Length())
	})
}
