// Package bookmark is a Reader's Bookmarks: validating what clients send
// against the Site registry, recording Progress, queueing the Acquisition of
// a new Series, and the one wire shape every client (panel, web UI, exports)
// sees (docs/adr/0003-the-server-owns-the-wire-shape.md).
package bookmark

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Acquirer queues the first poll of a Series nobody held before. It runs
// inside the transaction that creates the Series, so a Series never exists
// without its Acquisition queued, and the PUT never waits on a Site.
type Acquirer interface {
	Acquire(ctx context.Context, tx *store.Store, key string) error
}

// Hinter is told when a Reader records Progress beyond the Series' stored
// Latest Chapter: the client's value never becomes a Series fact, it only
// makes the backend look sooner.
type Hinter interface {
	Hint(ctx context.Context, key string) error
}

// Syncer is told, inside the transaction that records it, of Progress
// recorded on keys: the trackers' sync jobs are queued with it (package
// tracker), so a record never waits for a tracker and is never lost.
type Syncer interface {
	Recorded(ctx context.Context, tx *store.Store, readerID int64, keys []string) error
}

// Service records Bookmarks and renders them for the wire.
type Service struct {
	Store    *store.Store
	Registry *latest.Registry
	Acquire  Acquirer
	Hint     Hinter // optional
	Sync     Syncer // optional: the trackers
	// BaseURL is PUBLIC_BASE_URL without a trailing slash: Cover URLs on the
	// wire are absolute because the panel renders on a Site's origin.
	BaseURL string
	Logger  *slog.Logger
}

// Limits on client-sent text, generous for any real label or URL; an
// import applies the same.
const (
	MaxLabel = 300
	MaxURL   = 2048
)

// PutRequest is the body of PUT /api/bookmarks/{key}.
type PutRequest struct {
	Site          string   `json:"site"`
	SeriesURL     string   `json:"series_url"`
	Title         string   `json:"title"`
	Chapter       string   `json:"chapter"`
	ChapterNumber *float64 `json:"chapter_number"`
	ChapterURL    string   `json:"chapter_url"`
	// Cover is accepted and ignored, permanently. A Cover is a Series fact
	// that only the backend's own fetch writes (docs/adr/0002); refusing the
	// field would break every installed userscript that still sends it, so it
	// stays in the wire as an inert field rather than pending removal.
	Cover any `json:"cover,omitempty"`
}

// InvalidError is a request that names something the registry refuses:
// errs.Invalid, which the API answers with 422 and its message.
type InvalidError struct {
	Msg         string
	ExpectedKey string // set when the key does not match series_url
}

func (e *InvalidError) Error() string { return e.Msg }

// ErrorCode makes an InvalidError an errs.Coder.
func (e *InvalidError) ErrorCode() errs.Code { return errs.Invalid }

func invalid(format string, args ...any) error {
	return &InvalidError{Msg: fmt.Sprintf(format, args...)}
}

// Put creates or updates the caller's Bookmark on the Series named by key.
// created is true when the Bookmark is new.
func (l *Service) Put(ctx context.Context, readerID int64, key string, req PutRequest) (Bookmark, bool, error) {
	ref, prog, err := l.validate(key, req)
	if err != nil {
		return Bookmark{}, false, err
	}
	title := strings.TrimSpace(req.Title)
	if utf8.RuneCountInString(title) > MaxLabel {
		return Bookmark{}, false, invalid("title is longer than %d characters", MaxLabel)
	}

	var res store.PutResult
	err = l.Store.InTx(ctx, func(tx *store.Store) error {
		var err error
		if prog == nil {
			res, err = tx.PutBookmarkKeepProgress(ctx, readerID, seriesOf(ref), title)
		} else {
			res, err = tx.PutBookmark(ctx, readerID, seriesOf(ref), title, *prog)
		}
		if err != nil {
			return err
		}
		if res.SeriesCreated {
			if err := l.Acquire.Acquire(ctx, tx, ref.Key); err != nil {
				return fmt.Errorf("queue acquisition of %s: %w", ref.Key, err)
			}
		}
		if prog != nil && l.Sync != nil {
			if err := l.Sync.Recorded(ctx, tx, readerID, []string{ref.Key}); err != nil {
				return fmt.Errorf("queue tracker sync of %s: %w", ref.Key, err)
			}
		}
		return nil
	})
	if err != nil {
		return Bookmark{}, false, err
	}
	b := res.Bookmark
	if l.Hint != nil && !res.SeriesCreated && beyondLatest(b) {
		if err := l.Hint.Hint(ctx, ref.Key); err != nil {
			// A hint only makes a poll come sooner; the Progress is stored.
			l.log().WarnContext(ctx, "reader hint not recorded", "series", ref.Key, "site", ref.Site, "err", err)
		}
	}
	w, err := l.wireOne(ctx, b)
	if err != nil {
		return Bookmark{}, false, err
	}
	return w, res.Created, nil
}

