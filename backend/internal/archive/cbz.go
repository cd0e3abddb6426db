package archive

import (
	"archive/zip"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// comicInfo is ComicInfo.xml as Komga, Kavita and Mihon read it (the
// Anansi Project's schema v2.0). The schema is a sequence: fields keep its
// order.
type comicInfo struct {
	XMLName   xml.Name    `xml:"ComicInfo"`
	XSI       string      `xml:"xmlns:xsi,attr"`
	XSD       string      `xml:"xmlns:xsd,attr"`
	Title     string      `xml:"Title,omitempty"`
	Series    string      `xml:"Series"`
	Number    string      `xml:"Number,omitempty"`
	Count     int         `xml:"Count,omitempty"`
	Notes     string      `xml:"Notes,omitempty"`
	Web       string      `xml:"Web,omitempty"`
	PageCount int         `xml:"PageCount"`
	Pages     *comicPages `xml:"Pages,omitempty"`
}

type comicPages struct {
	Page []comicPage `xml:"Page"`
}

type comicPage struct {
	Image       int    `xml:"Image,attr"`
	ImageSize   int    `xml:"ImageSize,attr,omitempty"`
	ImageWidth  int    `xml:"ImageWidth,attr,omitempty"`
	ImageHeight int    `xml:"ImageHeight,attr,omitempty"`
	Bookmark    string `xml:"Bookmark,attr,omitempty"`
}

// cbzChapter is one chapter of a CBZ with the function that lists its pages,
// called only when the chapter is written.
type cbzChapter struct {
	Chapter store.ArchiveChapter
	Pages   func(ctx context.Context) ([]store.ArchivePage, error)
}

// cbzSeries is what ComicInfo says about the Series.
type cbzSeries struct {
	Title, SeriesURL, Site string
	// Count is the number of chapters the Site listed at the last listing
	// (ComicInfo's Count: the books in the Series), 0 when never listed.
	Count int
}

// opener opens a stored page's bytes.
type opener func(ctx context.Context, address string) (io.ReadCloser, error)

// writeCBZ streams a CBZ to w: the page images, stored (they are compressed
// already) with their CRC known from the store so no entry needs a data
// descriptor or a second read, then ComicInfo.xml. One chapter gives a
// chapter book (pages at the root, ComicInfo with its Number, Title and
// Web); several give a Series book (a folder per chapter, in reading order,
// each chapter's first page bookmarked with its label).
func writeCBZ(ctx context.Context, w io.Writer, series cbzSeries, chapters []cbzChapter, open opener, now time.Time) error {
	zw := zip.NewWriter(w)
	single := len(chapters) == 1
	info := comicInfo{
		XSI:    "http://www.w3.org/2001/XMLSchema-instance",
		XSD:    "http://www.w3.org/2001/XMLSchema",
		Series: series.Title,
		Count:  series.Count,
		Notes:  fmt.Sprintf("Archived by Lectern from %s on %s.", series.Site, now.UTC().Format("2006-01-02")),
		Web:    series.SeriesURL,
		Pages:  &comicPages{},
	}
	if single {
		c := chapters[0].Chapter
		info.Title, info.Web = c.Label, c.URL
		if c.Number != nil {
			info.Number = strconv.FormatFloat(*c.Number, 'f', -1, 64)
		}
	}
	width := max(4, len(strconv.Itoa(len(chapters))))
	image := 0
	for ci, ch := range chapters {
		if err := ctx.Err(); err != nil {
			return err
		}
		pages, err := ch.Pages(ctx)
		if err != nil {
			return err
		}
		dir := ""
		if !single {
			dir = fmt.Sprintf("%0*d/", width, ci+1)
		}
		pw := max(4, len(strconv.Itoa(len(pages))))
		for pi, p := range pages {
			name := fmt.Sprintf("%s%0*d.%s", dir, pw, pi+1, imagetype.Ext(p.ContentType))
			if err := copyStored(ctx, zw, name, p, open, now); err != nil {
				return fmt.Errorf("cbz page %s of %s: %w", name, ch.Chapter.URL, err)
			}
			cp := comicPage{Image: image, ImageSize: p.Size, ImageWidth: p.Width, ImageHeight: p.Height}
			if !single && pi == 0 {
				cp.Bookmark = ch.Chapter.Label
			}
			info.Pages.Page = append(info.Pages.Page, cp)
			image++
		}
	}
	info.PageCount = image
	if !single {
		info.Title = series.Title
	}
	f, err := zw.CreateHeader(&zip.FileHeader{Name: "ComicInfo.xml", Method: zip.Deflate, Modified: now})
	if err != nil {
		return fmt.Errorf("cbz ComicInfo.xml: %w", err)
	}
	if _, err := io.WriteString(f, xml.Header); err != nil {
		return fmt.Errorf("cbz ComicInfo.xml: %w", err)
	}
	enc := xml.NewEncoder(f)
	enc.Indent("", "  ")
	if err := enc.Encode(info); err != nil {
		return fmt.Errorf("cbz ComicInfo.xml: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("cbz: %w", err)
	}
	return nil
}

// copyStored writes one page as a stored entry whose header already carries
// its CRC and size, copying the file straight from the volume.
func copyStored(ctx context.Context, zw *zip.Writer, name string, p store.ArchivePage, open opener, now time.Time) error {
	r, err := open(ctx, p.Address)
	if err != nil {
		return err
	}
	defer r.Close()
	fh := &zip.FileHeader{
		Name:               name,
		Method:             zip.Store,
		CRC32:              p.CRC32,
		CompressedSize64:   uint64(p.Size),
		UncompressedSize64: uint64(p.Size),
	}
	setDOSTime(fh, now)
	f, err := zw.CreateRaw(fh)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, int64(p.Size)+1))
	if err != nil {
		return err
	}
	if n != int64(p.Size) {
		return fmt.Errorf("stored file %s has %d bytes, its row says %d", p.Address, n, p.Size)
	}
	return nil
}

// setDOSTime sets the MS-DOS time of a raw entry: CreateRaw does not derive
// it from Modified, and setting Modified would add an extra field, which an
// EPUB's mimetype entry must not have.
func setDOSTime(fh *zip.FileHeader, t time.Time) {
	t = t.UTC()
	if t.Year() < 1980 {
		return
	}
	//lint:ignore SA1019 CreateRaw writes only these fields (see above).
	fh.ModifiedDate = uint16(t.Day() + int(t.Month())<<5 + (t.Year()-1980)<<9)
	//lint:ignore SA1019 CreateRaw writes only these fields (see above).
	fh.ModifiedTime = uint16(t.Second()/2 + t.Minute()<<5 + t.Hour()<<11)
}
