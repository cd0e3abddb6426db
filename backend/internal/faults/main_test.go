// Package faults holds the fault suites of issue 10: Lectern composed as in
// production (server.New over a real Postgres, River, the fetchers, the
// Cover store, real headless Chromium) meets an unwell world (a replica
// killed with SIGKILL mid-poll, a browser killed mid-read, Sites answering
// 429/503 storms or hanging, a full data volume) and must lose nothing and
// keep its time bounds. The Sites are backend/internal/fixturesites, reached
// through the fetchers' network seams; no test touches the live network.
//
// Postgres restarted under load is TestPostgresRestartUnderLoad in
// backend/cmd/lectern (it drives the real `lectern serve` binary); an
// archive worker killed mid-chapter is TestKilledWorkerResumesChapterFromCheckpoint
// in backend/internal/archive.
package faults

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/fakenet"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/server"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The test binary re-executed with replicaEnv set is a Lectern replica: the
// production composition (server.New, Run) with its fetchers' network seams
// on the parent's fake network (fakenet.Net.Env), so the parent can kill it.
const (
	replicaEnv       = "LECTERN_FAULT_REPLICA"
	replicaRescueEnv = "LECTERN_FAULT_RESCUE_AFTER" // River's stuck-job rescue, shortened
)

func TestMain(m *testing.M) {
	if os.Getenv(replicaEnv) != "" {
		if err := runReplica(); err != nil {
			fmt.Fprintln(os.Stderr, "replica:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	slog.SetDefault(slog.New(slog.DiscardHandler))
	os.Exit(pgtest.Main(m))
}

// runReplica serves until SIGTERM, as `lectern serve` does.
func runReplica() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg, err := config.Load(os.LookupEnv, "serve")
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	n, err := fakenet.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	rescue, err := time.ParseDuration(os.Getenv(replicaRescueEnv))
	if err != nil {
		return err
	}
	seams := &server.Seams{
		Resolver:             n,
		Dial:                 n.DialContext,
		RootCAs:              n.RootCAs(),
		RiverPollInterval:    100 * time.Millisecond,
		RescueStuckJobsAfter: rescue,
	}
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer st.Close()
	srv, err := server.New(ctx, server.Deps{Config: cfg, Store: st, Logger: logger, Version: "fault", Seams: seams})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return err
	}
	return srv.Run(ctx, ln)
}

// logTail collects a process's log lines.
type logTail struct {
	mu    sync.Mutex
	lines []string
}

func (l *logTail) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l.mu.Lock()
		l.lines = append(l.lines, sc.Text())
		l.mu.Unlock()
	}
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// replica is a Lectern process the test may kill.
type replica struct {
	cmd    *exec.Cmd
	log    *logTail
	base   string
	exited chan error
}

type replicaOptions struct {
	dbURL, dataDir string
	sites          *fixturesites.Server
	rescue         time.Duration
	env            []string
}

func startReplica(t *testing.T, o replicaOptions) *replica {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		replicaEnv + "=1",
		replicaRescueEnv + "=" + o.rescue.String(),
		"DATABASE_URL=" + o.dbURL,
		"PUBLIC_BASE_URL=http://" + addr,
		"DATA_DIR=" + o.dataDir,
		"LISTEN_ADDR=" + addr,
		"WORKERS=2",
		"SITE_PACE=asura=50ms,demonic=50ms,comix=50ms,lightnovelworld=50ms,novelfull=50ms,kagane=50ms",
	}, append(o.sites.Env(), o.env...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	cmd.Stdout = io.Discard
	require.NoError(t, cmd.Start())
	r := &replica{cmd: cmd, log: &logTail{}, base: "http://" + addr, exited: make(chan error, 1)}
	go r.log.read(stderr)
	go func() { r.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-r.exited
		}
	})
	require.Eventually(t, func() bool {
		resp, err := http.Get(r.base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 50*time.Millisecond, "the replica never became ready; its log:\n%s", r.log)
	return r
}

// kill ends the replica with SIGKILL: no shutdown, no cleanup, as a crash.
func (r *replica) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGKILL))
	<-r.exited
}

// stop ends the replica with SIGTERM and requires a clean exit.
func (r *replica) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-r.exited:
		require.NoError(t, err, "the replica did not exit cleanly; its log:\n%s", r.log)
	case <-time.After(90 * time.Second):
		t.Fatalf("the replica did not stop; its log:\n%s", r.log)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// startSites starts the fixture Sites for one test.
func startSites(t *testing.T) *fixturesites.Server {
	t.Helper()
	s, err := fixturesites.Start(fixturesites.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// newReader creates a Reader with an API token on the database at pool.
func newReader(t *testing.T, st *store.Store, name string, owner bool) string {
	t.Helper()
	hash, err := credential.HashPassword("correct horse battery")
	require.NoError(t, err)
	r, err := st.CreateReader(context.Background(), name, hash, owner)
	require.NoError(t, err)
	tok, th, err := credential.NewToken()
	require.NoError(t, err)
	_, err = st.CreateToken(context.Background(), r.ID, "fault", th)
	require.NoError(t, err)
	return tok
}

// count runs a count query.
func count(t *testing.T, pool *pgxpool.Pool, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), q, args...).Scan(&n))
	return n
}

// put records Progress through the API at base.
func put(t *testing.T, base, token, key, seriesURL, chapter string) int {
	t.Helper()
	body := fmt.Sprintf(`{"site":%q,"series_url":%q,"chapter":%q}`, strings.SplitN(key, ":", 2)[0], seriesURL, chapter)
	req, err := http.NewRequest(http.MethodPut, base+"/api/bookmarks/"+key, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300, "PUT %s: %s", key, b)
	return resp.StatusCode
}
