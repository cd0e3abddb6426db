package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/server"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func init() {
	commands["serve"] = command{summary: "run the server: API, web library, Covers and background jobs", run: cmdServe}
	commands["config"] = command{summary: "print every configuration variable with its default and meaning", run: cmdConfig}
}

func cmdServe(ctx context.Context, env *cmdEnv, args []string) int {
	fs := newFlags("serve", env, "Runs Lectern: migrates the database up (under an advisory lock, so replicas may\nstart together), then serves HTTP on LISTEN_ADDR and runs background jobs until\nSIGINT or SIGTERM. Configuration comes from the environment: see 'lectern config'.")
	if code, done := parse(fs, args); done {
		return code
	}
	cfg, err := config.Load(config.Lookup(env.getenv), "serve")
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 1
	}
	logger := newLogger(env.stderr, cfg)
	if err := serve(ctx, cfg, logger); err != nil {
		logger.Error("serve failed", "err", err)
		return 1
	}
	return 0
}

func serve(ctx context.Context, cfg config.Config, logger *slog.Logger) error {
	for _, dir := range []string{cfg.CoverDir, cfg.ArchiveDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
	}
	if err := store.MigrateUp(ctx, cfg.DatabaseURL); err != nil {
		return err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer st.Close()
	blobs, err := blob.Open(cfg.Blobs())
	if err != nil {
		return err
	}
	checkBucket(ctx, blobs, cfg, logger)
	srv, err := server.New(ctx, server.Deps{Config: cfg, Store: st, Logger: logger, Version: version, Blobs: blobs})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.ListenAddr, err)
	}
	return srv.Run(ctx, ln)
}

// checkBucket says at start, not at the first Cover, when the bucket of
// BLOB_URL is missing, unreachable or refuses the credentials. Not fatal: a
// bucket briefly away must not stop a replica that also serves Bookmarks
// (its Covers answer 503 until the bucket is back).
func checkBucket(ctx context.Context, blobs *blob.Stores, cfg config.Config, logger *slog.Logger) {
	checkCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := blobs.Check(checkCtx); err != nil {
		logger.ErrorContext(ctx, "the bucket of BLOB_URL cannot be used: Covers and archived pages answer 503 until it can",
			"blob_url", cfg.BlobURL, "s3_endpoint", cfg.S3Endpoint, "err", err)
	}
}

func cmdConfig(_ context.Context, env *cmdEnv, args []string) int {
	fs := newFlags("config", env, "Prints every environment variable Lectern reads, its default and its meaning.")
	markdown := fs.Bool("markdown", false, "print a Markdown table (docs/configuration.md)")
	if code, done := parse(fs, args); done {
		return code
	}
	if *markdown {
		config.Markdown(env.stdout)
	} else {
		config.Print(env.stdout)
	}
	return 0
}

// newLogger is JSON in production and text in development (LOG_FORMAT).
func newLogger(w io.Writer, cfg config.Config) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(strings.ToUpper(cfg.LogLevel)))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// newFlags makes a FlagSet whose -h prints the command's explanation.
func newFlags(name string, env *cmdEnv, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.stderr, "Usage: lectern %s\n\n%s\n", name, about)
		var has bool
		fs.VisitAll(func(*flag.Flag) { has = true })
		if has {
			fmt.Fprintln(env.stderr, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parse parses flags; done is true when the command should exit with code
// (after -h, or a usage error).
func parse(fs *flag.FlagSet, args []string) (code int, done bool) {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0, true
	}
	if err != nil {
		return 2, true
	}
	return 0, false
}
