package poll

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The Owner's control of the Sites at run time, the same from the API, the
// web console and `lectern site`: pause and resume a Site or all background
// work, and change a Site's pace and budget. The settings live in Postgres
// (store.OwnerSettings); fetch.Policy applies them on every replica within
// its SettingsReader's TTL, and on this one at once.

// MaxPace is the longest pace the Owner may set: a Site polled less than
// once a day is better paused.
const MaxPace = 24 * time.Hour

// ErrBadSiteChange is a change of a Site's settings that cannot be made;
// its message names the mistake.
var ErrBadSiteChange = errs.New(errs.Invalid, "bad Site settings")

// SiteChange is an Owner's change of a Site's pace and budget. A nil field
// is left as it is; Default* puts it back to the configured default
// (SITE_PACE or the Site's own pace; SITE_BUDGET or what the pace allows).
type SiteChange struct {
	Pace          *time.Duration
	DefaultPace   bool
	Budget        *int
	DefaultBudget bool
}

// Empty reports a change that changes nothing.
func (c SiteChange) Empty() bool {
	return c.Pace == nil && !c.DefaultPace && c.Budget == nil && !c.DefaultBudget
}

func badChange(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadSiteChange, fmt.Sprintf(format, a...))
}

// Check refuses a change that cannot be made, naming the mistake.
func (c SiteChange) Check() error {
	switch {
	case c.Empty():
		return badChange("nothing to change: give a pace, a budget or both")
	case c.Pace != nil && c.DefaultPace, c.Budget != nil && c.DefaultBudget:
		return badChange("a setting is either given or put back to its default, not both")
	case c.Pace != nil && (*c.Pace < 0 || *c.Pace > MaxPace):
		return badChange("the pace must be from 0 to %s, not %s", MaxPace, *c.Pace)
	case c.Pace != nil && *c.Pace%time.Millisecond != 0:
		return badChange("the pace must be a whole number of milliseconds, not %s", *c.Pace)
	case c.Budget != nil && (*c.Budget < 1 || *c.Budget > MaxBudget):
		return badChange("the budget must be from 1 to %d polls per hour, not %d", MaxBudget, *c.Budget)
	}
	return nil
}

// ParseSiteChange reads a change as people type it (the web console's form,
// `lectern site set`): pace a duration ("1.5s", "800ms"), budget a whole
// number of polls per hour; "" leaves a setting as it is and "default"
// puts it back.
func ParseSiteChange(pace, budget string) (SiteChange, error) {
	var c SiteChange
	switch p := strings.TrimSpace(pace); strings.ToLower(p) {
	case "":
	case "default":
		c.DefaultPace = true
	default:
		d, err := time.ParseDuration(p)
		if err != nil {
			return SiteChange{}, badChange("the pace %q is not a duration such as 2s or 800ms (or default)", p)
		}
		c.Pace = &d
	}
	switch b := strings.TrimSpace(budget); strings.ToLower(b) {
	case "":
	case "default":
		c.DefaultBudget = true
	default:
		n, err := strconv.Atoi(b)
		if err != nil {
			return SiteChange{}, badChange("the budget %q is not a whole number of polls per hour (or default)", b)
		}
		c.Budget = &n
	}
	return c, c.Check()
}

// site looks up a Site the Owner names.
func (q *Queue) site(name string) (*latest.Site, error) {
	site, ok := q.Registry.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrNoSuchSite, name)
	}
	return site, nil
}

// changed makes this replica apply new settings at once; the others read
// them within their SettingsReader's TTL.
func (q *Queue) changed() {
	if q.Policy != nil && q.Policy.Settings != nil {
		q.Policy.Settings.Invalidate()
	}
}

// PauseSite pauses a Site: from now on no request of any kind reaches its
// hosts (polls, Covers, archive jobs, the browser); its queued work waits,
// keeping its attempts, until ResumeSite.
func (q *Queue) PauseSite(ctx context.Context, name string) error {
	site, err := q.site(name)
	if err != nil {
		return err
	}
	if err := q.Store.SetSitePaused(ctx, site.Name, true); err != nil {
		return err
	}
	q.changed()
	q.log().InfoContext(ctx, "Site paused by the Owner", "site", site.Name)
	return nil
}

