package web

import (
	"net/http"

	"github.com/lectern-reader/lectern/backend/internal/poll"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The Poll's facts on the Series page: the last poll and its problem, the
// next poll and why it comes then, the release rhythm learned from the
// Latest Chapter history, and that history, newest first. Every Reader who
// may see the Series sees why it is checked when it is; the Owner gets
// "poll now" and "refetch Cover" too.

// HistoryShown is how many Latest Chapter changes the Series page lists.
const HistoryShown = 20

type historyRow struct {
	Label, URL string
	FirstSeen  *when
	// First marks the first Latest Chapter ever found (by the Acquisition):
	// when it was released is unknown.
	First bool
}

type pollFacts struct {
	LastPoll, LastSuccess *when
	Status                string
	OK                    bool
	MS                    *int
	Failures              int
	Problem, BodyLen      string
	CoverProblem          string
	Next                  nextPoll
	// Rhythm describes the release rhythm ("weekly, Tuesdays ~14:00"),
	// times in UTC when Timed; "" until estimated.
	Rhythm  string
	Timed   bool
	History []historyRow
	// Owner controls, when the Owner console is on.
	Owner               bool
	PollPath, CoverPath string
}

func (u *UI) seriesPoll(r *http.Request, s store.Series, owner bool) (*pollFacts, error) {
	hist, err := u.store.LatestHistory(r.Context(), s.Key, HistoryShown)
	if err != nil {
		return nil, err
	}
	f := &pollFacts{
		LastPoll: u.when(s.LastPollAt), LastSuccess: u.when(s.LastSuccessAt),
		Status: s.PollStatus, OK: s.PollStatus == store.PollOK || s.PollStatus == store.PollNotModified,
		MS: s.PollMS, Failures: s.PollFailures, Problem: s.PollProblem, CoverProblem: s.CoverProblem,
		Next: u.nextPoll(s.NextPollAt, s.NextPollReason),
	}
	if s.PollProblem != "" && s.PollBodyLen != nil {
		f.BodyLen = byteCount(*s.PollBodyLen)
	}
	if desc, kind, ok := poll.DescribeRhythm(s.Rhythm); ok {
		f.Rhythm = desc
		f.Timed = kind == "daily" || kind == "weekly"
	}
	for i := len(hist) - 1; i >= 0; i-- {
		h := hist[i]
		f.History = append(f.History, historyRow{Label: h.Label, URL: httpURL(h.URL), FirstSeen: u.when(&h.FirstSeenAt), First: h.PrevPollAt == nil})
	}
	if owner && u.poll != nil {
		f.Owner = true
		f.PollPath, f.CoverPath = ownerSeriesPath(s.Key)+"/poll", ownerSeriesPath(s.Key)+"/cover/refetch"
	}
	return f, nil
}
