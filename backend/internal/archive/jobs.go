package archive

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/fetch/browser"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/riverjob"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// ChapterArgs is the archive_chapter job: archive one chapter, as it was
// queued at Queued (the row's queued_at). That two requests, a Reader's and
// a follow, never archive one chapter twice at once is the chapter row's
// doing: only a chapter that is not queued (or archived) is queued again,
// under the row's lock. The job is unique by the chapter's URL and that
// queueing while queued or running, so the same queueing inserts one job,
// and a later queueing always gets a job of its own: River finishes a job
// only after its worker has returned, so a chapter queued again the moment
// its last attempt ended (the sweep, the Owner's retry, a Reader's request)
// still finds that job running, and a job unique by URL alone would be
// skipped as its duplicate, leaving the chapter queued with no job to run
// it. A job of an earlier queueing that runs anyway does nothing.
type ChapterArgs struct {
	URL       string    `json:"url" river:"unique"`
	ChapterID int64     `json:"chapter_id"`
	Series    string    `json:"series"`
	Queued    time.Time `json:"queued,omitzero" river:"unique"`
}

// Kind is River's job kind.
func (ChapterArgs) Kind() string { return riverjob.ArchiveChapter }

// InsertOpts are the defaults of every chapter job.
func (ChapterArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: MaxAttempts, Priority: PriorityChapter, UniqueOpts: riverjob.UniqueInFlight()}
}

// SeriesArgs is the archive_series job: resolve a Reader's request against
// the Site's chapter list and queue a chapter job per chapter it names.
type SeriesArgs struct {
	RequestID int64  `json:"request_id" river:"unique"`
	Series    string `json:"series"`
}

// Kind is River's job kind.
func (SeriesArgs) Kind() string { return riverjob.ArchiveSeries }

// InsertOpts are the defaults of every request job.
func (SeriesArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: MaxAttempts, Priority: PriorityRequest, UniqueOpts: riverjob.UniqueInFlight()}
}

// AddWorkers registers the archive's job kinds with the workers of the one
// River client (the Poll's), before the client is built.
func (s *Service) AddWorkers(workers *river.Workers) error {
	if err := river.AddWorkerSafely(workers, &chapterWorker{s: s}); err != nil {
		return fmt.Errorf("register archive_chapter: %w", err)
	}
	if err := river.AddWorkerSafely(workers, &seriesWorker{s: s}); err != nil {
		return fmt.Errorf("register archive_series: %w", err)
	}
	if err := river.AddWorkerSafely(workers, &followWorker{s: s}); err != nil {
		return fmt.Errorf("register archive_follow: %w", err)
	}
	if err := river.AddWorkerSafely(workers, &sweepWorker{s: s}); err != nil {
		return fmt.Errorf("register archive_sweep: %w", err)
	}
	return nil
}

type chapterWorker struct {
	river.WorkerDefaults[ChapterArgs]
	s *Service
}

func (w *chapterWorker) Work(ctx context.Context, job *river.Job[ChapterArgs]) error {
	return w.s.archiveChapter(ctx, job.Args, job.Attempt, job.MaxAttempts)
}

func (w *chapterWorker) Timeout(*river.Job[ChapterArgs]) time.Duration { return w.s.jobTimeout() }

type seriesWorker struct {
	river.WorkerDefaults[SeriesArgs]
	s *Service
}

func (w *seriesWorker) Work(ctx context.Context, job *river.Job[SeriesArgs]) error {
	return w.s.resolveRequest(ctx, job.Args, job.Attempt, job.MaxAttempts)
}

func (w *seriesWorker) Timeout(*river.Job[SeriesArgs]) time.Duration { return w.s.jobTimeout() }

func (s *Service) jobTimeout() time.Duration {
	if s.JobTimeout > 0 {
		return s.JobTimeout
	}
	return DefaultJobTimeout
}

// verdict is what an error means for a job.
type verdict int

