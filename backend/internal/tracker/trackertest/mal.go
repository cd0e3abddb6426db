package trackertest

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// MAL starts a fake MyAnimeList: /v2 is the API, /v1/oauth2 the OAuth base.
func MAL(t testing.TB) *Fake {
	return newFake(t, "myanimelist", func(f *Fake) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /v2/users/@me", f.malMe)
		mux.HandleFunc("GET /v2/users/@me/mangalist", f.malList)
		mux.HandleFunc("GET /v2/manga", f.malSearch)
		mux.HandleFunc("GET /v2/manga/{id}", f.malManga)
		mux.HandleFunc("PATCH /v2/manga/{id}/my_list_status", f.malPatch)
		mux.HandleFunc("POST /v1/oauth2/token", f.malToken)
		return mux
	})
}

// APIURL is MAL_API_URL for the fake.
func (f *Fake) APIURL() string { return f.URL + "/v2" }

// MALOAuthURL is MAL_OAUTH_URL for the fake.
func (f *Fake) MALOAuthURL() string { return f.URL + "/v1/oauth2" }

func malRefused(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	writeJSON(w, 401, map[string]any{"error": "invalid_token"})
}

func (f *Fake) malMe(w http.ResponseWriter, r *http.Request) {
	if f.record(w, r, "me", "") {
		return
	}
	if !f.authorized(r) {
		malRefused(w)
		return
	}
	writeJSON(w, 200, map[string]any{"id": f.UserID, "name": f.UserName})
}

func (f *Fake) malManga(w http.ResponseWriter, r *http.Request) {
	if f.record(w, r, "get", "") {
		return
	}
	if !f.authorized(r) {
		malRefused(w)
		return
	}
	id := atoi64(r.PathValue("id"))
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]any{"id": id, "title": f.Catalog[id]}
	if e, ok := f.entries[id]; ok {
		out["my_list_status"] = map[string]any{"status": e.Status, "num_chapters_read": e.Progress, "is_rereading": false, "score": 0}
	}
	writeJSON(w, 200, out)
}

func (f *Fake) malPatch(w http.ResponseWriter, r *http.Request) {
	body := readBody(r)
	if f.record(w, r, "patch", body) {
		return
	}
	if !f.authorized(r) {
		malRefused(w)
		return
	}
	form, _ := url.ParseQuery(body)
	id := atoi64(r.PathValue("id"))
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[id]
	if !ok {
		e = &Entry{Status: "reading"}
		f.entries[id] = e
	}
	if v := form.Get("num_chapters_read"); v != "" {
		e.Progress, _ = strconv.Atoi(v)
	}
	if v := form.Get("status"); v != "" {
		e.Status = v
	}
	writeJSON(w, 200, map[string]any{"status": e.Status, "num_chapters_read": e.Progress, "is_rereading": false})
}

func (f *Fake) malList(w http.ResponseWriter, r *http.Request) {
	if f.record(w, r, "list", "") {
		return
	}
	if !f.authorized(r) {
		malRefused(w)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var data []map[string]any
	for id, e := range f.entries {
		data = append(data, map[string]any{"node": map[string]any{"id": id, "title": e.Title},
			"list_status": map[string]any{"status": e.Status, "num_chapters_read": e.Progress}})
	}
	writeJSON(w, 200, map[string]any{"data": data, "paging": map[string]any{}})
}

func (f *Fake) malSearch(w http.ResponseWriter, r *http.Request) {
	if f.record(w, r, "search", "") {
		return
	}
	q := strings.ToLower(r.URL.Query().Get("q"))
	f.mu.Lock()
	defer f.mu.Unlock()
	var data []map[string]any
	for id, title := range f.Catalog {
		if strings.Contains(strings.ToLower(title), q) {
			data = append(data, map[string]any{"node": map[string]any{"id": id, "title": title}})
		}
	}
	writeJSON(w, 200, map[string]any{"data": data})
}

// malToken is the token endpoint: the authorisation code grant checked
// against the code's PKCE challenge (plain: the verifier itself), and the
// refresh grant.
func (f *Fake) malToken(w http.ResponseWriter, r *http.Request) {
	body := readBody(r)
	if f.record(w, r, "token", body) {
		return
	}
	form, _ := url.ParseQuery(body)
	f.mu.Lock()
	defer f.mu.Unlock()
	bad := func() { writeJSON(w, 400, map[string]any{"error": "invalid_grant", "message": "invalid grant"}) }
	if form.Get("client_id") != f.ClientID || form.Get("client_secret") != f.ClientSecret {
		writeJSON(w, 401, map[string]any{"error": "invalid_client"})
		return
	}
	switch form.Get("grant_type") {
	case "authorization_code":
		c, ok := f.codes[form.Get("code")]
		delete(f.codes, form.Get("code"))
		if !ok || c.challenge == "" || form.Get("code_verifier") != c.challenge || form.Get("redirect_uri") != c.redirect {
			bad()
			return
		}
	case "refresh_token":
		if form.Get("refresh_token") != f.Refresh {
			bad()
			return
		}
		f.Token, f.Refresh = f.Token+"-refreshed", f.Refresh+"-refreshed"
	default:
		bad()
		return
	}
	writeJSON(w, 200, map[string]any{"token_type": "Bearer", "expires_in": 2678400, "access_token": f.Token, "refresh_token": f.Refresh})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
