package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/addedsites"
	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// The Owner's Sites: the list of every Site, and adding, changing and
// removing Sites of a family at run time (docs/adr/0019), through the same
// addedsites.Service as the web console and `lectern site add|list|remove`.

// SiteJSON is one Site in GET /api/admin/sites.
type SiteJSON struct {
	Site    string            `json:"site"`
	Kind    string            `json:"kind"`
	Hosts   []string          `json:"hosts"`
	BuiltIn bool              `json:"built_in"`
	Family  string            `json:"family"`
	Options map[string]string `json:"options"`
	PaceMS  int64             `json:"pace_ms"`
}

// SitesJSON is GET /api/admin/sites: every Site in this replica's registry
// and the families a Site may be added from.
type SitesJSON struct {
	Sites    []SiteJSON      `json:"sites"`
	Families []latest.Family `json:"families"`
}

// AddedSiteJSON answers POST /api/admin/sites.
type AddedSiteJSON struct {
	SiteJSON
	// Resumed: a removed Site brought back, its Bookmarks with it.
	Resumed bool `json:"resumed"`
}

// ProbeRequestJSON is the body of POST /api/admin/sites/probe: a Site
// definition (site and hosts optional: the URL's host is used) and one
// series URL to fetch now.
type ProbeRequestJSON struct {
	Family  string            `json:"family"`
	Kind    string            `json:"kind"`
	Options map[string]string `json:"options"`
	URL     string            `json:"url"`
}

func (ad *Admin) addedSiteRoutes(r chi.Router) {
	r.Get("/sites", ad.listSites)
	r.Post("/sites", ad.addSite)
	r.Post("/sites/probe", ad.probeSite)
	r.Delete("/sites/{site}", ad.removeSite)
}

func siteJSON(s *latest.Site) SiteJSON {
	opts := s.Options
	if opts == nil {
		opts = map[string]string{}
	}
	return SiteJSON{Site: s.Name, Kind: string(s.Kind), Hosts: s.Hosts, BuiltIn: s.Family == "", Family: s.Family, Options: opts,
		PaceMS: s.Pace.Milliseconds()}
}

func (ad *Admin) listSites(w http.ResponseWriter, r *http.Request) {
	out := SitesJSON{Sites: []SiteJSON{}, Families: latest.Families()}
	for _, s := range ad.Console.Registry.Sites() {
		out.Sites = append(out.Sites, siteJSON(s))
	}
	face.WriteJSON(w, http.StatusOK, out)
}

func (ad *Admin) addSite(w http.ResponseWriter, r *http.Request) {
	var d addedsites.Def
	if status, msg := Decode(w, r, &d); status != 0 {
		face.WriteError(w, status, msg)
		return
	}
	site, resumed, err := ad.Sites.Add(r.Context(), d)
	if err != nil {
		ad.controlFailed(w, r, err)
		return
	}
	face.WriteJSON(w, http.StatusCreated, AddedSiteJSON{SiteJSON: siteJSON(site), Resumed: resumed})
}

func (ad *Admin) removeSite(w http.ResponseWriter, r *http.Request) {
	if err := ad.Sites.Remove(r.Context(), chi.URLParam(r, "site")); err != nil {
		ad.controlFailed(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// changeAddedSite applies the hosts and options of PUT /api/admin/sites/{site}.
func (ad *Admin) changeAddedSite(ctx context.Context, site string, hosts, options json.RawMessage) error {
	if hosts == nil && options == nil {
		return nil
	}
	var h []string
	var o map[string]string
	if hosts != nil && (json.Unmarshal(hosts, &h) != nil || h == nil) {
		return errs.New(errs.Invalid, `hosts must be a list of host names, e.g. ["example.com"]`)
	}
	if options != nil && (json.Unmarshal(options, &o) != nil || o == nil) {
		return errs.New(errs.Invalid, `options must be an object of strings, e.g. {"series_path": "series"}`)
	}
	return ad.Sites.Change(ctx, site, h, o)
}

// probeSite is the console's "Test this Site" (addedsites.Service.Probe).
func (ad *Admin) probeSite(w http.ResponseWriter, r *http.Request) {
	var p ProbeRequestJSON
	if status, msg := Decode(w, r, &p); status != 0 {
		face.WriteError(w, status, msg)
		return
	}
	res, err := ad.Sites.Probe(r.Context(), addedsites.Def{Family: p.Family, Kind: p.Kind, Options: p.Options}, p.URL)
	switch {
	case errors.Is(err, addedsites.ErrProbeFetch):
		face.WriteError(w, http.StatusBadGateway, err.Error())
		return
	case err != nil:
		ad.controlFailed(w, r, err)
		return
	}
	face.WriteJSON(w, http.StatusOK, res)
}
