package bookmark

import (
	"context"
	"errors"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Suggestions: pairs of a Reader's Bookmarks that look like one story, each
// with its evidence. They are only ever offered: nothing is linked until
// the Reader accepts (a wrong link would merge two stories' Progress), and
// a dismissed pair is never offered again.

// Evidence kinds.
const (
	EvidenceTitle    = "same_title" // the same title once normalised
	EvidenceAltTitle = "alt_title"  // one Series' title is an alternative title the other's Site lists
	EvidenceTracker  = "tracker"    // both are known by one tracker entry
)

// Evidence is one reason a pair looks like one story.
type Evidence struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// Suggestion is a pair of Bookmarks that look like one story. Keys, Titles
// and Sites are in the same order; Work is the Work one of them is in
// already (accepting adds the other to it), "" when neither is.
type Suggestion struct {
	Keys     []string   `json:"keys"`
	Titles   []string   `json:"titles"`
	Sites    []string   `json:"sites"`
	Work     string     `json:"work"`
	Evidence []Evidence `json:"evidence"`
}

// NormalTitle is a title reduced to what two Sites' spellings of one story
// share: compatibility-folded, accents dropped, lower case, punctuation
// gone, a leading article dropped. Two titles are "the same" when their
// normal forms are equal.
func NormalTitle(s string) string {
	s = norm.NFKD.String(s)
	var b strings.Builder
	space := true
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Mn, r):
			continue
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
			space = false
		case r == '\'' || r == '’':
			continue // "Reader's" and "Readers" are one spelling
		default:
			if !space {
				b.WriteByte(' ')
				space = true
			}
		}
	}
	out := strings.TrimSpace(b.String())
	for _, article := range []string{"the ", "a "} {
		out = strings.TrimPrefix(out, article)
	}
	return out
}

// pairEvidence is what one pair of Series shares.
func pairEvidence(a, b store.StoryFacts) []Evidence {
	var ev []Evidence
	na, nb := NormalTitle(a.Title), NormalTitle(b.Title)
	if na != "" && na == nb {
		ev = append(ev, Evidence{Kind: EvidenceTitle, Detail: a.Title})
	} else {
		if t, ok := altMatch(nb, a); ok && nb != "" {
			ev = append(ev, Evidence{Kind: EvidenceAltTitle, Detail: a.Site + " also lists “" + t + "”"})
		} else if t, ok := altMatch(na, b); ok && na != "" {
			ev = append(ev, Evidence{Kind: EvidenceAltTitle, Detail: b.Site + " also lists “" + t + "”"})
		}
	}
	for _, id := range a.TrackerIDs {
		if slices.Contains(b.TrackerIDs, id) {
			ev = append(ev, Evidence{Kind: EvidenceTracker, Detail: id})
		}
	}
	return ev
}

// altMatch finds an alternative title of f whose normal form is n.
func altMatch(n string, f store.StoryFacts) (string, bool) {
	for _, t := range f.AltTitles {
		if NormalTitle(t) == n {
			return t, true
		}
	}
	return "", false
}

// linkable reports a pair the Reader could link: one Library, not both in
// Works already (not one Work, not two), not dismissed.
func linkable(a, b store.StoryFacts, dismissed map[string]bool) bool {
	if a.Kind != b.Kind || a.Key == b.Key {
		return false
	}
	if a.WorkID != 0 && b.WorkID != 0 {
		return false
	}
	return !dismissed[store.PairKey(a.Key, b.Key)]
}

func suggestionOf(a, b store.StoryFacts, ev []Evidence) Suggestion {
	work := a.WorkID
	if work == 0 {
		work = b.WorkID
	}
	return Suggestion{Keys: []string{a.Key, b.Key}, Titles: []string{a.Title, b.Title}, Sites: []string{a.Site, b.Site},
		Work: WorkID(work), Evidence: ev}
}

// maxShared is how many of a Reader's Series may share one normal title or
// tracker id before it stops counting as evidence.
const maxShared = 8

// SuggestFrom finds the pairs among one Reader's Series facts (sorted by
// key, as the store returns them), in key order. It compares candidates
// found through indexes of normal titles and tracker ids, not every pair.
func SuggestFrom(facts []store.StoryFacts, dismissed map[string]bool) []Suggestion {
	index := map[string][]int{}
	for i, f := range facts {
		seen := map[string]bool{}
		add := func(k string) {
			if k != "" && !seen[k] {
				seen[k] = true
				index[k] = append(index[k], i)
			}
		}
		add("t:" + NormalTitle(f.Title))
		for _, t := range f.AltTitles {
			add("t:" + NormalTitle(t))
		}
		for _, id := range f.TrackerIDs {
			add("x:" + id)
		}
	}
	pairs := map[[2]int]bool{}
	for k, is := range index {
		// A title or id that many Series share ("Chapter List", a Site's
		// generic alternative title) is no evidence of one story, and its
		// pairs would grow with the square of the Library.
		if k == "t:" || len(is) > maxShared {
			continue
		}
		for x := 0; x < len(is); x++ {
			for y := x + 1; y < len(is); y++ {
				pairs[[2]int{is[x], is[y]}] = true
			}
		}
	}
	out := []Suggestion{}
	for p := range pairs {
		a, b := facts[p[0]], facts[p[1]]
		if !linkable(a, b, dismissed) {
			continue
		}
		// Two alternative titles alike are no evidence by themselves
		// (Sites list generic ones); the pair must share its own title, an
		// alternative title of the other's, or a tracker entry.
		if ev := pairEvidence(a, b); len(ev) > 0 {
			out = append(out, suggestionOf(a, b, ev))
		}
	}
	slices.SortFunc(out, func(x, y Suggestion) int {
		if c := strings.Compare(x.Keys[0], y.Keys[0]); c != 0 {
			return c
		}
		return strings.Compare(x.Keys[1], y.Keys[1])
	})
	return out
}

