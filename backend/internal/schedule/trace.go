package schedule

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A recorded trace (lectern simulate --trace): CSV with the header
// series,site,readers,released_at, one row per release (RFC 3339); a row
// with an empty released_at declares a Series that never released in the
// trace (dormant). Readers of 0 is a Series no Reader holds: it is on the
// Site, so its releases crowd the Site's listing, but Lectern never polls it.

// TraceHeader is the first line of a trace.
const TraceHeader = "series,site,readers,released_at"

// ErrTrace reports a trace that cannot be read; the message names the line.
var ErrTrace = errors.New("invalid trace")

// Limits of a trace, so a wrong file cannot ask for a day of CPU.
const (
	maxTraceRows    = 5_000_000
	maxTraceReaders = 1_000_000
)

// Trace is a recorded release trace.
type Trace struct {
	Series []TraceSeries
	// First and Last are the earliest and latest release.
	First, Last time.Time
}

// TraceSeries is one Series of a trace.
type TraceSeries struct {
	Key, Site string
	Readers   int
	// Releases are sorted; none for a dormant Series.
	Releases []time.Time
}

// ReadTrace reads a trace. A malformed row is refused with its line number
// (errors.Is ErrTrace): a wrong field count, a bad number or time, a Series
// that changes Site or Readers, or one both dormant and releasing.
func ReadTrace(r io.Reader) (*Trace, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	bad := func(line int, format string, args ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrTrace, line, fmt.Sprintf(format, args...))
	}
	rec, err := cr.Read()
	if err == io.EOF {
		return nil, bad(1, "empty; want the header %s", TraceHeader)
	}
	if err != nil {
		return nil, csvError(err)
	}
	if strings.Join(rec, ",") != TraceHeader && strings.TrimPrefix(strings.Join(rec, ","), "\ufeff") != TraceHeader {
		return nil, bad(1, "header %q, want %s", strings.Join(rec, ","), TraceHeader)
	}
	tr := &Trace{}
	index := map[string]int{}
	dormant := map[string]bool{}
	for rows := 0; ; rows++ {
		rec, err = cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(err)
		}
		line, _ := cr.FieldPos(0)
		if rows >= maxTraceRows {
			return nil, bad(line, "more than %d rows", maxTraceRows)
		}
		if len(rec) != 4 {
			return nil, bad(line, "%d fields, want 4 (%s)", len(rec), TraceHeader)
		}
		key, site := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		if key == "" || len(key) > 300 {
			return nil, bad(line, "series %q: want a non-empty key of at most 300 characters", rec[0])
		}
		if site == "" || len(site) > 40 || strings.ContainsAny(site, ": /") {
			return nil, bad(line, "site %q: want a short word", rec[1])
		}
		readers, err := strconv.Atoi(strings.TrimSpace(rec[2]))
		if err != nil || readers < 0 || readers > maxTraceReaders {
			return nil, bad(line, "readers %q: want a whole number from 0 to %d", rec[2], maxTraceReaders)
		}
		var at time.Time
		if raw := strings.TrimSpace(rec[3]); raw != "" {
			at, err = time.Parse(time.RFC3339, raw)
			if err != nil {
				return nil, bad(line, "released_at %q: want an RFC 3339 time (2026-01-05T14:00:00Z) or nothing for a dormant Series", rec[3])
			}
			if y := at.Year(); y < 1980 || y > 2200 {
				return nil, bad(line, "released_at %q is out of range", rec[3])
			}
			at = at.UTC()
		}
		i, seen := index[key]
		if !seen {
			i = len(tr.Series)
			index[key] = i
			tr.Series = append(tr.Series, TraceSeries{Key: key, Site: site, Readers: readers})
		}
		s := &tr.Series[i]
		switch {
		case s.Site != site:
			return nil, bad(line, "series %s is on site %s above, %s here", key, s.Site, site)
		case s.Readers != readers:
			return nil, bad(line, "series %s has %d readers above, %d here", key, s.Readers, readers)
		case at.IsZero() && (len(s.Releases) > 0 || dormant[key] && seen):
			return nil, bad(line, "series %s is declared dormant but has releases (or is declared twice)", key)
		case !at.IsZero() && dormant[key]:
			return nil, bad(line, "series %s was declared dormant above but releases here", key)
		}
		if at.IsZero() {
			dormant[key] = true
			continue
		}
		s.Releases = append(s.Releases, at)
		if tr.First.IsZero() || at.Before(tr.First) {
			tr.First = at
		}
		if at.After(tr.Last) {
			tr.Last = at
		}
	}
	if len(tr.Series) == 0 {
		return nil, fmt.Errorf("%w: no Series", ErrTrace)
	}
	if tr.First.IsZero() {
		return nil, fmt.Errorf("%w: no release: a trace needs at least one", ErrTrace)
	}
	for i := range tr.Series {
		slices.SortFunc(tr.Series[i].Releases, func(a, b time.Time) int { return a.Compare(b) })
	}
	return tr, nil
}

func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%w: line %d: %v", ErrTrace, pe.StartLine, pe.Err)
	}
	return fmt.Errorf("%w: %v", ErrTrace, err)
}
