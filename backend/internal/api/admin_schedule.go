package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/poll"
)

// The Owner's view of the Poll's schedule (why each Series is polled when
// it is) and of the queue's failed jobs, with retry and cancel.

// ReasonPlanning is how a Series whose next poll is being planned (just
// polled; the adaptive plan decides within minutes) is shown.
const ReasonPlanning = poll.ReasonPlanning

func reasonLabel(reason string) string {
	if reason == "" {
		return ReasonPlanning
	}
	return reason
}

// HistoryJSON is one change of a Series' Latest Chapter.
type HistoryJSON struct {
	Label       string     `json:"label"`
	Number      *float64   `json:"number"`
	URL         string     `json:"url"`
	FirstSeenAt time.Time  `json:"first_seen_at"`
	PrevPollAt  *time.Time `json:"prev_poll_at"`
}

// SeriesScheduleJSON is the body of GET /api/admin/series/{key}/schedule.
type SeriesScheduleJSON struct {
	Key            string     `json:"key"`
	Site           string     `json:"site"`
	Title          string     `json:"title"`
	Readers        int        `json:"readers"`
	Policy         string     `json:"policy"`
	LastPollAt     *time.Time `json:"last_poll_at"`
	PollStatus     string     `json:"poll_status"`
	PollProblem    string     `json:"poll_problem"`
	PollBodyLen    *int       `json:"poll_body_len"`
	NextPollAt     *time.Time `json:"next_poll_at"`
	NextPollReason string     `json:"next_poll_reason"`
	// Rhythm describes the release rhythm learned from the history
	// ("weekly, Tuesdays ~14:00", times in UTC); RhythmKind is its shape
	// (daily, weekly, irregular, dormant, "not enough history"); both ""
	// until estimated.
	Rhythm     string        `json:"rhythm"`
	RhythmKind string        `json:"rhythm_kind"`
	RhythmAt   *time.Time    `json:"rhythm_at"`
	HintAt     *time.Time    `json:"hint_at"`
	History    []HistoryJSON `json:"history"`
}

// HistoryShown is how many Latest Chapter changes the schedule lists.
const HistoryShown = 20

func (ad *Admin) seriesSchedule(w http.ResponseWriter, r *http.Request) {
	key, err := keyParam(r)
	if err != nil {
		face.WriteError(w, http.StatusNotFound, err.Error())
		return
	}
	s, err := ad.Store.SeriesByKey(r.Context(), key)
	if errs.CodeOf(err) == errs.NotFound {
		face.Refuse(w, err, "no Series "+key)
		return
	}
	if err != nil {
		ad.serverError(w, r, err)
		return
	}
	hist, err := ad.Store.LatestHistory(r.Context(), key, HistoryShown)
	if err != nil {
		ad.serverError(w, r, err)
		return
	}
	out := SeriesScheduleJSON{
		Key: s.Key, Site: s.Site, Title: s.Title, Readers: s.Readers, Policy: ad.Console.PolicyName(),
		LastPollAt: utcPtr(s.LastPollAt), PollStatus: s.PollStatus, PollProblem: s.PollProblem, PollBodyLen: s.PollBodyLen,
		NextPollAt: utcPtr(s.NextPollAt), NextPollReason: reasonLabel(s.NextPollReason),
		RhythmAt: utcPtr(s.RhythmAt), HintAt: utcPtr(s.HintAt), History: []HistoryJSON{},
	}
	if desc, kind, ok := poll.DescribeRhythm(s.Rhythm); ok {
		out.Rhythm, out.RhythmKind = desc, string(kind)
	}
	// Newest first, as people read a history.
	for i := len(hist) - 1; i >= 0; i-- {
		h := hist[i]
		out.History = append(out.History, HistoryJSON{Label: h.Label, Number: h.Number, URL: h.URL,
			FirstSeenAt: h.FirstSeenAt.UTC(), PrevPollAt: utcPtr(h.PrevPollAt)})
	}
	face.WriteJSON(w, http.StatusOK, out)
}

// ScheduledSeriesJSON is one held Series in a Site's schedule.
type ScheduledSeriesJSON struct {
	Key            string     `json:"key"`
	Title          string     `json:"title"`
	Readers        int        `json:"readers"`
	LastPollAt     *time.Time `json:"last_poll_at"`
	NextPollAt     *time.Time `json:"next_poll_at"`
	NextPollReason string     `json:"next_poll_reason"`
	Rhythm         string     `json:"rhythm"`
}

// SiteScheduleJSON is the body of GET /api/admin/sites/{site}/schedule.
type SiteScheduleJSON struct {
	Site          string                `json:"site"`
	Policy        string                `json:"policy"`
	BudgetPerHour int                   `json:"budget_per_hour"`
	PausedUntil   *time.Time            `json:"paused_until"`
	Series        []ScheduledSeriesJSON `json:"series"`
}

