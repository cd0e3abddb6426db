package portability

import (
	"context"
	"fmt"
	"sort"

	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Entry is one entry of a list read from somewhere other than a file (a
// tracker's API), for ImportEntries.
type Entry struct {
	// Line numbers the entry in the report (its place in the list).
	Line  int
	Title string
	// URLs are pages the source links the entry to; the first on a
	// supported Site places it.
	URLs    []string
	Chapter string
	// Trackers are the entry's tracker ids, which place it when no URL
	// does and become the Bookmark's mappings.
	Trackers map[string]string
}

// ImportEntries imports a list built by a caller (a tracker's list through
// its API) as Import imports a file: placed, checked, previewed or applied
// in one transaction, with what could not be placed reported.
func (im *Importer) ImportEntries(ctx context.Context, readerID int64, f Format, list []Entry, opts Options) (Report, error) {
	entries := make([]entry, 0, len(list))
	for _, e := range list {
		in := entry{Line: e.Line, Input: shorten(e.Title), Title: e.Title, Chapter: e.Chapter, Trackers: e.Trackers}
		for _, u := range e.URLs {
			if _, err := im.Bookmarks.Registry.Resolve(u); err == nil {
				in.URL = u
				break
			}
		}
		entries = append(entries, in)
	}
	return im.run(ctx, readerID, f, entries, nil, opts)
}

// place finds the Series of entries that name no URL by their tracker ids:
// the Reader's own mappings first, then the ids Sites' pages publish. What
// places nowhere is reported, not refused: a tracker's list holds many
// works Lectern has no Site for.
func (im *Importer) place(ctx context.Context, readerID int64, entries []entry) ([]entry, []Unplaced, error) {
	want := map[string][]string{}
	for _, e := range entries {
		if e.URL == "" {
			for t, id := range e.Trackers {
				want[t] = append(want[t], id)
			}
		}
	}
	found := map[string]map[string]store.Placed{}
	for t, ids := range want {
		m, err := im.Bookmarks.Store.PlaceTrackerIDs(ctx, readerID, t, ids)
		if err != nil {
			return nil, nil, fmt.Errorf("import: %w", err)
		}
		found[t] = m
	}
	out := make([]entry, 0, len(entries))
	unplaced := []Unplaced{}
	for _, e := range entries {
		if e.URL == "" {
			for _, t := range sortedKeys(e.Trackers) {
				if p, ok := found[t][e.Trackers[t]]; ok {
					e.URL, e.Site = p.SeriesURL, p.Site
					break
				}
			}
		}
		if e.URL == "" {
			reason := e.NotPlaced
			if reason == "" {
				reason = "no page on a supported Site, and no tracker id Lectern knows a Series of"
			}
			unplaced = append(unplaced, Unplaced{Line: e.Line, Title: e.Title, Trackers: e.Trackers, Reason: reason})
			continue
		}
		out = append(out, e)
	}
	return out, unplaced, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