const (
	// retryLater: worth another attempt (network, 5xx, a page that did not
	// look like itself once).
	retryLater verdict = iota
	// backOff: the Site refuses this deployment; it backs off and the job
	// snoozes without burning an attempt.
	backOff
	// giveUp: a named problem that retrying will not change.
	giveUp
	// wait: the Owner paused the Site (or everything) while the job ran;
	// it snoozes without burning an attempt, as through a back-off.
	wait
)

// judge names an error: what to do, the problem code to record, and the
// Retry-After a refusal asked for.
func judge(err error) (verdict, string, time.Duration) {
	var se *fetch.StatusError
	switch {
	case errors.Is(err, fetch.ErrPaused):
		return wait, "", 0
	case latest.IsBackoffProblem(err), errors.Is(err, browser.ErrChallenge):
		code := latest.ProblemCode(err)
		if code == "" {
			code = latest.ProblemChallenge
		}
		return backOff, code, 0
	case errors.As(err, &se):
		code := "http_" + strconv.Itoa(se.Status)
		switch {
		case se.Refused():
			return backOff, code, se.RetryAfter
		case se.Status >= 500:
			return retryLater, code, 0
		}
		return giveUp, code, 0
	case errors.Is(err, fetch.ErrNoBrowser), errors.Is(err, browser.ErrNoBrowser):
		return giveUp, ProblemUnavailable, 0
	case errors.Is(err, fetch.ErrForeignHost), errors.Is(err, browser.ErrHostPin):
		return giveUp, ProblemRefused, 0
	case errors.Is(err, fetch.ErrTooLarge), errors.Is(err, browser.ErrTooLarge):
		return giveUp, ProblemTooLarge, 0
	}
	if code := latest.ProblemCode(err); code != "" {
		var p *latest.Problem
		errors.As(err, &p)
		switch {
		case code == latest.ProblemLocked, code == latest.ProblemScrambled, code == latest.ProblemNoChapters, code == latest.ProblemNotFound:
			// A not-found page is permanent on every Site, a browser
			// Site's included, as an HTTP 404 is on a plain one.
			return giveUp, code, 0
		case p.NotPage():
			return retryLater, code, 0
		}
		return giveUp, code, 0
	}
	if status := imageStatus(err); status != 0 {
		code := "http_" + strconv.Itoa(status)
		switch {
		case status == http.StatusUnauthorized, status == http.StatusForbidden, status == http.StatusTooManyRequests:
			return backOff, code, 0
		case status >= 500:
			return retryLater, code, 0
		}
		return giveUp, code, 0
	}
	switch gate.Class(err) {
	case "":
	case gate.ClassTimeout:
		return retryLater, ProblemFetchFailed, 0
	case gate.ClassNotImage:
		if strings.Contains(err.Error(), "image/jxl") {
			return giveUp, ProblemJPEGXL, 0
		}
		return giveUp, ProblemNotImage, 0
	case gate.ClassTooLarge:
		return giveUp, ProblemTooLarge, 0
	default:
		return giveUp, ProblemRefused, 0
	}
	return retryLater, ProblemFetchFailed, 0
}

// imageStatus is the HTTP status of a page image fetch that did not answer
// 200, 0 for any other error.
func imageStatus(err error) int {
	var se *gate.StatusError
	if !errors.As(err, &se) {
		return 0
	}
	return se.Status
}

// held is how long a job of the Site waits before it looks again, 0 when
// its requests may go: the Owner paused the Site or everything, or it backs
// off (fetch.Policy.Hold).
func (s *Service) held(ctx context.Context, site *latest.Site) (fetch.Hold, time.Duration, error) {
	h, err := s.Policy.Hold(ctx, site.Name)
	if err != nil || !h.Held() {
		return h, 0, err
	}
	return h, s.Policy.HoldSnooze(h), nil
}

// pauseSnooze is how a job that ran into an Owner's pause mid-way waits.
func (s *Service) pauseSnooze() error {
	return river.JobSnooze(s.Policy.HoldSnooze(fetch.Hold{Site: true}))
}

