package web

import (
	"context"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// The Owner console's failing Series: the Series whose last polls failed,
// most recent first, with the problem and the body length (an empty or cut
// page tells itself from a changed one), the next poll and why, and the
// Owner's "poll now" and "refetch Cover".

// FailingShown is how many failing Series the page lists.
const FailingShown = 100

type failingRow struct {
	Key, Title, Site, SeriesURL string
	Path, PollPath, CoverPath   string
	Readers, Failures           int
	Status, Problem             string
	BodyLen                     string
	LastPoll, LastSuccess       *when
	Next                        nextPoll
	CoverProblem                string
}

type ownerFailingPage struct {
	common
	Series []failingRow
}

func (u *UI) ownerFailing(w http.ResponseWriter, r *http.Request) {
	list, err := u.store.FailingSeriesList(r.Context(), FailingShown)
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	p := ownerFailingPage{common: u.base(r, "Failing Series", "owner")}
	for _, f := range list {
		title := latest.DisplayTitle(f.Title, f.SeriesURL)
		row := failingRow{
			Key: f.Key, Title: title, Site: f.Site, SeriesURL: httpURL(f.SeriesURL),
			Path: seriesPath(f.Key), Readers: f.Readers, Failures: f.Failures,
			Status: f.Status, Problem: f.Problem, LastPoll: u.when(f.LastPollAt), LastSuccess: u.when(f.LastSuccessAt),
			Next: u.nextPoll(f.NextPollAt, f.NextPollReason), CoverProblem: f.CoverProblem,
		}
		row.PollPath, row.CoverPath = ownerSeriesPath(f.Key)+"/poll", ownerSeriesPath(f.Key)+"/cover/refetch"
		if f.BodyLen != nil {
			row.BodyLen = byteCount(*f.BodyLen)
		}
		p.Series = append(p.Series, row)
	}
	u.render(w, r, http.StatusOK, "owner_failing", p)
}

func ownerSeriesPath(key string) string { return "/owner/series/" + url.PathEscape(key) }

func (u *UI) seriesPollNow(w http.ResponseWriter, r *http.Request) {
	u.seriesAction(w, r, u.poll.Controls.PollNow, "poll-queued")
}

func (u *UI) seriesRefetchCover(w http.ResponseWriter, r *http.Request) {
	u.seriesAction(w, r, u.poll.Controls.RefetchCover, "cover-queued")
}

// seriesAction runs an Owner's request about one Series and returns to the
// page it came from.
func (u *UI) seriesAction(w http.ResponseWriter, r *http.Request, do func(context.Context, string) error, msg string) {
	key, err := url.PathUnescape(chi.URLParam(r, "key"))
	if err != nil || len(key) > 300 || !cleanText(key) {
		u.fail(w, r, http.StatusBadRequest, "Malformed Series key", "A Series key looks like site:slug.")
		return
	}
	site, _, ok := latest.SplitKey(key)
	if !ok {
		u.fail(w, r, http.StatusBadRequest, "Malformed Series key", "A Series key looks like site:slug.")
		return
	}
	err = do(r.Context(), key)
	if errs.CodeOf(err) == errs.NotFound {
		u.refuse(w, r, err, "No such Series", "There is no Series "+key+".")
		return
	}
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	me, _ := readerFrom(r)
	u.log.InfoContext(r.Context(), "Owner request from the console", "series", key, "site", site, "action", msg, "by", me.ID)
	ownerDone(w, r, "/owner/failing", msg)
}
