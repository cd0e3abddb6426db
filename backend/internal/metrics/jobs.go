package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/observe"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Job outcomes the middleware tells apart by itself. A worker may name a
// finer one with SetOutcome.
const (
	OutcomeOK          = "ok"
	OutcomeError       = "error"
	OutcomeSnoozed     = "snoozed"
	OutcomeCancelled   = "cancelled"
	OutcomeRefused     = "refused"     // the destination gate refused the fetch
	OutcomeInterrupted = "interrupted" // the job's context ended (shutdown, timeout)
	OutcomePanic       = "panic"
)

// JobMiddleware returns the River worker middleware that times every job by
// kind, Site and outcome, counts the destination-gate refusals a job
// returns, and puts "job", "job_id" and, for a job about a Series,
// "series" and "site" into the context every line the worker logs with it
// carries (see LogHandler). Install it in river.Config.Middleware.
func (m *Metrics) JobMiddleware() rivertype.WorkerMiddleware {
	return &jobMiddleware{m: m}
}

type jobMiddleware struct {
	river.MiddlewareDefaults
	m *Metrics
}

// jobNote is what a worker tells the middleware about its own job.
type jobNote struct {
	m    *Metrics
	kind string

	mu      sync.Mutex
	outcome string
	refused bool
}

type jobNoteKey struct{}

// SetOutcome names the outcome of the job working under ctx, finer than the
// middleware can tell from the returned error: a poll that found nothing
// new, a challenge, a Site backed off. outcome must be one of a small fixed
// set of codes (lowercase letters, digits and underscores, at most 32): it
// becomes a label. Outside a job it does nothing.
func SetOutcome(ctx context.Context, outcome string) {
	if n, ok := ctx.Value(jobNoteKey{}).(*jobNote); ok {
		n.mu.Lock()
		n.outcome = outcomeLabel(outcome)
		n.mu.Unlock()
	}
}

// NoteRefusal counts a destination-gate refusal the worker handled itself
// (a Cover refused as not_image is recorded on the Series and the job ends
// well); the job's outcome is then "refused" unless the worker names
// another. A refusal noted this way is not counted again if the job also
// returns it. It reports whether err was a refusal.
//
// Outside a job it does nothing and reports false.
func NoteRefusal(ctx context.Context, err error) bool {
	n, ok := ctx.Value(jobNoteKey{}).(*jobNote)
	if !ok || !n.m.Refused(n.kind, err) {
		return false
	}
	n.mu.Lock()
	n.refused = true
	n.mu.Unlock()
	return true
}

func (j *jobMiddleware) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) (err error) {
	key, site := seriesOf(job.EncodedArgs)
	siteLabel := LabelNone
	attrs := []slog.Attr{slog.String("job", job.Kind), slog.Int64("job_id", job.ID)}
	if key != "" {
		siteLabel = j.m.siteLabel(site)
		attrs = append(attrs, slog.String("series", key), slog.String("site", site))
	}
	note := &jobNote{m: j.m, kind: job.Kind}
	ctx = context.WithValue(ctx, jobNoteKey{}, note)
	ctx = observe.WithLogAttrs(ctx, attrs...)

	start := time.Now()
	defer func() {
		p := recover()
		note.mu.Lock()
		outcome, noted := note.outcome, note.refused
		note.mu.Unlock()
		refused := j.m.refusalClass(err) != ""
		if refused && !noted {
			j.m.Refused(job.Kind, err)
		}
		if outcome == "" {
			outcome = classify(ctx, err, refused || noted)
		}
		if p != nil {
			outcome = OutcomePanic
		}
		d := time.Since(start)
		j.m.jobDuration.WithLabelValues(job.Kind, siteLabel, outcome).Observe(d.Seconds())
		j.m.log.DebugContext(ctx, "job finished", "outcome", outcome, "duration_ms", d.Milliseconds(), "attempt", job.Attempt)
		if p != nil {
			panic(p)
		}
	}()
	return doInner(ctx)
}

func classify(ctx context.Context, err error, refused bool) string {
	var snooze *rivertype.JobSnoozeError
	var cancel *rivertype.JobCancelError
	switch {
	case errors.As(err, &snooze):
		return OutcomeSnoozed
	case refused:
		return OutcomeRefused
	case err == nil:
		return OutcomeOK
	case errors.As(err, &cancel):
		return OutcomeCancelled
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return OutcomeInterrupted
	}
	return OutcomeError
}

// outcomeLabel keeps a worker-given outcome to a label-safe code.
func outcomeLabel(s string) string {
	if s == "" || len(s) > 32 {
		return LabelOther
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return LabelOther
		}
	}
	return s
}

// seriesOf finds the Series key in a job's arguments: every job about a
// Series names it as "key" (poll_series, fetch_cover), "series"
// (archive_chapter, archive_series) or "series_key". The key is a registry
// key ("site:slug"); anything else is not logged or labelled as one.
func seriesOf(encoded []byte) (key, site string) {
	var args struct {
		Key       string `json:"key"`
		Series    string `json:"series"`
		SeriesKey string `json:"series_key"`
	}
	if json.Unmarshal(encoded, &args) != nil {
		return "", ""
	}
	k := args.Key
	for _, alt := range []string{args.Series, args.SeriesKey} {
		if k == "" {
			k = alt
		}
	}
	site, slug, ok := strings.Cut(k, ":")
	if !ok || site == "" || slug == "" || len(k) > 300 {
		return "", ""
	}
	return k, site
}
