// Package portability moves a Reader's Bookmarks in and out of Lectern: the
// export (JSON and CSV, a documented and versioned format) and the import of
// Lectern's own export, a Kenmei CSV export and a plain list of series URLs.
// docs/portability.md is the format's reference.
//
// An import is all or nothing: every line is checked against the Site
// registry first, and the Bookmarks are written in one transaction with the
// Acquisition of every new Series queued inside it, as a PUT does.
package portability

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Format names and the version this server writes. A file of a newer
// version is refused rather than half understood.
const (
	FormatName    = "lectern-export"
	FormatVersion = 1
)

// Export is the JSON export document.
type Export struct {
	Format     string    `json:"format"`
	Version    int       `json:"version"`
	ExportedAt time.Time `json:"exported_at"`
	// Server is PUBLIC_BASE_URL of the deployment that wrote the file.
	Server    string          `json:"server"`
	Bookmarks []ExportedEntry `json:"bookmarks"`

	// trackers are each Bookmark's tracker facts, for the MAL export.
	trackers map[string]store.TrackerFacts
}

// ExportedEntry is one Bookmark in an export. Progress fields are the
// Reader's own; latest_* are the Series' facts when the file was written,
// for reading only: an import never takes them (only the backend's own
// fetches write Series facts).
type ExportedEntry struct {
	Key                 string     `json:"key"`
	Site                string     `json:"site"`
	Kind                string     `json:"kind"`
	Title               string     `json:"title"`
	SeriesURL           string     `json:"series_url"`
	Chapter             string     `json:"chapter"`
	ChapterNumber       *float64   `json:"chapter_number"`
	ChapterURL          string     `json:"chapter_url"`
	ProgressAt          *time.Time `json:"progress_at"`
	LatestChapter       string     `json:"latest_chapter"`
	LatestChapterNumber *float64   `json:"latest_chapter_number"`
	LatestChapterURL    string     `json:"latest_chapter_url"`
	LatestAt            *time.Time `json:"latest_at"`
	CreatedAt           time.Time  `json:"created_at"`
	// Work labels the entries of one Work ("" when the Bookmark is in
	// none): the same label on two or more entries links them again on
	// import. Labels are numbered from 1 in the order the Works first
	// appear, so an export of the same Works is the same file.
	Work string `json:"work"`
}

// Build reads a Reader's Bookmarks into an export, oldest first.
func Build(ctx context.Context, st *store.Store, readerID int64, server string, now time.Time) (Export, error) {
	list, err := st.ListBookmarks(ctx, readerID, "")
	if err != nil {
		return Export{}, fmt.Errorf("export: %w", err)
	}
	out := Export{Format: FormatName, Version: FormatVersion, ExportedAt: now.UTC(), Server: server,
		Bookmarks: make([]ExportedEntry, 0, len(list))}
	labels := map[int64]string{}
	for _, b := range list {
		label := ""
		if b.WorkID != 0 {
			if label = labels[b.WorkID]; label == "" {
				label = fmt.Sprintf("work-%d", len(labels)+1)
				labels[b.WorkID] = label
			}
		}
		out.Bookmarks = append(out.Bookmarks, ExportedEntry{Work: label,
			Key: b.SeriesKey, Site: b.Site, Kind: b.Kind, Title: b.Title, SeriesURL: b.SeriesURL,
			Chapter: b.Chapter, ChapterNumber: b.ChapterNumber, ChapterURL: b.ChapterURL, ProgressAt: utc(b.ProgressAt),
			LatestChapter: b.LatestLabel, LatestChapterNumber: b.LatestNumber, LatestChapterURL: b.LatestURL,
			LatestAt: utc(b.LatestAt), CreatedAt: b.CreatedAt.UTC(),
		})
	}
	if out.trackers, err = st.TrackerFactsOf(ctx, readerID); err != nil {
		return Export{}, fmt.Errorf("export: %w", err)
	}
	return out, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// WriteJSON writes the export as indented JSON, one field a line, so a
// Reader can read and diff it.
func (e Export) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(e)
}

// CSVColumns are the CSV export's header, in order. format_version repeats
// the version on every row, so a single row pasted elsewhere still says
// what it is.
var CSVColumns = []string{
	"format_version", "key", "site", "kind", "title", "series_url",
	"chapter", "chapter_number", "chapter_url", "progress_at",
	"latest_chapter", "latest_chapter_number", "latest_chapter_url", "latest_at", "created_at",
	"work",
}

// WriteCSV writes the export as RFC 4180 CSV with a header row.
// ErrExportFormat is an export format other than json or csv.
var ErrExportFormat = errs.New(errs.Malformed, "format must be json, csv or mal")

// File is an export ready to send: the body, its content type and a file
// name dated by the export.
type File struct {
	Body        []byte
	ContentType string
	Name        string
}

// Render writes the export in format ("" or "json", "csv", or "mal" for
// MyAnimeList's XML) whole, so a
// failure is a clean error rather than half a download.
func (e Export) Render(format string, now time.Time) (File, error) {
	var buf bytes.Buffer
	f := File{ContentType: "application/json; charset=utf-8"}
	ext := "json"
	var err error
	switch format {
	case "", "json":
		err = e.WriteJSON(&buf)
	case "csv":
		f.ContentType, ext = "text/csv; charset=utf-8", "csv"
		err = e.WriteCSV(&buf)
	case "mal":
		f.ContentType, ext = "application/xml; charset=utf-8", "xml"
		err = e.WriteMAL(&buf)
	default:
		return File{}, fmt.Errorf("%w, not %q", ErrExportFormat, format)
	}
	if err != nil {
		return File{}, err
	}
	f.Body = buf.Bytes()
	f.Name = "lectern-export-" + now.UTC().Format(time.DateOnly) + "." + ext
	return f, nil
}

// Send writes a rendered export as an attachment that no shared cache keeps
// (it is a Reader's whole history).
func (f File) Send(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", f.ContentType)
	h.Set("Content-Disposition", `attachment; filename="`+f.Name+`"`)
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(f.Body)
}

func (e Export) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVColumns); err != nil {
		return err
	}
	version := strconv.Itoa(e.Version)
	for _, b := range e.Bookmarks {
		rec := []string{
			version, b.Key, b.Site, b.Kind, cell(b.Title), b.SeriesURL,
			cell(b.Chapter), formatNumber(b.ChapterNumber), b.ChapterURL, formatTime(b.ProgressAt),
			cell(b.LatestChapter), formatNumber(b.LatestChapterNumber), b.LatestChapterURL, formatTime(b.LatestAt),
			formatTime(&b.CreatedAt), b.Work,
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// cell defuses spreadsheet formulas: titles and labels come from Sites, and
// a cell starting with = + - @ (or a tab or carriage return) is run as a
// formula by spreadsheet programs. A leading apostrophe makes it text; the
// importer removes exactly that apostrophe again (uncell).
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r'", rune(s[0])) {
		return "'" + s
	}
	return s
}

// uncell reverses cell.
func uncell(s string) string {
	if len(s) >= 2 && s[0] == '\'' && strings.ContainsRune("=+-@\t\r'", rune(s[1])) {
		return s[1:]
	}
	return s
}

func formatNumber(n *float64) string {
	if n == nil {
		return ""
	}
	return strconv.FormatFloat(*n, 'f', -1, 64)
}

func formatTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
