package tracker

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/lectern-reader/lectern/backend/internal/portability"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// ImportList reads the Reader's reading list from a linked tracker through
// its API and imports it like a file (preview with opts.DryRun, then
// apply): entries the tracker links to a supported Site's page, or whose id
// the Reader mapped or a Site published, become Bookmarks with the
// tracker's count as Progress and the entry as their mapping; the rest are
// reported as not placeable.
func (s *Service) ImportList(ctx context.Context, im *portability.Importer, readerID int64, tracker string, opts portability.Options) (portability.Report, error) {
	c, err := s.Client(tracker)
	if err != nil {
		return portability.Report{}, err
	}
	a, err := s.Store.TrackerAccount(ctx, readerID, tracker)
	if errors.Is(err, store.ErrNotFound) || err == nil && !a.Linked() {
		return portability.Report{}, fmt.Errorf("%w: %s", ErrNotLinked, Label(tracker))
	}
	if err != nil {
		return portability.Report{}, err
	}
	tok, err := s.token(a)
	if err != nil {
		return portability.Report{}, err
	}
	items, err := c.List(ctx, tok, User{ID: a.UserID, Name: a.UserName})
	if KindOf(err) == Refused {
		s.unlinkRefused(ctx, readerID, tracker, err)
	}
	if err != nil {
		return portability.Report{}, refused(err)
	}
	list := make([]portability.Entry, 0, len(items))
	for i, it := range items {
		e := portability.Entry{Line: i + 1, Title: it.Title, URLs: it.SiteURLs, Trackers: map[string]string{tracker: it.ID}}
		if it.Progress > 0 {
			e.Chapter = "Chapter " + strconv.Itoa(it.Progress)
		}
		list = append(list, e)
	}
	return im.ImportEntries(ctx, readerID, portability.FromTracker(tracker), list, opts)
}
