package web

import (
	"context"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// The Owner console's queue: River's jobs counted by kind and state, and the
// most recent failed ones (waiting to retry, given up, cancelled) with their
// last error, to retry or cancel through River's own client.

// JobsShown is how many failed jobs the queue page lists.
const JobsShown = 100

// queueStates are the columns of the counts, in a job's life order.
var queueStates = []string{"available", "scheduled", "pending", "running", "retryable", "completed", "discarded", "cancelled"}

type queueRow struct {
	Kind   string
	Counts []int
	Total  int
}

type jobRow struct {
	ID                   int64
	Kind, State, Key     string
	SeriesPath           string
	Attempt, MaxAttempts int
	Error, Args          string
	At                   *when
	RetryPath            string
	CancelPath           string
	Cancellable          bool
}

type ownerQueuePage struct {
	common
	States  []string
	Rows    []queueRow
	Filter  string
	Filters []string
	Jobs    []jobRow
}

func (u *UI) ownerQueue(w http.ResponseWriter, r *http.Request) {
	filter := r.URL.Query().Get("state")
	switch filter {
	case "", "retryable", "discarded", "cancelled":
	default:
		filter = ""
	}
	counts, err := u.store.QueueCounts(r.Context())
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	jobs, err := u.store.JobProblems(r.Context(), filter, JobsShown)
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	p := ownerQueuePage{common: u.base(r, "Queue", "owner"), States: queueStates, Filter: filter,
		Filters: []string{"retryable", "discarded", "cancelled"}}
	col := map[string]int{}
	for i, s := range queueStates {
		col[s] = i
	}
	rowOf := map[string]int{}
	for _, c := range counts {
		i, ok := rowOf[c.Kind]
		if !ok {
			i = len(p.Rows)
			rowOf[c.Kind] = i
			p.Rows = append(p.Rows, queueRow{Kind: c.Kind, Counts: make([]int, len(queueStates))})
		}
		if j, ok := col[c.State]; ok {
			p.Rows[i].Counts[j] += c.Count
		}
		p.Rows[i].Total += c.Count
	}
	for _, j := range jobs {
		base := "/owner/jobs/" + strconv.FormatInt(j.ID, 10)
		row := jobRow{ID: j.ID, Kind: j.Kind, State: j.State, Key: j.Key, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts,
			Error: j.Error, At: u.when(&j.At), RetryPath: base + "/retry", CancelPath: base + "/cancel",
			Cancellable: j.State == "retryable"}
		if _, _, ok := latest.SplitKey(j.Key); ok {
			row.SeriesPath = seriesPath(j.Key)
		} else {
			row.Args = clip(j.Args, 200)
		}
		p.Jobs = append(p.Jobs, row)
	}
	u.render(w, r, http.StatusOK, "owner_queue", p)
}

// clip shortens s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func (u *UI) jobRetry(w http.ResponseWriter, r *http.Request) {
	u.jobAction(w, r, u.poll.Controls.RetryJob, "job-retried")
}

func (u *UI) jobCancel(w http.ResponseWriter, r *http.Request) {
	u.jobAction(w, r, u.poll.Controls.CancelJob, "job-cancelled")
}

func (u *UI) jobAction(w http.ResponseWriter, r *http.Request, do func(context.Context, int64) error, msg string) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id < 1 {
		u.fail(w, r, http.StatusNotFound, "No such job", "A job id is a positive number.")
		return
	}
	err = do(r.Context(), id)
	switch errs.CodeOf(err) {
	case errs.NotFound:
		u.refuse(w, r, err, "No such job", "There is no job "+strconv.FormatInt(id, 10)+"; finished jobs are cleaned away after a day.")
		return
	case errs.Conflict:
		u.refuse(w, r, err, "Already queued", "Job "+strconv.FormatInt(id, 10)+" was not retried: "+errs.MessageOf(err)+".")
		return
	}
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	me, _ := readerFrom(r)
	u.log.InfoContext(r.Context(), "job action from the Owner console", "job", id, "action", msg, "by", me.ID)
	ownerDone(w, r, "/owner/queue", msg)
}
