package portability

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/errs"
)

// Format is an import format.
type Format string

// The import formats.
const (
	// Lectern is Lectern's own export, JSON or CSV (told apart by the first
	// byte).
	Lectern Format = "lectern"
	// Kenmei is a Kenmei CSV export.
	Kenmei Format = "kenmei"
	// URLs is a plain list: one series URL a line, optionally followed by
	// whitespace and a Progress label.
	URLs Format = "urls"
	// MAL is MyAnimeList's XML export (.xml, or gzip-compressed .xml.gz).
	MAL Format = "mal"
	// Mihon is a Mihon or Tachiyomi backup (.tachibk, .proto.gz).
	Mihon Format = "mihon"
)

// Formats lists the file formats an import reads, for help texts and the
// web form.
var Formats = []Format{Lectern, Kenmei, URLs, MAL, Mihon}

// Binary reports a format whose files are not text.
func (f Format) Binary() bool { return f == MAL || f == Mihon }

// FromTracker is the format of a tracker's list read through its API (the
// report names it; no file has it).
func FromTracker(tracker string) Format { return Format(tracker) }

// ParseFormat reads a file format's name.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case Lectern, Kenmei, URLs, MAL, Mihon:
		return f, nil
	case "":
		return "", fmt.Errorf("%w: name one of lectern, kenmei, urls, mal or mihon", ErrFormat)
	}
	return "", fmt.Errorf("%w: %q is not one of lectern, kenmei, urls, mal or mihon", ErrFormat, s)
}

// Errors about a whole file, before any line is looked at.
var (
	// ErrFormat is an unknown format name.
	ErrFormat = errs.New(errs.Malformed, "unknown import format")
	// ErrUnreadable is a file that is not the format it was said to be.
	ErrUnreadable = errs.New(errs.Malformed, "the file cannot be read as this format")
	// ErrTooMany is a file with more entries than one import takes.
	ErrTooMany = errs.New(errs.TooLarge, "too many entries")
)

// MaxEntries bounds one import; a Library of this size is far beyond any
// real Reader's and still a few seconds of work in one transaction.
const MaxEntries = 20000

// entry is one line of an import, as read, before the registry checks it.
type entry struct {
	Line  int
	Input string // the line as read, shortened, for the report

	URL  string
	Site string // when the file names one, it must match the URL's
	Key  string // when the file names one, it must match the URL's

	Title         string
	Chapter       string
	ChapterNumber *float64
	// NumberGiven keeps ChapterNumber as the file says (Lectern's own
	// export, where null means "none"); otherwise it is read from Chapter.
	NumberGiven bool
	ChapterURL  string
	ProgressAt  *time.Time
	CreatedAt   *time.Time

	// Trackers are the entry's ids on trackers (a MAL export's, a Mihon
	// backup's tracking): they place an entry without a URL, and become the
	// Bookmark's mappings.
	Trackers map[string]string
	// NotPlaced, when set, is why an entry without a URL has none (the
	// report says it if no tracker id places it either).
	NotPlaced string
	// Work labels entries of one story: the import links the Bookmarks of
	// entries sharing a label into one Work (Lectern's export writes it;
	// a Kenmei export's rows of one title share one).
	Work string
}

// LineError is a line an import cannot take, with the reason.
type LineError struct {
	Line  int    `json:"line"`
	Input string `json:"input"`
	Error string `json:"error"`
}

func lineErr(e entry, format string, args ...any) LineError {
	return LineError{Line: e.Line, Input: e.Input, Error: fmt.Sprintf(format, args...)}
}

// parse reads a file of format f into entries and the lines that could not
// be read at all. A file that is not the format at all is an error.
func (im *Importer) parse(f Format, body []byte) ([]entry, []LineError, error) {
	switch f {
	case MAL:
		return parseMAL(body)
	case Mihon:
		return parseMihon(body, im.Bookmarks.Registry)
	}
	return parse(f, body)
}

// parse reads a text format.
func parse(f Format, body []byte) ([]entry, []LineError, error) {
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")) // a BOM from spreadsheet programs
	if !utf8.Valid(body) {
		return nil, nil, fmt.Errorf("%w: it is not UTF-8 text", ErrUnreadable)
	}
	if bytes.IndexByte(body, 0) >= 0 {
		return nil, nil, fmt.Errorf("%w: it contains NUL bytes", ErrUnreadable)
	}
	switch f {
	case Lectern:
		if t := bytes.TrimLeftFunc(body, unicode.IsSpace); len(t) > 0 && t[0] == '{' {
			return parseLecternJSON(body)
		}
		return parseLecternCSV(body)
	case Kenmei:
		return parseKenmei(body)
	case URLs:
		return parseURLList(body)
	}
	return nil, nil, ErrFormat
}