// refused backs the Site off, exactly as the Poll does, and returns the
// snooze that waits it out.
func (s *Service) refused(ctx context.Context, site *latest.Site, code string, retryAfter time.Duration, err error) error {
	until, berr := s.Store.BackOffSite(ctx, site.Name, code+": "+err.Error(), func(n int) time.Duration {
		return fetch.BackoffPause(n, retryAfter)
	})
	if berr != nil {
		return berr
	}
	return river.JobSnooze(s.Policy.Snooze(until))
}

// stopping reports a context ended by a shutdown or the Owner's cancel (not
// by the job's own deadline), and what to return for it: a snooze of zero
// so a shutdown burns no attempt; River turns either into cancelled when the
// Owner cancelled the job.
func stopping(ctx context.Context) (error, bool) {
	if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, false
	}
	return river.JobSnooze(0), true
}

// archiveChapter is one attempt at a chapter: it waits out its Site's
// back-off and the replica's places, reads the chapter page, and archives
// its text or its page images.
func (s *Service) archiveChapter(ctx context.Context, a ChapterArgs, attempt, maxAttempts int) error {
	ch, err := s.Store.ArchiveChapterByID(ctx, a.ChapterID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("archive chapter %d: %w", a.ChapterID, err)
	}
	if ch.State != store.ArchiveQueued {
		// Cancelled by the Owner, or finished by an earlier attempt.
		return nil
	}
	if !a.Queued.IsZero() && !a.Queued.Equal(ch.QueuedAt) {
		// Queued again since this job was: that queueing's job archives it.
		return nil
	}
	site, err := s.siteOf(ch.SeriesKey)
	if err != nil {
		_ = s.Store.FailArchiveChapter(ctx, ch.ID, ProblemUnavailable, err.Error(), false)
		return river.JobCancel(err)
	}
	log := s.log().With("series", ch.SeriesKey, "site", site.Name, "chapter", ch.URL)
	if h, d, err := s.held(ctx, site); err != nil {
		return err
	} else if d > 0 {
		log.InfoContext(ctx, "archive snoozed: "+h.String(), "for", d)
		return river.JobSnooze(d)
	}
	release, ok := s.claim(site.Name)
	if !ok {
		return river.JobSnooze(s.busySnooze())
	}
	defer release(ctx)

	fail := func(err error) error { return s.chapterFailed(ctx, log, site, ch, attempt, maxAttempts, err) }
	start := s.now()
	content, fetched, err := s.readChapter(ctx, site, ch)
	if err != nil {
		return fail(err)
	}
	if site.Kind == latest.Novel {
		return s.archiveText(ctx, log, ch, content.Text, fetched, start, fail)
	}
	return s.archiveImages(ctx, log, site, ch, content.Pages, fetched, start, fail)
}

// readChapter fetches a chapter page and asks the Site's entry for its
// content; fetched is the page's size. A page the entry cannot read is
// counted as fetched here.
func (s *Service) readChapter(ctx context.Context, site *latest.Site, ch store.ArchiveChapter) (latest.Content, int, error) {
	page, err := s.Fetch.FetchSeries(ctx, site, ch.URL, fetch.Conditional{})
	if err != nil {
		return latest.Content{}, 0, err
	}
	u, err := url.Parse(page.URL)
	if err != nil || page.URL == "" {
		u, _ = url.Parse(ch.URL)
	}
	content, err := site.Content(page.Body, u)
	if err != nil {
		_ = s.Store.AddArchiveFetched(ctx, ch.ID, len(page.Body))
		return latest.Content{}, 0, err
	}
	return content, len(page.Body), nil
}

// archiveText publishes a novel chapter's text.
func (s *Service) archiveText(ctx context.Context, log *slog.Logger, ch store.ArchiveChapter, text string, fetched int,
	start time.Time, fail func(error) error) error {
	text = strings.TrimSpace(text)
	if text == "" {
		return fail(&latest.Problem{Code: ProblemNoPages, Detail: "the chapter page holds no text"})
	}
	if err := s.Store.AddArchiveFetched(ctx, ch.ID, fetched); err != nil {
		return err
	}
	return s.publish(ctx, log, ch, nil, &text, start)
}

