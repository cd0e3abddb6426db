package server

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/lectern-reader/lectern/backend/internal/api"
	"github.com/lectern-reader/lectern/backend/internal/archive"
	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/fetch/browser"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/fetch/pacing"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/metrics"
	"github.com/lectern-reader/lectern/backend/internal/schedule"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/web"
)

// Seams replace the network under the fetchers, so tests can stand loopback
// HTTPS fixture servers in for Site hosts and image hosts. Production
// leaves them all zero.
type Seams struct {
	// Resolver and Dial stand in for DNS and the network under the
	// destination gate; the plain Site fetcher and the browser's proxy dial
	// through the same gate, so they reach the fixtures too.
	Resolver gate.Resolver
	Dial     gate.DialFunc
	// RootCAs trusts the fixtures' throwaway CA.
	RootCAs *x509.CertPool
	// Fetcher replaces the Site fetcher altogether (a fake).
	Fetcher latest.Fetcher
	// BrowserIgnoreCertErrors lets a launched Chromium accept the fixtures'
	// certificates.
	BrowserIgnoreCertErrors bool
	// RiverPollInterval shortens River's fallback fetch poll.
	RiverPollInterval time.Duration
	// RescueStuckJobsAfter shortens how long a job left running by a
	// replica that died (SIGKILL) waits before River runs it again
	// (River's default: an hour). River rescues a job only once its
	// timeout has passed too, so the poll's timeout and River's default
	// one are lowered to it.
	RescueStuckJobsAfter time.Duration
	// PollInterval replaces POLL_INTERVAL without the configuration's
	// one-minute floor.
	PollInterval time.Duration
}

// jobs is the background half of a replica: the River client with its
// workers, the fetchers and the pacing gate they share, and the browser.
type jobs struct {
	client  *river.Client[pgx.Tx]
	archive *archive.Service // nil when no ARCHIVE_DIR is configured
	browser *browser.Browser
	queue   *latest.Queue
	paces   latest.Paces
	// policy is POLL_POLICY, budgets each Site's budget of scheduled polls.
	policy   string
	budgets  latest.Budgets
	interval time.Duration
	working  bool
	started  bool
}

// newJobs builds the River client over the store's pool: with workers for
// poll_series, plan_polls and fetch_cover (queue "default", WORKERS at
// once) and the periodic plan, or insert-only when WORKERS is 0.
func newJobs(d Deps) (*jobs, error) {
	cfg := d.Config
	seams := d.Seams
	if seams == nil {
		seams = &Seams{}
	}
	f, err := buildFetch(cfg, d.Store, d.Logger, d.Metrics, seams)
	if err != nil {
		return nil, err
	}
	interval := cfg.PollInterval
	if seams.PollInterval > 0 {
		interval = seams.PollInterval
	}
	if interval <= 0 {
		interval = time.Hour
	}
	budgetOverrides, err := cfg.Budgets()
	if err != nil {
		return nil, err
	}
	budgets, err := latest.NewBudgets(budgetOverrides, f.paces)
	if err != nil {
		return nil, err
	}
	// The adaptive policy is the default; POLL_POLICY=interval falls back.
	adaptive := cfg.PollPolicy != latest.PolicyInterval
	j := &jobs{paces: f.paces, browser: f.browser, working: cfg.Workers > 0,
		policy: latest.PolicyAdaptive, budgets: budgets, interval: interval}
	if !adaptive {
		j.policy = latest.PolicyInterval
	}
	var images cover.BrowserImages
	if f.browser != nil {
		images = f.browser
	}
	fetch := f.fetch
	if seams.Fetcher != nil {
		fetch = seams.Fetcher
	}
	gate, paces := f.dest, f.paces

	poller := &latest.Poller{Store: d.Store, Fetch: fetch, Interval: interval, Adaptive: adaptive, Logger: d.Logger}
	workers := river.NewWorkers()
	pollTimeout := pollJobTimeout(cfg)
	if seams.RescueStuckJobsAfter > 0 {
		pollTimeout = seams.RescueStuckJobsAfter
	}
	river.AddWorker(workers, &latest.PollWorker{Poller: poller, JobTimeout: pollTimeout})
	plan := &latest.PlanWorker{Scheduler: &latest.Scheduler{Store: d.Store, Interval: interval, Logger: d.Logger}}
	planEvery := interval
	if adaptive {
		plan.Adaptive = &latest.Adaptive{Store: d.Store, Planner: schedule.Planner{Interval: interval}, Budgets: budgets, Logger: d.Logger}
		planEvery = plan.Adaptive.PlanEvery()
	}
	river.AddWorker(workers, plan)
	river.AddWorker(workers, &cover.FetchWorker{Fetcher: &cover.Fetcher{
		Store: d.Store, Covers: &blob.Store{Dir: cfg.CoverDir},
		Images: gateImages{gate}, Browser: images, MaxBytes: gate.MaxBytes(),
		Pace: f.pace.Wait, Paces: paces, BrowserTimeout: cfg.BrowserTimeout, Logger: d.Logger,
	}})

	if cfg.ArchiveDir != "" {
		if j.archive, err = addArchiveJobs(d, f, fetch, workers); err != nil {
			return nil, err
		}
		// Archive chapters share the Poll's workers: at most half of them,
		// so polls always find a worker.
		j.archive.MaxRunning = max(1, cfg.Workers/2)
		poller.Archive = j.archive
	}

	rc := &river.Config{Logger: d.Logger.With("component", "river")}
	if d.Metrics != nil {
		rc.Middleware = []rivertype.Middleware{d.Metrics.JobMiddleware()}
	}
	if j.working {
		rc.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.Workers}}
		rc.Workers = workers
		rc.PeriodicJobs = []*river.PeriodicJob{latest.PeriodicPlan(planEvery)}
		addNotifyJobs(d, workers, rc)
		if seams.RiverPollInterval > 0 {
			rc.FetchPollInterval = seams.RiverPollInterval
			rc.FetchCooldown = min(seams.RiverPollInterval, 100*time.Millisecond)
		}
		// A job left running by a replica that died is run again once it
		// has been running this long and its own timeout has passed too
		// (River checks both), so a long archive job is never rescued while
		// it may still be working; a poll waits minutes, not River's hour.
		rc.RescueStuckJobsAfter = rescueStuckJobsAfter(pollTimeout)
		if seams.RescueStuckJobsAfter > 0 {
			rc.RescueStuckJobsAfter = seams.RescueStuckJobsAfter
			rc.JobTimeout = seams.RescueStuckJobsAfter
		}
		// A job still running when the replica stops gets this long to end
		// before its context is cancelled.
		rc.SoftStopTimeout = 20 * time.Second
	}
	client, err := river.NewClient(riverpgxv5.New(d.Store.Pool), rc)
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	j.client = client
	if j.archive != nil {
		j.archive.River = client
	}
	poller.Covers = cover.Queue{Client: client}
	j.queue = &latest.Queue{Client: client, Store: d.Store, HintsPlanned: adaptive, Logger: d.Logger}
	return j, nil
}