// shorten keeps a report's echo of a line readable.
func shorten(s string) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= 200 {
		return s
	}
	r := []rune(s)
	return string(r[:200]) + "…"
}

// parseURLList reads "URL[<whitespace>Progress]" lines; blank lines and
// lines starting with # are skipped.
func parseURLList(body []byte) ([]entry, []LineError, error) {
	var out []entry
	for i, line := range strings.Split(string(body), "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if len(out) == MaxEntries {
			return nil, nil, fmt.Errorf("%w: one import takes at most %d lines", ErrTooMany, MaxEntries)
		}
		e := entry{Line: i + 1, Input: shorten(line)}
		if cut := strings.IndexFunc(line, unicode.IsSpace); cut >= 0 {
			e.URL, e.Chapter = line[:cut], strings.TrimSpace(line[cut:])
		} else {
			e.URL = line
		}
		out = append(out, e)
	}
	return out, nil, nil
}

// parseLecternJSON reads the JSON export. Line numbers are the lines the
// bookmark objects start on, so a report points into the file as written.
func parseLecternJSON(body []byte) ([]entry, []LineError, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var head struct {
		Format  string          `json:"format"`
		Version json.Number     `json:"version"`
		Marks   json.RawMessage `json:"bookmarks"`
	}
	if err := dec.Decode(&head); err != nil {
		return nil, nil, fmt.Errorf("%w: malformed JSON: %v", ErrUnreadable, err)
	}
	if head.Format != FormatName {
		return nil, nil, fmt.Errorf("%w: \"format\" is %q, not %q", ErrUnreadable, head.Format, FormatName)
	}
	v, err := head.Version.Int64()
	if err != nil || v < 1 {
		return nil, nil, fmt.Errorf("%w: \"version\" must be a whole number", ErrUnreadable)
	}
	if v > FormatVersion {
		return nil, nil, fmt.Errorf("%w: version %d was written by a newer Lectern; this one reads version %d", ErrUnreadable, v, FormatVersion)
	}
	if len(head.Marks) == 0 || string(head.Marks) == "null" {
		return nil, nil, fmt.Errorf("%w: no \"bookmarks\" array", ErrUnreadable)
	}
	// Where the array starts in body, to turn offsets into line numbers.
	start := bytes.Index(body, head.Marks)
	lines := newLineIndex(body)

	arr := json.NewDecoder(bytes.NewReader(head.Marks))
	if tok, err := arr.Token(); err != nil || tok != json.Delim('[') {
		return nil, nil, fmt.Errorf("%w: \"bookmarks\" is not an array", ErrUnreadable)
	}
	var out []entry
	var bad []LineError
	for arr.More() {
		if len(out)+len(bad) == MaxEntries {
			return nil, nil, fmt.Errorf("%w: one import takes at most %d bookmarks", ErrTooMany, MaxEntries)
		}
		off := int(arr.InputOffset())
		var raw json.RawMessage
		if err := arr.Decode(&raw); err != nil {
			return nil, nil, fmt.Errorf("%w: malformed JSON in \"bookmarks\": %v", ErrUnreadable, err)
		}
		// InputOffset is before the separator and whitespace: step to the
		// object itself.
		obj := off + bytes.IndexByte(head.Marks[off:], '{')
		if obj < off {
			obj = off
		}
		e := entry{Line: lines.line(start + obj)}
		e.Input = shorten(string(raw))
		var generic map[string]any
		if err := json.Unmarshal(raw, &generic); err != nil {
			bad = append(bad, lineErr(e, "not a JSON object: %v", err))
			continue
		}
		var problem string
		str := func(name string, dst *string) {
			switch v := generic[name].(type) {
			case nil:
			case string:
				*dst = v
			default:
				if problem == "" {
					problem = fmt.Sprintf("%s must be a string", name)
				}
			}
		}
		str("key", &e.Key)
		str("site", &e.Site)
		str("title", &e.Title)
		str("series_url", &e.URL)
		str("chapter", &e.Chapter)
		str("chapter_url", &e.ChapterURL)
		str("work", &e.Work)
		if problem != "" {
			bad = append(bad, lineErr(e, "%s", problem))
			continue
		}
		e.NumberGiven = true
		switch v := generic["chapter_number"].(type) {
		case nil:
		case float64:
			e.ChapterNumber = &v
		default:
			bad = append(bad, lineErr(e, "chapter_number must be a number or null"))
			continue
		}
		var terr error
		if e.ProgressAt, terr = timeField(generic, "progress_at"); terr != nil {
			bad = append(bad, lineErr(e, "%v", terr))
			continue
		}
		if e.CreatedAt, terr = timeField(generic, "created_at"); terr != nil {
			bad = append(bad, lineErr(e, "%v", terr))
			continue
		}
		out = append(out, e)
	}
	return out, bad, nil
}

