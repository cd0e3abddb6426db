package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/addedsites"
	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/poll"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Admin serves the Owner's endpoints under /api/admin: the status of the
// Sites, the failing Series and the queue, and the controls. API.Admin
// mounts them behind the Owner check, so a Reader gets 403.
type Admin struct {
	Store *store.Store
	// Console is the Poll as the Owner sees it, the same as in the web
	// console: its controls, its policy and each Site's status.
	Console *poll.Console
	Logger  *slog.Logger
	// Sites adds, changes, removes and probes the Sites of a family.
	Sites *addedsites.Service
}

// FailingShown is how many failing Series the status lists.
const FailingShown = 50

// Routes adds the Owner's routes; set API.Admin to it.
func (ad *Admin) Routes(r chi.Router) {
	r.Get("/status", ad.status)
	ad.siteRoutes(r)
	r.Post("/series/{key}/poll", ad.poll)
	r.Post("/series/{key}/cover/refetch", ad.refetchCover)
	r.Get("/series/{key}/schedule", ad.seriesSchedule)
	r.Get("/sites/{site}/schedule", ad.siteSchedule)
	r.Get("/jobs", ad.jobs)
	r.Post("/jobs/{id}/retry", ad.retryJob)
	r.Post("/jobs/{id}/cancel", ad.cancelJob)
}

// SiteStatusJSON is one Site in GET /api/admin/status.
type SiteStatusJSON struct {
	Site    string `json:"site"`
	Kind    string `json:"kind"`
	Browser bool   `json:"browser"`
	PaceMS  int64  `json:"pace_ms"`
	// Paused and PausedUntil are the Site's back-off; OwnerPaused is the
	// Owner's pause of it.
	Paused      bool       `json:"paused"`
	PausedUntil *time.Time `json:"paused_until"`
	OwnerPaused bool       `json:"owner_paused"`
	// State is paused (by the Owner: the Site or all background work),
	// backing_off, failing or healthy (poll.StateOf).
	State string `json:"state"`
	// RecentPolls are the last polls of the Site's most recently polled
	// Series (at most poll.FailingWindow), RecentFailures the failed ones,
	// LastFailure the newest failure's problem.
	RecentPolls    int        `json:"recent_polls"`
	RecentFailures int        `json:"recent_failures"`
	LastFailure    string     `json:"last_failure"`
	LastFailureAt  *time.Time `json:"last_failure_at"`
	// PaceSource is owner, SITE_PACE or site; BudgetSource owner,
	// SITE_BUDGET or pace.
	PaceSource    string     `json:"pace_source"`
	BudgetSource  string     `json:"budget_source"`
	Refusals      int        `json:"refusals"`
	LastSuccessAt *time.Time `json:"last_success_at"`
	LastProblem   string     `json:"last_problem"`
	LastProblemAt *time.Time `json:"last_problem_at"`
	QueuedPolls   int        `json:"queued_polls"`
	// BudgetPerHour is the Site's budget of scheduled polls; NextPolls
	// counts its held Series by the reason of their next poll.
	BudgetPerHour int            `json:"budget_per_hour"`
	NextPolls     map[string]int `json:"next_polls"`
	// Listing is the Site's listing (docs/adr/0028-site-listings.md); null
	// when the Site has none.
	Listing *ListingJSON `json:"listing"`
}

// ListingJSON is a Site's listing in the status: its state (new, healthy,
// failing, overflowed, off), whether the Site is planned around it now,
// and why not.
type ListingJSON struct {
	URL         string     `json:"url"`
	State       string     `json:"state"`
	InUse       bool       `json:"in_use"`
	Problem     string     `json:"problem"`
	ReadAt      *time.Time `json:"read_at"`
	NextAt      *time.Time `json:"next_at"`
	Entries     int        `json:"entries"`
	RatePerHour float64    `json:"rate_per_hour"`
}

// FailingSeriesJSON is one failing Series in the status.
type FailingSeriesJSON struct {
	Key           string     `json:"key"`
	Site          string     `json:"site"`
	Title         string     `json:"title"`
	SeriesURL     string     `json:"series_url"`
	Readers       int        `json:"readers"`
	Status        string     `json:"status"`
	Problem       string     `json:"problem"`
	BodyLen       *int       `json:"body_len"`
	Failures      int        `json:"failures"`
	LastPollAt    *time.Time `json:"last_poll_at"`
	LastSuccessAt *time.Time `json:"last_success_at"`
	CoverProblem  string     `json:"cover_problem"`
	// NextPollAt and NextPollReason are the Series' schedule ("" reason:
	// being planned).
	NextPollAt     *time.Time `json:"next_poll_at"`
	NextPollReason string     `json:"next_poll_reason"`
}

