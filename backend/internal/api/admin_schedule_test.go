package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/api"
	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/poll"
	"github.com/lectern-reader/lectern/backend/internal/schedule"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The Owner's schedule and queue endpoints over a real Postgres, a real
// River client (insert-only: what a job does is not the point here) and
// the real adaptive plan, run at a chosen time.
type adminBundle struct {
	*testBundle
	rc      *river.Client[pgx.Tx]
	budgets poll.Budgets
	owner   string
	reader  string
}

func setupAdmin(t *testing.T) *adminBundle {
	t.Helper()
	st := store.New(pgtest.New(t))
	rc, err := river.NewClient(riverpgxv5.New(st.Pool), &river.Config{})
	require.NoError(t, err)
	reg := latest.Default()
	budgets, err := poll.NewBudgets(reg, map[string]int{"asura": 1200}, fetch.Paces{})
	require.NoError(t, err)
	lib := &bookmark.Service{Store: st, Registry: reg, Acquire: poll.Acquirer{Client: rc}, BaseURL: "https://lectern.example.net"}
	ad := &api.Admin{Store: st, Console: &poll.Console{Store: st, Registry: reg, Controls: &poll.Queue{Client: rc, Store: st, Registry: reg},
		Paces: fetch.Paces{}, Budgets: budgets, Policy: poll.PolicyAdaptive}}
	a := &api.API{Store: st, Library: lib, Version: "test", AdminRoutes: []func(r chi.Router){ad.Routes}}
	srv := httptest.NewServer(a.Routes())
	t.Cleanup(srv.Close)
	b := &adminBundle{testBundle: &testBundle{t: t, st: st, lib: lib, srv: srv}, rc: rc, budgets: budgets}
	b.owner = b.token("olive", true)
	b.reader = b.token("ann", false)
	return b
}

func (b *adminBundle) token(name string, owner bool) string {
	b.t.Helper()
	r, err := b.st.CreateReader(context.Background(), name, "x", owner)
	require.NoError(b.t, err)
	tok, hash, err := credential.NewToken()
	require.NoError(b.t, err)
	_, err = b.st.CreateToken(context.Background(), r.ID, "t", hash)
	require.NoError(b.t, err)
	return tok
}

func (b *adminBundle) getJSON(path string, v any) int {
	b.t.Helper()
	r := b.do(http.MethodGet, path, b.owner, nil)
	if r.code == http.StatusOK {
		require.NoError(b.t, json.Unmarshal(r.body, v), "%s", r.body)
	}
	return r.code
}

func (b *adminBundle) exec(sql string, args ...any) {
	b.t.Helper()
	_, err := b.st.Pool.Exec(context.Background(), sql, args...)
	require.NoError(b.t, err)
}

const (
	weeklyURL = "https://asurascans.com/comics/solo-leveling-1a2b3c4d"
	weeklyKey = "asura:solo-leveling"
	youngURL  = "https://asurascans.com/comics/nano-machine-5e6f7a8b"
	youngKey  = "asura:nano-machine"
)

