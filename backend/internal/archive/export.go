package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Limits on an export's selection, generous for any real use.
const (
	maxSelection      = 4096
	maxSelectionParts = 500
)

// ErrBadSelection is a chapters= or ids= value that cannot be read.
var ErrBadSelection = errs.New(errs.Invalid, "bad chapter selection")

// Selection names the archived chapters an export holds: chapter numbers
// and ranges ("12", "1-10", "12.5"), archive chapter ids (for chapters
// without a number), or everything archived when both are empty.
type Selection struct {
	ranges [][2]float64
	ids    map[int64]bool
}

// ParseSelection reads ?chapters=1-10,12.5 and ?ids=41,42.
func ParseSelection(chapters, ids string) (Selection, error) {
	var sel Selection
	if len(chapters) > maxSelection || len(ids) > maxSelection {
		return sel, fmt.Errorf("%w: longer than %d characters", ErrBadSelection, maxSelection)
	}
	parts := strings.Split(chapters, ",")
	if len(parts) > maxSelectionParts {
		return sel, fmt.Errorf("%w: more than %d parts", ErrBadSelection, maxSelectionParts)
	}
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" || strings.EqualFold(p, "all") {
			continue
		}
		lo, hi, isRange := strings.Cut(p, "-")
		a, err := parseNumber(lo)
		if err != nil {
			return sel, fmt.Errorf("%w: %q is not a chapter number or a range like 1-10", ErrBadSelection, p)
		}
		b := a
		if isRange {
			if b, err = parseNumber(hi); err != nil || b < a {
				return sel, fmt.Errorf("%w: %q is not a range like 1-10", ErrBadSelection, p)
			}
		}
		sel.ranges = append(sel.ranges, [2]float64{a, b})
	}
	idParts := strings.Split(ids, ",")
	if len(idParts) > maxSelectionParts {
		return sel, fmt.Errorf("%w: more than %d ids", ErrBadSelection, maxSelectionParts)
	}
	for _, p := range idParts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		id, err := strconv.ParseInt(p, 10, 64)
		if err != nil || id <= 0 {
			return sel, fmt.Errorf("%w: id %q is not a positive whole number", ErrBadSelection, p)
		}
		if sel.ids == nil {
			sel.ids = map[int64]bool{}
		}
		sel.ids[id] = true
	}
	return sel, nil
}

func parseNumber(s string) (float64, error) {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		return 0, errors.New("not a chapter number")
	}
	return x, nil
}

// All reports a selection of everything archived.
func (s Selection) All() bool { return len(s.ranges) == 0 && len(s.ids) == 0 }

func (s Selection) match(c store.ArchiveChapter) bool {
	if s.All() || s.ids[c.ID] {
		return true
	}
	if c.Number == nil {
		return false
	}
	for _, r := range s.ranges {
		if *c.Number >= r[0]-1e-9 && *c.Number <= r[1]+1e-9 {
			return true
		}
	}
	return false
}

// Export is an export ready to stream: its chapters are known (so a request
// naming none is refused before any byte is written).
type Export struct {
	s        *Service
	series   store.Series
	title    string
	listed   int
	Chapters []store.ArchiveChapter
}

// PlanExport picks the archived chapters of a Series a selection names.
// kind is the Library the format is for (manga for CBZ, novel for EPUB).
func (s *Service) PlanExport(ctx context.Context, key string, sel Selection, kind latest.Kind) (*Export, error) {
	ser, err := s.Store.SeriesByKey(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotHeld
	}
	if err != nil {
		return nil, err
	}
	if ser.Kind != string(kind) {
		return nil, fmt.Errorf("%w: %s is a %s Series", ErrWrongLibrary, key, ser.Kind)
	}
	all, err := s.Store.ArchivedChapters(ctx, key)
	if err != nil {
		return nil, err
	}
	e := &Export{s: s, series: ser, title: latest.DisplayTitle(ser.Title, ser.SeriesURL)}
	for _, c := range all {
		if sel.match(c) {
			e.Chapters = append(e.Chapters, c)
		}
	}
	if len(e.Chapters) == 0 {
		return nil, ErrNothingArchived
	}
	st, err := s.Store.ArchiveStatusOf(ctx, key)
	if err != nil {
		return nil, err
	}
	if st.Listed != nil {
		e.listed = *st.Listed
	}
	return e, nil
}

// Series is the exported Series' key and Site, for log lines.
func (e *Export) Series() (key, site string) { return e.series.Key, e.series.Site }

// FileName is the download's name: the Series' title, and the chapter's
// label for a one-chapter export, in safe characters.
func (e *Export) FileName(ext string) string {
	name := e.title
	if len(e.Chapters) == 1 {
		name += " - " + chapterTitle(e.Chapters[0])
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)), r == ' ', r == '-', r == '.', r == '_', r == '(', r == ')':
			b.WriteRune(r)
		case r >= 0x80 && unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
		if b.Len() > 150 {
			break
		}
	}
	out := strings.Trim(strings.Join(strings.Fields(b.String()), " "), ". ")
	if out == "" {
		out = "archive"
	}
	return out + "." + ext
}

// ASCIIFileName is FileName for the Content-Disposition filename parameter,
// which only ASCII survives everywhere.
func (e *Export) ASCIIFileName(ext string) string {
	var b strings.Builder
	for _, r := range e.FileName(ext) {
		if r < 0x80 {
			b.WriteRune(r)
		} else {
			b.WriteRune('_')
		}
	}
	return b.String()
}

// WriteCBZ streams the export as a CBZ.
func (e *Export) WriteCBZ(ctx context.Context, w io.Writer) error {
	chapters := make([]cbzChapter, len(e.Chapters))
	for i, c := range e.Chapters {
		id := c.ID
		chapters[i] = cbzChapter{Chapter: c, Pages: func(ctx context.Context) ([]store.ArchivePage, error) {
			return e.s.Store.ArchivePagesOf(ctx, id)
		}}
	}
	series := cbzSeries{Title: e.title, SeriesURL: e.series.SeriesURL, Site: e.series.Site, Count: e.listed}
	return writeCBZ(ctx, w, series, chapters, e.s.open, e.s.now())
}

// WriteEPUB streams the export as an EPUB 3 book.
func (e *Export) WriteEPUB(ctx context.Context, w io.Writer) error {
	chapters := make([]epubChapter, len(e.Chapters))
	for i, c := range e.Chapters {
		id := c.ID
		chapters[i] = epubChapter{Chapter: c, Text: func(ctx context.Context) (string, error) {
			return e.s.Store.ArchiveChapterBody(ctx, id)
		}}
	}
	book := epubSeries{Key: e.series.Key, Title: e.title, SeriesURL: e.series.SeriesURL, Site: e.series.Site, Language: "en"}
	return writeEPUB(ctx, w, book, chapters, e.s.now())
}
