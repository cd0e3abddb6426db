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

	"github.com/lectern-reader/lectern/backend/internal/addedsites"
	"github.com/lectern-reader/lectern/backend/internal/api"
	"github.com/lectern-reader/lectern/backend/internal/archive"
	"github.com/lectern-reader/lectern/backend/internal/backup"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/fetch/browser"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/fetch/pacing"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/metrics"
	"github.com/lectern-reader/lectern/backend/internal/notify"
	"github.com/lectern-reader/lectern/backend/internal/poll"
	"github.com/lectern-reader/lectern/backend/internal/schedule"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/tracker"
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
	Fetcher fetch.Fetcher
	// BrowserIgnoreCertErrors lets a launched Chromium accept the fixtures'
	// certificates.
	BrowserIgnoreCertErrors bool
	// RiverPollInterval shortens River's fallback fetch poll.
	RiverPollInterval time.Duration
	// OwnerWatchEvery and OwnerFailingHold shorten the Owner alerts' look
	// interval and how long a Site must fail before it is told, and
	// OwnerMinPolls lowers the polls a Site is judged on (the demo).
	OwnerWatchEvery, OwnerFailingHold time.Duration
	OwnerMinPolls                     int
	// RescueStuckJobsAfter shortens how long a job left running by a
	// replica that died (SIGKILL) waits before River runs it again
	// (River's default: an hour). River rescues a job only once its
	// timeout has passed too, so the poll's timeout and River's default
	// one are lowered to it.
	RescueStuckJobsAfter time.Duration
	// PollInterval replaces POLL_INTERVAL without the configuration's
	// one-minute floor.
	PollInterval time.Duration
	// SettingsTTL and SettingsNow replace how old the replica's copy of
	// the Owner's settings may get and the clock that ages it, so a test
	// can see another replica's change arrive without sleeping.
	SettingsTTL time.Duration
	SettingsNow func() time.Time
	// SitesRefresh replaces SITES_REFRESH without its one-second floor.
	SitesRefresh time.Duration
}

// jobs is the background half of a replica: the River client with its
// workers, the fetch tree they share, and the Owner's controls.
type jobs struct {
	client  *river.Client[pgx.Tx]
	archive *archive.Service // nil when no ARCHIVE_DIR is configured
	// trackers push Progress to AniList, MyAnimeList and MangaUpdates.
	trackers *tracker.Service
	fetch    *fetch.Tree
	queue    *poll.Queue
	// policy is POLL_POLICY, budgets each Site's budget of scheduled polls.
	policy   string
	budgets  poll.Budgets
	interval time.Duration
	// listings is POLL_LISTINGS under the adaptive policy.
	listings bool
	working  bool
	started  bool
	// watchEvery is the Owner alerts' look interval; 0 is WatchInterval.
	watchEvery time.Duration
}

// newJobs builds the background half in named steps: the fetch tree, the
// poll's settings, the River client over an empty workers bundle, the
// services (which insert through the client), and last their workers,
// registered in the bundle before the client starts. River reads the bundle
// when it works a job, so the services never need a client set on them
// after the fact.
func newJobs(d Deps) (*jobs, error) {
	seams := d.seams()
	tree, err := buildFetch(d.Config, d.Store, d.Registry, d.Logger, d.Metrics, seams)
	if err != nil {
		return nil, err
	}
	j := &jobs{fetch: tree, working: d.Config.Workers > 0, interval: pollInterval(d.Config, seams)}
	budgetOverrides, err := d.Config.Budgets()
	if err != nil {
		return nil, err
	}
	if j.budgets, err = poll.NewBudgets(d.Registry, budgetOverrides, tree.Policy.Paces); err != nil {
		return nil, err
	}
	// The adaptive policy is the default; POLL_POLICY=interval falls back.
	j.policy = poll.PolicyAdaptive
	if d.Config.PollPolicy == poll.PolicyInterval {
		j.policy = poll.PolicyInterval
	}
	j.listings = d.Config.PollListings && j.adaptive()

	workers := river.NewWorkers()
	j.watchEvery = seams.OwnerWatchEvery
	periodic := j.periodicJobs(d.Config)
	if j.client, err = newRiverClient(d, workers, j.working, periodic, pollTimeout(d.Config, seams), tree.Policy); err != nil {
		return nil, err
	}
	j.queue = &poll.Queue{Client: j.client, Store: d.Store, Registry: d.Registry, HintsPlanned: j.adaptive(),
		Policy: tree.Policy, Logger: d.Logger}
	if j.trackers, err = newTrackers(d, j.client); err != nil {
		return nil, err
	}
	if d.Config.ArchiveDir != "" {
		if j.archive, err = newArchive(d, tree, j.siteFetcher(seams), j.client); err != nil {
			return nil, err
		}
	}
	if j.working {
		if err := j.addWorkers(d, workers, seams); err != nil {
			return nil, err
		}
	}
	return j, nil
}

