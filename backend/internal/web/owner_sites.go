package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/poll"
)

// The Owner console's Sites: each Site's real state (paused by the Owner,
// backing off until when and why, failing with the share of recent polls
// that failed and the last problem, or healthy), its last success and
// problem, its budget and pace and where they come from, its queued polls,
// its held Series by the reason of their next poll; and the Owner's
// controls: pause and resume a Site or all background work, change a
// Site's pace and budget. Every control is a POST behind requireOwner and
// the CSRF check, through the same poll.Controls as the Owner's API.

type siteRow struct {
	Name, Kind    string
	Browser       bool
	State         string
	OwnerPaused   bool
	AllPaused     bool
	Pace          string
	PaceSource    string
	Budget        int
	BudgetSource  string
	LastSuccess   *when
	LastProblem   string
	LastProblemAt *when
	BackingOff    bool
	PausedUntil   nextPoll
	Refusals      int
	// RecentPolls and RecentFailed judge a failing Site; LastFailure is
	// the newest failed poll's problem.
	RecentPolls, RecentFailed int
	LastFailure               string
	LastFailureAt             *when
	// Problem is the newer of the Site's last problem (a back-off's) and
	// its newest failed poll's: what went wrong last, whichever it was.
	Problem     string
	ProblemAt   *when
	QueuedPolls int
	Held        int
	Reasons     []poll.ReasonCount
	// Listing is the Site's listing; nil when it has none.
	Listing *poll.ListingStatus
	// The forms' actions.
	ResumePath, PausePath, SettingsPath string
	// An added Site's definition, its forms' actions (owner_added_sites.go).
	Family, Hosts, Options     string
	DefinitionPath, RemovePath string
}

type ownerSitesPage struct {
	common
	Policy    string
	Interval  string
	AllPaused bool
	Sites     []siteRow
	// Adding is true when Sites of a family may be added here; Families,
	// Form and Probe are the add form, what it was filled with, and the
	// "Test this Site" answer.
	Adding   bool
	Families []familyChoice
	Form     siteForm
	Probe    *probeView
	// Alerts are the Owner alerts raised and not yet recovered
	// (notify.Watch), the same ones the Owner's targets were told of.
	Alerts []alertRow
}

type alertRow struct {
	Kind, Site, Cause, Message string
	Raised                     *when
}

func (u *UI) ownerSites(w http.ResponseWriter, r *http.Request) {
	u.renderSites(w, r, http.StatusOK, siteForm{Kind: "manga"}, nil)
}

// renderSites renders the Sites page with the add form as given and, after
// "Test this Site", its answer.
func (u *UI) renderSites(w http.ResponseWriter, r *http.Request, status int, form siteForm, probe *probeView) {
	st, err := u.poll.Status(r.Context(), 0)
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	p := ownerSitesPage{common: u.base(r, "Sites", "owner"), Policy: st.Policy, Interval: shortDuration(u.poll.Interval), AllPaused: st.AllPaused,
		Adding: u.sites != nil, Families: familyChoices(form.Family), Form: form, Probe: probe}
	alerts, err := u.store.OwnerAlerts(r.Context())
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	for _, a := range alerts {
		if a.RaisedAt != nil {
			p.Alerts = append(p.Alerts, alertRow{Kind: a.Kind, Site: a.Site, Cause: a.Cause, Message: a.Message, Raised: u.when(a.RaisedAt)})
		}
	}
	for _, s := range st.Sites {
		base := "/owner/sites/" + url.PathEscape(s.Site.Name)
		row := siteRow{
			Name: s.Site.Name, Kind: string(s.Site.Kind), Browser: s.Site.Browser != nil,
			State: s.State, OwnerPaused: s.OwnerPaused, AllPaused: s.AllPaused,
			Pace: shortDuration(s.Pace), PaceSource: s.PaceSource, Budget: s.Budget.PerHour, BudgetSource: s.Budget.Source,
			LastSuccess: u.when(s.LastSuccessAt), LastProblem: s.LastProblem, LastProblemAt: u.when(s.LastProblemAt),
			Refusals: s.Refusals, RecentPolls: s.RecentPolls, RecentFailed: s.RecentFailed,
			LastFailure: s.LastFailure, LastFailureAt: u.when(s.LastFailureAt),
			QueuedPolls: s.QueuedPolls, Held: s.Held, Reasons: s.Reasons, Listing: s.Listing,
			ResumePath: base + "/resume", PausePath: base + "/pause", SettingsPath: base + "/settings",
		}
		row.Problem, row.ProblemAt = s.LastProblem, row.LastProblemAt
		if s.LastFailure != "" && (s.LastProblem == "" || s.LastProblemAt == nil || s.LastFailureAt != nil && s.LastFailureAt.After(*s.LastProblemAt)) {
			row.Problem, row.ProblemAt = s.LastFailure, row.LastFailureAt
		}
		if s.BackingOff {
			row.BackingOff = true
			row.PausedUntil = u.nextPoll(&s.BackingOffUntil, "paused")
		}
		if s.Site.Family != "" && u.sites != nil {
			row.Family, row.Hosts, row.Options = s.Site.Family, strings.Join(s.Site.Hosts, " "), optionsText(s.Site.Options)
			row.DefinitionPath, row.RemovePath = base+"/definition", base+"/remove"
		}
		p.Sites = append(p.Sites, row)
	}
	u.render(w, r, status, "owner_sites", p)
}

