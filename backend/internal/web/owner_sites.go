package web

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// The Owner console's Sites: how polling each Site goes (last success, last
// problem, back-off), its budget and pace, its queued polls, its held
// Series by the reason of their next poll, and a Resume button.

type reasonCount struct {
	Reason string
	Count  int
}

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
	Reasons       []reasonCount
	ResumePath    string
}

type ownerSitesPage struct {
	common
	Policy   string
	Interval string
	Sites    []siteRow
}

func (u *UI) ownerSites(w http.ResponseWriter, r *http.Request) {
	sites := latest.Sites()
	names := make([]string, len(sites))
	for i, s := range sites {
		names[i] = s.Name
	}
	st, err := u.store.PollStatusOf(r.Context(), names, 0)
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	counts, err := u.store.ScheduleReasons(r.Context())
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	bySite := map[string][]reasonCount{}
	held := map[string]int{}
	for _, c := range counts {
		reason := c.Reason
		if reason == "" {
			reason = "being planned"
		}
		bySite[c.Site] = append(bySite[c.Site], reasonCount{Reason: reason, Count: c.Count})
		held[c.Site] += c.Count
	}
	p := ownerSitesPage{common: u.base(r, "Sites", "owner"), Policy: u.poll.Policy, Interval: shortDuration(u.poll.Interval)}
	if p.Policy == "" {
		p.Policy = latest.PolicyAdaptive
	}
	now := u.now()
	for i, s := range st.Sites {
		site := sites[i]
		row := siteRow{
			Name: site.Name, Kind: string(site.Kind), Browser: site.Browser != nil,
			Pace: shortDuration(u.poll.Paces.Of(site)), Budget: u.poll.Budgets.Of(site), BudgetSet: u.poll.Budgets.Configured(site),
			LastSuccess: u.when(s.LastSuccessAt), LastProblem: s.LastProblem, LastProblemAt: u.when(s.LastProblemAt),
			Refusals: s.Refusals, QueuedPolls: s.QueuedPolls, Held: held[site.Name], Reasons: bySite[site.Name],
			ResumePath: "/owner/sites/" + url.PathEscape(site.Name) + "/resume",
		}
		if until, paused := s.Paused(now); paused {
			row.Paused = true
			row.PausedUntil = u.nextPoll(&until, "paused")
		}
		p.Sites = append(p.Sites, row)
	}
	u.render(w, r, http.StatusOK, "owner_sites", p)
}

func (u *UI) siteResume(w http.ResponseWriter, r *http.Request) {
	site := chi.URLParam(r, "site")
	err := u.poll.Controls.ResumeSite(r.Context(), site)
	if errors.Is(err, latest.ErrNoSuchSite) {
		u.fail(w, r, http.StatusNotFound, "No such Site", "Lectern has no Site called “"+site+"”.")
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
