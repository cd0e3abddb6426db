package archive

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Status is a Series' archive as its Reader sees it (the JSON of
// GET /api/series/{key}/archive, and the web page's data). Fields are only
// ever added.
type Status struct {
	Key  string `json:"key"`
	Kind string `json:"kind"`
	// ChaptersListed is how many chapters the Site listed at the last
	// listing; null before any request was resolved.
	ChaptersListed   *int       `json:"chapters_listed"`
	ListedAt         *time.Time `json:"listed_at"`
	ChaptersArchived int        `json:"chapters_archived"`
	ChaptersQueued   int        `json:"chapters_queued"`
	ChaptersFailed   int        `json:"chapters_failed"`
	Pages            int        `json:"pages"`
	Bytes            int64      `json:"bytes"`
	// Following is the Reader's "keep archiving" switch on this Bookmark.
	Following bool `json:"following"`
	// CanArchive says whether the Reader may request more now; when not,
	// Reason says why.
	CanArchive bool            `json:"can_archive"`
	Reason     string          `json:"reason,omitempty"`
	Remaining  *int            `json:"remaining"` // chapters left under the cap; null for none
	Export     string          `json:"export_url"`
	Chapters   []ChapterStatus `json:"chapters"`
	Requests   []RequestStatus `json:"requests"`
}

