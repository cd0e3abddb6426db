package archive_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/archive"
)

// A novel Series archived from the loopback Site: the chapter list walked
// through its paginated pages, "first 3" archived as the registry's cleaned
// text, read in the web UI, and exported as an EPUB 3 whose structure is
// checked (and which epubcheck validates when it is installed).
func TestNovelSeriesArchivedReadAndExported(t *testing.T) {
	r := setup(t)
	ctx := context.Background()
	rd, token := r.reader("bea", false, true)
	key := r.hold(rd, novelURL, "Shadow Slave")
	require.Equal(t, novelKey, key)

	req := r.request(rd, key, "first 3")
	r.settled(req)
	got, err := r.st.ArchivedChapters(ctx, key)
	require.NoError(t, err)
	require.Len(t, got, 3, r.jobsDump())
	for i, c := range got {
		n := string(rune('1' + i))
		require.Equal(t, "https://lightnovelworld.com/novel/shadow-slave/chapter-"+n, c.URL)
		require.Equal(t, "Chapter "+n+": Part "+n, c.Label)
		require.Zero(t, c.PageCount)
		body, err := r.st.ArchiveChapterBody(ctx, c.ID)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(body, "Chapter "+n+" begins. Sunny opened his eyes to darkness."), body)
		require.Contains(t, body, "“Not again,” he muttered & stood up.")
		require.NotContains(t, body, "Advertisement", "the registry's cleaning holds")
		require.NotContains(t, body, "First!", "the comment thread is cut")
	}
	req3, err := r.st.ArchiveRequestByID(ctx, req.ID)
	require.NoError(t, err)
	require.Equal(t, "done", req3.State)
	require.Equal(t, 3, *req3.Selected)
	require.Equal(t, 3, *req3.Queued)
	require.Zero(t, r.site.Hits("lightnovelworld.com/novel/shadow-slave/chapter-4"), "chapters outside the scope are not fetched")

	t.Run("epub", func(t *testing.T) {
		code, hdr, body := r.apiDo(http.MethodGet, seriesAPI(key, "/archive.epub"), token, nil)
		require.Equal(t, http.StatusOK, code, string(body))
		require.Equal(t, "application/epub+zip", hdr.Get("Content-Type"))
		texts := checkEPUB(t, body, 3)
		require.Contains(t, texts[2], "He wrote <b>bold</b> & meant it.", "markup-looking text stays text")
		require.Contains(t, texts[0], "Somewhere, a bell rang\nthree times.", "a line break within a paragraph")

		code, _, body = r.apiDo(http.MethodGet, seriesAPI(key, "/archive.epub?chapters=2"), token, nil)
		require.Equal(t, http.StatusOK, code, string(body))
		texts = checkEPUB(t, body, 1)
		require.Contains(t, texts[0], "Chapter 2 begins.")

		code, _, body = r.apiDo(http.MethodGet, seriesAPI(key, "/archive.cbz"), token, nil)
		require.Equal(t, http.StatusBadRequest, code, string(body))
	})

	t.Run("read in the web UI", func(t *testing.T) {
		b := r.signIn("bea")
		c3 := r.chapter("https://lightnovelworld.com/novel/shadow-slave/chapter-3")
		p := b.Get("/series/" + url.PathEscape(key) + "/archive/" + itoa64(c3.ID))
		require.Equal(t, http.StatusOK, p.Code, p.Body)
		paras := p.Doc.Find(`[data-testid="novel-text"] p`)
		require.GreaterOrEqual(t, paras.Length(), 4)
		require.Equal(t, "Chapter 3 begins. Sunny opened his eyes to darkness. He wrote <b>bold</b> & meant it.", paras.First().Text())
		require.Zero(t, p.Doc.Find(`[data-testid="novel-text"] b`).Length(), "text is never markup")
		require.Equal(t, 1, p.Doc.Find(`[data-testid="prev-chapter"]`).Length())
		require.Zero(t, p.Doc.Find(`[data-testid="next-chapter"]`).Length())
	})
}

