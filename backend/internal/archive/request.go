package archive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Allowed checks that reader may archive the Series named key: they hold it
// (the Owner may archive any Series that exists), the Owner has switched
// archiving on for them, and their cap is not used up.
func (s *Service) Allowed(ctx context.Context, reader store.Reader, key string) (store.ArchiveAllowance, error) {
	if err := s.holds(ctx, reader, key); err != nil {
		return store.ArchiveAllowance{}, err
	}
	a, err := s.Store.ArchiveAllowanceOf(ctx, reader.ID)
	if err != nil {
		return store.ArchiveAllowance{}, err
	}
	switch {
	case !a.Enabled:
		return a, ErrNotAllowed
	case a.Remaining() == 0:
		return a, ErrCapReached
	}
	return a, nil
}

// holds checks that reader may see the Series' archive: they hold a
// Bookmark on it, or they are the Owner and the Series exists.
func (s *Service) holds(ctx context.Context, reader store.Reader, key string) error {
	_, err := s.Store.GetBookmark(ctx, reader.ID, key)
	if err == nil {
		return nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if reader.IsOwner {
		if _, err := s.Store.SeriesByKey(ctx, key); err == nil {
			return nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return ErrNotHeld
}

// CanRead reports whether reader may read and export the Series' archive.
func (s *Service) CanRead(ctx context.Context, reader store.Reader, key string) error {
	return s.holds(ctx, reader, key)
}

// Request queues a Reader's request to archive a Series with a scope. It
// returns at once: the archive_series job fetches the chapter list, through
// the pacing gate and after any back-off of the Site.
func (s *Service) Request(ctx context.Context, reader store.Reader, key string, scope Scope) (store.ArchiveRequest, error) {
	if _, err := s.Allowed(ctx, reader, key); err != nil {
		return store.ArchiveRequest{}, err
	}
	var req store.ArchiveRequest
	err := s.Store.InTx(ctx, func(tx *store.Store) error {
		var err error
		if req, err = tx.CreateArchiveRequest(ctx, reader.ID, key, scope.String()); err != nil {
			return err
		}
		res, err := s.River.InsertTx(ctx, tx.Tx(), SeriesArgs{RequestID: req.ID, Series: key}, nil)
		if err != nil {
			return fmt.Errorf("queue archive request for %s: %w", key, err)
		}
		req.JobID = &res.Job.ID
		return tx.SetArchiveRequestJob(ctx, req.ID, res.Job.ID)
	})
	if err != nil {
		return store.ArchiveRequest{}, err
	}
	site, _, _ := latest.SplitKey(key)
	s.log().InfoContext(ctx, "archive requested", "series", key, "site", site, "scope", req.Scope, "reader", reader.ID)
	return req, nil
}

// SetFollow turns "keep archiving" on or off for the Reader's Bookmark.
// Switching it on needs the Reader to be allowed to archive; it archives
// chapters the Poll finds from now on, not the ones before.
func (s *Service) SetFollow(ctx context.Context, reader store.Reader, key string, on bool) error {
	if on {
		if _, err := s.Allowed(ctx, reader, key); err != nil {
			return err
		}
	}
	err := s.Store.SetArchiveFollow(ctx, reader.ID, key, on)
	if errors.Is(err, store.ErrNotFound) {
		return ErrNotHeld
	}
	return err
}

// Follow queues the given new chapters of a Series for the Readers who keep
// archiving it, charged to the first of them (by when they switched it on)
// who is allowed and under their cap. The archive_follow job calls it with
// the chapters a poll found listed after the previous Latest Chapter
// (QueueFollow), and the sweep with the chapters it finds missed. A chapter
// already archived or queued is left alone, so a repeated call queues
// nothing twice; one that failed is queued again; a chapter the Site marks
// locked is recorded as failed with the problem "locked" and not fetched.
func (s *Service) Follow(ctx context.Context, key string, chapters []latest.Chapter) error {
	return s.FollowTx(ctx, s.Store, key, chapters)
}

// FollowTx is Follow inside the caller's transaction (tx from
// store.Store.InTx), so the chapters queue with the caller's own writes.
func (s *Service) FollowTx(ctx context.Context, tx *store.Store, key string, chapters []latest.Chapter) error {
	if len(chapters) == 0 {
		return nil
	}
	followers, err := tx.ArchiveFollowers(ctx, key)
	if err != nil || len(followers) == 0 {
		return err
	}
	site, _, _ := latest.SplitKey(key)
	log := s.log().With("series", key, "site", site)
	return tx.InTx(ctx, func(tx *store.Store) error {
		// Two follows of one Series (a retry beside a new one, the sweep)
		// take positions and the cap one after the other.
		if err := tx.LockArchiveSeries(ctx, key); err != nil {
			return err
		}
		var charge *int64
		remaining := 0
		for _, id := range followers {
			a, err := tx.ArchiveAllowanceOf(ctx, id)
			if err != nil {
				return err
			}
			if a.Enabled && a.Remaining() != 0 {
				charge, remaining = &id, a.Remaining()
				break
			}
		}
		if charge == nil {
			log.InfoContext(ctx, "new chapter not archived: no follower may archive more")
			return nil
		}
		next, err := tx.NextArchivePosition(ctx, key)
		if err != nil {
			return err
		}
		for _, c := range chapters {
			if remaining == 0 {
				log.InfoContext(ctx, "new chapter not archived: the follower's cap is reached", "chapter", c.URL, "reader", *charge)
				break
			}
			in := store.ArchiveChapterInput{URL: c.URL, Label: c.Label, Number: c.Number, Position: next}
			if known, err := tx.ArchiveChapterByURL(ctx, c.URL); err == nil {
				in.Position = known.Position
			} else if errors.Is(err, store.ErrNotFound) {
				next++
			} else {
				return err
			}
			queued, err := s.ensure(ctx, tx, key, in, c.Locked, charge)
			if err != nil {
				return err
			}
			if queued {
				remaining--
				log.InfoContext(ctx, "new chapter queued for the archive", "chapter", c.URL, "reader", *charge)
			}
		}
		return nil
	})
}

// ensure gives a chapter its row and, when it needs one, its job: a locked
// chapter is recorded as failed without a job.
func (s *Service) ensure(ctx context.Context, tx *store.Store, key string, in store.ArchiveChapterInput, locked bool, charge *int64) (bool, error) {
	if locked {
		_, _, err := tx.EnsureArchiveChapter(ctx, key, in, charge, store.ArchiveFailed, latest.ProblemLocked, "the Site lists this chapter as locked (premium or early access)")
		return false, err
	}
	ch, queue, err := tx.EnsureArchiveChapter(ctx, key, in, charge, store.ArchiveQueued, "", "")
	if err != nil || !queue {
		return false, err
	}
	return true, s.queueChapter(ctx, tx, ch)
}

// queueChapter inserts a chapter's job in the transaction that queued it,
// for that queueing (ch.QueuedAt), so a job of an earlier one still
// finishing never stands in for it (ChapterArgs). A duplicate is a job of
// this very queueing, which runs it.
func (s *Service) queueChapter(ctx context.Context, tx *store.Store, ch store.ArchiveChapter) error {
	if ch.State != store.ArchiveQueued || ch.QueuedAt.IsZero() {
		return fmt.Errorf("queue archive of %s: the chapter is %s, queued at %v", ch.URL, ch.State, ch.QueuedAt)
	}
	res, err := s.River.InsertTx(ctx, tx.Tx(), ChapterArgs{URL: ch.URL, ChapterID: ch.ID, Series: ch.SeriesKey, Queued: ch.QueuedAt}, nil)
	if err != nil {
		return fmt.Errorf("queue archive of %s: %w", ch.URL, err)
	}
	return tx.SetArchiveChapterJob(ctx, ch.ID, res.Job.ID)
}

// resolveRequest is one attempt at a request: list the Series' chapters,
// apply the scope, queue what it names within the Reader's cap.
func (s *Service) resolveRequest(ctx context.Context, a SeriesArgs, attempt, maxAttempts int) error {
	req, err := s.Store.ArchiveRequestByID(ctx, a.RequestID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("archive request %d: %w", a.RequestID, err)
	}
	if req.State != store.ArchiveQueued {
		return nil
	}
	site, err := s.siteOf(req.SeriesKey)
	if err != nil {
		return s.finishRequest(ctx, req, store.ArchiveRequestOutcome{State: store.ArchiveFailed, Problem: ProblemUnavailable, Detail: err.Error()})
	}
	log := s.log().With("series", req.SeriesKey, "site", site.Name, "request", req.ID)
	if req.ReaderID == nil {
		return s.finishRequest(ctx, req, store.ArchiveRequestOutcome{State: store.ArchiveCancelled, Detail: "the Reader was deleted"})
	}
	if h, d, err := s.held(ctx, site); err != nil {
		return err
	} else if d > 0 {
		log.InfoContext(ctx, "archive request snoozed: "+h.String(), "for", d)
		return river.JobSnooze(d)
	}
	scope, err := ParseScope(req.Scope)
	if err != nil {
		return s.finishRequest(ctx, req, store.ArchiveRequestOutcome{State: store.ArchiveFailed, Problem: "bad_scope", Detail: err.Error()})
	}
	ser, err := s.Store.SeriesByKey(ctx, req.SeriesKey)
	if err != nil {
		return fmt.Errorf("archive request %d: %w", req.ID, err)
	}

	fail := func(err error) error { return s.requestFailed(ctx, log, site, req, attempt, maxAttempts, err) }
	page, err := s.Fetch.FetchSeries(ctx, site, ser.SeriesURL, fetch.Conditional{})
	if err != nil {
		return fail(err)
	}
	seriesURL := ser.SeriesURL
	if u, err := url.Parse(page.URL); err == nil && page.URL != "" && site.HasHost(u.Hostname()) {
		seriesURL = page.URL
	}
	chapters, err := site.AllChapters(ctx, fetch.Pages(s.Fetch, site), seriesURL, page.Body)
	if err != nil {
		return fail(err)
	}
	if len(chapters) == 0 {
		return fail(&latest.Problem{Code: latest.ProblemNoChapters, Detail: "the Site lists no chapter"})
	}
	out, err := s.queueSelected(ctx, req, scope, chapters)
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "archive request resolved", "scope", req.Scope, "listed", len(chapters),
		"selected", out.Selected, "queued", out.Queued, "capped", out.Capped, "state", out.State)
	return s.finishRequest(ctx, req, out)
}

// queueSelected records the listing and queues the chapters the scope names,
// within the Reader's cap, in one transaction.
func (s *Service) queueSelected(ctx context.Context, req store.ArchiveRequest, scope Scope, chapters []latest.Chapter) (store.ArchiveRequestOutcome, error) {
	var out store.ArchiveRequestOutcome
	err := s.Store.InTx(ctx, func(tx *store.Store) error {
		known, err := tx.ArchiveChaptersOf(ctx, req.SeriesKey)
		if err != nil {
			return err
		}
		archived := make(map[string]bool, len(known))
		for _, c := range known {
			if c.State == store.ArchiveArchived {
				archived[c.URL] = true
			}
		}
		urls := make([]string, len(chapters))
		position := make(map[string]int, len(chapters))
		for i, c := range chapters {
			urls[i] = c.URL
			position[c.URL] = i
		}
		if err := tx.SetArchiveChapterCount(ctx, req.SeriesKey, len(chapters)); err != nil {
			return err
		}
		if err := tx.SetArchivePositions(ctx, req.SeriesKey, urls); err != nil {
			return err
		}
		a, err := tx.ArchiveAllowanceOf(ctx, *req.ReaderID)
		if err != nil {
			return err
		}
		if !a.Enabled {
			out = store.ArchiveRequestOutcome{State: store.ArchiveFailed, Problem: ProblemNotAllowed, Detail: ErrNotAllowed.Error()}
			return nil
		}
		remaining := a.Remaining()
		selected := scope.Select(chapters, func(u string) bool { return archived[u] })
		if len(selected) == 0 {
			out = store.ArchiveRequestOutcome{State: store.ArchiveFailed, Problem: ProblemNothingSelected, Selected: 0,
				Detail: fmt.Sprintf("%q names no chapter the Site lists (it lists %d, from %s to %s)",
					scope.String(), len(chapters), chapters[0].Label, chapters[len(chapters)-1].Label)}
			return nil
		}
		out = store.ArchiveRequestOutcome{State: store.ArchiveRequestDone, Selected: len(selected)}
		for _, c := range selected {
			if archived[c.URL] {
				continue
			}
			if !c.Locked && remaining == 0 {
				out.Capped++
				continue
			}
			in := store.ArchiveChapterInput{URL: c.URL, Label: c.Label, Number: c.Number, Position: position[c.URL]}
			queued, err := s.ensure(ctx, tx, req.SeriesKey, in, c.Locked, req.ReaderID)
			if err != nil {
				return err
			}
			if queued {
				out.Queued++
				if remaining > 0 {
					remaining--
				}
			}
		}
		if out.Capped > 0 {
			out.Detail = fmt.Sprintf("%d chapters left out: the Reader's archive cap is reached", out.Capped)
		}
		return nil
	})
	return out, err
}

func (s *Service) finishRequest(ctx context.Context, req store.ArchiveRequest, out store.ArchiveRequestOutcome) error {
	err := s.Store.FinishArchiveRequest(ctx, req.ID, out)
	if errors.Is(err, store.ErrArchiveNotQueued) {
		return nil
	}
	return err
}

// requestFailed is chapterFailed for a request.
func (s *Service) requestFailed(ctx context.Context, log *slog.Logger, site *latest.Site, req store.ArchiveRequest, attempt, maxAttempts int, err error) error {
	if ret, ok := stopping(ctx); ok {
		return ret
	}
	v, code, retryAfter := judge(err)
	switch {
	case v == wait:
		log.InfoContext(ctx, "archive request paused by the Owner mid-way: snoozed", "err", err)
		return s.pauseSnooze()
	case v == backOff:
		log.WarnContext(ctx, "Site refused the chapter list: backing off", "problem", code, "err", err)
		_ = s.Store.NoteArchiveRequestError(ctx, req.ID, "waiting: the Site refused ("+code+") and is backing off")
		return s.refused(ctx, site, code, retryAfter, err)
	case v == giveUp, attempt >= maxAttempts:
		log.WarnContext(ctx, "archive request failed", "problem", code, "err", err)
		if ferr := s.finishRequest(ctx, req, store.ArchiveRequestOutcome{State: store.ArchiveFailed, Problem: code, Detail: err.Error()}); ferr != nil {
			return ferr
		}
		return river.JobCancel(fmt.Errorf("%s: %w", code, err))
	}
	_ = s.Store.NoteArchiveRequestError(ctx, req.ID, fmt.Sprintf("attempt %d of %d failed: %v", attempt, maxAttempts, err))
	return fmt.Errorf("archive request %d: %w", req.ID, err)
}

// CancelChapter cancels a queued chapter (an Owner's action): its row
// becomes cancelled and its job is cancelled on River, a running one
// included. Nothing of it becomes visible.
func (s *Service) CancelChapter(ctx context.Context, id int64) error {
	if _, err := s.Store.ArchiveChapterByID(ctx, id); errors.Is(err, store.ErrNotFound) {
		return ErrNotFound
	} else if err != nil {
		return err
	}
	return s.Store.InTx(ctx, func(tx *store.Store) error {
		job, err := tx.CancelArchiveChapter(ctx, id)
		if errors.Is(err, store.ErrArchiveNotQueued) {
			return ErrNotQueued
		}
		if err != nil {
			return err
		}
		return s.cancelJob(ctx, tx, job)
	})
}

// CancelRequest cancels a request not resolved yet.
func (s *Service) CancelRequest(ctx context.Context, id int64) error {
	if _, err := s.Store.ArchiveRequestByID(ctx, id); errors.Is(err, store.ErrNotFound) {
		return ErrNotFound
	} else if err != nil {
		return err
	}
	return s.Store.InTx(ctx, func(tx *store.Store) error {
		job, err := tx.CancelArchiveRequest(ctx, id)
		if errors.Is(err, store.ErrArchiveNotQueued) {
			return ErrNotQueued
		}
		if err != nil {
			return err
		}
		return s.cancelJob(ctx, tx, job)
	})
}

func (s *Service) cancelJob(ctx context.Context, tx *store.Store, job *int64) error {
	if job == nil {
		return nil
	}
	if _, err := s.River.JobCancelTx(ctx, tx.Tx(), *job); err != nil && !errors.Is(err, rivertype.ErrNotFound) {
		return fmt.Errorf("cancel job %d: %w", *job, err)
	}
	return nil
}

// RetryChapter queues a failed or cancelled chapter again (an Owner's
// action), charged to the Reader who asked for it first. The Owner's
// decision is not held to that Reader's cap.
func (s *Service) RetryChapter(ctx context.Context, id int64) error {
	ch, err := s.Store.ArchiveChapterByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	if ch.State != store.ArchiveFailed && ch.State != store.ArchiveCancelled {
		return ErrNotQueued
	}
	return s.Store.InTx(ctx, func(tx *store.Store) error {
		in := store.ArchiveChapterInput{URL: ch.URL, Label: ch.Label, Number: ch.Number, Position: ch.Position}
		queued, err := s.ensure(ctx, tx, ch.SeriesKey, in, false, ch.RequestedBy)
		if err != nil {
			return err
		}
		if !queued {
			return ErrNotQueued
		}
		return nil
	})
}
