// Package web is the server-rendered web library UI and the Owner console:
// html/template pages over the same Bookmark service as the API, so Covers,
// Progress and Latest Chapters look exactly as in the userscript panel.
//
// One file per page or action, named noun_verb (library.go, series_show.go,
// token_create.go, ...). Templates and static files are embedded from the
// repository's assets/ directory; every template is parsed and checked at start,
// so a missing one fails at boot rather than on a Reader's click.
//
// Security: sessions keep only the SHA-256 of the cookie value; every
// state-changing form carries a CSRF token (the session's, masked per response
// so compressed pages cannot leak it); cross-origin form posts are refused
// before they reach a handler; every page carries a CSP without inline script,
// frame-ancestors 'none' and Referrer-Policy no-referrer.
package web

import (
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	webassets "github.com/lectern-reader/lectern/assets"
	"github.com/lectern-reader/lectern/backend/internal/addedsites"
	"github.com/lectern-reader/lectern/backend/internal/archive"
	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/clientaddr"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/notify"
	"github.com/lectern-reader/lectern/backend/internal/poll"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/tracker"
)

// Deps are what the UI is built from.
type Deps struct {
	Config  config.Config
	Store   *store.Store
	Library *bookmark.Service
	Logger  *slog.Logger
	Version string
	// Now is the clock of relative times and the login limiter; nil means
	// time.Now.
	Now func() time.Time
	// Assets overrides the embedded templates and static files (tests of
	// the start-up checks); nil means the embedded assets/ directory.
	Assets fs.FS
	// Archive adds the archive's pages (archive.go); nil leaves them out.
	Archive *archive.Service
	// Notify adds the feed and push targets (feed.go, notify.go); nil
	// leaves them out.
	Notify *notify.Service
	// Trackers adds the trackers to Settings and the Series page
	// (trackers.go); nil leaves them out.
	Trackers *tracker.Service
	// Poll adds the Owner console's Sites, failing Series and queue pages
	// and the Owner's controls on the Series page (owner_poll.go); nil
	// leaves them out.
	Poll *poll.Console
	// Sites adds the Owner's add, edit, remove and "Test this Site" of
	// Sites of a family to the Sites page (owner_added_sites.go); nil
	// leaves them out.
	Sites *addedsites.Service
}

// UI serves the web library and the Owner console.
type UI struct {
	cfg     config.Config
	store   *store.Store
	lib     *bookmark.Service
	archive *archive.Service
	notify  *notify.Service
	poll    *poll.Console
	sites   *addedsites.Service
	// trackers are AniList, MyAnimeList and MangaUpdates; nil without them.
	trackers *tracker.Service
	log      *slog.Logger
	version  string
	now      func() time.Time

	views   map[string]*view
	assets  *assets
	limiter *limiter
	// proxies say whose X-Forwarded-For names the client (TRUSTED_PROXIES).
	proxies clientaddr.Trusted
	// setup is the first run's one-time setup code (setup.go).
	setup *setupCode
	// dummyHash is checked against when a login names nobody, so that a
	// wrong name costs the same time as a wrong password.
	dummyHash string

	sessionCookie string
	csrfCookie    string
	csp           string
	handler       http.Handler
	// mux is the router inside the cross-origin guard, for route walks.
	mux chi.Routes
}

// New builds the UI, parsing and checking every template and static file.
func New(d Deps) (*UI, error) {
	if d.Store == nil || d.Library == nil {
		return nil, fmt.Errorf("web UI: a Store and a Library are required")
	}
	u := &UI{
		cfg: d.Config, store: d.Store, lib: d.Library, archive: d.Archive, notify: d.Notify, poll: d.Poll, sites: d.Sites, trackers: d.Trackers, log: d.Logger, version: d.Version, now: d.Now,
	}
	if u.log == nil {
		u.log = slog.Default()
	}
	if u.now == nil {
		u.now = time.Now
	}
	if u.version == "" {
		u.version = "dev"
	}
	fsys := d.Assets
	if fsys == nil {
		fsys = webassets.FS
	}
	var err error
	if u.assets, err = loadAssets(fsys); err != nil {
		return nil, fmt.Errorf("web UI: %w", err)
	}
	if u.views, err = loadViews(fsys, u.assets); err != nil {
		return nil, fmt.Errorf("web UI: %w", err)
	}
	if u.dummyHash, err = credential.HashPassword("lectern-no-such-reader"); err != nil {
		return nil, fmt.Errorf("web UI: %w", err)
	}
	u.limiter = newLimiter(u.now)
	if u.setup, err = newSetupCode(); err != nil {
		return nil, fmt.Errorf("web UI: %w", err)
	}
	if u.proxies, err = clientaddr.Parse(d.Config.TrustedProxies); err != nil {
		return nil, fmt.Errorf("web UI: %w", err)
	}

	// The __Host- prefix makes the browser refuse the cookie unless it is
	// Secure, host-only and Path=/, so a sibling subdomain cannot plant one.
	u.sessionCookie, u.csrfCookie = "lectern_session", "lectern_csrf"
	if d.Config.Secure() {
		u.sessionCookie, u.csrfCookie = "__Host-lectern_session", "__Host-lectern_csrf"
	}
	u.csp = contentSecurityPolicy(d.Config.PublicBaseURL)
	u.handler = u.routes()
	return u, nil
}

