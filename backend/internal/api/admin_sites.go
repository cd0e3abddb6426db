package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/poll"
)

// The Owner's run-time control of the Sites: pause and resume one Site or
// all background work, and change a Site's pace and budget. Each calls the
// same Controls as the web console and `lectern site`.

// siteRoutes adds the Sites' controls under /api/admin.
func (ad *Admin) siteRoutes(r chi.Router) {
	r.Post("/pause", ad.pauseAll)
	r.Post("/resume", ad.resumeAll)
	r.Put("/sites/{site}", ad.changeSite)
	ad.addedSiteRoutes(r)
	r.Post("/sites/{site}/pause", ad.pauseSite)
	r.Post("/sites/{site}/resume", ad.resumeSite)
}

func (ad *Admin) pauseSite(w http.ResponseWriter, r *http.Request) {
	ad.siteAction(w, r, ad.Console.Controls.PauseSite, "paused")
}

func (ad *Admin) resumeSite(w http.ResponseWriter, r *http.Request) {
	ad.siteAction(w, r, ad.Console.Controls.ResumeSite, "resumed")
}

// siteAction runs an Owner's control of one Site and answers
// {"site": ..., done: true}.
func (ad *Admin) siteAction(w http.ResponseWriter, r *http.Request, do func(ctx context.Context, site string) error, done string) {
	site := chi.URLParam(r, "site")
	if err := do(r.Context(), site); err != nil {
		ad.controlFailed(w, r, err)
		return
	}
	face.WriteJSON(w, http.StatusOK, map[string]any{"site": site, done: true})
}

func (ad *Admin) pauseAll(w http.ResponseWriter, r *http.Request) {
	if err := ad.Console.Controls.PauseAll(r.Context()); err != nil {
		ad.controlFailed(w, r, err)
		return
	}
	face.WriteJSON(w, http.StatusOK, map[string]any{"background_paused": true})
}

func (ad *Admin) resumeAll(w http.ResponseWriter, r *http.Request) {
	if err := ad.Console.Controls.ResumeAll(r.Context()); err != nil {
		ad.controlFailed(w, r, err)
		return
	}
	face.WriteJSON(w, http.StatusOK, map[string]any{"background_paused": false})
}

// SiteSettingsJSON is the body of PUT /api/admin/sites/{site}: each field
// optional, absent to leave it, null to put it back to its default. hosts
// and options replace an added Site's (a built-in Site has none to change:
// 422).
type SiteSettingsJSON struct {
	PaceMS        json.RawMessage `json:"pace_ms"`
	BudgetPerHour json.RawMessage `json:"budget_per_hour"`
	Hosts         json.RawMessage `json:"hosts"`
	Options       json.RawMessage `json:"options"`
}

// SiteSettingsAnswerJSON is the answer of PUT /api/admin/sites/{site}: the
// Site's settings as they now apply.
type SiteSettingsAnswerJSON struct {
	Site          string `json:"site"`
	PaceMS        int64  `json:"pace_ms"`
	PaceSource    string `json:"pace_source"`
	BudgetPerHour int    `json:"budget_per_hour"`
	BudgetSource  string `json:"budget_source"`
	OwnerPaused   bool   `json:"owner_paused"`
	// Hosts, Family and Options are the Site's definition (family "" and
	// no options for a built-in Site).
	Hosts   []string          `json:"hosts"`
	Family  string            `json:"family"`
	Options map[string]string `json:"options"`
}

func optionsOf(s *latest.Site) map[string]string {
	if s.Options == nil {
		return map[string]string{}
	}
	return s.Options
}

func (ad *Admin) changeSite(w http.ResponseWriter, r *http.Request) {
	site := chi.URLParam(r, "site")
	if _, ok := ad.Console.Registry.Lookup(site); !ok {
		face.WriteError(w, http.StatusNotFound, "no Site "+strconv.Quote(site))
		return
	}
	var body SiteSettingsJSON
	if status, msg := Decode(w, r, &body); status != 0 {
		face.WriteError(w, status, msg)
		return
	}
	definition := body.Hosts != nil || body.Options != nil
	settings := body.PaceMS != nil || body.BudgetPerHour != nil
	var change poll.SiteChange
	if settings || !definition {
		var msg string
		if change, msg = body.change(); msg != "" {
			face.WriteError(w, http.StatusUnprocessableEntity, msg)
			return
		}
	}
	if definition {
		if err := ad.changeAddedSite(r.Context(), site, body.Hosts, body.Options); err != nil {
			ad.controlFailed(w, r, err)
			return
		}
	}
	if settings {
		if err := ad.Console.Controls.ChangeSite(r.Context(), site, change); err != nil {
			ad.controlFailed(w, r, err)
			return
		}
	}
	st, err := ad.Console.Status(r.Context(), 0)
	if err != nil {
		ad.serverError(w, r, err)
		return
	}
	for _, s := range st.Sites {
		if s.Site.Name == site {
			face.WriteJSON(w, http.StatusOK, SiteSettingsAnswerJSON{Site: site, PaceMS: s.Pace.Milliseconds(), PaceSource: s.PaceSource,
				BudgetPerHour: s.Budget.PerHour, BudgetSource: s.Budget.Source, OwnerPaused: s.OwnerPaused,
				Hosts: s.Site.Hosts, Family: s.Site.Family, Options: optionsOf(s.Site)})
			return
		}
	}
	face.WriteError(w, http.StatusNotFound, "no Site "+strconv.Quote(site))
}

// change reads the body as a poll.SiteChange; msg names what is wrong.
func (b SiteSettingsJSON) change() (c poll.SiteChange, msg string) {
	if b.PaceMS == nil && b.BudgetPerHour == nil {
		return c, "nothing to change: send pace_ms, budget_per_hour, or, for an added Site, hosts or options"
	}
	if isNull(b.PaceMS) {
		c.DefaultPace = true
	} else if b.PaceMS != nil {
		var ms int64
		if json.Unmarshal(b.PaceMS, &ms) != nil || ms < 0 || ms > poll.MaxPace.Milliseconds() {
			return c, "pace_ms must be a whole number of milliseconds from 0 to " + strconv.FormatInt(poll.MaxPace.Milliseconds(), 10) + ", or null for the default"
		}
		d := time.Duration(ms) * time.Millisecond
		c.Pace = &d
	}
	if isNull(b.BudgetPerHour) {
		c.DefaultBudget = true
	} else if b.BudgetPerHour != nil {
		var n int
		if json.Unmarshal(b.BudgetPerHour, &n) != nil || n < 1 || n > poll.MaxBudget {
			return c, "budget_per_hour must be a whole number of polls per hour from 1 to " + strconv.Itoa(poll.MaxBudget) + ", or null for the default"
		}
		c.Budget = &n
	}
	return c, ""
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// controlFailed answers a refused control (an unknown Site: 404; a bad
// change: 422, naming it) or a failure.
func (ad *Admin) controlFailed(w http.ResponseWriter, r *http.Request, err error) {
	if face.Refused(err) {
		// The controls' refusals name the Site or the mistake themselves.
		face.Refuse(w, err, err.Error())
		return
	}
	ad.serverError(w, r, err)
}
