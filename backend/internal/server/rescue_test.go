package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/server"
)

// A job left running by a replica that died is run again within minutes,
// not after River's default hour: a poll stranded for longer than its
// timeout is rescued by the next replica to start. A poll that started
// recently, and an archive job still inside its own (longer) timeout, are
// left alone: they may still be running somewhere.
func TestStrandedPollIsRescuedWithinMinutes(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase, Workers: 4, DeferJobs: true})
	st := b.Store

	horizon := server.RescueHorizon(b.Config)
	require.Less(t, horizon, 10*time.Minute)
	strand := func(kind, args string, runningFor time.Duration) int64 {
		var id int64
		require.NoError(t, st.Pool.QueryRow(context.Background(), `
			INSERT INTO river_job (args, attempt, attempted_at, attempted_by, kind, max_attempts, priority, queue, state, scheduled_at)
			VALUES ($1, 1, now() - $3::interval, '{dead-replica}', $2, 3, 1, 'default', 'running', now() - $3::interval)
			RETURNING id`, args, kind, runningFor.String()).Scan(&id))
		return id
	}
	stranded := strand("poll_series", `{"key":"asura:stranded","reason":"schedule"}`, horizon+time.Minute)
	recent := strand("poll_series", `{"key":"asura:recent","reason":"schedule"}`, 2*time.Minute)
	archiving := strand("archive_chapter", `{"url":"https://asurascans.com/comics/x/chapter/1","chapter_id":1,"series":"asura:x"}`, horizon+time.Minute)

	b.StartJobs()
	state := func(id int64) string {
		var s string
		require.NoError(t, st.Pool.QueryRow(context.Background(), `SELECT state::text FROM river_job WHERE id = $1`, id).Scan(&s))
		return s
	}
	apptest.Eventually(t, "the stranded poll is rescued", func() bool { return state(stranded) != "running" })
	require.Equal(t, "running", state(recent), "a poll started two minutes ago may still be running")
	require.Equal(t, "running", state(archiving), "an archive job inside its own timeout may still be running")
}
