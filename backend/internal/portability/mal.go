package portability

import (
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// MyAnimeList's XML export (myanimelist.net/panel.php?go=export): a
// <myanimelist> document with a <myinfo> and one <manga> per entry, named
// by manga_mangadb_id. An entry carries no page of a Site, so an import
// places it by that id (the Reader's own MyAnimeList mappings, then the
// ids Sites publish); what places nowhere is reported.
//
// Lectern's own MAL export adds lectern_series_url, lectern_chapter and
// lectern_chapter_url to each <manga> (MyAnimeList's importer reads the
// elements it knows by name and skips the others), so an export imported
// into another Lectern places every entry and keeps the exact Progress,
// fraction included, which my_read_chapters cannot hold.

// malMaxDecompressed bounds a decompressed .xml.gz: an export of 20,000
// entries is about 20 MB.
const malMaxDecompressed = 64 << 20

type malManga struct {
	ID           string `xml:"manga_mangadb_id"`
	Title        string `xml:"manga_title"`
	ReadChapters string `xml:"my_read_chapters"`
	Status       string `xml:"my_status"`
	SeriesURL    string `xml:"lectern_series_url"`
	Chapter      string `xml:"lectern_chapter"`
	ChapterURL   string `xml:"lectern_chapter_url"`
}

// gunzipped returns body decompressed when it is gzip (its magic number),
// else body; at most limit bytes.
func gunzipped(body []byte, limit int64) ([]byte, error) {
	if len(body) < 2 || body[0] != 0x1f || body[1] != 0x8b {
		return body, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: a damaged gzip file: %v", ErrUnreadable, err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%w: a damaged gzip file: %v", ErrUnreadable, err)
	}
	if int64(len(out)) > limit {
		return nil, fmt.Errorf("%w: it decompresses to more than %d MiB", ErrTooMany, limit>>20)
	}
	return out, nil
}

func parseMAL(body []byte) ([]entry, []LineError, error) {
	body, err := gunzipped(body, malMaxDecompressed)
	if err != nil {
		return nil, nil, err
	}
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = false // MAL's exports are not always well-formed (bare ampersands in old titles)
	var out []entry
	var bad []LineError
	root := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w: malformed XML: %v", ErrUnreadable, err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "myanimelist":
			root = true
			continue
		case "anime":
			return nil, nil, fmt.Errorf("%w: this is an anime list; export the manga list", ErrUnreadable)
		case "manga":
		default:
			continue
		}
		if !root {
			return nil, nil, fmt.Errorf("%w: a MyAnimeList export starts with <myanimelist>", ErrUnreadable)
		}
		line, _ := dec.InputPos()
		if len(out)+len(bad) == MaxEntries {
			return nil, nil, fmt.Errorf("%w: one import takes at most %d entries", ErrTooMany, MaxEntries)
		}
		var m malManga
		if err := dec.DecodeElement(&m, &se); err != nil {
			return nil, nil, fmt.Errorf("%w: malformed XML: %v", ErrUnreadable, err)
		}
		e := entry{Line: line, Title: strings.TrimSpace(m.Title), URL: strings.TrimSpace(m.SeriesURL), ChapterURL: strings.TrimSpace(m.ChapterURL)}
		e.Input = shorten(e.Title + " (MyAnimeList " + strings.TrimSpace(m.ID) + ")")
		id := strings.TrimSpace(m.ID)
		if n, err := strconv.ParseUint(id, 10, 63); err != nil || n == 0 {
			bad = append(bad, lineErr(e, "manga_mangadb_id %q is not a MyAnimeList id", shorten(id)))
			continue
		}
		e.Trackers = map[string]string{"myanimelist": id}
		read, err := strconv.Atoi(strings.TrimSpace(m.ReadChapters))
		if m.ReadChapters != "" && (err != nil || read < 0) {
			bad = append(bad, lineErr(e, "my_read_chapters %q is not a count", shorten(m.ReadChapters)))
			continue
		}
		e.Chapter = malChapter(read, strings.TrimSpace(m.Chapter))
		if e.Chapter == "" {
			e.ChapterURL = ""
		}
		out = append(out, e)
	}
	if !root {
		return nil, nil, fmt.Errorf("%w: a MyAnimeList export starts with <myanimelist>", ErrUnreadable)
	}
	return out, bad, nil
}

