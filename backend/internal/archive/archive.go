// Package archive keeps whole chapters: a Reader asks to archive a Series
// with a scope (or switches on "keep archiving" on a Bookmark), archive jobs
// on the one River queue fetch each chapter through the same pacing gate,
// back-off and fetchers as the Poll, page images through the destination
// gate, and store page bytes content-addressed under ARCHIVE_DIR. A chapter
// becomes visible only when every page is stored and its rows commit in one
// transaction; a checkpoint of stored pages lets a retry after a crash go on
// without fetching them again. Archived chapters are read in the web UI and
// exported as CBZ (with ComicInfo.xml) and EPUB 3, streamed while written.
//
// Two job kinds: archive_series resolves a request (it needs the Site's
// chapter list, so a request never waits on a Site and waits on a backed-off
// one), and archive_chapter, unique per chapter URL, archives one chapter.
package archive

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Problem codes an archived chapter or request can end with, besides the
// registry's own (locked, scrambled, not_chapter_page, login_wall, ...).
// They are stored and shown to Readers and the Owner, so they never change
// meaning.
const (
	// ProblemJPEGXL: the Site serves the chapter's pages as JPEG XL, which no
	// browser Lectern serves can show; nothing is stored.
	ProblemJPEGXL = "jpeg_xl"
	// ProblemNotImage: a page's answer was not a JPEG, PNG, WebP, GIF or AVIF.
	ProblemNotImage = "not_image"
	// ProblemTooLarge: a page image over the cap (COVER_MAX_BYTES).
	ProblemTooLarge = "too_large"
	// ProblemRefused: the destination gate refused a page's address (a
	// private address, not https, ...).
	ProblemRefused = "refused"
	// ProblemNoPages: the chapter page lists no page image, or no text.
	ProblemNoPages = "no_pages"
	// ProblemFetchFailed: the chapter could not be fetched after every
	// attempt (network errors, server errors).
	ProblemFetchFailed = "fetch_failed"
	// ProblemUnavailable: no fetcher can read this Site here (a browser
	// Site with no browser configured).
	ProblemUnavailable = "unavailable"
	// ProblemNotAllowed: the Reader may no longer archive (the Owner
	// switched it off) when the request was resolved.
	ProblemNotAllowed = "not_allowed"
	// ProblemNothingSelected: the request's scope names no chapter the Site
	// lists ("chapter 2301" of a Series that lists 1 to 5); nothing was
	// archived, so the request is not done.
	ProblemNothingSelected = "nothing_selected"
)

// Errors of the Reader-facing operations, for the API and the web UI.
var (
	// ErrNotHeld: the Reader holds no Bookmark on the Series.
	ErrNotHeld = errs.New(errs.NotFound, "you hold no Bookmark on this Series")
	// ErrNotAllowed: archiving is off for this Reader.
	ErrNotAllowed = errs.New(errs.Forbidden, "archiving is not enabled for you; the Owner can switch it on")
	// ErrCapReached: the Reader's cap of chapters is used up.
	ErrCapReached = errs.New(errs.Forbidden, "your archive cap is reached; the Owner can raise it")
	// ErrNothingArchived: an export named no archived chapter.
	ErrNothingArchived = errs.New(errs.NotFound, "no archived chapter matches")
	// ErrWrongLibrary: a CBZ of a novel or an EPUB of a manga.
	ErrWrongLibrary = errs.New(errs.Malformed, "wrong format for this Library")
	// ErrNotFound: no such chapter or request.
	ErrNotFound = errs.New(errs.NotFound, "no such archive chapter or request")
	// ErrNotQueued: the chapter or request is not queued (cancel), or not
	// failed or cancelled (retry).
	ErrNotQueued = errs.New(errs.Conflict, "not in a state that allows this")
)

// Pacer is the per-host pacing gate shared with the Poll (*pacing.Gate):
// Wait returns when a request to host may go, every apart from the previous
// one to that host by any worker or replica.
type Pacer interface {
	Wait(ctx context.Context, host string, every time.Duration) error
}

// Images fetches page images through the destination gate.
type Images interface {
	FetchImage(ctx context.Context, rawURL, referer string) (gate.Image, error)
}

// Service is the Archive: requests, jobs, reading and export.
type Service struct {
	Store *store.Store
	// River inserts jobs; set once the client exists (its workers are
	// registered with AddWorkers before the client is built).
	River *river.Client[pgx.Tx]
	Pages blob.Store
	// Fetch is the Poll's fetcher: pinned to each Site's hosts and paced,
	// the browser for a browser Site. Chapter pages go through it too.
	Fetch fetch.Fetcher
	// Images is the destination gate page images are fetched through.
	Images Images
	// Pacer paces page images by their own host.
	Pacer  Pacer
	Logger *slog.Logger
	// BaseURL is PUBLIC_BASE_URL without a trailing slash, for the absolute
	// export URLs on the wire.
	BaseURL string
	// Registry names the Sites; Policy decides back-off, snoozes and
	// paces, as for the Poll and the Cover job.
	Registry *latest.Registry
	Policy   *fetch.Policy
	// JobTimeout bounds one attempt at a chapter; 0 means DefaultJobTimeout.
	JobTimeout time.Duration
	// SweepEvery is how often the sweep runs (ARCHIVE_SWEEP); 0 means
	// DefaultSweepEvery.
	SweepEvery time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	// MaxRunning bounds the chapters this replica archives at once, and
	// MaxPerSite those of one Site: the workers are the Poll's too, and a
	// chapter mostly waits on its Site's pace, so more chapters would only
	// hold workers a poll needs. 0 means DefaultMaxRunning and
	// DefaultMaxPerSite. A chapter over the bound snoozes for BusySnooze (0:
	// DefaultBusySnooze), burning no attempt, and is woken early when a
	// chapter of its Site ends.
	MaxRunning, MaxPerSite int
	BusySnooze             time.Duration

	mu      sync.Mutex
	running map[string]int
	total   int
}

// Defaults of the bounds on chapters archived at once by a replica.
const (
	DefaultMaxRunning = 2
	DefaultMaxPerSite = 1
	DefaultBusySnooze = 5 * time.Second
)

// DefaultJobTimeout bounds one attempt at a chapter: a long strip at a
// polite pace takes minutes, and River's rescuer waits this long before it
// takes a crashed replica's job back.
const DefaultJobTimeout = 30 * time.Minute

// Job priorities: River runs lower numbers first, and the Poll's jobs use 1
// to 3, so an archive of 500 chapters never delays a Reader's updates.
const (
	PriorityRequest = 3
	PriorityChapter = 4
)

// MaxAttempts of an archive job before its chapter ends as failed. Snoozes
// while the Site is backed off do not count.
const MaxAttempts = 6

func (s *Service) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// open opens a stored page for an export.
func (s *Service) open(ctx context.Context, address string) (io.ReadCloser, error) {
	f, err := s.Pages.Open(ctx, address)
	if err != nil {
		return nil, fmt.Errorf("open archived page: %w", err)
	}
	return f, nil
}

// siteOf returns the registry's Site of a Series key.
func (s *Service) siteOf(key string) (*latest.Site, error) {
	name, _, ok := latest.SplitKey(key)
	if !ok {
		return nil, fmt.Errorf("series key %q: %w", key, latest.ErrNotSeriesURL)
	}
	site, ok := s.Registry.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("series %s: %w", key, latest.ErrUnknownSite)
	}
	return site, nil
}
