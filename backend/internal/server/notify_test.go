package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/fakenet"
	"github.com/lectern-reader/lectern/backend/internal/notify"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The hook puts the scan and the sends on a River client configured as the
// replica's: the periodic scan runs on start, finds the new chapter the
// Poll recorded, and the send reaches the receiver through the gate seams.
func TestNotifyJobsRunOnTheReplicasClient(t *testing.T) {
	t.Parallel()
	hook := fakenet.New(t)
	hook.HandleHost("hooks.test", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	bodies := func() [][]byte {
		var out [][]byte
		for _, r := range hook.Requests() {
			out = append(out, r.Body)
		}
		return out
	}

	st := store.New(pgtest.New(t))
	d := Deps{
		Config: config.Config{PublicBaseURL: "https://lectern.example.net", UserAgent: "lectern-test"},
		Store:  st,
		Seams:  &Seams{Resolver: hook, Dial: hook.DialContext, RootCAs: hook.RootCAs()},
	}
	ctx := context.Background()
	r, err := st.CreateReader(ctx, "ann", "x", false)
	require.NoError(t, err)
	ns := store.NewSeries{Key: "asura:solo-leveling", Site: "asura", Kind: "manga", SeriesURL: "https://asurascans.com/comics/solo-leveling-1a2b3c4d"}
	_, err = st.PutBookmarkKeepProgress(ctx, r.ID, ns, "")
	require.NoError(t, err)
	_, err = newNotifyService(d, nil).AddTarget(ctx, r.ID, notify.TargetSpec{URL: "jsons://hooks.test/ann"})
	require.NoError(t, err)
	for _, n := range []float64{1, 2} {
		_, err := st.RecordPoll(ctx, ns.Key, store.PollResult{Status: store.PollOK, Success: true,
			Latest: &store.LatestChapter{Label: fmt.Sprintf("Chapter %g", n), Number: &n}})
		require.NoError(t, err)
	}

	workers := river.NewWorkers()
	rc := &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}},
		Workers:           workers,
		FetchPollInterval: 100 * time.Millisecond,
	}
	newNotifier(d, nil).AddWorkers(workers)
	rc.PeriodicJobs = (&jobs{interval: time.Hour}).periodicJobs(config.Config{})
	require.Len(t, rc.PeriodicJobs, 3, "the notifications' scan and the Owner alerts' watch run beside the Poll's plan")
	require.Len(t, (&jobs{interval: time.Hour}).periodicJobs(config.Config{ArchiveDir: t.TempDir(), ArchiveSweep: 24 * time.Hour}), 4,
		"with an archive, its sweep runs too")
	client, err := river.NewClient(riverpgxv5.New(st.Pool), rc)
	require.NoError(t, err)
	require.NoError(t, client.Start(ctx))
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = client.Stop(stop)
	})

	require.Eventually(t, func() bool { return len(bodies()) == 1 }, 30*time.Second, 50*time.Millisecond)
	var body notify.WebhookBody
	require.NoError(t, json.Unmarshal(bodies()[0], &body))
	require.Len(t, body.Chapters, 1)
	require.Equal(t, "Chapter 2", body.Chapters[0].Chapter, "the Acquisition's chapter is not news; the next one is")
}