// malChapter is the Progress label of an entry: Lectern's own label when
// the file carries one that MyAnimeList's count still agrees with (the
// fraction survives), else "Chapter N"; none for 0 chapters read.
func malChapter(read int, label string) string {
	if label != "" {
		if n, ok := latest.ParseChapterNumber(label); ok && int(math.Floor(n)) == read {
			return label
		}
	}
	if read <= 0 {
		return ""
	}
	return "Chapter " + strconv.Itoa(read)
}

// MALEntry is one Bookmark in the MAL export.
type MALEntry struct {
	XMLName      xml.Name `xml:"manga"`
	ID           string   `xml:"manga_mangadb_id"`
	Title        cdata    `xml:"manga_title"`
	Volumes      int      `xml:"manga_volumes"`
	Chapters     int      `xml:"manga_chapters"`
	MyID         int      `xml:"my_id"`
	ReadVolumes  int      `xml:"my_read_volumes"`
	ReadChapters int      `xml:"my_read_chapters"`
	StartDate    string   `xml:"my_start_date"`
	FinishDate   string   `xml:"my_finish_date"`
	Score        int      `xml:"my_score"`
	Status       string   `xml:"my_status"`
	Comments     cdata    `xml:"my_comments"`
	TimesRead    int      `xml:"my_times_read"`
	Tags         cdata    `xml:"my_tags"`
	Rereading    string   `xml:"my_rereading"`
	UpdateOn     int      `xml:"update_on_import"`
	SeriesURL    string   `xml:"lectern_series_url"`
	Chapter      cdata    `xml:"lectern_chapter"`
	ChapterURL   string   `xml:"lectern_chapter_url,omitempty"`
}

type cdata struct {
	Text string `xml:",cdata"`
}

type malDoc struct {
	XMLName xml.Name `xml:"myanimelist"`
	Info    struct {
		ExportType int `xml:"user_export_type"`
		Total      int `xml:"user_total_manga"`
		Reading    int `xml:"user_total_reading"`
		Completed  int `xml:"user_total_completed"`
	} `xml:"myinfo"`
	Manga []MALEntry `xml:"manga"`
}

// WriteMAL writes the Bookmarks mapped to MyAnimeList entries as
// MyAnimeList's XML export, which MyAnimeList's import page and other
// trackers read. my_read_chapters is the whole part of the Progress;
// my_status is Completed for a Bookmark the Reader marked completed,
// else Reading. Bookmarks with no MyAnimeList entry cannot be named in
// this format and are left out (a comment at the top counts them).
func (e Export) WriteMAL(w io.Writer) error {
	var doc malDoc
	doc.Info.ExportType = 2 // MAL's number for a manga list
	for _, b := range e.Bookmarks {
		t, ok := e.trackers[b.Key]
		if !ok || t.MAL == "" {
			continue
		}
		m := MALEntry{ID: t.MAL, Title: cdata{b.Title}, StartDate: "0000-00-00", FinishDate: "0000-00-00",
			Status: "Reading", Rereading: "NO", UpdateOn: 1, SeriesURL: b.SeriesURL, Chapter: cdata{b.Chapter}, ChapterURL: b.ChapterURL}
		if b.ChapterNumber != nil && *b.ChapterNumber > 0 {
			m.ReadChapters = int(math.Floor(*b.ChapterNumber))
		}
		if t.Completed {
			m.Status = "Completed"
			doc.Info.Completed++
		} else {
			doc.Info.Reading++
		}
		doc.Manga = append(doc.Manga, m)
	}
	// By title, as MyAnimeList's own export: the order then depends on
	// nothing an import loses (the Bookmarks' creation times).
	sort.SliceStable(doc.Manga, func(i, j int) bool {
		a, b := strings.ToLower(doc.Manga[i].Title.Text), strings.ToLower(doc.Manga[j].Title.Text)
		return a < b || a == b && doc.Manga[i].ID < doc.Manga[j].ID
	})
	doc.Info.Total = len(doc.Manga)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	if left := len(e.Bookmarks) - len(doc.Manga); left > 0 {
		if _, err := fmt.Fprintf(w, "<!-- Lectern %s: %d Bookmark(s) without a MyAnimeList entry are left out -->\n", e.ExportedAt.Format(time.DateOnly), left); err != nil {
			return err
		}
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "\t")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