func timeField(m map[string]any, name string) (*time.Time, error) {
	switch v := m[name].(type) {
	case nil:
		return nil, nil
	case string:
		if v == "" {
			return nil, nil
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return nil, fmt.Errorf("%s %q is not an RFC 3339 time", name, shorten(v))
		}
		return &t, nil
	}
	return nil, fmt.Errorf("%s must be an RFC 3339 time or null", name)
}

// lineIndex turns byte offsets into 1-based line numbers.
type lineIndex []int

func newLineIndex(b []byte) lineIndex {
	idx := lineIndex{0}
	for i, c := range b {
		if c == '\n' {
			idx = append(idx, i+1)
		}
	}
	return idx
}

func (l lineIndex) line(off int) int {
	lo, hi := 0, len(l)
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if l[mid] <= off {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo + 1
}

// csvTable is a CSV file with a header row, read tolerantly: columns in any
// order, matched by normalised name; quoted or bare fields; a delimiter of
// comma, semicolon or tab, whichever the header uses.
type csvTable struct {
	cols map[string]int
	rows [][]string
	line []int
}

func readCSV(body []byte) (*csvTable, error) {
	first, _, _ := bytes.Cut(body, []byte("\n"))
	delim := ','
	if c, s, t := bytes.Count(first, []byte(",")), bytes.Count(first, []byte(";")), bytes.Count(first, []byte("\t")); s > c && s >= t {
		delim = ';'
	} else if t > c && t > s {
		delim = '\t'
	}
	r := csv.NewReader(bytes.NewReader(body))
	r.Comma = delim
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	r.ReuseRecord = false
	header, err := r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: the file is empty", ErrUnreadable)
		}
		return nil, fmt.Errorf("%w: the header row: %v", ErrUnreadable, err)
	}
	t := &csvTable{cols: map[string]int{}}
	for i, h := range header {
		name := normColumn(h)
		if _, dup := t.cols[name]; !dup && name != "" {
			t.cols[name] = i
		}
	}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
		}
		line, _ := r.FieldPos(0)
		if blank(rec) {
			continue
		}
		if len(t.rows) == MaxEntries {
			return nil, fmt.Errorf("%w: one import takes at most %d rows", ErrTooMany, MaxEntries)
		}
		t.rows = append(t.rows, rec)
		t.line = append(t.line, line)
	}
	return t, nil
}

// normColumn folds "Last Chapter Read", "last-chapter-read" and
// "last_chapter_read" together.
func normColumn(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '-', '.':
			return '_'
		}
		return r
	}, h)
}

func blank(rec []string) bool {
	for _, f := range rec {
		if strings.TrimSpace(f) != "" {
			return false
		}
	}
	return true
}

// get returns the first of names present in the header, for row i.
func (t *csvTable) get(i int, names ...string) (string, bool) {
	for _, n := range names {
		if c, ok := t.cols[n]; ok {
			if c < len(t.rows[i]) {
				return strings.TrimSpace(t.rows[i][c]), true
			}
			return "", true
		}
	}
	return "", false
}

func (t *csvTable) has(names ...string) bool {
	for _, n := range names {
		if _, ok := t.cols[n]; ok {
			return true
		}
	}
	return false
}

func (t *csvTable) input(i int) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write(t.rows[i])
	w.Flush()
	return shorten(b.String())
}