func TestOwnerSeesEverySeriesSchedule(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	ctx := context.Background()
	r, err := b.st.CreateReader(ctx, "holder", "x", false)
	require.NoError(t, err)
	b.put(r.ID, weeklyURL, "Solo Leveling", "Chapter 1")
	b.put(r.ID, youngURL, "Nano Machine", "Chapter 1")

	// Eight weeks of Tuesday releases around 14:00 UTC, each seen by an
	// hourly poll; the plan runs on a Monday noon.
	monday := time.Now().UTC().Add(48 * time.Hour).Truncate(24 * time.Hour)
	for monday.Weekday() != time.Monday {
		monday = monday.Add(24 * time.Hour)
	}
	monday = monday.Add(12 * time.Hour)
	b.exec(`UPDATE series SET created_at = $2, last_poll_at = $3, last_success_at = $3 WHERE key = $1`,
		weeklyKey, monday.Add(-9*7*24*time.Hour), monday.Add(-30*time.Minute))
	b.exec(`INSERT INTO latest_chapter_history (series_key, label, first_seen_at) VALUES ($1, 'Chapter 100', $2)`, weeklyKey, monday.Add(-9*7*24*time.Hour))
	for w := 8; w >= 1; w-- {
		seen := monday.Add(26*time.Hour - time.Duration(w)*7*24*time.Hour + 20*time.Minute)
		b.exec(`INSERT INTO latest_chapter_history (series_key, label, url, first_seen_at, prev_poll_at) VALUES ($1, $2, $3, $4, $5)`,
			weeklyKey, fmt.Sprintf("Chapter %d", 109-w), fmt.Sprintf("%s/chapter/%d", weeklyURL, 109-w), seen, seen.Add(-time.Hour))
	}
	b.exec(`UPDATE series SET created_at = $2, last_poll_at = $3 WHERE key = $1`, youngKey, monday.Add(-24*time.Hour), monday.Add(-10*time.Minute))

	// Their Acquisitions ran: nothing is queued.
	b.exec(`DELETE FROM river_job`)
	plan := &poll.Adaptive{Store: b.st, Registry: latest.Default(), Planner: schedule.Planner{Interval: time.Hour}, Budgets: b.budgets,
		Now: func() time.Time { return monday }}
	_, err = plan.Run(ctx, b.rc)
	require.NoError(t, err)

	var s api.SeriesScheduleJSON
	require.Equal(t, http.StatusOK, b.getJSON("/admin/series/"+weeklyKey+"/schedule", &s))
	require.Equal(t, weeklyKey, s.Key)
	require.Equal(t, poll.PolicyAdaptive, s.Policy)
	require.Equal(t, schedule.ReasonSafety, s.NextPollReason, "a day before the window: a safety check")
	require.NotNil(t, s.NextPollAt)
	require.True(t, s.NextPollAt.After(monday), "%s", s.NextPollAt)
	require.Equal(t, "weekly", s.RhythmKind)
	require.Equal(t, "weekly, Tuesdays ~13:50", s.Rhythm, "releases seen at 14:20 by hourly polls happened around 13:50")
	require.NotNil(t, s.RhythmAt)
	require.Len(t, s.History, 9)
	require.Equal(t, "Chapter 108", s.History[0].Label, "newest first")
	require.NotNil(t, s.History[0].PrevPollAt)
	require.Nil(t, s.History[8].PrevPollAt, "the first Latest Chapter found had no poll before it")

	var y api.SeriesScheduleJSON
	require.Equal(t, http.StatusOK, b.getJSON("/admin/series/"+youngKey+"/schedule", &y))
	require.Equal(t, schedule.ReasonNoHistory, y.NextPollReason)
	require.Equal(t, string(schedule.KindUnknown), y.RhythmKind)
	require.Empty(t, y.History)

	var site api.SiteScheduleJSON
	require.Equal(t, http.StatusOK, b.getJSON("/admin/sites/asura/schedule", &site))
	require.Equal(t, 1200, site.BudgetPerHour, "SITE_BUDGET")
	require.Len(t, site.Series, 2)
	require.Equal(t, youngKey, site.Series[0].Key, "soonest next poll first")
	require.Equal(t, schedule.ReasonNoHistory, site.Series[0].NextPollReason)
	require.Equal(t, weeklyKey, site.Series[1].Key)
	require.True(t, strings.HasPrefix(site.Series[1].Rhythm, "weekly"), site.Series[1].Rhythm)
	require.Equal(t, http.StatusOK, b.getJSON("/admin/sites/asura/schedule?limit=1", &site))
	require.Len(t, site.Series, 1)

	// The Owner's request shows as the reason until its poll has run.
	require.Equal(t, http.StatusAccepted, b.do(http.MethodPost, "/admin/series/"+weeklyKey+"/poll", b.owner, nil).code)
	require.Equal(t, http.StatusOK, b.getJSON("/admin/series/"+weeklyKey+"/schedule", &s))
	require.Equal(t, schedule.ReasonOwner, s.NextPollReason)

	// A failing Series shows its schedule in the status.
	b.exec(`UPDATE series SET poll_failures = 2, poll_status = 'problem', poll_problem = 'not_series_page: no chapters', poll_body_len = 512 WHERE key = $1`, youngKey)
	var st api.StatusJSON
	require.Equal(t, http.StatusOK, b.getJSON("/admin/status", &st))
	require.Equal(t, poll.PolicyAdaptive, st.Policy)
	require.Len(t, st.Failing, 1)
	require.Equal(t, schedule.ReasonNoHistory, st.Failing[0].NextPollReason)
	require.NotNil(t, st.Failing[0].NextPollAt)
	for _, s := range st.Sites {
		if s.Site == "asura" {
			require.Equal(t, 1200, s.BudgetPerHour)
			require.Equal(t, map[string]int{schedule.ReasonNoHistory: 1, schedule.ReasonOwner: 1}, s.NextPolls)
		} else {
			require.Equal(t, int(time.Hour/mustSite(t, s.Site).Pace), s.BudgetPerHour, "%s: from its pace", s.Site)
		}
		// A Site with a listing shows it, and why it is not used (this
		// Console runs without POLL_LISTINGS); one without shows none.
		switch s.Site {
		case "royalroad", "novelfull", "demonic", "mangadex", "asura":
			require.NotNil(t, s.Listing, s.Site)
			require.Equal(t, poll.ListingOff, s.Listing.State)
			require.False(t, s.Listing.InUse)
			require.Contains(t, s.Listing.Problem, "POLL_LISTINGS")
		default:
			require.Nil(t, s.Listing, s.Site)
		}
	}

	// Errors name the problem; Readers are refused.
	require.Equal(t, http.StatusNotFound, b.do(http.MethodGet, "/admin/series/asura:nobody/schedule", b.owner, nil).code)
	require.Equal(t, http.StatusNotFound, b.do(http.MethodGet, "/admin/sites/tapas/schedule", b.owner, nil).code)
	require.Equal(t, http.StatusBadRequest, b.do(http.MethodGet, "/admin/sites/asura/schedule?limit=0", b.owner, nil).code)
	require.Equal(t, http.StatusBadRequest, b.do(http.MethodGet, "/admin/sites/asura/schedule?limit=many", b.owner, nil).code)
	for _, path := range []string{"/admin/series/" + weeklyKey + "/schedule", "/admin/sites/asura/schedule", "/admin/jobs"} {
		require.Equal(t, http.StatusForbidden, b.do(http.MethodGet, path, b.reader, nil).code, path)
	}
}

