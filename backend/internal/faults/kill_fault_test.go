package faults

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// A replica killed with SIGKILL in the middle of a poll (the Site's answer
// is still on its way) leaves nothing half-visible: the Series has no Latest
// Chapter, no history row and no Cover, and the poll's job is left running.
// A new replica rescues that job (River's stuck-job rescue, shortened here
// from an hour) and runs the same job again: the Latest Chapter is recorded
// once, in one history row, and the Cover stored once.
func TestSIGKILLMidPollResumes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sites := startSites(t)
	dbURL := pgtest.NewURL(t)
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	st := store.New(pool)
	token := newReader(t, st, "ann", false)
	ref, err := latest.Default().Resolve(fixturesites.AsuraSeries)
	require.NoError(t, err)
	dataDir := t.TempDir()
	opts := replicaOptions{dbURL: dbURL, dataDir: dataDir, sites: sites, rescue: 5 * time.Second}

	// The Site holds every request open: the poll is in flight when the
	// replica dies.
	sites.SetMode("asurascans.com", fixturesites.Hang)
	first := startReplica(t, opts)
	require.Equal(t, 201, put(t, first.base, token, ref.Key, fixturesites.AsuraSeries, "Chapter 3"))
	var jobID int64
	require.Eventually(t, func() bool {
		var state string
		err := pool.QueryRow(ctx, `SELECT id, state::text FROM river_job WHERE kind = 'poll_series' AND args->>'key' = $1`, ref.Key).Scan(&jobID, &state)
		return err == nil && state == "running" && sites.Hits(fixturesites.AsuraSeries) > 0
	}, time.Minute, 20*time.Millisecond, "the poll never reached the Site; log:\n%s", first.log)
	first.kill(t)

	// Nothing of the poll is visible, and its job is stranded as running.
	var label, coverAddr string
	require.NoError(t, pool.QueryRow(ctx, `SELECT latest_label, cover_address FROM series WHERE key = $1`, ref.Key).Scan(&label, &coverAddr))
	require.Empty(t, label)
	require.Empty(t, coverAddr)
	require.Zero(t, count(t, pool, `SELECT count(*) FROM latest_chapter_history WHERE series_key = $1`, ref.Key))
	require.Equal(t, 1, count(t, pool, `SELECT count(*) FROM bookmarks WHERE series_key = $1 AND chapter = 'Chapter 3'`, ref.Key),
		"the Progress of the PUT that finished is kept")
	require.Equal(t, 1, count(t, pool, `SELECT count(*) FROM river_job WHERE id = $1 AND state = 'running'`, jobID))

	// A new replica, the Site well again.
	sites.SetMode("asurascans.com", fixturesites.Normal)
	second := startReplica(t, opts)
	require.Eventually(t, func() bool {
		var label, addr string
		err := pool.QueryRow(ctx, `SELECT latest_label, cover_address FROM series WHERE key = $1`, ref.Key).Scan(&label, &addr)
		return err == nil && label != "" && addr != ""
	}, 2*time.Minute, 50*time.Millisecond, "the rescued poll never completed; log:\n%s", second.log)
	second.stop(t)

	require.Equal(t, 1, count(t, pool, `SELECT count(*) FROM latest_chapter_history WHERE series_key = $1`, ref.Key),
		"the Latest Chapter is recorded once")
	var state string
	var attempt int
	require.NoError(t, pool.QueryRow(ctx, `SELECT state::text, attempt FROM river_job WHERE id = $1`, jobID).Scan(&state, &attempt))
	require.Equal(t, "completed", state, "the stranded job itself ran again")
	require.Equal(t, 2, attempt)
	require.Equal(t, 1, count(t, pool, `SELECT count(*) FROM river_job WHERE kind = 'fetch_cover' AND args->>'key' = $1`, ref.Key),
		"one Cover job")
	var files []string
	require.NoError(t, filepath.WalkDir(filepath.Join(dataDir, "covers"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	}))
	require.Len(t, files, 1, "one Cover file, no temporary left: %v", files)
	require.Equal(t, coverAddrOf(t, pool, ref.Key), filepath.Base(files[0]))
}

func coverAddrOf(t *testing.T, pool *pgxpool.Pool, key string) string {
	t.Helper()
	var a string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT cover_address FROM series WHERE key = $1`, key).Scan(&a))
	return a
}