// Limits of a Site's schedule list.
const (
	ScheduleShown   = 500
	ScheduleMaxList = 5000
)

func (ad *Admin) siteSchedule(w http.ResponseWriter, r *http.Request) {
	site, ok := ad.Console.Registry.Lookup(chi.URLParam(r, "site"))
	if !ok {
		face.WriteError(w, http.StatusNotFound, "no Site "+strconv.Quote(chi.URLParam(r, "site")))
		return
	}
	limit, ok := limitParam(w, r, ScheduleShown, ScheduleMaxList)
	if !ok {
		return
	}
	list, err := ad.Store.SiteSchedules(r.Context(), site.Name, limit)
	if err != nil {
		ad.serverError(w, r, err)
		return
	}
	st, err := ad.Store.SiteStateOf(r.Context(), site.Name)
	if err != nil {
		ad.serverError(w, r, err)
		return
	}
	budget, err := ad.Console.BudgetOf(r.Context(), site)
	if err != nil {
		ad.serverError(w, r, err)
		return
	}
	out := SiteScheduleJSON{Site: site.Name, Policy: ad.Console.PolicyName(), BudgetPerHour: budget.PerHour, Series: []ScheduledSeriesJSON{}}
	if until, paused := st.Paused(time.Now()); paused {
		u := until.UTC()
		out.PausedUntil = &u
	}
	for _, s := range list {
		desc, _, _ := poll.DescribeRhythm(s.Rhythm)
		out.Series = append(out.Series, ScheduledSeriesJSON{Key: s.Key, Title: s.Title, Readers: s.Readers,
			LastPollAt: utcPtr(s.LastPollAt), NextPollAt: utcPtr(s.NextPollAt), NextPollReason: reasonLabel(s.NextPollReason), Rhythm: desc})
	}
	face.WriteJSON(w, http.StatusOK, out)
}

// limitParam reads ?limit=, def when absent; it answers 400 itself for a
// value that is not a number in 1..most.
func limitParam(w http.ResponseWriter, r *http.Request, def, most int) (int, bool) {
	raw := r.URL.Query().Get("limit")
	if raw == "" {
		return def, true
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > most {
		face.WriteError(w, http.StatusBadRequest, "limit must be a number from 1 to "+strconv.Itoa(most))
		return 0, false
	}
	return n, true
}

// JobJSON is one failed background job.
type JobJSON struct {
	ID          int64     `json:"id"`
	Kind        string    `json:"kind"`
	State       string    `json:"state"`
	Attempt     int       `json:"attempt"`
	MaxAttempts int       `json:"max_attempts"`
	Key         string    `json:"key"`
	Args        string    `json:"args"`
	Error       string    `json:"error"`
	At          time.Time `json:"at"`
}

// JobsShown is how many failed jobs GET /api/admin/jobs lists by default.
const JobsShown = 100

func (ad *Admin) jobs(w http.ResponseWriter, r *http.Request) {
	state := r.URL.Query().Get("state")
	switch state {
	case "", "retryable", "discarded", "cancelled":
	default:
		face.WriteError(w, http.StatusBadRequest, "state must be retryable, discarded or cancelled")
		return
	}
	limit, ok := limitParam(w, r, JobsShown, 1000)
	if !ok {
		return
	}
	list, err := ad.Store.JobProblems(r.Context(), state, limit)
	if err != nil {
		ad.serverError(w, r, err)
		return
	}
	out := make([]JobJSON, 0, len(list))
	for _, j := range list {
		out = append(out, JobJSON{ID: j.ID, Kind: j.Kind, State: j.State, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts,
			Key: j.Key, Args: j.Args, Error: j.Error, At: j.At.UTC()})
	}
	face.WriteJSON(w, http.StatusOK, out)
}

func (ad *Admin) retryJob(w http.ResponseWriter, r *http.Request) {
	ad.jobAction(w, r, "retried", ad.Console.Controls.RetryJob)
}

func (ad *Admin) cancelJob(w http.ResponseWriter, r *http.Request) {
	ad.jobAction(w, r, "cancelled", ad.Console.Controls.CancelJob)
}

func (ad *Admin) jobAction(w http.ResponseWriter, r *http.Request, done string, do func(context.Context, int64) error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id < 1 {
		face.WriteError(w, http.StatusNotFound, "malformed job id "+strconv.Quote(chi.URLParam(r, "id")))
		return
	}
	err = do(r.Context(), id)
	switch errs.CodeOf(err) {
	case errs.NotFound:
		face.Refuse(w, err, "no job "+strconv.FormatInt(id, 10))
		return
	case errs.Conflict:
		face.Refuse(w, err, "job "+strconv.FormatInt(id, 10)+" not retried: "+errs.MessageOf(err))
		return
	}
	if err != nil {
		ad.serverError(w, r, err)
		return
	}
	face.WriteJSON(w, http.StatusOK, map[string]any{"id": id, done: true})
}
