package notify

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"syscall"
	"time"

	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/riverjob"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Owner alert kinds.
const (
	AlertSiteFailing = "site_failing"
	AlertSiteBackoff = "site_backoff"
	AlertQueueStale  = "queue_stale"
	AlertDiskFull    = "disk_full"
)

// Why a Site's polls fail, for a site_failing alert.
const (
	CauseUnreachable = "unreachable"         // no answer, or an error status
	CauseRefused     = "challenge/refused"   // a challenge, a block page, a back-off
	CauseShape       = "pages changed shape" // not_series_page or no chapters where there used to be
)

// Owner alert tuning.
const (
	// WatchInterval is how often the watch looks.
	WatchInterval = 5 * time.Minute
	// FailingWindow is the polls a Site is judged by: the last poll of each
	// Series polled this recently.
	FailingWindow = time.Hour
	// FailingHold is how long a Site must keep failing, every look, before
	// the Owner hears of it.
	FailingHold = time.Hour
	// FailingMinPolls: fewer polls in the window say nothing.
	FailingMinPolls = 3
	// BackoffHold is how long a Site backs off before the Owner hears.
	BackoffHold = 6 * time.Hour
	// QueueStaleAge is how long queued work may wait before it is news.
	QueueStaleAge = 24 * time.Hour
	// DiskFreeMin is the share of a volume that must stay free.
	DiskFreeMin = 0.05
)

// Disk is one directory whose volume the watch checks.
type Disk struct {
	Name, Path  string
	Free, Total uint64
}

// Observation is what the watch saw in one look.
type Observation struct {
	Polls      []store.SitePolls
	Healthy    map[string]time.Time // when each Site was last seen healthy
	BackingOff []store.BackingOff
	StaleJobs  int
	OldestJob  *time.Time
	Disks      []Disk
	// MinPolls replaces FailingMinPolls when positive.
	MinPolls int
}

// Condition is an alert's condition holding now; Hold is how long it must
// keep holding before it is raised.
type Condition struct {
	Key, Kind, Site, Cause, Message string
	Hold                            time.Duration
}

// Conditions reads an observation: the conditions that hold, and the Sites
// seen healthy (answering mostly well).
func Conditions(o Observation, now time.Time) (conds []Condition, healthy []string) {
	minPolls := o.MinPolls
	if minPolls <= 0 {
		minPolls = FailingMinPolls
	}
	for _, p := range o.Polls {
		failed := p.Polled - p.OK
		if p.Polled == 0 || 2*failed <= p.Polled {
			healthy = append(healthy, p.Site)
			continue
		}
		if p.Polled < minPolls {
			continue
		}
		if _, ok := o.Healthy[p.Site]; !ok {
			continue // failing since it was added: not a change to tell of
		}
		cause, n := CauseUnreachable, p.Unreachable
		if p.Refused > n {
			cause, n = CauseRefused, p.Refused
		}
		if p.Shape > n {
			cause, n = CauseShape, p.Shape
		}
		msg := fmt.Sprintf("%d of the %d Series of %s polled in the last hour failed, most of them (%d): %s.", failed, p.Polled, p.Site, n, cause)
		if cause == CauseShape {
			msg += " The Site's pages no longer look as Lectern reads them: its extractor needs an update."
		}
		conds = append(conds, Condition{Key: AlertSiteFailing + ":" + p.Site, Kind: AlertSiteFailing, Site: p.Site, Cause: cause,
			Message: msg, Hold: FailingHold})
	}
	for _, b := range o.BackingOff {
		msg := fmt.Sprintf("%s refuses Lectern and is backing off until %s", b.Site, b.Until.UTC().Format(time.RFC3339))
		if b.LastProblem != "" {
			msg += " (" + b.LastProblem + ")"
		}
		conds = append(conds, Condition{Key: AlertSiteBackoff + ":" + b.Site, Kind: AlertSiteBackoff, Site: b.Site, Cause: b.LastProblem,
			Message: msg + ".", Hold: BackoffHold})
	}
	if o.StaleJobs > 0 && o.OldestJob != nil {
		conds = append(conds, Condition{Key: AlertQueueStale, Kind: AlertQueueStale,
			Message: fmt.Sprintf("%d queued jobs have waited more than a day, the oldest since %s: the workers are stopped or cannot keep up.",
				o.StaleJobs, o.OldestJob.UTC().Format(time.RFC3339))})
	}
	for _, d := range o.Disks {
		if d.Total == 0 || float64(d.Free) >= DiskFreeMin*float64(d.Total) {
			continue
		}
		conds = append(conds, Condition{Key: AlertDiskFull + ":" + d.Name, Kind: AlertDiskFull, Cause: d.Name,
			Message: fmt.Sprintf("%s (%s) is nearly full: %s free of %s.", d.Name, d.Path, bytesText(d.Free), bytesText(d.Total))})
	}
	return conds, healthy
}