func (d Deps) seams() *Seams {
	if d.Seams == nil {
		return &Seams{}
	}
	return d.Seams
}

func (j *jobs) adaptive() bool { return j.policy == poll.PolicyAdaptive }

// siteFetcher is the fetcher of Site pages: the tree's, or a test's fake.
func (j *jobs) siteFetcher(seams *Seams) fetch.Fetcher {
	if seams.Fetcher != nil {
		return seams.Fetcher
	}
	return j.fetch.Sites
}

// planEvery is how often plan_polls runs: POLL_INTERVAL under the interval
// policy, a third of the adaptive plan's horizon under the adaptive one.
func (j *jobs) planEvery() time.Duration {
	if !j.adaptive() {
		return j.interval
	}
	return (&poll.Adaptive{Planner: schedule.Planner{Interval: j.interval}}).PlanEvery()
}

// pollInterval is POLL_INTERVAL, or a test's shorter one.
func pollInterval(cfg config.Config, seams *Seams) time.Duration {
	interval := cfg.PollInterval
	if seams.PollInterval > 0 {
		interval = seams.PollInterval
	}
	if interval <= 0 {
		interval = time.Hour
	}
	return interval
}

// pollTimeout bounds one poll: time for pacing waits and a browser read,
// or a test's rescue time.
func pollTimeout(cfg config.Config, seams *Seams) time.Duration {
	if seams.RescueStuckJobsAfter > 0 {
		return seams.RescueStuckJobsAfter
	}
	return pollJobTimeout(cfg)
}

// newRiverClient builds the replica's one River client over workers, with
// the periodic jobs on a working replica (WORKERS at once on queue
// "default"), insert-only when WORKERS is 0. Every job passes the Owner's
// pause of all background work first (poll.PauseMiddleware).
func newRiverClient(d Deps, workers *river.Workers, working bool, periodic []*river.PeriodicJob, pollTimeout time.Duration,
	policy *fetch.Policy) (*river.Client[pgx.Tx], error) {
	seams := d.seams()
	rc := &river.Config{Logger: d.Logger.With("component", "river")}
	if d.Metrics != nil {
		rc.Middleware = []rivertype.Middleware{d.Metrics.JobMiddleware()}
	}
	rc.Middleware = append(rc.Middleware, &poll.PauseMiddleware{Policy: policy})
	if working {
		rc.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: d.Config.Workers}}
		rc.Workers = workers
		rc.PeriodicJobs = periodic
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
	return client, nil
}

// periodicJobs are the replica's periodic jobs, run by the elected leader:
// the Poll's plan, the notifications' scan, the Owner alerts' watch and,
// with an archive, its sweep
// (ARCHIVE_SWEEP; 0 turns it off).
func (j *jobs) periodicJobs(cfg config.Config) []*river.PeriodicJob {
	out := []*river.PeriodicJob{poll.PeriodicPlan(j.planEvery()), notify.PeriodicScan(notify.ScanInterval), notify.PeriodicWatch(j.watchEvery)}
	if cfg.ArchiveDir != "" && cfg.ArchiveSweep > 0 {
		out = append(out, archive.PeriodicSweep(cfg.ArchiveSweep))
	}
	if cfg.BackupURL != "" {
		out = append(out, backup.Periodic())
	}
	return out
}