// archiveImages stores a manga chapter's page images, each checkpointed as
// it is stored, and publishes them. A page checkpointed by an earlier
// attempt whose file is still on the volume is used again, not fetched.
func (s *Service) archiveImages(ctx context.Context, log *slog.Logger, site *latest.Site, ch store.ArchiveChapter, urls []string,
	fetched int, start time.Time, fail func(error) error) error {
	if err := s.Store.AddArchiveFetched(ctx, ch.ID, fetched); err != nil {
		return err
	}
	if len(urls) == 0 {
		return fail(&latest.Problem{Code: ProblemNoPages, Detail: "the chapter page lists no page image"})
	}
	staged, err := s.Store.StagedArchivePages(ctx, ch.ID)
	if err != nil {
		return err
	}
	pages := make([]store.ArchivePage, len(urls))
	reused := 0
	for i, pu := range urls {
		if st, ok := staged[i]; ok && st.SourceURL == pu && s.stored(ctx, st) {
			pages[i] = st
			reused++
			continue
		}
		p, n, err := s.storePage(ctx, site, ch.URL, i, pu)
		if err != nil {
			if n > 0 {
				_ = s.Store.AddArchiveFetched(ctx, ch.ID, n)
			}
			return fail(fmt.Errorf("page %d of %d (%s): %w", i+1, len(urls), pu, err))
		}
		if err := s.Store.StageArchivePage(ctx, ch.ID, p, n); err != nil {
			return err
		}
		pages[i] = p
	}
	if reused > 0 {
		log.InfoContext(ctx, "archive resumed from its checkpoint", "reused_pages", reused, "pages", len(pages))
	}
	return s.publish(ctx, log, ch, pages, nil, start)
}

// claim takes one of the replica's places for a chapter of site, or
// reports that they are all taken. release gives it back and wakes a
// chapter of the Site that snoozed waiting for it.
func (s *Service) claim(site string) (release func(context.Context), ok bool) {
	maxRunning, maxPerSite := s.MaxRunning, s.MaxPerSite
	if maxRunning <= 0 {
		maxRunning = DefaultMaxRunning
	}
	if maxPerSite <= 0 {
		maxPerSite = DefaultMaxPerSite
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running == nil {
		s.running = map[string]int{}
	}
	if s.total >= maxRunning || s.running[site] >= maxPerSite {
		return nil, false
	}
	s.total++
	s.running[site]++
	return func(ctx context.Context) {
		s.mu.Lock()
		s.total--
		s.running[site]--
		s.mu.Unlock()
		s.wakeOne(context.WithoutCancel(ctx), site)
	}, true
}

// wakeOne makes the longest-waiting snoozed job of a Site available, so the
// place just freed does not sit idle until its snooze ends. A job that
// snoozed through a back-off checks the back-off again and sleeps on.
func (s *Service) wakeOne(ctx context.Context, site string) {
	if s.River == nil {
		return
	}
	ids, err := s.Store.WaitingArchiveJobs(ctx, site, false, 1)
	if err != nil || len(ids) == 0 {
		return
	}
	if _, err := s.River.JobRetry(ctx, ids[0]); err != nil && !errors.Is(err, rivertype.ErrNotFound) {
		s.log().WarnContext(ctx, "wake a waiting archive job", "site", site, "job", ids[0], "err", err)
	}
}

func (s *Service) busySnooze() time.Duration {
	d := s.BusySnooze
	if d <= 0 {
		d = DefaultBusySnooze
	}
	return d + time.Duration(rand.Float64()*float64(d/2))
}

// stored reports whether a checkpointed page's file is still on the volume
// with its size, so a retry may use it instead of fetching it again.
func (s *Service) stored(ctx context.Context, p store.ArchivePage) bool {
	ok, err := s.Pages.Has(ctx, p.Address, int64(p.Size))
	return err == nil && ok
}

// storePage fetches one page image through the pacing gate (paced by the
// image's own host, at the Site's interval) and the destination gate, with
// the chapter as Referer, and stores it. n is the bytes fetched.
func (s *Service) storePage(ctx context.Context, site *latest.Site, chapterURL string, i int, pageURL string) (store.ArchivePage, int, error) {
	u, err := url.Parse(pageURL)
	if err != nil || u.Hostname() == "" {
		return store.ArchivePage{}, 0, &gate.RefusedError{Class: gate.ClassMalformed, Target: pageURL, Err: err}
	}
	every, err := s.Policy.Admit(ctx, u.Hostname(), site)
	if err != nil {
		return store.ArchivePage{}, 0, err
	}
	if err := s.Pacer.Wait(ctx, u.Hostname(), every); err != nil {
		return store.ArchivePage{}, 0, err
	}
	img, err := s.Images.FetchImage(ctx, pageURL, chapterURL)
	if err != nil {
		return store.ArchivePage{}, 0, err
	}
	address, err := s.Pages.Put(ctx, img.Bytes, img.ContentType)
	if err != nil {
		return store.ArchivePage{}, len(img.Bytes), fmt.Errorf("store page: %w", err)
	}
	w, h := Dimensions(img.Bytes, img.ContentType)
	return store.ArchivePage{
		Index: i, Address: address, ContentType: img.ContentType, Size: len(img.Bytes),
		CRC32: crc32.ChecksumIEEE(img.Bytes), Width: w, Height: h, SourceURL: pageURL,
	}, len(img.Bytes), nil
}

func (s *Service) publish(ctx context.Context, log *slog.Logger, ch store.ArchiveChapter, pages []store.ArchivePage, text *string, start time.Time) error {
	err := s.Store.PublishArchiveChapter(ctx, ch.ID, pages, text)
	if errors.Is(err, store.ErrArchiveNotQueued) {
		log.InfoContext(ctx, "chapter no longer queued: not published")
		return nil
	}
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "chapter archived", "pages", len(pages), "ms", s.now().Sub(start).Milliseconds())
	return nil
}

