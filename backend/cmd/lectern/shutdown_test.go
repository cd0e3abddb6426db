package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fetch/pacing"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/metrics/metricstest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
)

// logTail collects a process's log lines and lets a test wait for one.
type logTail struct {
	mu    sync.Mutex
	lines []string
	more  chan struct{}
}

func tail(t *testing.T, r io.Reader) *logTail {
	l := &logTail{more: make(chan struct{}, 1)}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			l.mu.Lock()
			l.lines = append(l.lines, sc.Text())
			l.mu.Unlock()
			select {
			case l.more <- struct{}{}:
			default:
			}
		}
	}()
	return l
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// errors is the log's lines at level ERROR.
func (l *logTail) errors() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, `"level":"ERROR"`) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func (l *logTail) waitFor(t *testing.T, substr string, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for !strings.Contains(l.String(), substr) {
		select {
		case <-l.more:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no log line with %q within %s; log:\n%s", substr, within, l)
		}
	}
}

// SIGTERM reaches a running `lectern serve` while a request is in flight and
// a poll is running. The process stops accepting connections, finishes the
// request (its Bookmark is stored), stops the poll within River's soft-stop
// bound (it is put back in the queue, not left running), and exits 0.
//
// The poll must never reach the network: before the server starts, the
// pacing gate's slot for every asura host is booked five minutes ahead
// (within the fetch's deadline, FETCH_TIMEOUT=10m, so the gate makes it wait
// rather than refuse), and the poll waits at the gate, where nothing has
// left the process yet, until the shutdown cancels it.
func TestSIGTERMFinishesRequestsAndStopsJobs(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer db.Close(context.Background())

	site, ok := latest.Default().Lookup("asura")
	require.True(t, ok)
	seeded := time.Now().Add(5 * time.Minute).UTC().Truncate(time.Millisecond)
	for _, h := range site.Hosts {
		_, err := db.Exec(ctx, `INSERT INTO pacing_hosts (host, next_at) VALUES ($1, $2)`, pacing.Host(h), seeded)
		require.NoError(t, err)
	}
	env := map[string]string{"DATABASE_URL": dbURL}
	code, _, errOut := runCmd(t, env, "correct horse battery\n", "reader", "add", "olive", "--owner")
	require.Equal(t, 0, code, errOut)
	code, out, errOut := runCmd(t, env, "", "token", "new", "olive")
	require.Equal(t, 0, code, errOut)
	token := strings.TrimSpace(out)

	addr, metricsAddr := freeAddr(t), freeAddr(t)
	cmd := exec.Command(binary, "serve")
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"DATABASE_URL=" + dbURL,
		"PUBLIC_BASE_URL=http://" + addr,
		"DATA_DIR=" + t.TempDir(),
		"LISTEN_ADDR=" + addr,
		"METRICS_ADDR=" + metricsAddr,
		"WORKERS=2",
		"FETCH_TIMEOUT=10m",
		"LOG_FORMAT=json",
		"LOG_LEVEL=debug",
	}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	logs := tail(t, stderr)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	}()
	base := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 100*time.Millisecond, "serve never became ready; log:\n%s", logs)

	// The container health check agrees.
	hcEnv := map[string]string{"LISTEN_ADDR": addr}
	code, out, errOut = runCmd(t, hcEnv, "", "healthcheck")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "ready\n", out)

	put := func(slug string) string {
		return fmt.Sprintf(`{"site":"asura","series_url":"https://asuracomic.net/series/%s","chapter":"Chapter 7"}`, slug)
	}
	// A new Series: its Acquisition poll starts and waits at the gate.
	req, err := http.NewRequest(http.MethodPut, base+"/api/bookmarks/asura:solo-leveling", strings.NewReader(put("solo-leveling")))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	var jobID int64
	require.Eventually(t, func() bool {
		var state string
		err := db.QueryRow(ctx, `SELECT id, state::text FROM river_job WHERE kind = 'poll_series' AND args->>'key' = 'asura:solo-leveling'`).Scan(&jobID, &state)
		return err == nil && state == "running"
	}, 30*time.Second, 100*time.Millisecond, "the poll never started; log:\n%s", logs)
	require.Eventually(t, func() bool {
		var booked bool
		err := db.QueryRow(ctx, `SELECT bool_or(next_at > $1) FROM pacing_hosts`, seeded).Scan(&booked)
		return err == nil && booked
	}, 30*time.Second, 100*time.Millisecond, "the poll never reached the pacing gate; log:\n%s", logs)
	s := metricstest.Get(t, "http://"+metricsAddr+"/metrics")
	require.Equal(t, 1.0, s.Value(t, "lectern_queue_jobs", "kind", "poll_series", "state", "running"))

	// A request in flight: its handler is reading the body (the server has
	// answered 100 Continue) when the signal arrives.
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	body := put("omniscient-reader")
	fmt.Fprintf(conn, "PUT /api/bookmarks/asura:omniscient-reader HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", addr, token, len(body))
	br := bufio.NewReader(conn)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 100 Continue\r\n", line)
	_, err = br.ReadString('\n') // the blank line after the interim response
	require.NoError(t, err)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	logs.waitFor(t, `"msg":"shutting down"`, 30*time.Second)
	// No new connection is accepted while the old request is still open.
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return true
		}
		c.Close()
		return false
	}, 10*time.Second, 50*time.Millisecond, "still accepting connections after SIGTERM")

	// The request completes.
	_, err = io.WriteString(conn, body)
	require.NoError(t, err)
	r, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", b)

	// The process ends by itself, cleanly, well within Compose's 75s grace.
	select {
	case err := <-exited:
		require.NoError(t, err, "serve did not exit 0; log:\n%s", logs)
	case <-time.After(70 * time.Second):
		t.Fatalf("serve still running 70s after SIGTERM; log:\n%s", logs)
	}

	// Nothing lost, nothing left running.
	var n int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM bookmarks WHERE series_key IN ('asura:solo-leveling', 'asura:omniscient-reader')`).Scan(&n))
	require.Equal(t, 2, n)
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'running'`).Scan(&n))
	require.Zero(t, n, "a job was left running")
	var state string
	require.NoError(t, db.QueryRow(ctx, `SELECT state::text FROM river_job WHERE id = $1`, jobID).Scan(&state))
	require.Contains(t, []string{"available", "scheduled", "retryable"}, state, "the interrupted poll runs again at the next start")
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'poll_series' AND args->>'key' = 'asura:omniscient-reader'`).Scan(&n))
	require.Equal(t, 1, n, "the finished request's Acquisition is queued")
	require.NotContains(t, logs.String(), `"level":"ERROR"`)

	code, _, _ = runCmd(t, hcEnv, "", "healthcheck", "--timeout", "2s")
	require.Equal(t, 1, code, "nothing answers once serve is gone")
}