// addWorkers registers every job kind's worker: poll_series, plan_polls,
// fetch_cover, the archive's and the notifications'.
func (j *jobs) addWorkers(d Deps, workers *river.Workers, seams *Seams) error {
	tree := j.fetch
	poller := &poll.Poller{Store: d.Store, Registry: d.Registry, Policy: tree.Policy, Fetch: j.siteFetcher(seams),
		Covers: cover.Queue{Client: j.client}, Interval: j.interval, Adaptive: j.adaptive(), Logger: d.Logger}
	if j.archive != nil {
		// Archive chapters share the Poll's workers: at most half of them,
		// so polls always find a worker.
		j.archive.MaxRunning = max(1, d.Config.Workers/2)
		j.archive.SweepEvery = d.Config.ArchiveSweep
		poller.Archive = j.archive
		if err := j.archive.AddWorkers(workers); err != nil {
			return err
		}
	}
	river.AddWorker(workers, &poll.PollWorker{Poller: poller, JobTimeout: pollTimeout(d.Config, seams)})
	plan := &poll.PlanWorker{Scheduler: &poll.Scheduler{Store: d.Store, Interval: j.interval, Policy: tree.Policy, Logger: d.Logger}}
	if j.adaptive() {
		plan.Adaptive = &poll.Adaptive{Store: d.Store, Registry: d.Registry, Planner: schedule.Planner{Interval: j.interval},
			Budgets: j.budgets, Policy: tree.Policy, Logger: d.Logger, Listings: j.listings}
	}
	river.AddWorker(workers, &poll.ListingWorker{Listings: &poll.Listings{Store: d.Store, Registry: d.Registry, Policy: tree.Policy,
		Fetch: poller.Fetch, Logger: d.Logger}})
	river.AddWorker(workers, plan)
	var images cover.BrowserImages
	if tree.Browser != nil {
		images = tree.Browser
	}
	river.AddWorker(workers, &cover.FetchWorker{Fetcher: &cover.Fetcher{
		Store: d.Store, Covers: d.Blobs.Covers,
		Images: tree.Gate, Browser: images, MaxBytes: tree.Gate.MaxBytes(),
		Pacer: tree.Pacer, Policy: tree.Policy, Logger: d.Logger,
	}})
	newNotifier(d, j.trackers.Box).AddWorkers(workers)
	watch := newWatch(d, j.trackers.Box)
	watch.FailingHold, watch.MinPolls = seams.OwnerFailingHold, seams.OwnerMinPolls
	river.AddWorker(workers, &notify.WatchWorker{W: watch})
	if d.Config.BackupURL != "" {
		dir, err := backup.DirOf(d.Config.BackupURL)
		if err != nil {
			return err
		}
		river.AddWorker(workers, &backup.Worker{D: &backup.Daily{Pool: d.Store.Pool, Stores: d.Blobs, Dir: dir,
			Keep: d.Config.BackupKeep, Logger: d.Logger}})
	}
	river.AddWorker(workers, &tracker.SyncWorker{S: j.trackers})
	return nil
}

// buildFetch builds the replica's fetch tree: the destination gate over the
// test seams' network, the Postgres pacing gate (timed by the metrics), the
// plain fetcher and, when one is configured, the browser.
func buildFetch(cfg config.Config, st *store.Store, reg *latest.Registry, logger *slog.Logger, m *metrics.Metrics, seams *Seams) (*fetch.Tree, error) {
	overrides, err := cfg.Paces()
	if err != nil {
		return nil, err
	}
	paces, err := fetch.NewPaces(reg, overrides)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	var pacer fetch.Pacer = pacing.New(st, pacing.Options{})
	if m != nil {
		pacer = m.TimePacing(pacer)
	}
	o := fetch.Options{
		Registry: reg, Paces: paces, States: st, Pacer: pacer,
		Settings: &fetch.SettingsReader{Source: ownerSettings{st}, TTL: seams.SettingsTTL, Now: seams.SettingsNow},
		Gate: gate.New(gate.Options{
			MaxBytes: cfg.CoverMaxBytes, UserAgent: cfg.UserAgent,
			Resolver: seams.Resolver, Dial: seams.Dial, RootCAs: seams.RootCAs,
		}),
		Plain: fetch.PlainOptions{
			MaxBytes: cfg.FetchMaxBytes, UserAgent: cfg.UserAgent,
			Timeout: cfg.FetchTimeout, ConnectTimeout: cfg.FetchConnectTimeout, HeaderTimeout: cfg.FetchHeaderTimeout,
		},
		BrowserTimeout: cfg.BrowserTimeout, RootCAs: seams.RootCAs, Logger: logger,
	}
	if cfg.BrowserURL != "" || cfg.BrowserPath != "" {
		o.Browser = &browser.Options{
			URL: cfg.BrowserURL, Path: cfg.BrowserPath, Idle: cfg.BrowserIdle, Logger: logger,
			ProxyListen: cfg.BrowserProxyListen, ProxyAddr: cfg.BrowserProxyAddr,
			IgnoreCertErrors: seams.BrowserIgnoreCertErrors,
		}
		if m != nil {
			// A refusal at the proxy never reaches a job's error: count it here.
			o.BrowserDial = m.CountRefusals(metrics.ViaBrowser, o.Gate.DialContext)
		}
	}
	return fetch.New(o), nil
}

