package notify_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/notify"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func TestAlertConditions(t *testing.T) {
	t.Parallel()
	now := at("2026-12-01T12:00:00Z")
	seen := map[string]time.Time{"asura": now.Add(-2 * time.Hour), "demonic": now, "kagane": now}
	conds, healthy := notify.Conditions(notify.Observation{
		Polls: []store.SitePolls{
			{Site: "asura", Polled: 10, OK: 2, Unreachable: 1, Refused: 1, Shape: 6},
			{Site: "demonic", Polled: 10, OK: 1, Unreachable: 2, Refused: 7},
			{Site: "kagane", Polled: 10, OK: 6, Unreachable: 4},
			{Site: "novelfull", Polled: 10, OK: 0, Unreachable: 10}, // never seen healthy
			{Site: "mangadex", Polled: 2, OK: 0, Unreachable: 2},    // too few polls to say
		},
		Healthy:    seen,
		BackingOff: []store.BackingOff{{Site: "demonic", Until: now.Add(time.Hour), LastProblem: "challenge"}},
		StaleJobs:  3, OldestJob: ptr(now.Add(-30 * time.Hour)),
		Disks: []notify.Disk{{Name: "DATA_DIR", Path: "/data", Free: 1 << 30, Total: 100 << 30},
			{Name: "COVER_DIR", Path: "/covers", Free: 50 << 30, Total: 100 << 30}},
	}, now)
	require.Equal(t, []string{"kagane"}, healthy)
	byKey := map[string]notify.Condition{}
	for _, c := range conds {
		byKey[c.Key] = c
	}
	require.Len(t, byKey, 5, "%v", conds)
	require.Equal(t, notify.CauseShape, byKey["site_failing:asura"].Cause)
	require.Contains(t, byKey["site_failing:asura"].Message, "pages changed shape")
	require.Equal(t, notify.CauseRefused, byKey["site_failing:demonic"].Cause)
	require.Equal(t, notify.BackoffHold, byKey["site_backoff:demonic"].Hold)
	require.Contains(t, byKey["queue_stale"].Message, "3 queued jobs")
	require.Contains(t, byKey["disk_full:DATA_DIR"].Message, "1.0 GiB free of 100.0 GiB")
}

// Raised once after holding, never repeated while it holds, recovered
// once when it clears; a condition that clears before its hold is never
// told.
func TestAlertStep(t *testing.T) {
	t.Parallel()
	t0 := at("2026-12-01T12:00:00Z")
	cond := notify.Condition{Key: "site_failing:asura", Kind: notify.AlertSiteFailing, Site: "asura", Cause: notify.CauseShape, Message: "m", Hold: time.Hour}
	var rows []store.OwnerAlert
	apply := func(conds []notify.Condition, now time.Time) []notify.Notice {
		puts, deletes, notices := notify.Step(rows, conds, now)
		next := map[string]store.OwnerAlert{}
		for _, r := range rows {
			next[r.Key] = r
		}
		for _, p := range puts {
			next[p.Key] = p
		}
		for _, d := range deletes {
			delete(next, d)
		}
		rows = rows[:0]
		for _, r := range next {
			rows = append(rows, r)
		}
		return notices
	}
	require.Empty(t, apply([]notify.Condition{cond}, t0), "pending")
	require.Empty(t, apply([]notify.Condition{cond}, t0.Add(59*time.Minute)))
	n := apply([]notify.Condition{cond}, t0.Add(time.Hour))
	require.Len(t, n, 1)
	require.False(t, n[0].Recovered)
	require.Equal(t, "Lectern: asura is failing: pages changed shape", notify.AlertTitle(n[0]))
	require.Empty(t, apply([]notify.Condition{cond}, t0.Add(2*time.Hour)), "de-duplicated")
	n = apply(nil, t0.Add(3*time.Hour))
	require.Len(t, n, 1)
	require.True(t, n[0].Recovered)
	require.Equal(t, "Lectern: asura recovered", notify.AlertTitle(n[0]))
	require.Empty(t, rows)

	require.Empty(t, apply([]notify.Condition{cond}, t0.Add(4*time.Hour)))
	require.Empty(t, apply(nil, t0.Add(4*time.Hour+30*time.Minute)), "cleared before its hold: never told")
	require.Empty(t, rows)
}