// siteControl runs one of the Owner's controls of a Site from the console.
func (u *UI) siteControl(w http.ResponseWriter, r *http.Request, what, flash string, do func(*http.Request, string) error) {
	site := chi.URLParam(r, "site")
	err := do(r, site)
	switch {
	case errs.CodeOf(err) == errs.NotFound:
		u.refuse(w, r, err, "No such Site", "Lectern has no Site called “"+site+"”.")
		return
	case errs.CodeOf(err) == errs.Invalid:
		u.refuse(w, r, err, "Settings not changed", sentence(strings.TrimPrefix(err.Error(), poll.ErrBadSiteChange.Error()+": ")))
		return
	case err != nil:
		u.serverError(w, r, err)
		return
	}
	me, _ := readerFrom(r)
	u.log.InfoContext(r.Context(), "Site "+what+" from the Owner console", "site", site, "by", me.ID)
	ownerDone(w, r, "/owner/sites", flash)
}

func (u *UI) siteResume(w http.ResponseWriter, r *http.Request) {
	u.siteControl(w, r, "resumed", "site-resumed", func(r *http.Request, site string) error {
		return u.poll.Controls.ResumeSite(r.Context(), site)
	})
}

func (u *UI) sitePause(w http.ResponseWriter, r *http.Request) {
	u.siteControl(w, r, "paused", "site-paused", func(r *http.Request, site string) error {
		return u.poll.Controls.PauseSite(r.Context(), site)
	})
}

// siteSettings changes a Site's pace and budget from the form's two fields:
// a duration and a number of polls per hour, blank to leave one as it is,
// "default" to put it back.
func (u *UI) siteSettings(w http.ResponseWriter, r *http.Request) {
	u.siteControl(w, r, "settings changed", "site-changed", func(r *http.Request, site string) error {
		if _, ok := u.poll.Registry.Lookup(site); !ok {
			return fmt.Errorf("%w %q", poll.ErrNoSuchSite, site)
		}
		c, err := poll.ParseSiteChange(r.PostForm.Get("pace"), r.PostForm.Get("budget"))
		if err != nil {
			return err
		}
		return u.poll.Controls.ChangeSite(r.Context(), site, c)
	})
}

func (u *UI) pauseAll(w http.ResponseWriter, r *http.Request) {
	if err := u.poll.Controls.PauseAll(r.Context()); err != nil {
		u.serverError(w, r, err)
		return
	}
	me, _ := readerFrom(r)
	u.log.InfoContext(r.Context(), "all background work paused from the Owner console", "by", me.ID)
	ownerDone(w, r, "/owner/sites", "all-paused")
}

func (u *UI) resumeAll(w http.ResponseWriter, r *http.Request) {
	if err := u.poll.Controls.ResumeAll(r.Context()); err != nil {
		u.serverError(w, r, err)
		return
	}
	me, _ := readerFrom(r)
	u.log.InfoContext(r.Context(), "all background work resumed from the Owner console", "by", me.ID)
	ownerDone(w, r, "/owner/sites", "all-resumed")
}

// sentence makes a message start with a capital and end with a full stop.
func sentence(s string) string {
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}
