package trackertest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// MangaUpdates starts a fake MangaUpdates: /v1 is the API.
func MangaUpdates(t testing.TB) *Fake {
	return newFake(t, "mangaupdates", func(f *Fake) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("PUT /v1/account/login", f.muLogin)
		mux.HandleFunc("GET /v1/account/profile", f.muProfile)
		mux.HandleFunc("GET /v1/lists/series/{id}", f.muGet)
		mux.HandleFunc("POST /v1/lists/series", f.muAdd)
		mux.HandleFunc("POST /v1/lists/series/update", f.muUpdate)
		mux.HandleFunc("POST /v1/lists/{list}/search", f.muListSearch)
		mux.HandleFunc("POST /v1/series/search", f.muSeriesSearch)
		return mux
	})
}

// MUAPIURL is MANGAUPDATES_API_URL for the fake.
func (f *Fake) MUAPIURL() string { return f.URL + "/v1" }

func muRefused(w http.ResponseWriter) {
	writeJSON(w, 401, map[string]any{"status": "exception", "reason": "You must be logged in"})
}

func (f *Fake) muLogin(w http.ResponseWriter, r *http.Request) {
	body := readBody(r)
	if f.record(w, r, "login", body) {
		return
	}
	var req map[string]string
	_ = json.Unmarshal([]byte(body), &req)
	f.mu.Lock()
	defer f.mu.Unlock()
	if req["username"] != f.UserName || req["password"] != f.Password {
		writeJSON(w, 401, map[string]any{"status": "exception", "reason": "Invalid username or password"})
		return
	}
	writeJSON(w, 200, map[string]any{"status": "success", "reason": "Successfully logged in.",
		"context": map[string]any{"session_token": f.Token, "uid": f.UserID}})
}

func (f *Fake) muProfile(w http.ResponseWriter, r *http.Request) {
	if f.record(w, r, "profile", "") {
		return
	}
	if !f.authorized(r) {
		muRefused(w)
		return
	}
	writeJSON(w, 200, map[string]any{"user_id": f.UserID, "username": f.UserName})
}

func (f *Fake) muGet(w http.ResponseWriter, r *http.Request) {
	if f.record(w, r, "get", "") {
		return
	}
	if !f.authorized(r) {
		muRefused(w)
		return
	}
	id := atoi64(r.PathValue("id"))
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[id]
	if !ok {
		writeJSON(w, 404, map[string]any{"status": "exception", "reason": "Series not found in any list"})
		return
	}
	list, _ := strconv.Atoi(e.Status)
	writeJSON(w, 200, map[string]any{"series": map[string]any{"id": id, "title": e.Title}, "list_id": list,
		"status": map[string]any{"volume": 0, "chapter": e.Progress}, "priority": 0})
}

type muItem struct {
	Series struct {
		ID int64 `json:"id"`
	} `json:"series"`
	ListID int `json:"list_id"`
	Status *struct {
		Chapter int `json:"chapter"`
	} `json:"status"`
}

func (f *Fake) muWrite(w http.ResponseWriter, r *http.Request, op string, add bool) {
	body := readBody(r)
	if f.record(w, r, op, body) {
		return
	}
	if !f.authorized(r) {
		muRefused(w)
		return
	}
	var items []muItem
	if err := json.Unmarshal([]byte(body), &items); err != nil {
		writeJSON(w, 400, map[string]any{"status": "exception", "reason": "Invalid body"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, it := range items {
		e, ok := f.entries[it.Series.ID]
		if add == ok {
			writeJSON(w, 400, map[string]any{"status": "exception", "reason": "That series is already on one of your lists."})
			return
		}
		if !ok {
			e = &Entry{}
			f.entries[it.Series.ID] = e
		}
		e.Status = strconv.Itoa(it.ListID)
		if it.Status != nil {
			e.Progress = it.Status.Chapter
		}
	}
	writeJSON(w, 200, map[string]any{"status": "success", "reason": "Series updated"})
}

func (f *Fake) muAdd(w http.ResponseWriter, r *http.Request)    { f.muWrite(w, r, "add", true) }
func (f *Fake) muUpdate(w http.ResponseWriter, r *http.Request) { f.muWrite(w, r, "update", false) }

func (f *Fake) muListSearch(w http.ResponseWriter, r *http.Request) {
	body := readBody(r)
	if f.record(w, r, "list", body) {
		return
	}
	if !f.authorized(r) {
		muRefused(w)
		return
	}
	list := r.PathValue("list")
	var req struct {
		Page int `json:"page"`
	}
	_ = json.Unmarshal([]byte(body), &req)
	f.mu.Lock()
	defer f.mu.Unlock()
	var results []map[string]any
	for id, e := range f.entries {
		if e.Status == list && req.Page <= 1 {
			results = append(results, map[string]any{"record": map[string]any{"series": map[string]any{"id": id, "title": e.Title},
				"list_id": atoi64(list), "status": map[string]any{"chapter": e.Progress}}})
		}
	}
	writeJSON(w, 200, map[string]any{"total_hits": len(results), "page": req.Page, "per_page": 100, "results": results})
}

func (f *Fake) muSeriesSearch(w http.ResponseWriter, r *http.Request) {
	body := readBody(r)
	if f.record(w, r, "search", body) {
		return
	}
	var req struct {
		Search string `json:"search"`
	}
	_ = json.Unmarshal([]byte(body), &req)
	f.mu.Lock()
	defer f.mu.Unlock()
	var results []map[string]any
	for id, title := range f.Catalog {
		if strings.Contains(strings.ToLower(title), strings.ToLower(req.Search)) {
			results = append(results, map[string]any{"record": map[string]any{"series_id": id, "title": title,
				"url": "https://www.mangaupdates.com/series/" + strconv.FormatInt(id, 36) + "/x", "year": "2018"}})
		}
	}
	writeJSON(w, 200, map[string]any{"total_hits": len(results), "results": results})
}