// Through the database and a fake clock: a Site healthy, then answering
// pages of another shape for over an hour, raises one alert to the Owner's
// target (not a Reader's) and shows in the alert rows; recovering sends one
// notice.
func TestOwnerAlertThroughTheStore(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := newStub(t)
	ctx := context.Background()
	clock := time.Now()
	owner, err := w.st.CreateReader(ctx, "owner", "x", true)
	require.NoError(t, err)
	reader := w.reader("rae")
	svc := newService(w.st, nil)
	_, err = svc.AddTarget(ctx, owner.ID, notify.TargetSpec{URL: "jsons://hooks.test/owner"})
	require.NoError(t, err)
	_, err = svc.AddTarget(ctx, reader.ID, notify.TargetSpec{URL: "jsons://hooks.test/reader"})
	require.NoError(t, err)
	watch := &notify.Watch{Store: w.st, Sender: &notify.Sender{HTTP: s.gate(), BaseURL: base, Box: testBox},
		Now: func() time.Time { return clock }}

	var keys []string
	for i := range 4 {
		keys = append(keys, w.hold(reader, fmt.Sprintf("https://asurascans.com/comics/series-%d-1a2b3c4d", i), ""))
	}
	pollAll := func(problem string) {
		for i, k := range keys {
			r := store.PollResult{Status: store.PollOK, Success: true,
				Latest: &store.LatestChapter{Label: "Chapter 1", Number: ptr(1.0)}}
			if problem != "" && i > 0 {
				r = store.PollResult{Status: store.PollProblem, Problem: problem + ": the chapter list is gone"}
			}
			_, err := w.st.RecordPoll(ctx, k, r)
			require.NoError(t, err)
		}
	}
	// The polls happen on the fake clock too: every look sees them as
	// just made.
	run0 := func() []notify.Notice {
		_, err := w.st.Pool.Exec(ctx, `UPDATE series SET last_poll_at = $1 WHERE key = ANY($2)`, clock, keys)
		require.NoError(t, err)
		n, err := watch.Run(ctx)
		require.NoError(t, err)
		return n
	}
	run := run0

	pollAll("")
	require.Empty(t, run(), "healthy")
	pollAll("not_series_page")
	require.Empty(t, run(), "failing, not yet for an hour")
	clock = clock.Add(30 * time.Minute)
	require.Empty(t, run())
	clock = clock.Add(31 * time.Minute)
	n := run()
	require.Len(t, n, 1)
	require.Equal(t, notify.CauseShape, n[0].Alert.Cause)
	got := s.requests("/owner")
	require.Len(t, got, 1)
	body := decode[notify.WebhookBody](t, got[0].Body)
	require.Equal(t, "owner_alert", body.Type)
	require.Equal(t, "Lectern: asura is failing: pages changed shape", body.Title)
	require.Empty(t, s.requests("/reader"), "a Reader's targets get no Owner alerts")

	clock = clock.Add(10 * time.Minute)
	require.Empty(t, run(), "de-duplicated")
	alerts, err := w.st.OwnerAlerts(ctx)
	require.NoError(t, err)
	require.Len(t, alerts, 1)
	require.NotNil(t, alerts[0].RaisedAt)

	pollAll("")
	n = run()
	require.Len(t, n, 1)
	require.True(t, n[0].Recovered)
	require.Len(t, s.requests("/owner"), 2)
	require.Equal(t, "owner_recovery", decode[notify.WebhookBody](t, s.requests("/owner")[1].Body).Type)
	alerts, err = w.st.OwnerAlerts(ctx)
	require.NoError(t, err)
	require.Empty(t, alerts)
}