// validate checks a PUT against the registry and returns the Series and the
// Progress to record (nil when the request carries no chapter).
func (l *Service) validate(key string, req PutRequest) (latest.Ref, *store.Progress, error) {
	for name, v := range map[string]string{"site": req.Site, "series_url": req.SeriesURL, "title": req.Title,
		"chapter": req.Chapter, "chapter_url": req.ChapterURL} {
		if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
			return latest.Ref{}, nil, invalid("%s must be valid UTF-8 text without NUL characters", name)
		}
	}
	if req.Site == "" {
		return latest.Ref{}, nil, invalid("site is required")
	}
	site, ok := l.Registry.Lookup(req.Site)
	if !ok {
		return latest.Ref{}, nil, invalid("unknown site %q", req.Site)
	}
	if strings.TrimSpace(req.SeriesURL) == "" {
		return latest.Ref{}, nil, invalid("series_url is required")
	}
	ref, err := site.ResolveOn(req.SeriesURL)
	if err != nil {
		return latest.Ref{}, nil, invalid("series_url: %v", err)
	}
	if key != ref.Key {
		return latest.Ref{}, nil, &InvalidError{
			Msg:         fmt.Sprintf("key %q does not match series_url: expected %q", key, ref.Key),
			ExpectedKey: ref.Key,
		}
	}

	chapter := strings.TrimSpace(req.Chapter)
	if chapter == "" {
		if req.ChapterURL != "" || req.ChapterNumber != nil {
			return latest.Ref{}, nil, invalid("chapter is required with chapter_url or chapter_number")
		}
		return ref, nil, nil
	}
	if utf8.RuneCountInString(chapter) > MaxLabel {
		return latest.Ref{}, nil, invalid("chapter is longer than %d characters", MaxLabel)
	}
	p := &store.Progress{Chapter: chapter, ChapterNumber: req.ChapterNumber}
	if p.ChapterNumber == nil {
		if n, ok := latest.ParseChapterNumber(chapter); ok {
			p.ChapterNumber = &n
		}
	} else if n := *p.ChapterNumber; math.IsNaN(n) || math.IsInf(n, 0) || n < 0 || n >= 1e7 {
		return latest.Ref{}, nil, invalid("chapter_number must be a number from 0 to 9999999")
	}
	if req.ChapterURL != "" {
		u, err := SiteURL(site, req.ChapterURL)
		if err != nil {
			return latest.Ref{}, nil, invalid("chapter_url: %v", err)
		}
		p.ChapterURL = u
	}
	return ref, p, nil
}

// SiteURL checks a client-sent URL (a PUT's or an import's) is an http(s)
// URL on the Site's hosts: it becomes a link in the web UI, so anything
// else (javascript:, another host) is refused rather than rendered.
func SiteURL(site *latest.Site, raw string) (string, error) {
	if len(raw) > MaxURL {
		return "", fmt.Errorf("longer than %d bytes", MaxURL)
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return "", errors.New("not an absolute http(s) URL")
	}
	if !site.HasHost(strings.ToLower(u.Hostname())) {
		return "", fmt.Errorf("host %s is not one of %s's", u.Hostname(), site.Name)
	}
	return u.String(), nil
}

func seriesOf(ref latest.Ref) store.NewSeries {
	return store.NewSeries{Key: ref.Key, Site: ref.Site, Kind: string(ref.Kind), SeriesURL: ref.SeriesURL}
}

// beyondLatest reports Progress ahead of the stored Latest Chapter.
func beyondLatest(b store.Bookmark) bool {
	if b.ChapterNumber == nil {
		return false
	}
	return b.LatestNumber == nil || *b.ChapterNumber > *b.LatestNumber
}

// Delete removes the caller's Bookmark; store.ErrNotFound when they hold
// none on the Series.
func (l *Service) Delete(ctx context.Context, readerID int64, key string) error {
	return l.Store.DeleteBookmark(ctx, readerID, key)
}

// Get returns one of the caller's Bookmarks; store.ErrNotFound when they
// hold none on the Series.
func (l *Service) Get(ctx context.Context, readerID int64, key string) (Bookmark, error) {
	b, err := l.Store.GetBookmark(ctx, readerID, key)
	if err != nil {
		return Bookmark{}, err
	}
	return l.wireOne(ctx, b)
}

// List returns the caller's Bookmarks, of one Library when kind is set.
func (l *Service) List(ctx context.Context, readerID int64, kind string) ([]Bookmark, error) {
	rows, err := l.Store.ListBookmarks(ctx, readerID, kind)
	if err != nil {
		return nil, err
	}
	return l.Render(rows), nil
}

