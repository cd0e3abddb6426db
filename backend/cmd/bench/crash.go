package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lectern-reader/lectern/backend/internal/fetch/pacing"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/loadgen"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The crash drill: `lectern serve` (the real binary, built here unless
// BENCH_LECTERN names one) on a Postgres cluster of the drill's own with
// fsync on, 16 writers of Progress, and three Postgres crashes (`pg_ctl -m
// immediate`) then three SIGKILLs of serve. For each: the PUTs sent,
// acknowledged, present after recovery, the 5xx answers by code, the PUTs
// without an answer, the outage (from the failure to the first write sent
// after it that was acknowledged; the failure is done when pg_ctl stop or
// the kill returned) and the recovery (the same from the moment
// the failed part was back: Postgres accepting connections again, a new serve
// process started).

const crashWriters = 16

func benchCrash(ctx context.Context) error {
	root, err := os.MkdirTemp("", "lectern-bench-crash-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	bin := os.Getenv("BENCH_LECTERN")
	if bin == "" {
		bin = filepath.Join(root, "lectern")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./backend/cmd/lectern").CombinedOutput(); err != nil {
			return fmt.Errorf("build lectern (or set BENCH_LECTERN): %w: %s", err, out)
		}
	}
	clusterDir := filepath.Join(root, "cluster")
	cluster, err := store.StartLocalCluster(ctx, clusterDir, false)
	if err != nil {
		return fmt.Errorf("start a Postgres cluster: %w", err)
	}
	defer func() { _ = cluster.Remove() }()
	dbURL := cluster.URL("postgres")
	if err := store.MigrateUp(ctx, dbURL); err != nil {
		return err
	}
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	token, err := seedReader(ctx, st, "drill", 0)
	if err == nil {
		// The Acquisitions of the new Series must not reach the network:
		// every asura host's slot is booked beyond FETCH_TIMEOUT, so the
		// gate refuses them before anything leaves the process.
		site, _ := latest.Default().Lookup("asura")
		for _, h := range site.Hosts {
			if _, err = st.Pool.Exec(ctx, `INSERT INTO pacing_hosts (host, next_at) VALUES ($1, now() + interval '1 day')
				ON CONFLICT (host) DO UPDATE SET next_at = EXCLUDED.next_at`, pacing.Host(h)); err != nil {
				break
			}
		}
	}
	st.Close()
	if err != nil {
		return err
	}

	s := &drillServe{bin: bin, dbURL: dbURL, root: root, token: token}
	if err := s.start(ctx); err != nil {
		return err
	}
	defer s.kill()
	fmt.Printf("Crash drill: %d writers of PUT /api/bookmarks/{key} (a new Bookmark each) against `lectern serve` on Postgres with fsync on\n\n", crashWriters)
	fmt.Printf("%-22s %6s %6s %8s %9s  %-22s %9s %9s\n", "failure", "sent", "acked", "present", "no answer", "5xx by code", "outage", "recovery")
	for i := range 3 {
		err := s.round(ctx, fmt.Sprintf("postgres crash %d", i+1), fmt.Sprintf("pg%d", i), cluster.Crash, func() (time.Time, error) {
			c, err := store.StartLocalCluster(ctx, clusterDir, false)
			if err != nil {
				return time.Time{}, err
			}
			cluster = c
			return time.Now(), nil
		})
		if err != nil {
			return err
		}
	}
	for i := range 3 {
		err := s.round(ctx, fmt.Sprintf("SIGKILL of serve %d", i+1), fmt.Sprintf("kill%d", i), func() error { s.kill(); return nil },
			func() (time.Time, error) {
				started := time.Now()
				return started, s.start(ctx)
			})
		if err != nil {
			return err
		}
	}
	fmt.Println("\npresent: acknowledged PUTs whose Bookmark is in the database after recovery. outage: from the failure to the first PUT sent after it that was")
	fmt.Println("acknowledged; recovery: the same from Postgres accepting connections again (pg_ctl start -w returned) or the new serve process's start")
	return nil
}

// drillServe is the `lectern serve` process of the drill.
type drillServe struct {
	bin, dbURL, root, token string
	cmd                     *exec.Cmd
	// base is read by the writers while a restart moves it.
	base atomic.Pointer[string]
}

func (s *drillServe) start(ctx context.Context) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	logf, err := os.OpenFile(filepath.Join(s.root, "serve.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	s.cmd = exec.Command(s.bin, "serve")
	s.cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"DATABASE_URL=" + s.dbURL,
		"PUBLIC_BASE_URL=http://" + addr,
		"DATA_DIR=" + filepath.Join(s.root, "data"),
		"LISTEN_ADDR=" + addr,
		"WORKERS=2",
		"FETCH_TIMEOUT=30s",
		"LOG_FORMAT=json",
	}
	s.cmd.Stderr, s.cmd.Stdout = logf, logf
	if err := s.cmd.Start(); err != nil {
		return err
	}
	base := "http://" + addr
	s.base.Store(&base)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("serve did not become ready within a minute; see its log")
}

func (s *drillServe) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		_ = s.cmd.Wait()
	}
}

