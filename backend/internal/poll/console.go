package poll

import (
	"context"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Controls are the Owner's levers on the Poll and the queue; Queue
// implements them. Each returns store.ErrNotFound for an unknown Series,
// ErrNoSuchSite for an unknown Site and ErrNoSuchJob for an unknown job.
type Controls interface {
	PollNow(ctx context.Context, key string) error
	RefetchCover(ctx context.Context, key string) error
	RetryJob(ctx context.Context, id int64) error
	CancelJob(ctx context.Context, id int64) error
	// The Owner's run-time control of the Sites (control.go).
	PauseSite(ctx context.Context, site string) error
	ResumeSite(ctx context.Context, site string) error
	PauseAll(ctx context.Context) error
	ResumeAll(ctx context.Context) error
	ChangeSite(ctx context.Context, site string, c SiteChange) error
}

// Console is what the Owner sees of the Poll and can do to it, the same in
// the JSON API and the web console: the controls, the policy, and each
// Site's status.
type Console struct {
	Store    *store.Store
	Registry *latest.Registry
	Controls Controls
	// Policy is POLL_POLICY (adaptive or interval), Interval POLL_INTERVAL.
	Policy   string
	Interval time.Duration
	Paces    fetch.Paces
	Budgets  Budgets
	// Fetch is the replica's fetch policy, whose Owner's settings (pauses,
	// paces, budgets) the status shows as this replica applies them; nil:
	// none.
	Fetch *fetch.Policy
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Listings is POLL_LISTINGS (under the adaptive policy).
	Listings bool
}

// ReasonPlanning names the reason of a Series whose next poll is being
// planned (just polled under the adaptive policy, or never planned yet).
const ReasonPlanning = "being planned"

// ReasonCount is how many held Series of a Site wait for their next poll
// for one reason.
type ReasonCount struct {
	Reason string
	Count  int
}

// The states of a Site as the Owner sees it, in the API ("state") and the
// web console alike; StateOf decides.
const (
	// StatePaused: the Owner paused the Site, or all background work.
	StatePaused = "paused"
	// StateBackingOff: the Site refused us and backs off.
	StateBackingOff = "backing_off"
	// StateFailing: most of its recent polls failed (Failing).
	StateFailing = "failing"
	// StateHealthy: none of the above.
	StateHealthy = "healthy"
)

// FailingWindow is how many recent polls judge whether a Site is failing:
// the last poll of each of its most recently polled Series.
const FailingWindow = 20

// Failing is the rule for a failing Site: more than half of its recent
// polls (the last poll of each of its FailingWindow most recently polled
// Series) failed.
func Failing(recent, failed int) bool { return recent > 0 && 2*failed > recent }

// StateOf is a Site's state: paused by the Owner first, then backing off,
// then failing, else healthy.
func StateOf(s SiteStatus) string {
	switch {
	case s.OwnerPaused || s.AllPaused:
		return StatePaused
	case s.BackingOff:
		return StateBackingOff
	case Failing(s.RecentPolls, s.RecentFailed):
		return StateFailing
	}
	return StateHealthy
}

// SiteStatus is one Site as the Owner sees it.
type SiteStatus struct {
	Site *latest.Site
	store.SiteStatus
	// Pace is the Site's interval now, PaceSource where it comes from
	// (fetch.Paces.Source); Budget its budget of scheduled polls per hour.
	Pace       time.Duration
	PaceSource string
	Budget     Budget
	// OwnerPaused: the Owner paused the Site; AllPaused: all background
	// work.
	OwnerPaused, AllPaused bool
	// BackingOff says the Site is backing off now, until BackingOffUntil.
	BackingOff      bool
	BackingOffUntil time.Time
	// State is StateOf the rest.
	State string
	// Held counts the Site's held Series, Reasons them by the reason of
	// their next poll.
	Held    int
	Reasons []ReasonCount
	// Listing is the Site's listing as the Poll uses it; nil when the Site
	// has none.
	Listing *ListingStatus
}

// Status is the Console's view of the Poll.
type Status struct {
	Policy string
	// AllPaused: the Owner paused all background work.
	AllPaused bool
	Sites     []SiteStatus
	Failing   []store.FailingSeries
	Queue     []store.QueueCount
}

func (c *Console) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// PolicyName is POLL_POLICY, the adaptive one when unset.
func (c *Console) PolicyName() string {
	if c.Policy == "" {
		return PolicyAdaptive
	}
	return c.Policy
}

// Status gathers every Site's status, at most failing failing Series and
// the queue.
func (c *Console) Status(ctx context.Context, failing int) (Status, error) {
	sites := c.Registry.Sites()
	names := make([]string, len(sites))
	for i, s := range sites {
		names[i] = s.Name
	}
	settings, err := ownerSettings(ctx, c.Fetch)
	if err != nil {
		return Status{}, err
	}
	st, err := c.Store.PollStatusOf(ctx, names, failing, FailingWindow)
	if err != nil {
		return Status{}, err
	}
	counts, err := c.Store.ScheduleReasons(ctx)
	if err != nil {
		return Status{}, err
	}
	reasons := map[string][]ReasonCount{}
	held := map[string]int{}
	for _, n := range counts {
		reason := n.Reason
		if reason == "" {
			reason = ReasonPlanning
		}
		reasons[n.Site] = append(reasons[n.Site], ReasonCount{Reason: reason, Count: n.Count})
		held[n.Site] += n.Count
	}
	listings, err := c.Store.SiteListings(ctx)
	if err != nil {
		return Status{}, err
	}
	out := Status{Policy: c.PolicyName(), AllPaused: settings.AllPaused, Failing: st.Failing, Queue: st.Queue}
	now := c.now()
	for i, s := range st.Sites {
		site := sites[i]
		row := SiteStatus{Site: site, SiteStatus: s, Pace: c.Paces.In(settings, site), PaceSource: c.Paces.Source(settings, site),
			Budget: c.Budgets.Of(settings, site), OwnerPaused: settings.Sites[site.Name].Paused, AllPaused: settings.AllPaused,
			Held: held[site.Name], Reasons: reasons[site.Name]}
		row.BackingOffUntil, row.BackingOff = s.Paused(now)
		row.State = StateOf(row)
		row.Listing = c.listingStatus(site, listings[site.Name])
		out.Sites = append(out.Sites, row)
	}
	return out, nil
}

// BudgetOf is a Site's budget now, as this replica applies it.
func (c *Console) BudgetOf(ctx context.Context, site *latest.Site) (Budget, error) {
	settings, err := ownerSettings(ctx, c.Fetch)
	if err != nil {
		return Budget{}, err
	}
	return c.Budgets.Of(settings, site), nil
}