// Suggestions returns the pairs of the Reader's Bookmarks that look like
// one story and are not linked or dismissed (GET /api/works/suggestions).
func (l *Service) Suggestions(ctx context.Context, readerID int64) ([]Suggestion, error) {
	facts, err := l.Store.StoryFactsOf(ctx, readerID)
	if err != nil {
		return nil, err
	}
	dismissed, err := l.Store.DismissedPairs(ctx, readerID)
	if err != nil {
		return nil, err
	}
	return SuggestFrom(facts, dismissed), nil
}

// SuggestFor returns the Reader's Bookmarks that look like the same story
// as a Series page they are on (key, with the title the page shows): the
// panel's "Same story as …? Link" offer, for a Series they do not hold yet
// (or hold unlinked). Each suggestion's first key is key.
func (l *Service) SuggestFor(ctx context.Context, readerID int64, key, title string) ([]Suggestion, error) {
	site, _, ok := latest.SplitKey(key)
	if !ok {
		return nil, invalid("key %q is not a Series key (site:slug)", key)
	}
	here := store.StoryFacts{Key: key, Site: site, Title: title}
	if s, ok := l.Registry.Lookup(site); ok {
		here.Kind = string(s.Kind)
	}
	known, err := l.Store.SeriesStoryFacts(ctx, key)
	switch {
	case err == nil:
		here.Kind, here.AltTitles, here.TrackerIDs = known.Kind, known.AltTitles, known.TrackerIDs
		if here.Title == "" {
			here.Title = known.Title
		}
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	facts, err := l.Store.StoryFactsOf(ctx, readerID)
	if err != nil {
		return nil, err
	}
	dismissed, err := l.Store.DismissedPairs(ctx, readerID)
	if err != nil {
		return nil, err
	}
	for _, f := range facts {
		if f.Key == key {
			here.WorkID = f.WorkID
		}
	}
	out := []Suggestion{}
	for _, f := range facts {
		if !linkable(here, f, dismissed) {
			continue
		}
		if ev := pairEvidence(here, f); len(ev) > 0 {
			out = append(out, suggestionOf(here, f, ev))
		}
	}
	return out, nil
}

// Dismiss records that the Reader says a suggested pair is not one story.
func (l *Service) Dismiss(ctx context.Context, readerID int64, a, b string) error {
	return l.Store.DismissPair(ctx, readerID, a, b)
}

// EvidenceWork marks a move candidate that is already in the Bookmark's
// Work.
const EvidenceWork = "work"

// MoveCandidate is one of the Reader's Bookmarks on a Site they are moving
// away from, with where its Progress could go: the other members of its
// Work first, then Bookmarks the suggestions pair with it (on other Sites).
type MoveCandidate struct {
	From       Bookmark     `json:"from"`
	Candidates []Suggestion `json:"candidates"`
}

// MoveCandidates lists the Reader's Bookmarks on site, each with its
// candidates, for the "Move these Bookmarks to another Site" review; the
// Reader's ticked choices then go to MoveProgress in one step. Dismissed
// pairs are left out; nothing is moved here.
func (l *Service) MoveCandidates(ctx context.Context, readerID int64, site string) ([]MoveCandidate, error) {
	rows, err := l.Store.ListBookmarks(ctx, readerID, "")
	if err != nil {
		return nil, err
	}
	wire := l.Render(rows)
	facts, err := l.Store.StoryFactsOf(ctx, readerID)
	if err != nil {
		return nil, err
	}
	dismissed, err := l.Store.DismissedPairs(ctx, readerID)
	if err != nil {
		return nil, err
	}
	byKey := make(map[string]store.StoryFacts, len(facts))
	for _, f := range facts {
		byKey[f.Key] = f
	}
	out := []MoveCandidate{}
	for i, r := range rows {
		if r.Site != site {
			continue
		}
		mc := MoveCandidate{From: wire[i], Candidates: []Suggestion{}}
		here := byKey[r.SeriesKey]
		for _, o := range rows {
			if o.Site == site || o.SeriesKey == r.SeriesKey {
				continue
			}
			there := byKey[o.SeriesKey]
			if r.WorkID != 0 && o.WorkID == r.WorkID {
				mc.Candidates = append(mc.Candidates, suggestionOf(here, there, []Evidence{{Kind: EvidenceWork, Detail: WorkID(r.WorkID)}}))
				continue
			}
			if !linkable(here, there, dismissed) {
				continue
			}
			if ev := pairEvidence(here, there); len(ev) > 0 {
				mc.Candidates = append(mc.Candidates, suggestionOf(here, there, ev))
			}
		}
		slices.SortStableFunc(mc.Candidates, func(a, b Suggestion) int {
			aw, bw := a.Evidence[0].Kind == EvidenceWork, b.Evidence[0].Kind == EvidenceWork
			switch {
			case aw && !bw:
				return -1
			case bw && !aw:
				return 1
			}
			return strings.Compare(a.Keys[1], b.Keys[1])
		})
		out = append(out, mc)
	}
	return out, nil
}