// NewSiteFetcher builds the Poll's Site fetcher (plain or browser per Site,
// pinned, paced through st's database) for a one-off fetch such as
// `lectern probe URL`. close releases the browser. seams may be nil. The
// Owner's run-time settings apply to it too: a paused Site is not probed.
func NewSiteFetcher(cfg config.Config, st *store.Store, reg *latest.Registry, logger *slog.Logger, seams *Seams) (fetch.Fetcher, func() error, error) {
	if seams == nil {
		seams = &Seams{}
	}
	tree, err := buildFetch(cfg, st, reg, logger, nil, seams)
	if err != nil {
		return nil, nil, err
	}
	return tree.Sites, tree.Close, nil
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

// admin is the Owner's API over the queue.
func (j *jobs) admin(st *store.Store, log *slog.Logger, sites *addedsites.Service) func(r chi.Router) {
	ad := &api.Admin{Store: st, Console: j.console(st), Logger: log, Sites: sites}
	return ad.Routes
}

func (j *jobs) controls() poll.Controls { return j.queue }

// console is the Poll as the Owner sees it, in the API and the web console.
func (j *jobs) console(st *store.Store) *poll.Console {
	return &poll.Console{Store: st, Registry: j.fetch.Policy.Registry, Controls: j.controls(), Policy: j.policy,
		Interval: j.interval, Paces: j.fetch.Policy.Paces, Budgets: j.budgets, Fetch: j.fetch.Policy, Listings: j.listings}
}

// StartJobs starts working background jobs on this replica (nothing when
// WORKERS is 0). Run calls it; tests that drive the queue without HTTP may
// too.
func (s *Server) StartJobs(ctx context.Context) error {
	j := s.jobs
	if s.stopSites == nil {
		// Every replica, working or not, follows the Owner's added Sites:
		// one that only serves HTTP resolves their URLs too.
		refreshCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		s.stopSites = cancel
		every := s.cfg.SitesRefresh
		if seams := s.seams; seams != nil && seams.SitesRefresh > 0 {
			every = seams.SitesRefresh
		}
		go s.sites.Run(refreshCtx, every)
	}
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
	if s.stopSites != nil {
		s.stopSites()
		s.stopSites = nil
	}
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
	if err := j.fetch.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close browser: %w", err))
	}
	return errors.Join(errs...)
}

// ownerSettings reads the Owner's run-time settings from the store for the
// fetch policy (fetch ↛ store).
type ownerSettings struct{ st *store.Store }

func (o ownerSettings) Settings(ctx context.Context) (fetch.Settings, error) {
	s, err := o.st.OwnerSettings(ctx)
	if err != nil {
		return fetch.Settings{}, err
	}
	out := fetch.Settings{AllPaused: s.AllPaused, Sites: make(map[string]fetch.SiteSettings, len(s.Sites))}
	for name, ss := range s.Sites {
		out.Sites[name] = fetch.SiteSettings{Paused: ss.Paused, Pace: ss.Pace, Budget: ss.Budget}
	}
	return out, nil
}