// chapterFailed decides what an error means for a chapter: a snooze while
// its Site backs off, a named problem that ends it, or a retry (the last
// attempt ends it with the problem).
func (s *Service) chapterFailed(ctx context.Context, log *slog.Logger, site *latest.Site, ch store.ArchiveChapter, attempt, maxAttempts int, err error) error {
	if ret, ok := stopping(ctx); ok {
		return ret
	}
	v, code, retryAfter := judge(err)
	switch {
	case v == wait:
		log.InfoContext(ctx, "archive paused by the Owner mid-chapter: snoozed", "err", err)
		return s.pauseSnooze()
	case v == backOff:
		log.WarnContext(ctx, "Site refused an archive fetch: backing off", "problem", code, "err", err)
		_ = s.Store.NoteArchiveError(ctx, ch.ID, "waiting: the Site refused ("+code+") and is backing off")
		return s.refused(ctx, site, code, retryAfter, err)
	case v == giveUp, attempt >= maxAttempts:
		log.WarnContext(ctx, "chapter not archived", "problem", code, "err", err, "attempt", attempt)
		// A chapter whose attempts ran out may succeed another day: the
		// sweep queues it again (sweep.go); a named problem it does not.
		exhausted := v != giveUp
		if ferr := s.Store.FailArchiveChapter(ctx, ch.ID, code, err.Error(), exhausted); ferr != nil && !errors.Is(ferr, store.ErrArchiveNotQueued) {
			return ferr
		}
		return river.JobCancel(fmt.Errorf("%s: %w", code, err))
	}
	log.InfoContext(ctx, "archive attempt failed: will retry", "problem", code, "err", err, "attempt", attempt)
	_ = s.Store.NoteArchiveError(ctx, ch.ID, fmt.Sprintf("attempt %d of %d failed: %v", attempt, maxAttempts, err))
	return fmt.Errorf("archive %s: %w", ch.URL, err)
}
