package archive

import (
	"archive/zip"
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/xml"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/store"
)

const epubMimetype = "application/epub+zip"

// epubSeries is what the package document says about the book.
type epubSeries struct {
	Key, Title, SeriesURL, Site string
	// Language is the book's BCP 47 language: the supported novel Sites
	// publish English translations.
	Language string
}

// epubChapter is one chapter with the function that reads its text, called
// only when the chapter is written.
type epubChapter struct {
	Chapter store.ArchiveChapter
	Text    func(ctx context.Context) (string, error)
}

// writeEPUB streams an EPUB 3 book to w: the mimetype entry first, stored
// and without an extra field (OCF 3.0 §4.3); the container; the package
// document, the navigation document (and an NCX for EPUB 2 readers); a
// style sheet; then one XHTML document per chapter, each read and written
// in turn, so only one chapter's text is in memory at a time.
func writeEPUB(ctx context.Context, w io.Writer, book epubSeries, chapters []epubChapter, now time.Time) error {
	zw := zip.NewWriter(w)
	fh := &zip.FileHeader{
		Name:               "mimetype",
		Method:             zip.Store,
		CRC32:              crc32.ChecksumIEEE([]byte(epubMimetype)),
		CompressedSize64:   uint64(len(epubMimetype)),
		UncompressedSize64: uint64(len(epubMimetype)),
	}
	setDOSTime(fh, now)
	mw, err := zw.CreateRaw(fh)
	if err != nil {
		return fmt.Errorf("epub mimetype: %w", err)
	}
	if _, err := io.WriteString(mw, epubMimetype); err != nil {
		return fmt.Errorf("epub mimetype: %w", err)
	}

	id := bookID(book.Key)
	files := []struct {
		name string
		gen  func(io.Writer) error
	}{
		{"META-INF/container.xml", func(w io.Writer) error { _, err := io.WriteString(w, containerXML); return err }},
		{"OEBPS/content.opf", func(w io.Writer) error { return writeOPF(w, book, chapters, id, now) }},
		{"OEBPS/nav.xhtml", func(w io.Writer) error { return writeNav(w, book, chapters) }},
		{"OEBPS/toc.ncx", func(w io.Writer) error { return writeNCX(w, book, chapters, id) }},
		{"OEBPS/style.css", func(w io.Writer) error { _, err := io.WriteString(w, epubCSS); return err }},
	}
	for _, f := range files {
		if err := deflated(zw, f.name, now, f.gen); err != nil {
			return fmt.Errorf("epub %s: %w", f.name, err)
		}
	}
	for i, ch := range chapters {
		if err := ctx.Err(); err != nil {
			return err
		}
		text, err := ch.Text(ctx)
		if err != nil {
			return err
		}
		name := "OEBPS/" + chapterFile(i)
		if err := deflated(zw, name, now, func(w io.Writer) error { return writeChapterXHTML(w, book, ch.Chapter, text) }); err != nil {
			return fmt.Errorf("epub %s: %w", name, err)
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("epub: %w", err)
	}
	return nil
}

func deflated(zw *zip.Writer, name string, now time.Time, gen func(io.Writer) error) error {
	f, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: now})
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 16<<10)
	if err := gen(bw); err != nil {
		return err
	}
	return bw.Flush()
}

func chapterFile(i int) string { return fmt.Sprintf("text/c%05d.xhtml", i+1) }