// QueueCountJSON is one kind and state of background jobs.
type QueueCountJSON struct {
	Kind  string `json:"kind"`
	State string `json:"state"`
	Count int    `json:"count"`
}

// StatusJSON is the body of GET /api/admin/status.
type StatusJSON struct {
	// Policy is POLL_POLICY: adaptive or interval.
	Policy string `json:"policy"`
	// BackgroundPaused: the Owner paused all background work.
	BackgroundPaused bool                `json:"background_paused"`
	Sites            []SiteStatusJSON    `json:"sites"`
	Failing          []FailingSeriesJSON `json:"failing"`
	Queue            []QueueCountJSON    `json:"queue"`
}

func (ad *Admin) status(w http.ResponseWriter, r *http.Request) {
	st, err := ad.Console.Status(r.Context(), FailingShown)
	if err != nil {
		ad.serverError(w, r, err)
		return
	}
	out := StatusJSON{Policy: st.Policy, BackgroundPaused: st.AllPaused, Sites: []SiteStatusJSON{}, Failing: []FailingSeriesJSON{}, Queue: []QueueCountJSON{}}
	for _, s := range st.Sites {
		next := map[string]int{}
		for _, c := range s.Reasons {
			next[c.Reason] += c.Count
		}
		out.Sites = append(out.Sites, SiteStatusJSON{
			Site: s.Site.Name, Kind: string(s.Site.Kind), Browser: s.Site.Browser != nil, PaceMS: s.Pace.Milliseconds(),
			Paused: s.BackingOff, PausedUntil: utcPtr(s.PausedUntil), OwnerPaused: s.OwnerPaused, State: s.State,
			RecentPolls: s.RecentPolls, RecentFailures: s.RecentFailed, LastFailure: s.LastFailure, LastFailureAt: utcPtr(s.LastFailureAt),
			PaceSource: s.PaceSource, BudgetSource: s.Budget.Source, Refusals: s.Refusals,
			LastSuccessAt: utcPtr(s.LastSuccessAt), LastProblem: s.LastProblem, LastProblemAt: utcPtr(s.LastProblemAt),
			QueuedPolls: s.QueuedPolls, BudgetPerHour: s.Budget.PerHour, NextPolls: next,
		})
		if l := s.Listing; l != nil {
			out.Sites[len(out.Sites)-1].Listing = &ListingJSON{URL: l.URL, State: l.State, InUse: l.InUse, Problem: l.Problem,
				ReadAt: utcPtr(l.ReadAt), NextAt: utcPtr(l.NextAt), Entries: l.Entries, RatePerHour: l.RatePerHour}
		}
	}
	for _, f := range st.Failing {
		out.Failing = append(out.Failing, FailingSeriesJSON{
			Key: f.Key, Site: f.Site, Title: f.Title, SeriesURL: f.SeriesURL, Readers: f.Readers,
			Status: f.Status, Problem: f.Problem, BodyLen: f.BodyLen, Failures: f.Failures,
			LastPollAt: utcPtr(f.LastPollAt), LastSuccessAt: utcPtr(f.LastSuccessAt), CoverProblem: f.CoverProblem,
			NextPollAt: utcPtr(f.NextPollAt), NextPollReason: f.NextPollReason,
		})
	}
	for _, q := range st.Queue {
		out.Queue = append(out.Queue, QueueCountJSON{Kind: q.Kind, State: q.State, Count: q.Count})
	}
	face.WriteJSON(w, http.StatusOK, out)
}

func (ad *Admin) poll(w http.ResponseWriter, r *http.Request) {
	ad.seriesAction(w, r, ad.Console.Controls.PollNow)
}

func (ad *Admin) refetchCover(w http.ResponseWriter, r *http.Request) {
	ad.seriesAction(w, r, ad.Console.Controls.RefetchCover)
}

// seriesAction runs an Owner's request about one Series; the work happens
// in the background, so the answer is 202.
func (ad *Admin) seriesAction(w http.ResponseWriter, r *http.Request, do func(context.Context, string) error) {
	key, err := keyParam(r)
	if err != nil {
		face.WriteError(w, http.StatusNotFound, err.Error())
		return
	}
	err = do(r.Context(), key)
	if errs.CodeOf(err) == errs.NotFound {
		face.Refuse(w, err, "no Series "+key)
		return
	}
	if err != nil {
		ad.serverError(w, r, err)
		return
	}
	face.WriteJSON(w, http.StatusAccepted, map[string]any{"key": key, "queued": true})
}

func (ad *Admin) serverError(w http.ResponseWriter, r *http.Request, err error) {
	log := ad.Logger
	if log == nil {
		log = slog.Default()
	}
	face.ServerError(w, r, log, err)
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