// checkEPUB checks an EPUB's structure and returns each chapter's text in
// spine order: mimetype first, stored, without an extra field or data
// descriptor; the container naming the package document; every manifest
// item present; a navigation document listing every chapter; every XHTML
// document well-formed. epubcheck then validates it when installed.
func checkEPUB(t *testing.T, b []byte, chapters int) []string {
	t.Helper()
	zr := openZip(t, b)
	require.NotEmpty(t, zr.File)
	mt := zr.File[0]
	require.Equal(t, "mimetype", mt.Name, "mimetype is the first entry")
	require.Equal(t, zip.Store, mt.Method, "mimetype is stored uncompressed")
	require.Empty(t, mt.Extra, "mimetype has no extra field")
	require.Zero(t, mt.Flags&0x8, "mimetype has no data descriptor")
	require.Equal(t, "application/epub+zip", string(readEntry(t, mt)))
	// The OCF places the mimetype bytes at offset 38 for readers that sniff.
	require.Equal(t, "application/epub+zip", string(b[38:38+20]))

	files := map[string]*zip.File{}
	for _, f := range zr.File {
		files[f.Name] = f
	}
	var container struct {
		Rootfiles []struct {
			FullPath  string `xml:"full-path,attr"`
			MediaType string `xml:"media-type,attr"`
		} `xml:"rootfiles>rootfile"`
	}
	require.Contains(t, files, "META-INF/container.xml")
	require.NoError(t, xml.Unmarshal(readEntry(t, files["META-INF/container.xml"]), &container))
	require.Len(t, container.Rootfiles, 1)
	opfPath := container.Rootfiles[0].FullPath
	require.Equal(t, "application/oebps-package+xml", container.Rootfiles[0].MediaType)
	require.Contains(t, files, opfPath)

	var opf struct {
		Version  string `xml:"version,attr"`
		UniqueID string `xml:"unique-identifier,attr"`
		Metadata struct {
			Identifier []struct {
				ID    string `xml:"id,attr"`
				Value string `xml:",chardata"`
			} `xml:"identifier"`
			Title    string `xml:"title"`
			Language string `xml:"language"`
			Meta     []struct {
				Property string `xml:"property,attr"`
				Value    string `xml:",chardata"`
			} `xml:"meta"`
		} `xml:"metadata"`
		Items []struct {
			ID         string `xml:"id,attr"`
			Href       string `xml:"href,attr"`
			MediaType  string `xml:"media-type,attr"`
			Properties string `xml:"properties,attr"`
		} `xml:"manifest>item"`
		Spine []struct {
			IDRef string `xml:"idref,attr"`
		} `xml:"spine>itemref"`
	}
	require.NoError(t, xml.Unmarshal(readEntry(t, files[opfPath]), &opf))
	require.Equal(t, "3.0", opf.Version)
	require.Equal(t, "Shadow Slave", opf.Metadata.Title)
	require.NotEmpty(t, opf.Metadata.Language)
	require.Len(t, opf.Metadata.Identifier, 1)
	require.Equal(t, opf.UniqueID, opf.Metadata.Identifier[0].ID)
	require.True(t, strings.HasPrefix(opf.Metadata.Identifier[0].Value, "urn:uuid:"))
	modified := false
	for _, m := range opf.Metadata.Meta {
		modified = modified || m.Property == "dcterms:modified" && len(m.Value) == len("2006-01-02T15:04:05Z")
	}
	require.True(t, modified, "dcterms:modified is required")

	base := path.Dir(opfPath)
	byID := map[string]string{}
	nav := ""
	for _, it := range opf.Items {
		full := path.Join(base, it.Href)
		require.Contains(t, files, full, "manifest item %s exists", it.Href)
		byID[it.ID] = full
		if strings.Contains(it.Properties, "nav") {
			require.Empty(t, nav, "one navigation document")
			nav = full
		}
	}
	require.NotEmpty(t, nav, "a navigation document is declared")
	require.Len(t, opf.Spine, chapters)

	navDoc := string(readEntry(t, files[nav]))
	wellFormed(t, navDoc)
	require.Contains(t, navDoc, `epub:type="toc"`)
	require.Equal(t, chapters, strings.Count(navDoc, "<li>"))

	var texts []string
	for _, ref := range opf.Spine {
		full, ok := byID[ref.IDRef]
		require.True(t, ok, "spine item %s is in the manifest", ref.IDRef)
		doc := string(readEntry(t, files[full]))
		wellFormed(t, doc)
		texts = append(texts, xhtmlText(t, doc))
	}
	epubcheck(t, b)
	return texts
}

