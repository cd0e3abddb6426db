// Package riverjob names Lectern's background jobs as River stores them:
// their kinds, and the states in which a job is in flight. The job
// arguments live with the code that works them (poll, cover, archive,
// notify); what the store's SQL, the metrics and the Owner's queue read of
// River's table is written here once.
package riverjob

import (
	"strings"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// The job kinds.
const (
	PollSeries     = "poll_series"
	PollListing    = "poll_listing"
	PlanPolls      = "plan_polls"
	FetchCover     = "fetch_cover"
	ArchiveSeries  = "archive_series"
	ArchiveChapter = "archive_chapter"
	ArchiveFollow  = "archive_follow"
	ArchiveSweep   = "archive_sweep"
	NotifyScan     = "notify_scan"
	NotifySend     = "notify_send"
	TrackerSync    = "tracker_sync"
	OwnerWatch     = "owner_watch"
	BackupDaily    = "backup_daily"
)

// InFlight are the states of a job that is queued or running: not yet
// finished, so the same work must not be queued again.
var InFlight = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
	rivertype.JobStateRetryable, rivertype.JobStateScheduled,
}

// InFlightSQL is InFlight as an SQL list: state IN (...InFlightSQL).
var InFlightSQL = sqlList(InFlight)

// Failed are the states of a job that failed: waiting to retry after an
// error, or finished without success.
var Failed = []rivertype.JobState{rivertype.JobStateRetryable, rivertype.JobStateDiscarded, rivertype.JobStateCancelled}

// FailedSQL is Failed as an SQL list.
var FailedSQL = sqlList(Failed)

// WaitingSQL is an SQL condition on river_job: the job waits for a later
// time, scheduled or snoozed (River keeps a short snooze "available" with a
// later time). A job waiting to retry after an error is "retryable", which
// callers add when they mean it.
const WaitingSQL = `(state = 'scheduled' OR state = 'available' AND scheduled_at > now())`

// UniqueInFlight keeps one job per arguments queued or running; a finished
// job does not block the next one.
func UniqueInFlight() river.UniqueOpts {
	return river.UniqueOpts{ByArgs: true, ByState: InFlight}
}

// Waiting reports whether an insert found the same work already queued and
// that job waits for a later time (scheduled, snoozed or retrying): the one
// to make available now.
func Waiting(res *rivertype.JobInsertResult) bool {
	if res == nil || !res.UniqueSkippedAsDuplicate || res.Job == nil {
		return false
	}
	return res.Job.State == rivertype.JobStateScheduled || res.Job.State == rivertype.JobStateRetryable
}

func sqlList(states []rivertype.JobState) string {
	q := make([]string, len(states))
	for i, s := range states {
		q[i] = "'" + string(s) + "'"
	}
	return strings.Join(q, ", ")
}