// ListAt is List with the list version it shows, read in one snapshot.
func (l *Service) ListAt(ctx context.Context, readerID int64, kind string) (int64, []Bookmark, error) {
	version, rows, err := l.Store.ListBookmarksAt(ctx, readerID, kind)
	if err != nil {
		return 0, nil, err
	}
	// A Work never mixes Libraries, so a list of one Library holds every
	// member of each Work it shows.
	return version, l.Render(rows), nil
}

func (l *Service) log() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return slog.Default()
}

// Bookmark is the flat wire object of a Bookmark. Fields are only ever added.
type Bookmark struct {
	Key                 string     `json:"key"`
	Site                string     `json:"site"`
	Kind                string     `json:"kind"`
	Title               string     `json:"title"`
	SeriesURL           string     `json:"series_url"`
	Cover               string     `json:"cover"`
	Chapter             string     `json:"chapter"`
	ChapterNumber       *float64   `json:"chapter_number"`
	ChapterURL          string     `json:"chapter_url"`
	ProgressAt          *time.Time `json:"progress_at"`
	LatestChapter       string     `json:"latest_chapter"`
	LatestChapterNumber *float64   `json:"latest_chapter_number"`
	LatestChapterURL    string     `json:"latest_chapter_url"`
	LatestAt            *time.Time `json:"latest_at"`
	Unread              bool       `json:"unread"`
	CreatedAt           time.Time  `json:"created_at"`
	UpdatedAt           time.Time  `json:"updated_at"`

	// The Work the Bookmark is in (works.go): its opaque id, "" when not
	// linked, and the Work's Progress and Latest Chapter with their Sites;
	// empty and null when not linked.
	Work                    string   `json:"work"`
	WorkChapter             string   `json:"work_chapter"`
	WorkChapterNumber       *float64 `json:"work_chapter_number"`
	WorkChapterURL          string   `json:"work_chapter_url"`
	WorkProgressSite        string   `json:"work_progress_site"`
	WorkLatestChapter       string   `json:"work_latest_chapter"`
	WorkLatestChapterNumber *float64 `json:"work_latest_chapter_number"`
	WorkLatestChapterURL    string   `json:"work_latest_chapter_url"`
	WorkLatestSite          string   `json:"work_latest_site"`
	// Gone says the Series' Site was removed or its page is gone
	// (CONTEXT.md "Gone"), and GoneReason why in words; the Bookmark stays.
	Gone       bool   `json:"gone"`
	GoneReason string `json:"gone_reason"`
}

// Wire renders a stored Bookmark as clients see it, alone: the work_*
// fields stay empty. A Bookmark in a Work is rendered with its members by
// Render (a list) or wireOne (one Bookmark).
func (l *Service) Wire(b store.Bookmark) Bookmark {
	return Bookmark{
		Key:                 b.SeriesKey,
		Site:                b.Site,
		Kind:                b.Kind,
		Title:               b.Title,
		SeriesURL:           b.SeriesURL,
		Cover:               cover.ShortURL(l.BaseURL, b.CoverAddress, b.CoverType),
		Chapter:             b.Chapter,
		ChapterNumber:       b.ChapterNumber,
		ChapterURL:          b.ChapterURL,
		ProgressAt:          utc(b.ProgressAt),
		LatestChapter:       b.LatestLabel,
		LatestChapterNumber: b.LatestNumber,
		LatestChapterURL:    b.LatestURL,
		LatestAt:            utc(b.LatestAt),
		Unread:              Unread(b),
		CreatedAt:           b.CreatedAt.UTC(),
		UpdatedAt:           b.UpdatedAt.UTC(),
		Gone:                b.GoneReason != "",
		GoneReason:          b.GoneReason,
	}
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// Unread reports a Latest Chapter the Reader has not reached: numerically
// when both sides have numbers (12.5 < 13), otherwise by differing URLs.
func Unread(b store.Bookmark) bool {
	if b.LatestLabel == "" && b.LatestURL == "" {
		return false
	}
	if b.LatestNumber != nil && b.ChapterNumber != nil {
		return *b.LatestNumber > *b.ChapterNumber
	}
	if b.LatestURL == "" {
		return b.Chapter == ""
	}
	return !sameChapterURL(b.LatestURL, b.ChapterURL)
}

// sameChapterURL compares two chapter URLs ignoring scheme, "www.", query,
// fragment and a trailing slash.
func sameChapterURL(a, b string) bool {
	return normURL(a) == normURL(b)
}

func normURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	return strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.") + strings.TrimRight(u.EscapedPath(), "/")
}
