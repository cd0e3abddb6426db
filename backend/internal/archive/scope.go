package archive

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// The scope kinds a Reader may ask for.
const (
	ScopeAll     = "all"     // every chapter the Site lists
	ScopeMissing = "missing" // every listed chapter not archived yet
	ScopeLatest  = "latest"  // the newest readable chapter
	ScopeFirst   = "first"   // the first N readable chapters
	ScopeLast    = "last"    // the last N readable chapters
	ScopeChapter = "chapter" // the chapter(s) numbered X
	ScopeAfter   = "after"   // every chapter numbered above X
)

// MaxScopeCount bounds first/last N: no Series lists more chapters.
const MaxScopeCount = 100000

// ErrBadScope is a scope that cannot be read.
var ErrBadScope = errs.New(errs.Invalid, "bad archive scope")

// Scope says which chapters of a Series a request archives.
//
// first, last and latest count only chapters the Site does not mark locked
// (an early-access chapter is not "the latest" a Reader can keep); all,
// missing, chapter and after name locked chapters too, and those end at once
// as failed with the problem "locked", without a fetch, so the Reader sees
// why they are absent.
type Scope struct {
	Kind string
	// N is the count of first/last.
	N int
	// X is the chapter number of chapter/after.
	X float64
}

// ParseScope reads the text form: "all", "missing", "latest", "first N",
// "last N", "chapter X", "after X".
func ParseScope(s string) (Scope, error) {
	f := strings.Fields(strings.ToLower(s))
	if len(f) == 0 {
		return Scope{}, fmt.Errorf("%w: empty (all, missing, latest, first N, last N, chapter X or after X)", ErrBadScope)
	}
	kind := f[0]
	switch kind {
	case ScopeAll, ScopeMissing, ScopeLatest:
		if len(f) != 1 {
			return Scope{}, fmt.Errorf("%w: %q takes no argument", ErrBadScope, kind)
		}
		return Scope{Kind: kind}, nil
	case ScopeFirst, ScopeLast:
		if len(f) != 2 {
			return Scope{}, fmt.Errorf("%w: %q needs a count, as in %q", ErrBadScope, kind, kind+" 5")
		}
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 1 || n > MaxScopeCount {
			return Scope{}, fmt.Errorf("%w: the count of %q must be a whole number from 1 to %d", ErrBadScope, kind, MaxScopeCount)
		}
		return Scope{Kind: kind, N: n}, nil
	case ScopeChapter, ScopeAfter:
		if len(f) != 2 {
			return Scope{}, fmt.Errorf("%w: %q needs a chapter number, as in %q", ErrBadScope, kind, kind+" 12.5")
		}
		x, err := strconv.ParseFloat(f[1], 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x >= 1e7 {
			return Scope{}, fmt.Errorf("%w: the chapter of %q must be a number from 0 to 9999999", ErrBadScope, kind)
		}
		return Scope{Kind: kind, X: x}, nil
	}
	return Scope{}, fmt.Errorf("%w: %q is not one of all, missing, latest, first N, last N, chapter X, after X", ErrBadScope, f[0])
}

// String is the canonical text form, stored with the request.
func (s Scope) String() string {
	switch s.Kind {
	case ScopeFirst, ScopeLast:
		return s.Kind + " " + strconv.Itoa(s.N)
	case ScopeChapter, ScopeAfter:
		return s.Kind + " " + strconv.FormatFloat(s.X, 'f', -1, 64)
	}
	return s.Kind
}

// Select returns the chapters, from a Site's list ordered oldest first, that
// the scope names, in that order. archived reports a chapter URL already
// archived.
func (s Scope) Select(chapters []latest.Chapter, archived func(url string) bool) []latest.Chapter {
	var out []latest.Chapter
	readable := func() []latest.Chapter {
		r := make([]latest.Chapter, 0, len(chapters))
		for _, c := range chapters {
			if !c.Locked {
				r = append(r, c)
			}
		}
		return r
	}
	switch s.Kind {
	case ScopeAll:
		out = append(out, chapters...)
	case ScopeMissing:
		for _, c := range chapters {
			if !archived(c.URL) {
				out = append(out, c)
			}
		}
	case ScopeLatest:
		if r := readable(); len(r) > 0 {
			out = append(out, r[len(r)-1])
		}
	case ScopeFirst:
		r := readable()
		out = append(out, r[:min(s.N, len(r))]...)
	case ScopeLast:
		r := readable()
		out = append(out, r[len(r)-min(s.N, len(r)):]...)
	case ScopeChapter:
		for _, c := range chapters {
			if c.Number != nil && sameNumber(*c.Number, s.X) {
				out = append(out, c)
			}
		}
	case ScopeAfter:
		for _, c := range chapters {
			if c.Number != nil && *c.Number > s.X && !sameNumber(*c.Number, s.X) {
				out = append(out, c)
			}
		}
	}
	return out
}

// sameNumber compares chapter numbers that went through a float parse
// ("12.1" from a label, 12.1 from JSON).
func sameNumber(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
