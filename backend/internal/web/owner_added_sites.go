package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/addedsites"
	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// The Sites page's add, edit, remove and "Test this Site" of Sites of a
// family (docs/adr/0019), through the same addedsites.Service as the API
// and `lectern site add|list|remove`. The Owner chooses a family and its
// options from closed sets; no selector is ever typed.

func init() {
	for code, msg := range map[string]string{
		"site-added":        "Site added: every replica polls its Series within SITES_REFRESH.",
		"site-resumed-back": "Site added back: its Bookmarks are polled again.",
		"site-defined":      "Site changed: every replica applies its hosts and options within SITES_REFRESH.",
		"site-removed":      "Site removed: its polling stopped; its Bookmarks stay, their Series gone until it is added back.",
	} {
		flashes[code] = msg
	}
}

// siteForm is the add form as the Owner filled it.
type siteForm struct {
	Name, Family, Kind, Hosts, Options, URL string
}

// familyChoice is one family in the form's list.
type familyChoice struct {
	Name, About, Options string
	Selected             bool
}

func familyChoices(selected string) []familyChoice {
	var out []familyChoice
	for _, f := range latest.Families() {
		var opts []string
		for _, o := range f.Options {
			v := "a path segment"
			if o.Values != nil {
				v = strings.Join(o.Values, "|")
			}
			opts = append(opts, o.Name+"="+v)
		}
		out = append(out, familyChoice{Name: f.Name, About: f.About, Options: strings.Join(opts, ", "), Selected: f.Name == selected})
	}
	return out
}

// probeView is what "Test this Site" answered, as `lectern probe` prints it.
type probeView struct {
	JSON     string
	Answered bool
	Problem  string
}

// formOf reads the add form.
func formOf(r *http.Request) siteForm {
	f := r.PostForm
	return siteForm{Name: strings.TrimSpace(f.Get("site")), Family: f.Get("family"), Kind: f.Get("kind"),
		Hosts: f.Get("hosts"), Options: f.Get("options"), URL: strings.TrimSpace(f.Get("url"))}
}

// hostsOf splits the hosts field: host names separated by spaces, commas or
// lines.
func hostsOf(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
}

// optionsOf reads the options field: key=value pairs separated by spaces,
// commas or lines.
func optionsOf(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range hostsOf(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, errs.New(errs.Invalid, "option "+kv+" must be key=value")
		}
		out[k] = v
	}
	return out, nil
}

func optionsText(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, " ")
}

func (f siteForm) def() (addedsites.Def, error) {
	opts, err := optionsOf(f.Options)
	return addedsites.Def{Site: f.Name, Family: f.Family, Kind: f.Kind, Hosts: hostsOf(f.Hosts), Options: opts}, err
}

func (u *UI) siteAdd(w http.ResponseWriter, r *http.Request) {
	form := formOf(r)
	d, err := form.def()
	var resumed bool
	if err == nil {
		_, resumed, err = u.sites.Add(r.Context(), d)
	}
	if err != nil {
		u.refuseSite(w, r, err, form)
		return
	}
	me, _ := readerFrom(r)
	u.log.InfoContext(r.Context(), "Site added from the Owner console", "site", d.Site, "family", d.Family, "by", me.ID)
	if resumed {
		ownerDone(w, r, "/owner/sites", "site-resumed-back")
		return
	}
	ownerDone(w, r, "/owner/sites", "site-added")
}

// siteTest is "Test this Site": the series URL the Owner pasted, fetched
// now and read as the chosen family would; the page shows every answer
// under the form, still filled in.
func (u *UI) siteTest(w http.ResponseWriter, r *http.Request) {
	form := formOf(r)
	d, err := form.def()
	var res latest.ProbeResult
	if err == nil {
		res, err = u.sites.Probe(r.Context(), d, form.URL)
	}
	if errors.Is(err, addedsites.ErrProbeFetch) {
		u.renderSites(w, r, http.StatusOK, form, &probeView{Problem: err.Error()})
		return
	}
	if err != nil {
		u.refuseSite(w, r, err, form)
		return
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	u.renderSites(w, r, http.StatusOK, form, &probeView{JSON: string(b), Answered: res.Answered, Problem: res.Problem})
}

func (u *UI) siteDefinition(w http.ResponseWriter, r *http.Request) {
	site := chi.URLParam(r, "site")
	opts, err := optionsOf(r.PostForm.Get("options"))
	if err == nil {
		err = u.sites.Change(r.Context(), site, hostsOf(r.PostForm.Get("hosts")), opts)
	}
	if err != nil {
		u.refuseSite(w, r, err, siteForm{Kind: "manga"})
		return
	}
	me, _ := readerFrom(r)
	u.log.InfoContext(r.Context(), "Site changed from the Owner console", "site", site, "by", me.ID)
	ownerDone(w, r, "/owner/sites", "site-defined")
}

func (u *UI) siteRemove(w http.ResponseWriter, r *http.Request) {
	site := chi.URLParam(r, "site")
	if err := u.sites.Remove(r.Context(), site); err != nil {
		u.refuseSite(w, r, err, siteForm{Kind: "manga"})
		return
	}
	me, _ := readerFrom(r)
	u.log.InfoContext(r.Context(), "Site removed from the Owner console", "site", site, "by", me.ID)
	ownerDone(w, r, "/owner/sites", "site-removed")
}

// refuseSite shows the Sites page again with the form as it was and the
// refusal named, or a server error.
func (u *UI) refuseSite(w http.ResponseWriter, r *http.Request, err error, form siteForm) {
	code := errs.CodeOf(err)
	if code != errs.Invalid && code != errs.Conflict && code != errs.NotFound {
		u.serverError(w, r, err)
		return
	}
	status := http.StatusUnprocessableEntity
	switch code {
	case errs.Conflict:
		status = http.StatusConflict
	case errs.NotFound:
		status = http.StatusNotFound
	}
	u.renderSites(w, r, status, form, &probeView{Problem: sentence(errs.MessageOf(err))})
}