// bookID is a name-based UUID (version 5 layout over SHA-1) of the Series
// key: the same Series always exports under the same identifier, so a
// reading app sees a new export as the same book.
func bookID(key string) string {
	h := sha1.Sum([]byte("lectern:series:" + key))
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

const containerXML = `<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles>
    <rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>
  </rootfiles>
</container>
`

const epubCSS = `body { margin: 0 5%; line-height: 1.5; }
h1 { font-size: 1.4em; margin: 1.5em 0 1em; text-align: center; }
p { margin: 0 0 0.8em; text-indent: 0; }
`

// esc escapes text for XML content and attribute values; characters XML
// cannot hold become U+FFFD.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func writeOPF(w io.Writer, book epubSeries, chapters []epubChapter, id string, now time.Time) error {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="book-id" xml:lang="` + esc(book.Language) + `">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="book-id">` + esc(id) + `</dc:identifier>
    <dc:title>` + esc(book.Title) + `</dc:title>
    <dc:language>` + esc(book.Language) + `</dc:language>
    <dc:source>` + esc(book.SeriesURL) + `</dc:source>
    <dc:publisher>` + esc(book.Site) + `</dc:publisher>
    <meta property="dcterms:modified">` + now.UTC().Format("2006-01-02T15:04:05Z") + `</meta>
  </metadata>
  <manifest>
    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>
    <item id="css" href="style.css" media-type="text/css"/>
`)
	for i := range chapters {
		fmt.Fprintf(&b, "    <item id=\"c%05d\" href=\"%s\" media-type=\"application/xhtml+xml\"/>\n", i+1, chapterFile(i))
	}
	b.WriteString("  </manifest>\n  <spine toc=\"ncx\">\n")
	for i := range chapters {
		fmt.Fprintf(&b, "    <itemref idref=\"c%05d\"/>\n", i+1)
	}
	b.WriteString("  </spine>\n</package>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeNav(w io.Writer, book epubSeries, chapters []epubChapter) error {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" lang="` + esc(book.Language) + `" xml:lang="` + esc(book.Language) + `">
<head><meta charset="UTF-8"/><title>` + esc(book.Title) + `</title></head>
<body>
<nav epub:type="toc" id="toc">
<h1>Contents</h1>
<ol>
`)
	for i, ch := range chapters {
		fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a></li>\n", chapterFile(i), esc(chapterTitle(ch.Chapter)))
	}
	b.WriteString("</ol>\n</nav>\n</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeNCX(w io.Writer, book epubSeries, chapters []epubChapter, id string) error {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">
<head>
<meta name="dtb:uid" content="` + esc(id) + `"/>
<meta name="dtb:depth" content="1"/>
<meta name="dtb:totalPageCount" content="0"/>
<meta name="dtb:maxPageNumber" content="0"/>
</head>
<docTitle><text>` + esc(book.Title) + `</text></docTitle>
<navMap>
`)
	for i, ch := range chapters {
		fmt.Fprintf(&b, "<navPoint id=\"np%d\" playOrder=\"%d\"><navLabel><text>%s</text></navLabel><content src=\"%s\"/></navPoint>\n",
			i+1, i+1, esc(chapterTitle(ch.Chapter)), chapterFile(i))
	}
	b.WriteString("</navMap>\n</ncx>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func chapterTitle(c store.ArchiveChapter) string {
	if t := strings.TrimSpace(c.Label); t != "" {
		return t
	}
	return "Chapter"
}

// writeChapterXHTML writes a chapter's text as XHTML: a paragraph per block
// separated by a blank line, a line break for a single newline. The text is
// plain, and third-party: every character is escaped (a literal '<' in a
// novel is text, never markup).
func writeChapterXHTML(w io.Writer, book epubSeries, c store.ArchiveChapter, text string) error {
	title := esc(chapterTitle(c))
	bw := bufio.NewWriter(w)
	bw.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" lang="` + esc(book.Language) + `" xml:lang="` + esc(book.Language) + `">
<head><meta charset="UTF-8"/><title>` + title + `</title><link rel="stylesheet" type="text/css" href="../style.css"/></head>
<body>
<section epub:type="chapter">
<h1>` + title + "</h1>\n")
	for _, para := range Paragraphs(text) {
		bw.WriteString("<p>")
		for i, line := range para {
			if i > 0 {
				bw.WriteString("<br/>")
			}
			_ = xml.EscapeText(bw, []byte(line))
		}
		bw.WriteString("</p>\n")
	}
	bw.WriteString("</section>\n</body>\n</html>\n")
	return bw.Flush()
}

// Paragraphs splits a chapter's plain text into paragraphs (blocks
// separated by blank lines), each a list of its lines, without empty ones.
func Paragraphs(text string) [][]string {
	var out [][]string
	var cur []string
	for line := range strings.SplitSeq(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			if len(cur) > 0 {
				out = append(out, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, line)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
