package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fetch/pacing"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// putOutcome is one PUT of the load: its key, and what came back.
type putOutcome struct {
	key    string
	status int
	body   string
	err    error
	took   time.Duration
	phase  string
}

// Postgres restarted under load: `lectern serve` runs on a throwaway cluster
// of the test's own while Readers' PUTs keep coming; the cluster is stopped
// and started again mid-load. The server recovers by itself (/readyz turns
// 503 during the outage and 200 after, the process is never restarted),
// every PUT is answered within its client's deadline, the ones refused
// during the outage with a JSON 5xx that says to retry, and every PUT that
// got a 2xx is in the database afterwards, its Series' Acquisition queued
// exactly once. SIGTERM then stops the same process cleanly.
//
// New Series queue Acquisition polls; they must not reach the network, so
// the pacing gate's slot for every asura host is booked ten minutes ahead,
// beyond FETCH_TIMEOUT: the gate refuses each poll before anything leaves
// the process, and River retries it later. A job queued after the outage
// runs, so the background half recovered too.
func TestPostgresRestartUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a Postgres cluster")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	root, err := os.MkdirTemp("", "lectern-pgfault-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	clusterDir := filepath.Join(root, "cluster")
	cluster, err := store.StartLocalCluster(ctx, clusterDir, true)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Remove() })
	dbURL := cluster.URL("postgres")

	env := map[string]string{"DATABASE_URL": dbURL}
	code, _, errOut := runCmd(t, env, "correct horse battery\n", "reader", "add", "ann")
	require.Equal(t, 0, code, errOut)
	code, out, errOut := runCmd(t, env, "", "token", "new", "ann")
	require.Equal(t, 0, code, errOut)
	token := strings.TrimSpace(out)

	db, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	site, _ := latest.Default().Lookup("asura")
	for _, h := range site.Hosts {
		_, err := db.Exec(ctx, `INSERT INTO pacing_hosts (host, next_at) VALUES ($1, now() + interval '10 minutes')`, pacing.Host(h))
		require.NoError(t, err)
	}
	require.NoError(t, db.Close(ctx))

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
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	base := "http://" + addr
	ready := func() int {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Eventually(t, func() bool { return ready() == http.StatusOK }, time.Minute, 100*time.Millisecond,
		"serve never became ready; log:\n%s", logs)

	// The load: Readers' PUTs, each creating a Bookmark (and a Series)
	// of its own, so each 2xx names exactly one row to find afterwards.
	client := &http.Client{Timeout: 20 * time.Second}
	var (
		mu       sync.Mutex
		outcomes []putOutcome
		phase    = "before"
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				slug := fmt.Sprintf("load-%d-%d", g, i)
				body := fmt.Sprintf(`{"site":"asura","series_url":"https://asurascans.com/comics/%s","chapter":"Chapter %d"}`, slug, i+1)
				req, _ := http.NewRequest(http.MethodPut, base+"/api/bookmarks/asura:"+slug, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				start := time.Now()
				resp, err := client.Do(req)
				o := putOutcome{key: "asura:" + slug, err: err, took: time.Since(start)}
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					o.status, o.body = resp.StatusCode, string(b)
				}
				mu.Lock()
				o.phase = phase
				outcomes = append(outcomes, o)
				mu.Unlock()
				if err != nil || o.status >= 500 {
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	setPhase := func(p string) { mu.Lock(); phase = p; mu.Unlock() }
	countOK := func(p string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, o := range outcomes {
			if o.phase == p && o.err == nil && o.status < 300 {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return countOK("before") >= 30 }, time.Minute, 20*time.Millisecond, "the load never got going; log:\n%s", logs)

	// The outage.
	setPhase("outage")
	require.NoError(t, cluster.Stop())
	require.Eventually(t, func() bool { return ready() == http.StatusServiceUnavailable }, 30*time.Second, 50*time.Millisecond,
		"/readyz did not notice the database went away")
	time.Sleep(2 * time.Second) // PUTs keep arriving while it is down
	setPhase("restart")
	cluster, err = store.StartLocalCluster(ctx, clusterDir, true)
	require.NoError(t, err)
	require.Equal(t, dbURL, cluster.URL("postgres"), "the cluster came back on its port")

	// Recovery, without restarting the process.
	require.Eventually(t, func() bool { return ready() == http.StatusOK }, time.Minute, 100*time.Millisecond,
		"/readyz never returned to 200 after the database came back; log:\n%s", logs)
	setPhase("after")
	require.Eventually(t, func() bool { return countOK("after") >= 30 }, time.Minute, 20*time.Millisecond,
		"PUTs did not succeed again after the database came back; log:\n%s", logs)
	close(stop)
	wg.Wait()
	require.Nil(t, cmd.ProcessState, "the server was restarted or died")

	// Every PUT was answered; a refusal is a JSON 5xx, never a hang or a 4xx.
	var okKeys []string
	refused := 0
	for _, o := range outcomes {
		require.NoError(t, o.err, "PUT %s (%s) got no answer after %s", o.key, o.phase, o.took)
		switch {
		case o.status == http.StatusCreated:
			okKeys = append(okKeys, o.key)
		case o.status >= 500:
			refused++
			var e struct {
				Error string `json:"error"`
			}
			require.NoError(t, json.Unmarshal([]byte(o.body), &e), "PUT %s: %d %s", o.key, o.status, o.body)
			require.NotEmpty(t, e.Error)
			require.Equal(t, http.StatusServiceUnavailable, o.status, "PUT %s during the outage: %s", o.key, o.body)
			require.NotEqual(t, "before", o.phase, "PUT %s refused before the outage: %s", o.key, o.body)
		default:
			t.Fatalf("PUT %s (%s) answered %d: %s", o.key, o.phase, o.status, o.body)
		}
	}
	require.Positive(t, refused, "no PUT reached the server during the outage: the test proved nothing")
	t.Logf("%d PUTs: %d stored, %d refused during the outage", len(outcomes), len(okKeys), refused)

	// Every acknowledged PUT is there, its Acquisition queued once.
	db, err = pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer db.Close(context.Background())
	var missing []string
	rows, err := db.Query(ctx, `
		SELECT k FROM unnest($1::text[]) AS k
		WHERE NOT EXISTS (SELECT 1 FROM bookmarks b WHERE b.series_key = k)`, okKeys)
	require.NoError(t, err)
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		missing = append(missing, k)
	}
	require.NoError(t, rows.Err())
	require.Empty(t, missing, "PUTs answered 201 whose Bookmark is gone")
	var dupes int
	require.NoError(t, db.QueryRow(ctx, `
		SELECT count(*) FROM (SELECT args->>'key' FROM river_job WHERE kind = 'poll_series'
		                      GROUP BY 1 HAVING count(*) > 1) d`).Scan(&dupes))
	require.Zero(t, dupes, "a Series has more than one Acquisition")
	var acquisitions int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'poll_series' AND args->>'key' = ANY($1)`, okKeys).Scan(&acquisitions))
	require.Equal(t, len(okKeys), acquisitions, "every new Series has its Acquisition queued")

	// The queue works again: a poll of a Series that does not exist (it
	// ends at once, touching no Site) is run and completed.
	var ghost int64
	require.NoError(t, db.QueryRow(ctx, `
		INSERT INTO river_job (args, kind, max_attempts, priority, queue, state)
		VALUES ('{"key": "asura:ghost-after-the-outage"}', 'poll_series', 3, 1, 'default', 'available') RETURNING id`).Scan(&ghost))
	require.Eventually(t, func() bool {
		var state string
		return db.QueryRow(ctx, `SELECT state::text FROM river_job WHERE id = $1`, ghost).Scan(&state) == nil && state == "completed"
	}, time.Minute, 100*time.Millisecond, "River did not run a job after the outage; log:\n%s", logs)

	// No poll got past the pacing gate: none reached for the network.
	var polled, atGate int
	require.Eventually(t, func() bool {
		return db.QueryRow(ctx, `
			SELECT count(*) FILTER (WHERE poll_status <> ''), count(*) FILTER (WHERE poll_problem LIKE '%pace asura%')
			FROM series`).Scan(&polled, &atGate) == nil && polled > 0
	}, time.Minute, 100*time.Millisecond, "no Acquisition ran; log:\n%s", logs)
	require.Equal(t, polled, atGate, "a poll failed other than at the pacing gate")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "serve did not exit 0 after the outage; log:\n%s", logs)
	case <-time.After(70 * time.Second):
		t.Fatalf("serve still running 70s after SIGTERM; log:\n%s", logs)
	}
}
