package web

import (
	"errors"
	"net/http"
	"net/url"
	"slices"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

type seriesPage struct {
	common
	Key, Title, Site, KindLabel, SeriesURL, Path string
	Cover                                        coverView
	Readers                                      int
	Latest, LatestURL                            string
	LatestAt                                     *when

	// The Reader's Bookmark, when they hold the Series.
	Held                bool
	Chapter, ChapterURL string
	ProgressAt          *when
	BookmarkedAt        *when
	Unread              bool

	// Archive is the path of the Series' archive page, "" without one.
	Archive string

	// MuteShown offers the notifications' mute (a held Series, with
	// notifications configured); Muted says it is on.
	MuteShown, Muted bool

	// Poll is how the Series is polled (series_poll.go).
	Poll *pollFacts
	// Trackers are the Bookmark's tracker entries (trackers.go).
	Trackers *seriesTrackers
	// Work is the held Series' Work, or what it may be linked with
	// (works.go); Gone says its Site or page is gone, and why.
	Work       *seriesWork
	Gone       bool
	GoneReason string
}

// seriesShow is a Series' facts and the Reader's Progress on it. A Reader
// sees only Series they hold (which Series exist says what other Readers
// read); the Owner sees any.
func (u *UI) seriesShow(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	raw := chi.URLParam(r, "key")
	key, err := url.PathUnescape(raw)
	if err != nil || len(key) > 300 || !cleanText(key) {
		u.fail(w, r, http.StatusBadRequest, "Malformed Series key", "A Series key looks like site:slug.")
		return
	}
	if _, _, ok := latest.SplitKey(key); !ok {
		u.fail(w, r, http.StatusBadRequest, "Malformed Series key", "A Series key looks like site:slug.")
		return
	}
	notFound := func() {
		u.fail(w, r, http.StatusNotFound, "No such Series", "You hold no Bookmark on "+key+".")
	}

	b, err := u.lib.Get(r.Context(), reader.ID, key)
	held := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		u.serverError(w, r, err)
		return
	}
	if !held && !reader.IsOwner {
		notFound()
		return
	}
	s, err := u.store.SeriesByKey(r.Context(), key)
	if errors.Is(err, store.ErrNotFound) {
		notFound()
		return
	}
	if err != nil {
		u.serverError(w, r, err)
		return
	}

	title := s.Title
	if held {
		title = b.Title // the Series' title, or this Reader's hint while it has none
	}
	display := latest.DisplayTitle(title, s.SeriesURL)
	kindLabel := "manga"
	if s.Kind == string(latest.Novel) {
		kindLabel = "novel"
	}
	p := seriesPage{
		common: u.base(r, display, s.Kind),
		Key:    s.Key, Title: display, Site: s.Site, KindLabel: kindLabel,
		SeriesURL: httpURL(s.SeriesURL), Path: seriesPath(s.Key),
		Cover:   newCover(cover.ShortURL(u.lib.BaseURL, s.CoverAddress, s.CoverType), title, s.Key, true),
		Readers: s.Readers,
		Latest:  s.LatestLabel, LatestURL: httpURL(s.LatestURL), LatestAt: u.when(s.LatestAt),
	}
	if held {
		p.Held = true
		p.Chapter, p.ChapterURL = b.Chapter, httpURL(b.ChapterURL)
		p.ProgressAt = u.when(b.ProgressAt)
		p.BookmarkedAt = u.when(&b.CreatedAt)
		p.Unread = b.Unread
		p.Gone, p.GoneReason = b.Gone, b.GoneReason
		if p.Work, err = u.seriesWork(r, reader.ID, b); err != nil {
			u.serverError(w, r, err)
			return
		}
		if p.Trackers, err = u.loadSeriesTrackers(r, reader.ID, s.Key, b.Title); err != nil {
			u.serverError(w, r, err)
			return
		}
		if u.notify != nil {
			muted, err := u.store.Muted(r.Context(), reader.ID)
			if err != nil {
				u.serverError(w, r, err)
				return
			}
			p.MuteShown, p.Muted = true, slices.Contains(muted, s.Key)
		}
	}
	if u.archive != nil {
		p.Archive = seriesPath(s.Key) + "/archive"
	}
	if p.Poll, err = u.seriesPoll(r, s, reader.IsOwner); err != nil {
		u.serverError(w, r, err)
		return
	}
	u.render(w, r, http.StatusOK, "series", p)
}
