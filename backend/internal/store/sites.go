package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lectern-reader/lectern/backend/internal/riverjob"
)

// SiteState is how polling a Site goes: its back-off and its last answers.
// A Site that never had a refusal or a success has the zero SiteState.
type SiteState struct {
	Site string
	// PausedUntil is the end of the Site's back-off; nil or past when polling.
	PausedUntil *time.Time
	// Refusals counts consecutive refusals (401/403/429, an uncleared
	// challenge, an access-denied page); each doubles the pause.
	Refusals      int
	LastProblem   string
	LastProblemAt *time.Time
	LastSuccessAt *time.Time
}

// Paused reports whether the Site is backing off at now, and until when.
func (s SiteState) Paused(now time.Time) (time.Time, bool) {
	if s.PausedUntil == nil || !s.PausedUntil.After(now) {
		return time.Time{}, false
	}
	return *s.PausedUntil, true
}

const siteStateCols = `site, paused_until, refusals, last_problem, last_problem_at, last_success_at`

func scanSiteState(row pgx.Row) (SiteState, error) {
	var s SiteState
	err := row.Scan(&s.Site, &s.PausedUntil, &s.Refusals, &s.LastProblem, &s.LastProblemAt, &s.LastSuccessAt)
	return s, err
}

// SiteStateOf reads one Site's state; a Site with no row yet has the zero
// state with its name.
func (s *Store) SiteStateOf(ctx context.Context, site string) (SiteState, error) {
	st, err := scanSiteState(s.db.QueryRow(ctx, `SELECT `+siteStateCols+` FROM site_state WHERE site = $1`, site))
	if errors.Is(err, pgx.ErrNoRows) {
		return SiteState{Site: site}, nil
	}
	if err != nil {
		return SiteState{}, fmt.Errorf("site state of %s: %w", site, err)
	}
	return st, nil
}

// BackingOffUntil reports whether the Site is backing off at now, and
// until when; fetch.Policy asks it for the Poll, the Cover job and the
// Archive.
func (s *Store) BackingOffUntil(ctx context.Context, site string, now time.Time) (time.Time, bool, error) {
	st, err := s.SiteStateOf(ctx, site)
	if err != nil {
		return time.Time{}, false, err
	}
	until, ok := st.Paused(now)
	return until, ok, nil
}