// fetchParts are the fetchers of a replica and what they share: the
// destination gate, the pacing gate with its per-Site intervals, and the
// browser when one is configured.
type fetchParts struct {
	dest    *gate.Client
	pace    pacer
	paces   latest.Paces
	browser *browser.Browser
	fetch   latest.Fetcher
}

// pacer is the pacing gate's shape: *pacing.Gate, or the same timed by the
// metrics.
type pacer interface {
	Wait(ctx context.Context, host string, every time.Duration) error
}

func buildFetch(cfg config.Config, st *store.Store, logger *slog.Logger, m *metrics.Metrics, seams *Seams) (*fetchParts, error) {
	overrides, err := cfg.Paces()
	if err != nil {
		return nil, err
	}
	paces, err := latest.NewPaces(overrides)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	f := &fetchParts{paces: paces, pace: pacing.New(st, pacing.Options{})}
	if m != nil {
		f.pace = m.TimePacing(f.pace)
	}
	pace := latest.PaceCounted(func(ctx context.Context, host string) error { return f.pace.Wait(ctx, host, paces.ForHost(host)) })
	f.dest = gate.New(gate.Options{
		MaxBytes: cfg.CoverMaxBytes, UserAgent: cfg.UserAgent,
		Resolver: seams.Resolver, Dial: seams.Dial, RootCAs: seams.RootCAs,
	})
	plain := latest.NewPlainFetcher(latest.PlainOptions{
		MaxBytes: cfg.FetchMaxBytes, UserAgent: cfg.UserAgent,
		Timeout: cfg.FetchTimeout, ConnectTimeout: cfg.FetchConnectTimeout, HeaderTimeout: cfg.FetchHeaderTimeout,
		// A Site's own DNS cannot point the Poll at the Owner's network either.
		Dial:    f.dest.DialContext,
		RootCAs: seams.RootCAs,
		Pace:    pace,
	})
	fetchers := &latest.Fetchers{Plain: plain, BrowserTimeout: cfg.BrowserTimeout}
	if cfg.BrowserURL != "" || cfg.BrowserPath != "" {
		dial := f.dest.DialContext
		if m != nil {
			// A refusal at the proxy never reaches a job's error: count it here.
			dial = m.CountRefusals(metrics.ViaBrowser, dial)
		}
		f.browser = browser.New(browser.Options{
			URL: cfg.BrowserURL, Path: cfg.BrowserPath,
			Dial: dial, Pace: pace, Logger: logger,
			ProxyListen: cfg.BrowserProxyListen, ProxyAddr: cfg.BrowserProxyAddr,
			IgnoreCertErrors: seams.BrowserIgnoreCertErrors,
		})
		fetchers.Browser = f.browser
	}
	f.fetch = fetchers
	return f, nil
}