func mustSite(t *testing.T, name string) *latest.Site {
	t.Helper()
	s, ok := latest.Default().Lookup(name)
	require.True(t, ok, name)
	return s
}

func TestOwnerRetriesAndCancelsJobs(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	ctx := context.Background()
	insert := func(key string) int64 {
		res, err := b.rc.Insert(ctx, poll.PollArgs{Key: key, Reason: "test"}, nil)
		require.NoError(t, err)
		return res.Job.ID
	}
	discarded, retrying := insert("asura:gone"), insert("asura:flaky")
	hostile := `<img src=x onerror=alert(1)> http_503: upstream "down"`
	b.exec(`UPDATE river_job SET state = 'discarded', attempt = 3, finalized_at = now(),
		errors = ARRAY[jsonb_build_object('at', now(), 'attempt', 3, 'error', $2::text)] WHERE id = $1`, discarded, hostile)
	b.exec(`UPDATE river_job SET state = 'retryable', attempt = 1, scheduled_at = now() + interval '1 hour',
		errors = ARRAY[jsonb_build_object('at', now(), 'attempt', 1, 'error', 'fetch: timeout')] WHERE id = $1`, retrying)

	var jobs []api.JobJSON
	require.Equal(t, http.StatusOK, b.getJSON("/admin/jobs", &jobs))
	require.Len(t, jobs, 2)
	byID := map[int64]api.JobJSON{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	require.Equal(t, hostile, byID[discarded].Error, "the last attempt's error, as text")
	require.Equal(t, "asura:gone", byID[discarded].Key)
	require.Equal(t, "discarded", byID[discarded].State)
	require.Equal(t, "fetch: timeout", byID[retrying].Error)
	require.Equal(t, http.StatusOK, b.getJSON("/admin/jobs?state=discarded", &jobs))
	require.Len(t, jobs, 1)
	require.Equal(t, http.StatusBadRequest, b.do(http.MethodGet, "/admin/jobs?state=running", b.owner, nil).code)

	state := func(id int64) string {
		var s string
		require.NoError(t, b.st.Pool.QueryRow(ctx, `SELECT state::text FROM river_job WHERE id = $1`, id).Scan(&s))
		return s
	}
	r := b.do(http.MethodPost, fmt.Sprintf("/admin/jobs/%d/retry", discarded), b.owner, nil)
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	require.Equal(t, "available", state(discarded), "a given-up job runs again")
	r = b.do(http.MethodPost, fmt.Sprintf("/admin/jobs/%d/cancel", retrying), b.owner, nil)
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	require.Equal(t, "cancelled", state(retrying))

	require.Equal(t, http.StatusNotFound, b.do(http.MethodPost, "/admin/jobs/999999/retry", b.owner, nil).code)
	require.Equal(t, http.StatusNotFound, b.do(http.MethodPost, "/admin/jobs/999999/cancel", b.owner, nil).code)
	require.Equal(t, http.StatusNotFound, b.do(http.MethodPost, "/admin/jobs/x/cancel", b.owner, nil).code)
	require.Equal(t, http.StatusForbidden, b.do(http.MethodPost, fmt.Sprintf("/admin/jobs/%d/retry", retrying), b.reader, nil).code)
	require.Equal(t, "cancelled", state(retrying), "a Reader's request changed nothing")

	// Retrying a given-up poll while another poll of the same Series is
	// queued would break River's one-in-flight rule: a clear 409, not a 500.
	old := insert("asura:twice")
	b.exec(`UPDATE river_job SET state = 'discarded', finalized_at = now() WHERE id = $1`, old)
	queued := insert("asura:twice")
	require.NotEqual(t, old, queued)
	r = b.do(http.MethodPost, fmt.Sprintf("/admin/jobs/%d/retry", old), b.owner, nil)
	require.Equal(t, http.StatusConflict, r.code, "%s", r.body)
	require.Contains(t, string(r.body), "already queued or running")
	require.Equal(t, "discarded", state(old))
}