// ChapterStatus is one chapter row: archived, queued, failed or cancelled.
type ChapterStatus struct {
	ID         int64      `json:"id"`
	Label      string     `json:"label"`
	Number     *float64   `json:"number"`
	URL        string     `json:"url"`
	State      string     `json:"state"`
	Problem    string     `json:"problem,omitempty"`
	Detail     string     `json:"detail,omitempty"`
	Pages      int        `json:"pages"`
	Bytes      int64      `json:"bytes"`
	ArchivedAt *time.Time `json:"archived_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
}

// RequestStatus is one request of the Series.
type RequestStatus struct {
	ID         int64      `json:"id"`
	Scope      string     `json:"scope"`
	State      string     `json:"state"`
	Selected   *int       `json:"selected"`
	Queued     *int       `json:"queued"`
	Capped     *int       `json:"capped"`
	Problem    string     `json:"problem,omitempty"`
	Detail     string     `json:"detail,omitempty"`
	Mine       bool       `json:"mine"`
	CreatedAt  time.Time  `json:"created_at"`
	ResolvedAt *time.Time `json:"resolved_at"`
}

// StatusOf is a Series' archive for reader, who must hold it.
func (s *Service) StatusOf(ctx context.Context, reader store.Reader, key string) (Status, error) {
	if err := s.holds(ctx, reader, key); err != nil {
		return Status{}, err
	}
	ser, err := s.Store.SeriesByKey(ctx, key)
	if err != nil {
		return Status{}, err
	}
	st, err := s.Store.ArchiveStatusOf(ctx, key)
	if err != nil {
		return Status{}, err
	}
	out := Status{
		Key: key, Kind: ser.Kind, ChaptersListed: st.Listed, ListedAt: utc(st.ListedAt),
		ChaptersArchived: st.Archived, ChaptersQueued: st.Queued, ChaptersFailed: st.Failed,
		Pages: st.Pages, Bytes: st.Bytes, Chapters: []ChapterStatus{}, Requests: []RequestStatus{},
	}
	if out.Following, err = s.Store.ArchiveFollowing(ctx, reader.ID, key); err != nil {
		return Status{}, err
	}
	a, aerr := s.Allowed(ctx, reader, key)
	switch {
	case aerr == nil:
		out.CanArchive = true
	case errors.Is(aerr, ErrNotAllowed), errors.Is(aerr, ErrCapReached), errors.Is(aerr, ErrNotHeld):
		out.Reason = aerr.Error()
	default:
		return Status{}, aerr
	}
	if r := a.Remaining(); r >= 0 && a.Enabled {
		out.Remaining = &r
	}
	format := "archive.cbz"
	if ser.Kind == string(latest.Novel) {
		format = "archive.epub"
	}
	out.Export = s.BaseURL + "/api/series/" + url.PathEscape(key) + "/" + format
	chapters, err := s.Store.ArchiveChaptersOf(ctx, key)
	if err != nil {
		return Status{}, err
	}
	for _, c := range chapters {
		out.Chapters = append(out.Chapters, chapterStatus(c))
	}
	reqs, err := s.Store.ListArchiveRequests(ctx, key, 20)
	if err != nil {
		return Status{}, err
	}
	for _, r := range reqs {
		mine := r.ReaderID != nil && *r.ReaderID == reader.ID
		if !mine && !reader.IsOwner {
			// Who else archives a Series is theirs to know.
			continue
		}
		out.Requests = append(out.Requests, RequestStatus{
			ID: r.ID, Scope: r.Scope, State: r.State, Selected: r.Selected, Queued: r.Queued, Capped: r.Capped,
			Problem: r.Problem, Detail: r.Detail, Mine: mine, CreatedAt: r.CreatedAt.UTC(), ResolvedAt: utc(r.ResolvedAt),
		})
	}
	return out, nil
}

func chapterStatus(c store.ArchiveChapter) ChapterStatus {
	return ChapterStatus{
		ID: c.ID, Label: c.Label, Number: c.Number, URL: c.URL, State: c.State, Problem: c.Problem, Detail: c.Detail,
		Pages: c.PageCount, Bytes: c.Bytes, ArchivedAt: utc(c.ArchivedAt), UpdatedAt: c.UpdatedAt.UTC(),
	}
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// Job is one chapter in the Owner's view of archive jobs.
type Job struct {
	ID          int64      `json:"id"`
	Series      string     `json:"series"`
	SeriesTitle string     `json:"series_title"`
	Site        string     `json:"site"`
	Label       string     `json:"label"`
	URL         string     `json:"url"`
	State       string     `json:"state"`
	Problem     string     `json:"problem,omitempty"`
	Detail      string     `json:"detail,omitempty"`
	Reader      string     `json:"reader"`
	Pages       int        `json:"pages"`
	Bytes       int64      `json:"bytes"`
	Fetched     int64      `json:"fetched_bytes"`
	JobID       *int64     `json:"job_id"`
	JobState    string     `json:"job_state"`
	Attempt     int        `json:"attempt"`
	MaxAttempts int        `json:"max_attempts"`
	ScheduledAt *time.Time `json:"scheduled_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// Jobs lists archive chapters with their River jobs for the Owner, queued
// first, of one state when state is set.
func (s *Service) Jobs(ctx context.Context, state string, limit int) ([]Job, error) {
	rows, err := s.Store.ListArchiveJobs(ctx, state, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Job, 0, len(rows))
	for _, r := range rows {
		out = append(out, Job{
			ID: r.ID, Series: r.SeriesKey, SeriesTitle: r.SeriesTitle, Site: r.Site, Label: r.Label, URL: r.URL,
			State: r.State, Problem: r.Problem, Detail: r.Detail, Reader: r.ReaderName, Pages: r.PageCount,
			Bytes: r.Bytes, Fetched: r.FetchedBytes, JobID: r.JobID, JobState: r.JobState, Attempt: r.Attempt,
			MaxAttempts: r.MaxAttempts, ScheduledAt: utc(r.ScheduledAt), UpdatedAt: r.UpdatedAt.UTC(),
		})
	}
	return out, nil
}

// ReadChapter is one archived chapter as the reader shows it.
type ReadChapter struct {
	Series store.Series
	store.ArchiveChapter
	Pages      []store.ArchivePage
	Paragraphs [][]string
	// Prev and Next are the neighbouring archived chapters, nil at the ends.
	Prev, Next *store.ArchiveChapter
}

// Chapter reads an archived chapter of a Series the reader holds.
func (s *Service) Chapter(ctx context.Context, reader store.Reader, key string, id int64) (ReadChapter, error) {
	if err := s.holds(ctx, reader, key); err != nil {
		return ReadChapter{}, err
	}
	ser, err := s.Store.SeriesByKey(ctx, key)
	if err != nil {
		return ReadChapter{}, err
	}
	list, err := s.Store.ArchivedChapters(ctx, key)
	if err != nil {
		return ReadChapter{}, err
	}
	for i, c := range list {
		if c.ID != id {
			continue
		}
		rc := ReadChapter{Series: ser, ArchiveChapter: c}
		if i > 0 {
			rc.Prev = &list[i-1]
		}
		if i+1 < len(list) {
			rc.Next = &list[i+1]
		}
		if ser.Kind == string(latest.Novel) {
			body, err := s.Store.ArchiveChapterBody(ctx, id)
			if err != nil {
				return ReadChapter{}, err
			}
			rc.Paragraphs = Paragraphs(body)
		} else if rc.Pages, err = s.Store.ArchivePagesOf(ctx, id); err != nil {
			return ReadChapter{}, err
		}
		return rc, nil
	}
	return ReadChapter{}, ErrNotFound
}

// Archived lists the archived chapters of a Series the reader holds.
func (s *Service) Archived(ctx context.Context, reader store.Reader, key string) ([]store.ArchiveChapter, error) {
	if err := s.holds(ctx, reader, key); err != nil {
		return nil, err
	}
	return s.Store.ArchivedChapters(ctx, key)
}

// PageType checks that address is a page of an archived chapter of a Series
// the reader holds, and returns its content type.
func (s *Service) PageType(ctx context.Context, reader store.Reader, key, address string) (string, error) {
	if err := s.holds(ctx, reader, key); err != nil {
		return "", err
	}
	ct, err := s.Store.ArchivePageType(ctx, key, address)
	if errors.Is(err, store.ErrNotFound) {
		return "", ErrNotFound
	}
	return ct, err
}

// PagePath is the web UI's path of an archived page's bytes.
func PagePath(key, address string) string {
	return "/series/" + url.PathEscape(key) + "/archive/pages/" + address
}

// ChapterPath is the web UI's path of an archived chapter's reader.
func ChapterPath(key string, id int64) string {
	return "/series/" + url.PathEscape(key) + "/archive/" + strconv.FormatInt(id, 10)
}
