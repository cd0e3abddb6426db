package archive_test

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/lectern-reader/lectern/backend/internal/fakenet"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The test binary re-executed with workerEnv set is an archive worker
// process: the archive's workers on a River client, as a replica runs them,
// over the database and archive directory the parent names, on the
// parent's fake network (fakenet.Net.Env).
const (
	workerEnv    = "LECTERN_ARCHIVE_WORKER"
	workerDBEnv  = "LECTERN_ARCHIVE_WORKER_DB"
	workerDirEnv = "LECTERN_ARCHIVE_WORKER_DIR"
)

// Short enough that River's rescuer takes a killed worker's job back
// within seconds; long enough for a loopback chapter.
const (
	workerJobTimeout = 4 * time.Second
	workerRescue     = 4 * time.Second
)

func workerMain() int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := runWorker(logger); err != nil {
		logger.Error("archive worker process", "err", err)
		return 1
	}
	return 0
}

func runWorker(logger *slog.Logger) error {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv(workerDBEnv))
	if err != nil {
		return err
	}
	defer pool.Close()
	n, err := fakenet.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	st := store.New(pool)
	svc, workers, err := newService(st, os.Getenv(workerDirEnv), n, rigOptions{JobTimeout: workerJobTimeout}, logger)
	if err != nil {
		return err
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}},
		Workers:              workers,
		FetchCooldown:        20 * time.Millisecond,
		FetchPollInterval:    50 * time.Millisecond,
		JobTimeout:           workerJobTimeout,
		RescueStuckJobsAfter: workerRescue,
		Logger:               logger.With("component", "river"),
	})
	if err != nil {
		return err
	}
	svc.River = client
	if err := client.Start(ctx); err != nil {
		return err
	}
	logger.Info("archive worker ready", "pid", os.Getpid())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return client.Stop(stopCtx)
}
