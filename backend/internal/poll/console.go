package poll

import (
	"context"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Controls are the Owner's levers on the Poll and the queue; Queue
// implements them, and the composition adds waking a Site's archive jobs
// when it resumes. Each returns store.ErrNotFound for an unknown Series,
// ErrNoSuchSite for an unknown Site and ErrNoSuchJob for an unknown job.
type Controls interface {
	PollNow(ctx context.Context, key string) error
	RefetchCover(ctx context.Context, key string) error
	ResumeSite(ctx context.Context, site string) error
	RetryJob(ctx context.Context, id int64) error
	CancelJob(ctx context.Context, id int64) error
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
	// Now is the clock; nil means time.Now.
	Now func() time.Time
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

// SiteStatus is one Site as the Owner sees it.
type SiteStatus struct {
	Site *latest.Site
	store.SiteStatus
	// Pace is the Site's interval, Budget its budget of scheduled polls per
	// hour (BudgetSet: SITE_BUDGET sets it).
	Pace      time.Duration
	Budget    int
	BudgetSet bool
	// BackingOff says the Site is backing off now, until BackingOffUntil.
	BackingOff      bool
	BackingOffUntil time.Time
	// Held counts the Site's held Series, Reasons them by the reason of
	// their next poll.
	Held    int
	Reasons []ReasonCount
}

// Status is the Console's view of the Poll.
type Status struct {
	Policy  string
	Sites   []SiteStatus
	Failing []store.FailingSeries
	Queue   []store.QueueCount
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
	st, err := c.Store.PollStatusOf(ctx, names, failing)
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
	out := Status{Policy: c.PolicyName(), Failing: st.Failing, Queue: st.Queue}
	now := c.now()
	for i, s := range st.Sites {
		site := sites[i]
		row := SiteStatus{Site: site, SiteStatus: s, Pace: c.Paces.Of(site), Budget: c.Budgets.Of(site),
			BudgetSet: c.Budgets.Configured(site), Held: held[site.Name], Reasons: reasons[site.Name]}
		row.BackingOffUntil, row.BackingOff = s.Paused(now)
		out.Sites = append(out.Sites, row)
	}
	return out, nil
}