// parseLecternCSV reads the CSV export (CSVColumns, in any order).
func parseLecternCSV(body []byte) ([]entry, []LineError, error) {
	t, err := readCSV(body)
	if err != nil {
		return nil, nil, err
	}
	if !t.has("series_url") || !t.has("format_version") {
		return nil, nil, fmt.Errorf("%w: a Lectern CSV export has format_version and series_url columns", ErrUnreadable)
	}
	var out []entry
	var bad []LineError
	for i := range t.rows {
		e := entry{Line: t.line[i], Input: t.input(i), NumberGiven: true}
		v, _ := t.get(i, "format_version")
		if n, err := strconv.Atoi(v); err != nil || n < 1 {
			bad = append(bad, lineErr(e, "format_version %q is not a version number", shorten(v)))
			continue
		} else if n > FormatVersion {
			bad = append(bad, lineErr(e, "format_version %d was written by a newer Lectern; this one reads version %d", n, FormatVersion))
			continue
		}
		e.URL, _ = t.get(i, "series_url")
		e.Key, _ = t.get(i, "key")
		e.Site, _ = t.get(i, "site")
		title, _ := t.get(i, "title")
		chapter, _ := t.get(i, "chapter")
		e.Title, e.Chapter = uncell(title), uncell(chapter)
		e.ChapterURL, _ = t.get(i, "chapter_url")
		e.Work, _ = t.get(i, "work") // absent in files written before Works
		if s, _ := t.get(i, "chapter_number"); s != "" {
			n, err := strconv.ParseFloat(s, 64)
			if err != nil {
				bad = append(bad, lineErr(e, "chapter_number %q is not a number", shorten(s)))
				continue
			}
			e.ChapterNumber = &n
		}
		var terr error
		m := map[string]any{}
		for _, name := range []string{"progress_at", "created_at"} {
			s, _ := t.get(i, name)
			m[name] = s
		}
		if e.ProgressAt, terr = timeField(m, "progress_at"); terr == nil {
			e.CreatedAt, terr = timeField(m, "created_at")
		}
		if terr != nil {
			bad = append(bad, lineErr(e, "%v", terr))
			continue
		}
		out = append(out, e)
	}
	return out, bad, nil
}

// Kenmei's export columns (title, series_url, status, score,
// last_volume_read, last_chapter_read, last_read_at, notes, ...) are
// matched by name with the aliases other trackers and older Kenmei exports
// use, so a reordered or renamed column still reads.
var (
	kenmeiURL     = []string{"series_url", "url", "link", "source_url"}
	kenmeiTitle   = []string{"title", "series_title", "name"}
	kenmeiChapter = []string{"last_chapter_read", "chapters_read", "chapter", "current_chapter", "last_chapter"}
	kenmeiReadAt  = []string{"last_read_at", "last_read", "date_last_read", "updated_at"}
	kenmeiAdded   = []string{"created_at", "added_at", "date_added"}
)

// parseKenmei reads a Kenmei CSV export. The chapter read becomes the
// Progress label "Chapter N"; a date Kenmei writes in a shape not known
// here is left out rather than refusing the line (the Progress itself is
// what matters).
func parseKenmei(body []byte) ([]entry, []LineError, error) {
	t, err := readCSV(body)
	if err != nil {
		return nil, nil, err
	}
	if !t.has(kenmeiURL...) {
		return nil, nil, fmt.Errorf("%w: no series URL column (series_url or url): Lectern finds a Series by its page on a Site", ErrUnreadable)
	}
	var out []entry
	var bad []LineError
	for i := range t.rows {
		e := entry{Line: t.line[i], Input: t.input(i)}
		e.URL, _ = t.get(i, kenmeiURL...)
		e.Title, _ = t.get(i, kenmeiTitle...)
		// Kenmei lists one row per Site it tracks a title on: rows of one
		// title are one story, so one Work.
		if n := bookmark.NormalTitle(e.Title); n != "" {
			e.Work = "kenmei:" + n
		}
		if e.URL == "" {
			bad = append(bad, lineErr(e, "no series URL: Lectern finds a Series by its page on a Site"))
			continue
		}
		if ch, _ := t.get(i, kenmeiChapter...); ch != "" {
			n, err := strconv.ParseFloat(strings.TrimPrefix(strings.ToLower(ch), "chapter "), 64)
			switch {
			case err == nil && n == 0:
				// Kenmei writes 0 for "not started": no Progress.
			case err == nil:
				e.Chapter = "Chapter " + strconv.FormatFloat(n, 'f', -1, 64)
			default:
				e.Chapter = ch
			}
		}
		if s, _ := t.get(i, kenmeiReadAt...); s != "" && e.Chapter != "" {
			e.ProgressAt = looseTime(s)
		}
		if s, _ := t.get(i, kenmeiAdded...); s != "" {
			e.CreatedAt = looseTime(s)
		}
		out = append(out, e)
	}
	return out, bad, nil
}

// looseTime reads the date shapes tracker exports use, nil for any other.
func looseTime(s string) *time.Time {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05 MST", "2006-01-02 15:04:05 -0700",
		"2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return &t
		}
	}
	return nil
}