// Handler is the UI's router, mounted at "/".
func (u *UI) Handler() http.Handler { return u.handler }

func (u *UI) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(headAsGet)
	r.Use(middleware.Compress(5, "text/html", "text/css", "text/javascript", "image/svg+xml"))
	r.NotFound(u.notFound)
	r.MethodNotAllowed(u.methodNotAllowed)

	r.Get("/static/{name}", u.static)
	u.feedRoutes(r)

	r.Group(func(r chi.Router) {
		r.Use(u.loadSession)
		r.Get("/", u.home)
		r.Get("/setup", u.setupShow)
		r.Post("/setup", u.setupCreate)
		r.Get("/login", u.loginShow)
		r.Post("/login", u.loginSubmit)
		u.uploadRoutes(r)

		r.Group(func(r chi.Router) {
			r.Use(u.requireReader)
			r.Use(u.checkCSRF)
			r.Post("/logout", u.logout)

			r.Get("/library", u.libraryRedirect)
			r.Get("/library/{kind}", u.libraryShow)
			r.Post("/library/caught-up", u.bookmarkCaughtUp)
			r.Post("/library/remove", u.bookmarkRemove)
			r.Get("/series/{key}", u.seriesShow)
			u.workRoutes(r)
			if u.archive != nil {
				u.archiveRoutes(r)
			}

			r.Get("/settings", u.settingsShow)
			r.Post("/settings/tokens", u.tokenCreate)
			r.Post("/settings/tokens/{id}/revoke", u.tokenRevoke)
			r.Post("/settings/password", u.passwordChange)
			u.notifyRoutes(r)
			u.trackerRoutes(r)

			r.Route("/owner", func(r chi.Router) {
				r.Use(u.requireOwner)
				r.Get("/", u.ownerHome)
				r.Get("/readers", u.ownerReaders)
				r.Post("/readers", u.readerCreate)
				r.Post("/readers/{id}/password", u.readerPassword)
				r.Post("/readers/{id}/owner", u.readerOwner)
				r.Get("/readers/{id}/delete", u.readerDeleteShow)
				r.Post("/readers/{id}/delete", u.readerDelete)
				if u.archive != nil {
					u.archiveOwnerRoutes(r)
				}
				if u.poll != nil {
					u.ownerPollRoutes(r)
				}
			})
		})
	})

	// Refuse cross-origin form posts (Sec-Fetch-Site / Origin) before any
	// handler runs; the CSRF token check behind it covers old browsers.
	u.mux = r
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.fail(w, r, http.StatusForbidden, "Request refused",
			"This form was sent from another site, so Lectern refused it. Open Lectern directly and try again.")
	}))
	// The security headers wrap everything, the guard's refusal included:
	// every answer of the UI, page, error page, 404 or refusal, carries them.
	return u.securityHeaders(cop.Handler(r))
}

// contentSecurityPolicy allows scripts and styles only from this origin and
// no inline script at all. Covers are absolute URLs on PUBLIC_BASE_URL, which
// may differ from the origin the page was opened on (a LAN address), so that
// origin is allowed for images too.
func contentSecurityPolicy(base string) string {
	img := "'self'"
	if u, err := url.Parse(base); err == nil && u.Scheme != "" && u.Host != "" {
		img += " " + u.Scheme + "://" + u.Host
	}
	return strings.Join([]string{
		"default-src 'none'",
		"script-src 'self'",
		"style-src 'self'",
		"img-src " + img,
		"form-action 'self'",
		"frame-ancestors 'none'",
		"base-uri 'none'",
	}, "; ")
}

func (u *UI) securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", u.csp)
		h.Set("X-Frame-Options", "DENY")
		// Links to Sites must not tell them where this deployment lives.
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=()")
		next.ServeHTTP(w, r)
	})
}

// headAsGet answers HEAD as GET; the HTTP server sends no body for HEAD.
// chi's GetHead cannot do it here: mounted at "/", it would ask the parent
// router, whose mount matches every method.
func headAsGet(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			if rctx := chi.RouteContext(r.Context()); rctx != nil {
				rctx.RouteMethod = http.MethodGet
			}
		}
		next.ServeHTTP(w, r)
	})
}

// home sends a visitor where they can start: first-run set-up, sign-in, or
// their manga Library.
func (u *UI) home(w http.ResponseWriter, r *http.Request) {
	if _, ok := readerFrom(r); ok {
		http.Redirect(w, r, "/library/manga", http.StatusSeeOther)
		return
	}
	n, err := u.store.CountReaders(r.Context())
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	if n == 0 {
		http.Redirect(w, r, "/setup", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func (u *UI) ownerHome(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/owner/readers", http.StatusSeeOther)
}