func bytesText(n uint64) string {
	const gib = 1 << 30
	if n >= gib {
		return fmt.Sprintf("%.1f GiB", float64(n)/gib)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// Notice is an alert raised or recovered: what the Owner is told.
type Notice struct {
	Alert     store.OwnerAlert
	Recovered bool
}

// Step decides the alerts: a new condition is pending, one that has held
// its Hold is raised (told once), a raised one whose condition cleared is
// recovered (told once) and removed, a pending one that cleared is removed
// silently. A raised alert whose cause changes is updated, not told again.
func Step(rows []store.OwnerAlert, conds []Condition, now time.Time) (puts []store.OwnerAlert, deletes []string, notices []Notice) {
	have := map[string]store.OwnerAlert{}
	for _, r := range rows {
		have[r.Key] = r
	}
	seen := map[string]bool{}
	for _, c := range conds {
		seen[c.Key] = true
		a, ok := have[c.Key]
		if !ok {
			a = store.OwnerAlert{Key: c.Key, Kind: c.Kind, Site: c.Site, FirstSeenAt: now}
		}
		changed := !ok || a.Cause != c.Cause || a.Message != c.Message
		a.Cause, a.Message = c.Cause, c.Message
		if a.RaisedAt == nil && !now.Before(a.FirstSeenAt.Add(c.Hold)) {
			raised := now
			a.RaisedAt = &raised
			notices = append(notices, Notice{Alert: a})
			changed = true
		}
		if changed {
			puts = append(puts, a)
		}
	}
	for _, r := range rows {
		if seen[r.Key] {
			continue
		}
		deletes = append(deletes, r.Key)
		if r.RaisedAt != nil {
			notices = append(notices, Notice{Alert: r, Recovered: true})
		}
	}
	sort.Strings(deletes)
	return puts, deletes, notices
}

// AlertTitle is a notice's one-line title.
func AlertTitle(n Notice) string {
	what := map[string]string{
		AlertSiteFailing: "is failing", AlertSiteBackoff: "is backing off",
		AlertQueueStale: "Queue work is stuck", AlertDiskFull: "Disk nearly full",
	}[n.Alert.Kind]
	subject := n.Alert.Site
	if n.Alert.Kind == AlertSiteFailing {
		what += ": " + n.Alert.Cause
	}
	if n.Recovered {
		what = map[string]string{
			AlertSiteFailing: "recovered", AlertSiteBackoff: "is answering again",
			AlertQueueStale: "Queue work is moving again", AlertDiskFull: "Disk space is back",
		}[n.Alert.Kind]
	}
	if subject == "" {
		return "Lectern: " + what
	}
	return "Lectern: " + subject + " " + what
}

// Watch looks for the Owner alerts' conditions and tells the Owner.
type Watch struct {
	Store  *store.Store
	Sender *Sender
	Logger *slog.Logger
	// Disks are the directories whose volumes are checked (DATA_DIR, the
	// Cover and archive stores).
	Disks []Disk
	// Now is the watch's clock; nil means time.Now.
	Now func() time.Time
	// Statfs reads a volume's free and total bytes; nil means statfs(2).
	Statfs func(path string) (free, total uint64, err error)
	// FailingHold replaces FailingHold, MinPolls FailingMinPolls, when set
	// (the demo, whose Owner should not wait an hour and holds few Series).
	FailingHold time.Duration
	MinPolls    int
}

func (w *Watch) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func (w *Watch) log() *slog.Logger {
	if w.Logger != nil {
		return w.Logger
	}
	return slog.Default()
}

func statfs(path string) (free, total uint64, err error) {
	var s syscall.Statfs_t
	if err := syscall.Statfs(path, &s); err != nil {
		return 0, 0, err
	}
	return s.Bavail * uint64(s.Bsize), s.Blocks * uint64(s.Bsize), nil
}

// Observe makes one look.
func (w *Watch) Observe(ctx context.Context, now time.Time) (Observation, error) {
	var o Observation
	var err error
	if o.Polls, err = w.Store.RecentPolls(ctx, now.Add(-FailingWindow)); err != nil {
		return o, err
	}
	if o.Healthy, err = w.Store.HealthySites(ctx); err != nil {
		return o, err
	}
	if o.BackingOff, err = w.Store.SitesBackingOff(ctx, now); err != nil {
		return o, err
	}
	if o.StaleJobs, o.OldestJob, err = w.Store.StaleJobs(ctx, now.Add(-QueueStaleAge)); err != nil {
		return o, err
	}
	fs := w.Statfs
	if fs == nil {
		fs = statfs
	}
	for _, d := range w.Disks {
		if d.Path == "" {
			continue
		}
		free, total, err := fs(d.Path)
		if err != nil {
			w.log().WarnContext(ctx, "disk not checked", "dir", d.Name, "path", d.Path, "err", err)
			continue
		}
		d.Free, d.Total = free, total
		o.Disks = append(o.Disks, d)
	}
	return o, nil
}

// Run makes one look, records what changed and tells the Owner's targets
// of each alert raised or recovered. A notice that fails to send is logged;
// the console shows the alert whatever happened to the message.
func (w *Watch) Run(ctx context.Context) ([]Notice, error) {
	now := w.now()
	o, err := w.Observe(ctx, now)
	if err != nil {
		return nil, fmt.Errorf("owner watch: %w", err)
	}
	o.MinPolls = w.MinPolls
	conds, healthy := Conditions(o, now)
	for i := range conds {
		if conds[i].Kind == AlertSiteFailing && w.FailingHold > 0 {
			conds[i].Hold = w.FailingHold
		}
	}
	if err := w.Store.MarkSitesHealthy(ctx, healthy, now); err != nil {
		return nil, fmt.Errorf("owner watch: %w", err)
	}
	rows, err := w.Store.OwnerAlerts(ctx)
	if err != nil {
		return nil, fmt.Errorf("owner watch: %w", err)
	}
	puts, deletes, notices := Step(rows, conds, now)
	err = w.Store.InTx(ctx, func(tx *store.Store) error {
		for _, a := range puts {
			if err := tx.PutOwnerAlert(ctx, a); err != nil {
				return err
			}
		}
		for _, k := range deletes {
			if err := tx.DeleteOwnerAlert(ctx, k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("owner watch: %w", err)
	}
	if len(notices) == 0 {
		return nil, nil
	}
	targets, err := w.Store.OwnerTargets(ctx)
	if err != nil {
		return notices, fmt.Errorf("owner watch: %w", err)
	}
	for _, n := range notices {
		log := w.log().With("alert", n.Alert.Kind, "site", n.Alert.Site, "cause", n.Alert.Cause)
		if n.Recovered {
			log.InfoContext(ctx, "owner alert recovered", "message", n.Alert.Message)
		} else {
			log.WarnContext(ctx, "owner alert raised", "message", n.Alert.Message)
		}
		for _, t := range targets {
			if _, err := w.Sender.Send(ctx, t, Message{Alert: &n}); err != nil {
				log.WarnContext(ctx, "owner alert not delivered", "target", t.ID, "err", err)
			}
		}
	}
	return notices, nil
}

// WatchArgs is the owner_watch job.
type WatchArgs struct{}

// Kind is River's job kind.
func (WatchArgs) Kind() string { return riverjob.OwnerWatch }

// InsertOpts: one look waiting at a time.
func (WatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 2, Priority: 3, UniqueOpts: river.UniqueOpts{ByState: riverjob.InFlight}}
}

// PeriodicWatch is the watch's River periodic job.
func PeriodicWatch(interval time.Duration) *river.PeriodicJob {
	if interval <= 0 {
		interval = WatchInterval
	}
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return WatchArgs{}, nil },
		&river.PeriodicJobOpts{ID: "owner_watch"})
}

// WatchWorker runs owner_watch jobs.
type WatchWorker struct {
	river.WorkerDefaults[WatchArgs]
	W *Watch
}

// Work implements river.Worker.
func (w *WatchWorker) Work(ctx context.Context, _ *river.Job[WatchArgs]) error {
	_, err := w.W.Run(ctx)
	return err
}
