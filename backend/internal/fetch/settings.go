package fetch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/errs"
)

// Settings are the Owner's run-time settings as the Policy applies them:
// the pause of all background work and, per Site, a pause and the pace and
// budget that replace the configured defaults. They live in Postgres, so
// every replica applies the same ones and they survive restarts.
type Settings struct {
	AllPaused bool
	Sites     map[string]SiteSettings
}

// SiteSettings are one Site's run-time settings; a nil Pace or Budget
// leaves the configured default (SITE_PACE, SITE_BUDGET).
type SiteSettings struct {
	Paused bool
	Pace   *time.Duration
	// Budget is in scheduled polls per hour.
	Budget *int
}

// SettingsSource reads the settings; the composition adapts the store to
// it.
type SettingsSource interface {
	Settings(ctx context.Context) (Settings, error)
}

// DefaultSettingsTTL is how old a replica's copy of the settings may get:
// a change made on another replica (or by `lectern site`) applies here
// within it, well within the minute promised.
const DefaultSettingsTTL = 15 * time.Second

// SettingsReader is a replica's copy of the Owner's settings, read again
// from its Source when older than TTL. A change made through this replica
// applies here at once (Invalidate). Safe for concurrent use.
type SettingsReader struct {
	Source SettingsSource
	// TTL is how old the copy may get; 0 means DefaultSettingsTTL.
	TTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu     sync.Mutex
	cur    Settings
	readAt time.Time
	loaded bool
}

func (r *SettingsReader) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *SettingsReader) ttl() time.Duration {
	if r.TTL > 0 {
		return r.TTL
	}
	return DefaultSettingsTTL
}

// Get returns the settings, at most TTL old. When they cannot be read, the
// error says so and nothing is assumed: a request whose Site might be
// paused does not go.
func (r *SettingsReader) Get(ctx context.Context) (Settings, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if r.loaded && now.Sub(r.readAt) < r.ttl() && !now.Before(r.readAt) {
		return r.cur, nil
	}
	s, err := r.Source.Settings(ctx)
	if err != nil {
		return Settings{}, fmt.Errorf("owner settings: %w", err)
	}
	r.cur, r.readAt, r.loaded = s, now, true
	return s, nil
}

// Invalidate makes the next Get read the settings again: this replica just
// changed them.
func (r *SettingsReader) Invalidate() {
	r.mu.Lock()
	r.loaded = false
	r.mu.Unlock()
}

// ErrPaused is a request refused because the Owner paused its Site or all
// background work: the job waits (snoozes) instead of failing, keeping its
// attempts.
var ErrPaused = errs.New(errs.Unavailable, "paused by the Owner")

// Hold is why requests to a Site wait now, if they do.
type Hold struct {
	// Site: the Owner paused the Site; All: the Owner paused all
	// background work. Either lasts until the Owner resumes.
	Site, All bool
	// Until is the end of the Site's back-off; zero when it is not backing
	// off.
	Until time.Time
}

// Held reports whether requests to the Site wait.
func (h Hold) Held() bool { return h.ByOwner() || !h.Until.IsZero() }

// ByOwner reports a pause by the Owner, of the Site or of everything.
func (h Hold) ByOwner() bool { return h.Site || h.All }

// String says why, for logs.
func (h Hold) String() string {
	switch {
	case h.All:
		return "all background work is paused by the Owner"
	case h.Site:
		return "the Site is paused by the Owner"
	case !h.Until.IsZero():
		return "the Site is backing off until " + h.Until.UTC().Format(time.RFC3339)
	}
	return "not held"
}

// PauseRecheck is how long a job held by an Owner's pause waits before it
// looks again: a pause has no end, and the Owner's resume wakes the waiting
// jobs at once, so this only bounds a wake that was missed.
const PauseRecheck = 10 * time.Minute
