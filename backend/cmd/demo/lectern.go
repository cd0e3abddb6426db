package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/secretbox"
	"github.com/lectern-reader/lectern/backend/internal/server"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// lecternOptions describe the Lectern a demo (or the end-to-end test) runs.
type lecternOptions struct {
	DatabaseURL string
	DataDir     string
	// Listen is the loopback address to serve on ("127.0.0.1:0": any port).
	Listen string
	// Workers run background jobs; 0 runs none.
	Workers int
	// BrowserPath is a Chromium for the browser Sites (kagane, novelfull);
	// "" leaves them to degrade as they do in production without one.
	BrowserPath string
	// SitePace is SITE_PACE; the demo and tests pace the fixtures briskly.
	SitePace string
	// Env adds settings (a figure's POLL_LISTINGS=false).
	Env map[string]string
	// RiverPoll shortens River's fallback fetch poll.
	RiverPoll time.Duration
	// WatchEvery and FailingHold are the Owner alerts' look interval and
	// how long a failing Site waits for its alert; zero: 30 s and a minute.
	WatchEvery, FailingHold time.Duration
	Version                 string
	Logger                  *slog.Logger
	// Blobs are BLOB_URL, S3_* and COVER_CACHE_BYTES from the demo's own
	// environment (blobEnv), so the whole loop can be watched on a bucket.
	Blobs map[string]string
}

// blobVars are the variables of the blob store the demo passes through.
var blobVars = []string{"BLOB_URL", "S3_ENDPOINT", "S3_REGION", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "COVER_CACHE_BYTES"}

// blobEnv reads blobVars from an environment.
func blobEnv(lookup func(string) (string, bool)) map[string]string {
	out := map[string]string{}
	for _, k := range blobVars {
		if v, ok := lookup(k); ok && v != "" {
			out[k] = v
		}
	}
	return out
}

// lectern is a running Lectern wired to the fixture Sites.
type lectern struct {
	Server  *server.Server
	Store   *store.Store
	Config  config.Config
	BaseURL string
	stop    context.CancelFunc
	done    chan error
}

// startLectern runs Lectern in-process with the fixture Sites behind the
// fetchers' network seams: every Site host and image host the fixtures name
// resolves to fakenet.StandIn, and the destination gate's dialer
// connects that one address to the fixture server and refuses every other.
// The gate itself is unchanged, so it still judges each address it is given.
// `lectern serve` has no way to set these seams.
func startLectern(ctx context.Context, sites *fixturesites.Server, o lecternOptions) (*lectern, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", o.Listen, err)
	}
	base := "http://" + ln.Addr().String()
	vars := map[string]string{
		"DATABASE_URL":    o.DatabaseURL,
		"PUBLIC_BASE_URL": base,
		"DATA_DIR":        o.DataDir,
		"LISTEN_ADDR":     ln.Addr().String(),
		"BROWSER_PATH":    o.BrowserPath,
		"SITE_PACE":       o.SitePace,
		"USER_AGENT":      "LecternDemo/1 (+https://github.com/lectern-reader/lectern)",
		"WORKERS":         strconv.Itoa(o.Workers),
		"LOG_FORMAT":      "text",
		// Notification targets' tokens are sealed with it; a demo run
		// makes its own, as its database is new every run.
		"SECRET_KEY": secretbox.NewKey(),
	}
	for k, v := range o.Blobs {
		vars[k] = v
	}
	for k, v := range o.Env {
		vars[k] = v
	}
	cfg, err := demoConfig(vars)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	if err := store.MigrateUp(ctx, o.DatabaseURL); err != nil {
		_ = ln.Close()
		return nil, err
	}
	st, err := store.Open(ctx, o.DatabaseURL)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	seams := &server.Seams{
		Resolver:                sites,
		Dial:                    sites.DialContext,
		RootCAs:                 sites.RootCAs(),
		BrowserIgnoreCertErrors: o.BrowserPath != "",
		RiverPollInterval:       o.RiverPoll,
		// The Owner hears of a Site whose pages changed shape within
		// minutes, not the hour a deployment waits.
		OwnerWatchEvery: cmp.Or(o.WatchEvery, 30*time.Second), OwnerFailingHold: cmp.Or(o.FailingHold, time.Minute), OwnerMinPolls: 1,
	}
	srv, err := server.New(ctx, server.Deps{Config: cfg, Store: st, Logger: o.Logger, Version: o.Version, Seams: seams})
	if err != nil {
		st.Close()
		_ = ln.Close()
		return nil, err
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	l := &lectern{Server: srv, Store: st, Config: cfg, BaseURL: base, stop: stop, done: make(chan error, 1)}
	go func() { l.done <- srv.Run(runCtx, ln) }()
	if err := waitReady(ctx, base); err != nil {
		_ = l.Close()
		return nil, err
	}
	return l, nil
}

// configMu serialises demoConfig: config.Load reads through the process
// environment.
var configMu sync.Mutex

// demoConfig is the configuration of vars with every other setting at its
// default; the caller's own environment is not read, so the demo is the same
// whatever the shell exports.
func demoConfig(vars map[string]string) (config.Config, error) {
	configMu.Lock()
	defer configMu.Unlock()
	return config.Load(func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok && v != ""
	}, "serve")
}

// Close stops the server gracefully and closes the store.
func (l *lectern) Close() error {
	l.stop()
	err := <-l.done
	l.Store.Close()
	return err
}

func waitReady(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lectern at %s did not become ready: %w", base, errors.Join(err, ctx.Err()))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// newReader creates a Reader (an Owner when owner is set) with password and
// an API token, and returns the Reader's id and the token.
func newReader(ctx context.Context, st *store.Store, name, password string, owner bool) (int64, string, error) {
	hash, err := credential.HashPassword(password)
	if err != nil {
		return 0, "", err
	}
	r, err := st.CreateReader(ctx, name, hash, owner)
	if err != nil {
		return 0, "", fmt.Errorf("create Reader %s: %w", name, err)
	}
	token, tokenHash, err := credential.NewToken()
	if err != nil {
		return 0, "", err
	}
	if _, err := st.CreateToken(ctx, r.ID, "demo userscript", tokenHash); err != nil {
		return 0, "", err
	}
	return r.ID, token, nil
}

// demoDatabase is the database `make demo` uses: lectern_demo on the server
// of DATABASE_URL when set, else on the local cluster under ./.lectern/pg
// that `make run` uses too. It starts empty on every run, so the demo
// always begins the same way; the Readers' own database is never touched.
const demoDatabase = "lectern_demo"

// prepareDatabase (re)creates the database name, empty, and returns its URL.
func prepareDatabase(ctx context.Context, databaseURL, clusterDir, name string) (string, error) {
	admin := databaseURL
	if admin == "" {
		c, err := store.StartLocalCluster(ctx, clusterDir, false)
		if err != nil {
			return "", fmt.Errorf("local Postgres under %s: %w (or set DATABASE_URL)", clusterDir, err)
		}
		admin = c.URL("postgres")
	}
	u, err := url.Parse(admin)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", errors.New("DATABASE_URL must be a postgres:// URL")
	}
	// Connected to the demo database itself, it could not be dropped.
	if strings.TrimPrefix(u.Path, "/") == name {
		u.Path = "/postgres"
	}
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", u.Redacted(), err)
	}
	defer conn.Close(ctx)
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		return "", fmt.Errorf("drop the previous demo database %s: %w", name, err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return "", fmt.Errorf("create the demo database %s: %w", name, err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// demoDataDir keeps the demo's Covers apart from `make run`'s.
func demoDataDir(root string) string { return filepath.Join(root, ".lectern", "demo") }
