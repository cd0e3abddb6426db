// Package server composes Lectern: the router over every surface (API, web
// library, Covers, userscripts, health), the River client with its workers,
// and their start and graceful stop.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/addedsites"
	"github.com/lectern-reader/lectern/backend/internal/api"
	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/clientaddr"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/metrics"
	"github.com/lectern-reader/lectern/backend/internal/poll"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/tracker"
	"github.com/lectern-reader/lectern/backend/internal/web"
)

// Deps are what a Server is built from.
type Deps struct {
	Config  config.Config
	Store   *store.Store
	Logger  *slog.Logger
	Version string
	// Seams replace the fetchers' network in tests; nil in production.
	Seams *Seams
	// Metrics are the replica's collectors; nil builds them (observe.go).
	Metrics *metrics.Metrics
	// Registry is the Site registry every part of the replica asks; nil
	// means the built-in Sites.
	Registry *latest.Registry
	// Blobs are the stores of Cover and page bytes; nil builds them from
	// Config (Config.Blobs: BLOB_URL, or the volume).
	Blobs *blob.Stores
}

// Server is one Lectern replica.
type Server struct {
	cfg      config.Config
	registry *latest.Registry
	store    *store.Store
	log      *slog.Logger
	river    *river.Client[pgx.Tx]
	jobs     *jobs
	metrics  *metrics.Metrics
	library  *bookmark.Service
	// sites keeps the registry's added Sites in step with the store; the
	// refresh loop runs from StartJobs to StopJobs (stopSites).
	sites     *addedsites.Service
	stopSites context.CancelFunc
	seams     *Seams
	ui        *web.UI
	handler   http.Handler
	// proxies name the client in request logs (TRUSTED_PROXIES).
	proxies clientaddr.Trusted
}

// New builds a Server; nothing runs until Start.
func New(ctx context.Context, d Deps) (*Server, error) {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	d.Config.Fill()
	if d.Registry == nil {
		d.Registry = latest.Default()
	}
	proxies, err := clientaddr.Parse(d.Config.TrustedProxies)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: d.Config, registry: d.Registry, store: d.Store, log: d.Logger, proxies: proxies, seams: d.seams()}
	s.observe(&d)
	// The added Sites are in the registry before anything asks it. A
	// database that cannot be reached now leaves the built-in Sites alone in
	// it, and the refresh loop brings the added ones once it answers: a
	// replica starting during an outage still serves its 503s.
	s.sites = &addedsites.Service{Store: d.Store, Registry: d.Registry, Logger: d.Logger}
	if err := s.sites.Refresh(ctx); err != nil {
		d.Logger.WarnContext(ctx, "added Sites not loaded at start; the refresh retries", "err", err)
	}

	if d.Blobs == nil {
		if d.Blobs, err = blob.Open(d.Config.Blobs()); err != nil {
			return nil, err
		}
	}
	j, err := newJobs(d)
	if err != nil {
		return nil, err
	}
	s.jobs, s.river = j, j.client
	// The probe ("Test this Site") fetches through the Poll's own tree:
	// pinned to the pasted URL's host, paced, dialling through the gate.
	s.sites.Pages = func(site *latest.Site) latest.PageFetcher { return fetch.Pages(j.fetch.Sites, site) }

	s.library = &bookmark.Service{
		Store:    d.Store,
		Registry: d.Registry,
		Acquire:  poll.Acquirer{Client: j.client},
		Hint:     j.queue,
		Sync:     j.trackers,
		BaseURL:  d.Config.PublicBaseURL,
		Logger:   d.Logger,
	}
	a := &api.API{Store: d.Store, Library: s.library, Logger: d.Logger, Version: d.Version,
		AdminRoutes: []func(chi.Router){j.admin(d.Store, d.Logger, s.sites)},
		ListCache:   api.NewListCache(d.Config.ListCacheBytes)}
	s.metrics.ListCache(a.ListCache.Stats)
	a.ReaderRoutes = append(a.ReaderRoutes, a.ExportRoutes, a.ImportRoutes)
	if j.archive != nil {
		addArchiveRoutes(a, j.archive, d.Logger)
	}
	a.ReaderRoutes = append(a.ReaderRoutes, (&api.Trackers{Service: j.trackers, Library: s.library, Logger: d.Logger}).ReaderRoutes)
	notifications := newNotifyService(d, j.trackers.Box)
	a.ReaderRoutes = append(a.ReaderRoutes, (&api.Notify{Service: notifications, Logger: d.Logger}).ReaderRoutes)

	r := chi.NewRouter()
	r.Use(middleware.RequestID)
	r.Use(s.observeHTTP)
	r.Use(middleware.Recoverer)
	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	scripts, err := userscriptHandler(d.Config.PublicBaseURL, d.Registry, s.sites)
	if err != nil {
		return nil, fmt.Errorf("userscripts: %w", err)
	}
	r.Get("/userscripts/{name}", scripts)
	r.Mount("/api", a.Routes())
	// Public by design (docs/adr/0007): an <img> carries no credential.
	covers := cover.NewHandler(d.Blobs.Covers)
	covers.Covers = d.Store
	covers.Logger = d.Logger
	r.Handle("/covers/{address}", covers)
	ui, err := web.New(web.Deps{Config: d.Config, Store: d.Store, Library: s.library, Logger: d.Logger, Version: d.Version,
		Notify: notifications, Archive: j.archive, Poll: j.console(d.Store), Trackers: j.trackers, Sites: s.sites})
	if err != nil {
		return nil, err
	}
	s.ui = ui
	if n, err := d.Store.CountReaders(ctx); err == nil && n == 0 {
		// The first run's door: /setup answers this machine, or whoever
		// types this code (web/setup.go).
		d.Logger.WarnContext(ctx, "first run: no Owner yet; create it at /setup from this machine, or elsewhere with the setup code",
			"setup_code", ui.SetupCode(), "url", strings.TrimSuffix(d.Config.PublicBaseURL, "/")+"/setup")
	}
	r.Mount("/", ui.Handler())
	s.handler = r
	return s, nil
}

