package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// LocalCluster is a Postgres cluster in a directory of its own, started with
// initdb and pg_ctl: the throwaway server of the test harness and the
// database of `make run` when DATABASE_URL is unset. It is a development aid;
// deployments use a real server (compose.yaml).
type LocalCluster struct {
	Dir  string // holds data/, the socket, the log and the port file
	Port int
	bin  string
	// runAs is the account pg_ctl runs as: Postgres refuses to run as root,
	// so as root the cluster belongs to the "postgres" system user.
	runAs string
}

// ErrNoPostgres says initdb/pg_ctl were found nowhere.
var ErrNoPostgres = errors.New("postgres binaries (initdb, pg_ctl) not found on PATH or under /usr/lib/postgresql/*/bin")

// StartLocalCluster creates the cluster under dir on first use and starts it,
// or reuses it when it is already running. A throwaway cluster (tests) runs
// without fsync: its data need not survive a crash, and tests run faster.
func StartLocalCluster(ctx context.Context, dir string, throwaway bool) (*LocalCluster, error) {
	bin, err := findPostgresBin()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("local cluster dir: %w", err)
	}
	c := &LocalCluster{Dir: abs, bin: bin}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			return nil, errors.New("running as root, and Postgres refuses to: create a 'postgres' system user (Debian's postgresql package does) or run as another user")
		}
		c.runAs = "postgres"
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", abs, err)
	}
	if err := c.own(ctx, abs); err != nil {
		return nil, err
	}
	data := filepath.Join(abs, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if out, err := c.pg(ctx, "initdb", "-D", data, "--auth=trust", "-U", "postgres", "--encoding=UTF8", "--no-sync"); err != nil {
			return nil, fmt.Errorf("initdb: %w: %s", err, out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(abs, "port")); err == nil {
		c.Port, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if c.running(ctx) && c.Port != 0 {
		return c, nil
	}
	if c.Port == 0 || !portFree(c.Port) {
		if c.Port, err = freePort(); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(abs, "port"), []byte(strconv.Itoa(c.Port)), 0o644); err != nil {
		return nil, fmt.Errorf("write port file: %w", err)
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=300", c.Port, abs)
	if throwaway {
		opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	}
	if out, err := c.pg(ctx, "pg_ctl", "-D", data, "-l", filepath.Join(abs, "postgres.log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(abs, "postgres.log"))
		return nil, fmt.Errorf("pg_ctl start: %w: %s\n%s", err, out, tail(string(log), 2000))
	}
	return c, nil
}

// LocalClusterAt names an existing cluster directory without starting it,
// for stopping or removing it.
func LocalClusterAt(dir string) (*LocalCluster, error) {
	bin, err := findPostgresBin()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	c := &LocalCluster{Dir: abs, bin: bin}
	if os.Geteuid() == 0 {
		c.runAs = "postgres"
	}
	return c, nil
}

// URL is the connection URL of a database on the cluster.
func (c *LocalCluster) URL(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, database)
}

// Stop stops the server, keeping its data.
func (c *LocalCluster) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := c.pg(ctx, "pg_ctl", "-D", filepath.Join(c.Dir, "data"), "-m", "fast", "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %w: %s", err, out)
	}
	return nil
}

// Crash stops the server the way a power cut would: `pg_ctl -m immediate`
// ends every process without a checkpoint, so the next start replays the
// write-ahead log. For the crash tests and drills.
func (c *LocalCluster) Crash() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := c.pg(ctx, "pg_ctl", "-D", filepath.Join(c.Dir, "data"), "-m", "immediate", "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop -m immediate: %w: %s", err, out)
	}
	return nil
}

// Remove stops the server and deletes its directory.
func (c *LocalCluster) Remove() error {
	stopErr := c.Stop()
	if err := os.RemoveAll(c.Dir); err != nil {
		return err
	}
	return stopErr
}

func (c *LocalCluster) running(ctx context.Context) bool {
	_, err := c.pg(ctx, "pg_ctl", "-D", filepath.Join(c.Dir, "data"), "status")
	return err == nil
}

func (c *LocalCluster) own(ctx context.Context, dir string) error {
	if c.runAs == "" {
		return nil
	}
	if out, err := exec.CommandContext(ctx, "chown", "-R", c.runAs, dir).CombinedOutput(); err != nil {
		return fmt.Errorf("chown %s to %s: %w: %s", dir, c.runAs, err, out)
	}
	// The postgres user must be able to reach dir through its parents
	// (os.MkdirTemp makes them 0700).
	return os.Chmod(filepath.Dir(dir), dirMode(filepath.Dir(dir)))
}

func dirMode(path string) os.FileMode {
	fi, err := os.Stat(path)
	if err != nil {
		return 0o755
	}
	return fi.Mode().Perm() | 0o011
}

func (c *LocalCluster) pg(ctx context.Context, name string, args ...string) (string, error) {
	path := filepath.Join(c.bin, name)
	var cmd *exec.Cmd
	if c.runAs != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.runAs, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = c.Dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func findPostgresBin() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				return filepath.Dir(real), nil
			}
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", ErrNoPostgres
}

func pgVersion(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portFree(p int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