// NewSiteFetcher builds the Poll's Site fetcher (plain or browser per Site,
// pinned, paced through st's database) for a one-off fetch such as
// `lectern probe URL`. close releases the browser. seams may be nil.
func NewSiteFetcher(cfg config.Config, st *store.Store, logger *slog.Logger, seams *Seams) (fetch latest.Fetcher, close func() error, err error) {
	if seams == nil {
		seams = &Seams{}
	}
	f, err := buildFetch(cfg, st, logger, nil, seams)
	if err != nil {
		return nil, nil, err
	}
	close = func() error { return nil }
	if f.browser != nil {
		close = f.browser.Close
	}
	return f.fetch, close, nil
}

// rescueStuckJobsAfter is a minute past the poll's timeout: River's
// default job timeout (a minute, for the periodic planner) is below it, as
// River requires.
func rescueStuckJobsAfter(pollTimeout time.Duration) time.Duration {
	return pollTimeout + time.Minute
}

// pollJobTimeout leaves a poll time for pacing waits and a browser read.
func pollJobTimeout(cfg config.Config) time.Duration {
	return max(3*time.Minute, cfg.FetchTimeout+cfg.BrowserTimeout+time.Minute)
}

// gateImages adapts the destination gate to the Cover job's ImageFetcher.
type gateImages struct{ c *gate.Client }

func (g gateImages) FetchImage(ctx context.Context, rawURL, referer string) (cover.Image, error) {
	img, err := g.c.FetchImage(ctx, rawURL, referer)
	if err != nil {
		metrics.NoteRefusal(ctx, err)
		return cover.Image{}, err
	}
	return cover.Image{Bytes: img.Bytes, ContentType: img.ContentType, URL: img.URL}, nil
}

// admin is the Owner's API over the queue.
func (j *jobs) admin(st *store.Store, log *slog.Logger) func(r chi.Router) {
	ad := &api.Admin{Store: st, Controls: j.controls(), Paces: j.paces, Budgets: j.budgets, Policy: j.policy, Logger: log}
	return ad.Routes
}

// siteControls are the Owner's controls over the queue; resuming a Site also
// wakes its snoozed archive chapters, which sleep on the same back-off.
type siteControls struct {
	*latest.Queue
	archive *archive.Service
}

func (c siteControls) ResumeSite(ctx context.Context, site string) error {
	if err := c.Queue.ResumeSite(ctx, site); err != nil {
		return err
	}
	if c.archive != nil {
		if _, err := c.archive.WakeSite(ctx, site); err != nil {
			return fmt.Errorf("wake archive jobs of %s: %w", site, err)
		}
	}
	return nil
}

func (j *jobs) controls() siteControls { return siteControls{Queue: j.queue, archive: j.archive} }

// console is what the web Owner console needs of the Poll.
func (j *jobs) console() *web.PollConsole {
	return &web.PollConsole{Controls: j.controls(), Policy: j.policy, Interval: j.interval, Paces: j.paces, Budgets: j.budgets}
}

// StartJobs starts working background jobs on this replica (nothing when
// WORKERS is 0). Run calls it; tests that drive the queue without HTTP may
// too.
func (s *Server) StartJobs(ctx context.Context) error {
	j := s.jobs
	if !j.working || j.started {
		return nil
	}
	// River is stopped explicitly by StopJobs, so its context must outlive
	// the caller's cancellation.
	if err := j.client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start background jobs: %w", err)
	}
	j.started = true
	return nil
}

// StopJobs stops the background jobs gracefully: River stops fetching and
// waits for running jobs (within ctx and River's soft-stop timeout), then
// cancels what is left; the browser is closed last.
func (s *Server) StopJobs(ctx context.Context) error {
	j := s.jobs
	var errs []error
	if j.started {
		stopCtx, cancel := context.WithTimeout(ctx, 25*time.Second)
		err := j.client.Stop(stopCtx)
		cancel()
		if err != nil {
			s.log.Warn("background jobs did not stop in time; cancelling them", "err", err)
			hardCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			if err := j.client.StopAndCancel(hardCtx); err != nil {
				errs = append(errs, fmt.Errorf("stop background jobs: %w", err))
			}
			cancel()
		}
		j.started = false
	}
	if j.browser != nil {
		if err := j.browser.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close browser: %w", err))
		}
	}
	return errors.Join(errs...)
}