// Sites is the replica's service of added Sites (tests refresh through it).
func (s *Server) Sites() *addedsites.Service { return s.sites }

// Handler is the whole router, for tests and for Run.
func (s *Server) Handler() http.Handler { return s.handler }

// WebRoutes are the web library's routes, mounted at "/" behind a guard that
// hides them from a walk of Handler; a test that must see every route of the
// deployment walks both.
func (s *Server) WebRoutes() chi.Routes { return s.ui.Routes() }

// Library is the Bookmark service the router uses.
func (s *Server) Library() *bookmark.Service { return s.library }

// Trackers is the trackers' service (its sync job, links and mappings).
func (s *Server) Trackers() *tracker.Service { return s.jobs.trackers }

// River is the queue client.
func (s *Server) River() *river.Client[pgx.Tx] { return s.river }

// Run serves HTTP on ln until ctx ends, then shuts down gracefully: stop
// accepting, let in-flight requests finish within the grace period.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      2 * time.Minute, // archive exports stream for a while
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	stopMetrics, err := s.serveMetrics(ctx)
	if err != nil {
		return err
	}
	defer stopMetrics()
	if err := s.StartJobs(ctx); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.InfoContext(ctx, "serving", "addr", ln.Addr().String(), "public_base_url", s.cfg.PublicBaseURL)

	var serveErr error
	select {
	case err := <-errc:
		serveErr = fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if serveErr == nil {
		if err := srv.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			serveErr = fmt.Errorf("http shutdown: %w", err)
		}
	}
	// HTTP stops first: a request still in flight may queue a job, which
	// any replica's workers then run.
	if err := s.StopJobs(context.Background()); err != nil && serveErr == nil {
		serveErr = err
	}
	return serveErr
}

// healthz answers while the process is alive.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// readyz answers 200 when the database is reachable and migrated to the
// version this binary expects, so a load balancer sends no traffic to a
// replica that cannot serve it.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	want, err := store.LatestMigration()
	if err == nil {
		var have uint
		have, err = s.store.AppliedMigration(ctx)
		if err == nil && have != want {
			err = fmt.Errorf("database at migration %d, this binary needs %d", have, want)
		}
	}
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "not ready: %v\n", err)
		return
	}
	_, _ = w.Write([]byte("ready\n"))
}
