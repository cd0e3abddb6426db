package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fetch/pacing"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/loadgen"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Postgres crashes under load: `lectern serve` on a cluster of the test's
// own with fsync on, 16 Readers' PUTs coming, and the cluster killed the
// way a power cut would (`pg_ctl -m immediate`: no checkpoint, every
// connection cut mid-statement, mid-BEGIN and mid-COMMIT). Not one answer is
// a 500: every failure is a 503 with Retry-After, whatever stage of its
// transaction the request was in. After the cluster replays its log every
// PUT that was acknowledged is there: an answer of 2xx means committed.
func TestPostgresCrashUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("crashes a Postgres cluster")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	root, err := os.MkdirTemp("", "lectern-pgcrash-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	clusterDir := filepath.Join(root, "cluster")
	cluster, err := store.StartLocalCluster(ctx, clusterDir, false)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Remove() })
	dbURL := cluster.URL("postgres")
	db, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	var fsync string
	require.NoError(t, db.QueryRow(ctx, `SHOW fsync`).Scan(&fsync))
	require.Equal(t, "on", fsync, "a crash test without fsync proves nothing about durability")
	require.NoError(t, db.Close(ctx))

	token := crashSetup(t, ctx, dbURL)
	base, cmd, logs := startServe(t, dbURL, root)

	load := loadgen.StartPuts(base, token, "crash", 16)
	require.Eventually(t, func() bool { return load.AcknowledgedSince(time.Time{}) >= 50 }, time.Minute, 20*time.Millisecond,
		"the load never got going; log:\n%s", logs)
	crashed := time.Now()
	require.NoError(t, cluster.Crash())
	time.Sleep(time.Second) // PUTs keep arriving while it is down
	cluster, err = store.StartLocalCluster(ctx, clusterDir, false)
	require.NoError(t, err)
	require.Equal(t, dbURL, cluster.URL("postgres"), "the cluster came back on its port")
	restarted := time.Now()
	require.Eventually(t, func() bool { return load.AcknowledgedSince(restarted) >= 50 }, time.Minute, 20*time.Millisecond,
		"PUTs did not succeed again after the database came back; log:\n%s", logs)
	outcomes := load.Stop()
	require.Nil(t, cmd.ProcessState, "the server died")

	tally := loadgen.Tally(outcomes)
	refused := 0
	for _, o := range outcomes {
		require.NoError(t, o.Err, "PUT %s got no answer", o.Key)
		if o.Acknowledged() {
			continue
		}
		require.Equal(t, 503, o.Status, "PUT %s: %d %s; the server's errors:\n%s", o.Key, o.Status, o.Body, logs.errors())
		require.NotEmpty(t, o.RetryAfter, "PUT %s: a 503 without Retry-After", o.Key)
		require.True(t, o.At.After(crashed), "PUT %s refused before the crash: %s", o.Key, o.Body)
		refused++
	}
	require.Positive(t, refused, "no PUT reached the server during the outage: the test proved nothing")
	t.Logf("%d PUTs: %d acknowledged, %d refused with 503 during the outage; first acknowledged %s after the restart",
		tally.Sent, tally.Acknowledged, refused, load.FirstAcknowledgedSentAfter(restarted).Sub(restarted).Round(time.Millisecond))

	require.Empty(t, missingBookmarks(t, ctx, dbURL, tally.Keys), "PUTs answered 2xx whose Bookmark the crash lost")
	require.False(t, strings.Contains(logs.String(), `"status":500`), "the log shows a 500:\n%s", logs)
}

// crashSetup makes a Reader with a token and books the pacing gate's slot
// of every asura host ten minutes ahead, beyond FETCH_TIMEOUT, so the
// Acquisitions the new Series queue are refused at the gate and nothing
// leaves the process.
func crashSetup(t *testing.T, ctx context.Context, dbURL string) string {
	t.Helper()
	env := map[string]string{"DATABASE_URL": dbURL}
	code, _, errOut := runCmd(t, env, "correct horse battery\n", "reader", "add", "ann")
	require.Equal(t, 0, code, errOut)
	code, out, errOut := runCmd(t, env, "", "token", "new", "ann")
	require.Equal(t, 0, code, errOut)
	db, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer db.Close(ctx)
	site, _ := latest.Default().Lookup("asura")
	for _, h := range site.Hosts {
		_, err := db.Exec(ctx, `INSERT INTO pacing_hosts (host, next_at) VALUES ($1, now() + interval '10 minutes')`, pacing.Host(h))
		require.NoError(t, err)
	}
	return strings.TrimSpace(out)
}

// startServe runs `lectern serve` on dbURL until the test ends and waits
// until it is ready.
func startServe(t *testing.T, dbURL, root string) (string, *exec.Cmd, *logTail) {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(binary, "serve")
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"DATABASE_URL=" + dbURL,
		"PUBLIC_BASE_URL=http://" + addr,
		"DATA_DIR=" + filepath.Join(root, "data"),
		"LISTEN_ADDR=" + addr,
		"WORKERS=2",
		"FETCH_TIMEOUT=30s",
		"LOG_FORMAT=json",
	}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	logs := tail(t, stderr)
	go func() { _ = cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	base := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 100*time.Millisecond, "serve never became ready; log:\n%s", logs)
	return base, cmd, logs
}

// missingBookmarks is the keys of keys that have no Bookmark in dbURL.
func missingBookmarks(t *testing.T, ctx context.Context, dbURL string, keys []string) []string {
	t.Helper()
	db, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer db.Close(ctx)
	rows, err := db.Query(ctx, `
		SELECT k FROM unnest($1::text[]) AS k
		WHERE NOT EXISTS (SELECT 1 FROM bookmarks b WHERE b.series_key = k)`, keys)
	require.NoError(t, err)
	missing, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return missing
}
