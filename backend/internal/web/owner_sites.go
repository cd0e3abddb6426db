package web

import (
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/poll"
)

// The Owner console's Sites: how polling each Site goes (last success, last
// problem, back-off), its budget and pace, its queued polls, its held
// Series by the reason of their next poll, and a Resume button.

type siteRow struct {
	Name, Kind    string
	Browser       bool
	Pace          string
	Budget        int
	BudgetSet     bool
	LastSuccess   *when
	LastProblem   string
	LastProblemAt *when
	Paused        bool
	PausedUntil   nextPoll
	Refusals      int
	QueuedPolls   int
	Held          int
	Reasons       []poll.ReasonCount
	ResumePath    string
}

type ownerSitesPage struct {
	common
	Policy   string
	Interval string
	Sites    []siteRow
}

func (u *UI) ownerSites(w http.ResponseWriter, r *http.Request) {
	st, err := u.poll.Status(r.Context(), 0)
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	p := ownerSitesPage{common: u.base(r, "Sites", "owner"), Policy: st.Policy, Interval: shortDuration(u.poll.Interval)}
	for _, s := range st.Sites {
		row := siteRow{
			Name: s.Site.Name, Kind: string(s.Site.Kind), Browser: s.Site.Browser != nil,
			Pace: shortDuration(s.Pace), Budget: s.Budget, BudgetSet: s.BudgetSet,
			LastSuccess: u.when(s.LastSuccessAt), LastProblem: s.LastProblem, LastProblemAt: u.when(s.LastProblemAt),
			Refusals: s.Refusals, QueuedPolls: s.QueuedPolls, Held: s.Held, Reasons: s.Reasons,
			ResumePath: "/owner/sites/" + url.PathEscape(s.Site.Name) + "/resume",
		}
		if s.BackingOff {
			row.Paused = true
			row.PausedUntil = u.nextPoll(&s.BackingOffUntil, "paused")
		}
		p.Sites = append(p.Sites, row)
	}
	u.render(w, r, http.StatusOK, "owner_sites", p)
}

func (u *UI) siteResume(w http.ResponseWriter, r *http.Request) {
	site := chi.URLParam(r, "site")
	err := u.poll.Controls.ResumeSite(r.Context(), site)
	if errs.CodeOf(err) == errs.NotFound {
		u.refuse(w, r, err, "No such Site", "Lectern has no Site called “"+site+"”.")
		return
	}
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	me, _ := readerFrom(r)
	u.log.InfoContext(r.Context(), "Site resumed from the Owner console", "site", site, "by", me.ID)
	ownerDone(w, r, "/owner/sites", "site-resumed")
}