// ResumeSite lifts the Owner's pause of a Site and its back-off now: its
// waiting polls, Covers and archive jobs become available and the Series it
// missed are planned again at once.
func (q *Queue) ResumeSite(ctx context.Context, name string) error {
	site, err := q.site(name)
	if err != nil {
		return err
	}
	err = q.Store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.ResumeSite(ctx, site.Name); err != nil {
			return err
		}
		return tx.SetSitePaused(ctx, site.Name, false)
	})
	if err != nil {
		return err
	}
	q.changed()
	ids, err := q.Store.WaitingSiteJobs(ctx, site.Name, 10000)
	if err != nil {
		return err
	}
	woken, err := q.wake(ctx, ids)
	if err != nil {
		return fmt.Errorf("resume %s: %w", site.Name, err)
	}
	if err := q.plan(ctx); err != nil {
		return fmt.Errorf("resume %s: %w", site.Name, err)
	}
	q.log().InfoContext(ctx, "Site resumed by the Owner", "site", site.Name, "jobs_woken", woken)
	return nil
}

// PauseAll pauses all background work: every job waits (snoozes, keeping
// its attempts) until ResumeAll, and no request reaches any Site.
func (q *Queue) PauseAll(ctx context.Context) error {
	if err := q.Store.SetAllPaused(ctx, true); err != nil {
		return err
	}
	q.changed()
	q.log().InfoContext(ctx, "all background work paused by the Owner")
	return nil
}

// ResumeAll lifts the pause of all background work: the jobs it held run
// now, and the polls are planned again at once. A Site the Owner paused on
// its own stays paused.
func (q *Queue) ResumeAll(ctx context.Context) error {
	if err := q.Store.SetAllPaused(ctx, false); err != nil {
		return err
	}
	q.changed()
	ids, err := q.Store.SnoozedJobs(ctx, 100000)
	if err != nil {
		return err
	}
	woken, err := q.wake(ctx, ids)
	if err != nil {
		return fmt.Errorf("resume background work: %w", err)
	}
	if err := q.plan(ctx); err != nil {
		return fmt.Errorf("resume background work: %w", err)
	}
	q.log().InfoContext(ctx, "all background work resumed by the Owner", "jobs_woken", woken)
	return nil
}

// ChangeSite changes a Site's pace and budget; every replica applies them
// within a minute, and they survive restarts.
func (q *Queue) ChangeSite(ctx context.Context, name string, c SiteChange) error {
	site, err := q.site(name)
	if err != nil {
		return err
	}
	if err := c.Check(); err != nil {
		return err
	}
	sc := store.SiteChange{SetPace: c.Pace != nil || c.DefaultPace, Pace: c.Pace, SetBudget: c.Budget != nil || c.DefaultBudget, Budget: c.Budget}
	if err := q.Store.ChangeSiteSettings(ctx, site.Name, sc); err != nil {
		return err
	}
	q.changed()
	q.log().InfoContext(ctx, "Site settings changed by the Owner", "site", site.Name,
		"pace", describe(c.Pace, c.DefaultPace), "budget_per_hour", describe(c.Budget, c.DefaultBudget))
	return nil
}

func describe[T any](v *T, reset bool) string {
	switch {
	case reset:
		return "default"
	case v == nil:
		return "unchanged"
	}
	return fmt.Sprint(*v)
}

// wake makes waiting jobs available now; one finished meanwhile is skipped.
func (q *Queue) wake(ctx context.Context, ids []int64) (int, error) {
	woken := 0
	for _, id := range ids {
		if _, err := q.Client.JobRetry(ctx, id); err != nil {
			if errors.Is(err, rivertype.ErrNotFound) {
				continue
			}
			return woken, fmt.Errorf("make job %d available: %w", id, err)
		}
		woken++
	}
	return woken, nil
}

// plan asks for a plan now, so Series missed while held are planned at once.
func (q *Queue) plan(ctx context.Context) error {
	if _, err := q.Client.Insert(ctx, PlanArgs{}, nil); err != nil {
		return fmt.Errorf("plan polls: %w", err)
	}
	return nil
}

// PauseMiddleware holds every job while the Owner pauses all background
// work: it snoozes before the job starts, keeping its attempts, and the
// Owner's resume wakes it (Queue.ResumeAll). Install it in
// river.Config.Middleware.
type PauseMiddleware struct {
	river.MiddlewareDefaults
	Policy *fetch.Policy
}

// Work implements rivertype.WorkerMiddleware.
func (m *PauseMiddleware) Work(ctx context.Context, job *rivertype.JobRow, doInner func(ctx context.Context) error) error {
	s, err := m.Policy.OwnerSettings(ctx)
	if err != nil {
		return fmt.Errorf("%s job %d: %w", job.Kind, job.ID, err)
	}
	if s.AllPaused {
		return river.JobSnooze(m.Policy.HoldSnooze(fetch.Hold{All: true}))
	}
	return doInner(ctx)
}