// wellFormed parses a document with the strict XML decoder.
func wellFormed(t *testing.T, doc string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(doc))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err, "not well-formed XML:\n%s", doc)
	}
}

// xhtmlText is the text of a chapter document's paragraphs, a line per
// <br/> and a blank line between paragraphs.
func xhtmlText(t *testing.T, doc string) string {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(doc))
	var b strings.Builder
	inP := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return b.String()
		}
		require.NoError(t, err)
		switch el := tok.(type) {
		case xml.StartElement:
			switch el.Name.Local {
			case "p":
				inP = true
			case "br":
				b.WriteString("\n")
			}
		case xml.EndElement:
			if el.Name.Local == "p" {
				inP = false
				b.WriteString("\n\n")
			}
		case xml.CharData:
			if inP {
				b.Write(el)
			}
		}
	}
}

// epubcheck validates the book with the W3C's epubcheck when it is
// installed (Debian: apt-get install epubcheck). LECTERN_REQUIRE_EPUBCHECK=1
// makes its absence a failure; otherwise the structural checks above are
// the gate.
func epubcheck(t *testing.T, b []byte) {
	t.Helper()
	bin, err := exec.LookPath("epubcheck")
	if err != nil {
		if os.Getenv("LECTERN_REQUIRE_EPUBCHECK") != "" {
			t.Fatalf("epubcheck is not installed (apt-get install -y epubcheck) and LECTERN_REQUIRE_EPUBCHECK is set")
		}
		t.Log("epubcheck is not installed: the structural checks are the gate")
		return
	}
	file := filepath.Join(t.TempDir(), "book.epub")
	require.NoError(t, os.WriteFile(file, b, 0o600))
	cmd := exec.Command(bin, "--quiet", file)
	// Debian installs epubcheck as a link to its jar.
	if real, err := filepath.EvalSymlinks(bin); err == nil && strings.HasSuffix(real, ".jar") {
		cmd = exec.Command("java", "-jar", real, "--quiet", file)
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "epubcheck refused the book:\n%s", out)
	require.NotContains(t, string(bytes.ToUpper(out)), "ERROR", string(out))
}

// A scope that names no chapter the Site lists archives nothing and says
// so: the request fails with nothing_selected, naming what the Site lists,
// rather than ending done with nothing done.
func TestAScopeThatSelectsNothingSaysSo(t *testing.T) {
	r := setup(t)
	ctx := context.Background()
	rd, _ := r.reader("cleo", false, true)
	key := r.hold(rd, novelURL, "Shadow Slave")
	req := r.request(rd, key, "chapter 9999")
	r.settled(req)
	got, err := r.st.ArchiveRequestByID(ctx, req.ID)
	require.NoError(t, err)
	require.Equal(t, "failed", got.State)
	require.Equal(t, archive.ProblemNothingSelected, got.Problem)
	require.Contains(t, got.Detail, `"chapter 9999" names no chapter the Site lists (it lists 6, from Chapter 1: Part 1 to Chapter 2301: The Long Night)`)
	chapters, err := r.st.ArchivedChapters(ctx, key)
	require.NoError(t, err)
	require.Empty(t, chapters)
}