// round runs the load, lets it settle, fails something with crash, keeps
// the writes coming for a second, brings it back with restart (which says
// when it was back), waits for 100 writes acknowledged after that, and
// reports.
func (s *drillServe) round(ctx context.Context, name, prefix string, crash func() error, restart func() (time.Time, error)) error {
	// A SIGKILL moves serve to a new port; the load follows it the way a
	// userscript would after a restart, through a base read per request.
	load := loadgen.StartPutsTo(func() string { return *s.base.Load() }, s.token, prefix, crashWriters)
	for load.AcknowledgedSince(time.Time{}) < 100 {
		time.Sleep(20 * time.Millisecond)
	}
	if err := crash(); err != nil {
		load.Stop()
		return err
	}
	failed := time.Now()
	time.Sleep(time.Second) // writes keep arriving while it is down
	up, err := restart()
	if err != nil {
		load.Stop()
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for load.AcknowledgedSince(up) < 100 {
		if time.Now().After(deadline) {
			load.Stop()
			return fmt.Errorf("%s: writes did not succeed again within two minutes", name)
		}
		time.Sleep(20 * time.Millisecond)
	}
	outcomes := load.Stop()
	outage := load.FirstAcknowledgedSentAfter(failed).Sub(failed)
	recovery := load.FirstAcknowledgedSentAfter(up).Sub(up)
	t := loadgen.Tally(outcomes)
	present, err := presentBookmarks(ctx, s.dbURL, t.Keys)
	if err != nil {
		return err
	}
	codes := make([]int, 0, len(t.ByStatus))
	for c := range t.ByStatus {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var by []string
	for _, c := range codes {
		by = append(by, fmt.Sprintf("%d×%d", c, t.ByStatus[c]))
	}
	if len(by) == 0 {
		by = []string{"none"}
	}
	if t.WithoutRetryAfter > 0 {
		by = append(by, fmt.Sprintf("(%d 503 without Retry-After)", t.WithoutRetryAfter))
	}
	fmt.Printf("%-22s %6d %6d %8d %9d  %-22s %9s %9s\n", name, t.Sent, t.Acknowledged, present, t.NoAnswer,
		strings.Join(by, " "), outage.Round(time.Millisecond), recovery.Round(time.Millisecond))
	return nil
}

// presentBookmarks counts the keys that have a Bookmark.
func presentBookmarks(ctx context.Context, dbURL string, keys []string) (int, error) {
	db, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, err
	}
	defer db.Close(ctx)
	var n int
	err = db.QueryRow(ctx, `SELECT count(*) FROM unnest($1::text[]) AS k WHERE EXISTS (SELECT 1 FROM bookmarks b WHERE b.series_key = k)`, keys).Scan(&n)
	return n, err
}