// SiteStates reads the state of every Site that has one, by name.
func (s *Store) SiteStates(ctx context.Context) (map[string]SiteState, error) {
	rows, err := s.db.Query(ctx, `SELECT `+siteStateCols+` FROM site_state`)
	if err != nil {
		return nil, fmt.Errorf("site states: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SiteState, error) { return scanSiteState(row) })
	if err != nil {
		return nil, fmt.Errorf("site states: %w", err)
	}
	out := make(map[string]SiteState, len(list))
	for _, st := range list {
		out[st.Site] = st
	}
	return out, nil
}

// BackOffSite records a refusal by a Site and pauses it. pause is given the
// refusal count (1 for the first since the last success) and returns how
// long to pause. A refusal that arrives while the Site is already paused
// (another worker's request was in flight) records the problem without
// counting again, so concurrent polls do not multiply the pause. It returns
// the end of the pause.
func (s *Store) BackOffSite(ctx context.Context, site, problem string, pause func(refusals int) time.Duration) (time.Time, error) {
	var until time.Time
	err := s.InTx(ctx, func(tx *Store) error {
		if _, err := tx.db.Exec(ctx, `INSERT INTO site_state (site) VALUES ($1) ON CONFLICT (site) DO NOTHING`, site); err != nil {
			return err
		}
		var pausedUntil *time.Time
		var refusals int
		var now time.Time
		if err := tx.db.QueryRow(ctx, `SELECT paused_until, refusals, now() FROM site_state WHERE site = $1 FOR UPDATE`, site).
			Scan(&pausedUntil, &refusals, &now); err != nil {
			return err
		}
		if pausedUntil != nil && pausedUntil.After(now) {
			until = *pausedUntil
			_, err := tx.db.Exec(ctx, `UPDATE site_state SET last_problem = $2, last_problem_at = now(), updated_at = now() WHERE site = $1`, site, problem)
			return err
		}
		refusals++
		until = now.Add(pause(refusals))
		_, err := tx.db.Exec(ctx, `
			UPDATE site_state SET paused_until = $2, refusals = $3, last_problem = $4, last_problem_at = now(), updated_at = now()
			WHERE site = $1`, site, until, refusals, problem)
		return err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("back off %s: %w", site, err)
	}
	return until, nil
}

// SiteAnswered records a successful poll of a Site: its back-off ends and
// the refusal count starts again.
func (s *Store) SiteAnswered(ctx context.Context, site string) error {
	_, err := s.db.Exec(ctx, `
		INSERT INTO site_state (site, last_success_at) VALUES ($1, now())
		ON CONFLICT (site) DO UPDATE SET last_success_at = now(), refusals = 0, paused_until = NULL, updated_at = now()`, site)
	if err != nil {
		return fmt.Errorf("record success of %s: %w", site, err)
	}
	return nil
}

// SiteProblem records a Site-wide problem that is not a refusal (no browser
// configured for a browser-only Site), for the Owner.
func (s *Store) SiteProblem(ctx context.Context, site, problem string) error {
	_, err := s.db.Exec(ctx, `
		INSERT INTO site_state (site, last_problem, last_problem_at) VALUES ($1, $2, now())
		ON CONFLICT (site) DO UPDATE SET last_problem = $2, last_problem_at = now(), updated_at = now()`, site, problem)
	if err != nil {
		return fmt.Errorf("record problem of %s: %w", site, err)
	}
	return nil
}

// ResumeSite lifts a Site's back-off now (an Owner's decision).
func (s *Store) ResumeSite(ctx context.Context, site string) error {
	_, err := s.db.Exec(ctx, `
		INSERT INTO site_state (site) VALUES ($1)
		ON CONFLICT (site) DO UPDATE SET paused_until = NULL, refusals = 0, updated_at = now()`, site)
	if err != nil {
		return fmt.Errorf("resume %s: %w", site, err)
	}
	return nil
}

// QueueCount is how many background jobs of one kind are in one state.
type QueueCount struct {
	Kind, State string
	Count       int
}

// QueueCounts counts River's jobs by kind and state.
func (s *Store) QueueCounts(ctx context.Context) ([]QueueCount, error) {
	rows, err := s.db.Query(ctx, `SELECT kind, state::text, count(*) FROM river_job GROUP BY 1, 2 ORDER BY 1, 2`)
	if err != nil {
		return nil, fmt.Errorf("queue counts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (QueueCount, error) {
		var c QueueCount
		err := row.Scan(&c.Kind, &c.State, &c.Count)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("queue counts: %w", err)
	}
	return out, nil
}

// JobProblem is a background job that failed: waiting to retry, given up
// (discarded) or cancelled, with its last error.
type JobProblem struct {
	ID                   int64
	Kind, State          string
	Attempt, MaxAttempts int
	// Key is the Series key the job is about ("" for a job without one);
	// Args is the job's arguments as JSON.
	Key, Args string
	// Error is the last attempt's error ("" for a job cancelled before it
	// ran); At is when the job was finalized, else when it runs next.
	Error string
	At    time.Time
}

// JobProblems lists the most recent failed jobs (retryable, discarded,
// cancelled), newest first, at most limit; state narrows them to one of
// those states when not "".
func (s *Store) JobProblems(ctx context.Context, state string, limit int) ([]JobProblem, error) {
	rows, err := s.db.Query(ctx, `
		SELECT id, kind, state::text, attempt, max_attempts, coalesce(args->>'key', ''), args::text,
			coalesce(errors[array_length(errors, 1)]->>'error', ''), coalesce(finalized_at, scheduled_at)
		FROM river_job
		WHERE state IN (`+riverjob.FailedSQL+`) AND ($1 = '' OR state::text = $1)
		ORDER BY coalesce(finalized_at, scheduled_at) DESC, id DESC LIMIT $2`, state, limit)
	if err != nil {
		return nil, fmt.Errorf("failed jobs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (JobProblem, error) {
		var j JobProblem
		err := row.Scan(&j.ID, &j.Kind, &j.State, &j.Attempt, &j.MaxAttempts, &j.Key, &j.Args, &j.Error, &j.At)
		return j, err
	})
	if err != nil {
		return nil, fmt.Errorf("failed jobs: %w", err)
	}
	return out, nil
}

// The job kind of a poll and the states of a queued one, as River stores
// them.
const pollKind = riverjob.PollSeries

var queuedStates = riverjob.InFlightSQL

// QueuedPolls counts the polls queued or running per Site.
func (s *Store) QueuedPolls(ctx context.Context) (map[string]int, error) {
	rows, err := s.db.Query(ctx, `
		SELECT split_part(args->>'key', ':', 1), count(*) FROM river_job
		WHERE kind = $1 AND state IN (`+queuedStates+`) GROUP BY 1`, pollKind)
	if err != nil {
		return nil, fmt.Errorf("queued polls: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var site string
		var n int
		if err := rows.Scan(&site, &n); err != nil {
			return nil, fmt.Errorf("queued polls: %w", err)
		}
		out[site] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("queued polls: %w", err)
	}
	return out, nil
}

// siteJobKinds are the job kinds that reach a Site's hosts, each naming its
// Series in args->>'key' (polls, Covers) or args->>'series' (archive jobs).
const siteJobKinds = `'` + pollKind + `', '` + riverjob.FetchCover + `', '` + riverjob.ArchiveSeries + `', '` + riverjob.ArchiveChapter + `'`

// WaitingSiteJobs returns the ids of a Site's jobs that reach its hosts
// (polls, Covers, archive jobs) and wait for a later time (scheduled,
// snoozed or retryable), oldest first, at most limit: the jobs to make
// available when the Owner resumes the Site.
func (s *Store) WaitingSiteJobs(ctx context.Context, site string, limit int) ([]int64, error) {
	rows, err := s.db.Query(ctx, `
		SELECT id FROM river_job
		WHERE kind IN (`+siteJobKinds+`) AND coalesce(args->>'key', args->>'series') LIKE $1
			AND (`+riverjob.WaitingSQL+` OR state = 'retryable')
		ORDER BY scheduled_at, id LIMIT $2`, likePrefix(site)+":%", limit)
	if err != nil {
		return nil, fmt.Errorf("waiting jobs of %s: %w", site, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("waiting jobs of %s: %w", site, err)
	}
	return ids, nil
}

// SnoozedJobs returns the ids of the jobs of any kind that snoozed at least
// once and wait for a later time, oldest first, at most limit: the jobs to
// make available when the Owner resumes all background work.
func (s *Store) SnoozedJobs(ctx context.Context, limit int) ([]int64, error) {
	rows, err := s.db.Query(ctx, `
		SELECT id FROM river_job WHERE `+riverjob.WaitingSQL+` AND metadata ? 'snoozes'
		ORDER BY scheduled_at, id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("snoozed jobs: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("snoozed jobs: %w", err)
	}
	return ids, nil
}

// likePrefix escapes LIKE's wildcards in a literal prefix.
func likePrefix(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '%' || c == '_' || c == '\\' {
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// SiteStatus is one Site as the Owner sees it.
type SiteStatus struct {
	SiteState
	// QueuedPolls are the Site's polls queued or running now.
	QueuedPolls int
	// RecentPolls are the last polls of the Site's most recently polled
	// Series (the last poll of each, at most the window asked for),
	// RecentFailed those of them that failed; LastFailure is the problem of
	// the newest failed one, at LastFailureAt.
	RecentPolls, RecentFailed int
	LastFailure               string
	LastFailureAt             *time.Time
}

// recentPolls counts, per Site, the last polls of its window most recently
// polled Series and the failed ones among them, with the newest failure.
func (s *Store) recentPolls(ctx context.Context, window int) (map[string]SiteStatus, error) {
	rows, err := s.db.Query(ctx, `
		SELECT site, count(*), count(*) FILTER (WHERE poll_failures > 0),
			coalesce((array_agg(poll_problem ORDER BY last_poll_at DESC) FILTER (WHERE poll_failures > 0))[1], ''),
			max(last_poll_at) FILTER (WHERE poll_failures > 0)
		FROM (
			SELECT site, poll_failures, poll_problem, last_poll_at,
				row_number() OVER (PARTITION BY site ORDER BY last_poll_at DESC, key) AS n
			FROM series WHERE last_poll_at IS NOT NULL
		) recent
		WHERE n <= $1 GROUP BY site`, window)
	if err != nil {
		return nil, fmt.Errorf("recent polls: %w", err)
	}
	defer rows.Close()
	out := map[string]SiteStatus{}
	for rows.Next() {
		var site string
		var st SiteStatus
		if err := rows.Scan(&site, &st.RecentPolls, &st.RecentFailed, &st.LastFailure, &st.LastFailureAt); err != nil {
			return nil, fmt.Errorf("recent polls: %w", err)
		}
		out[site] = st
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("recent polls: %w", err)
	}
	return out, nil
}

// PollStatus is what the Owner's status page shows: every Site, the most
// recent failing Series and the queue. Both the JSON API and the web Owner
// console render it.
type PollStatus struct {
	Sites   []SiteStatus
	Failing []FailingSeries
	Queue   []QueueCount
}

// PollStatusOf gathers the PollStatus for the named Sites (the registry's,
// in the order given) with at most failing failing Series, and the last
// poll of each Site's window most recently polled Series.
func (s *Store) PollStatusOf(ctx context.Context, sites []string, failing, window int) (PollStatus, error) {
	var st PollStatus
	states, err := s.SiteStates(ctx)
	if err != nil {
		return st, err
	}
	queued, err := s.QueuedPolls(ctx)
	if err != nil {
		return st, err
	}
	recent, err := s.recentPolls(ctx, window)
	if err != nil {
		return st, err
	}
	for _, name := range sites {
		ss, ok := states[name]
		if !ok {
			ss = SiteState{Site: name}
		}
		row := recent[name]
		row.SiteState, row.QueuedPolls = ss, queued[name]
		st.Sites = append(st.Sites, row)
	}
	if st.Failing, err = s.FailingSeriesList(ctx, failing); err != nil {
		return st, err
	}
	if st.Queue, err = s.QueueCounts(ctx); err != nil {
		return st, err
	}
	return st, nil
}
