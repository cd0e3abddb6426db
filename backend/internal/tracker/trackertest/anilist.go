package trackertest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// AniList starts a fake AniList: POST / is the GraphQL endpoint, /oauth
// the OAuth base (authorize is the tracker's page in a browser; tests
// issue codes with IssueCode).
func AniList(t testing.TB) *Fake {
	return newFake(t, "anilist", func(f *Fake) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("POST /{$}", f.aniGraphQL)
		mux.HandleFunc("POST /oauth/token", f.aniToken)
		return mux
	})
}

// GraphQLURL is ANILIST_API_URL for the fake; OAuthURL ANILIST_OAUTH_URL.
func (f *Fake) GraphQLURL() string { return f.URL + "/" }

// OAuthURL is the OAuth base of the fake.
func (f *Fake) OAuthURL() string { return f.URL + "/oauth" }

// aniOp names the GraphQL operation by its root field.
func aniOp(q string) string {
	for _, op := range []string{"SaveMediaListEntry", "MediaListCollection", "MediaList", "Viewer", "Page"} {
		if strings.Contains(q, op+"(") || strings.Contains(q, op+" {") || strings.Contains(q, op+"{") {
			return op
		}
	}
	return "unknown"
}

func gqlError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"errors": []map[string]any{{"message": msg, "status": status}}, "data": nil})
}

func (f *Fake) aniGraphQL(w http.ResponseWriter, r *http.Request) {
	body := readBody(r)
	var req struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		gqlError(w, 400, "Invalid JSON")
		return
	}
	op := aniOp(req.Query)
	if f.record(w, r, op, body) {
		return
	}
	num := func(k string) int64 {
		v, _ := req.Variables[k].(float64)
		return int64(v)
	}
	if op == "Page" {
		f.aniSearch(w, req.Variables["search"])
		return
	}
	if !f.authorized(r) {
		gqlError(w, http.StatusUnauthorized, "Invalid token")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch op {
	case "Viewer":
		writeJSON(w, 200, map[string]any{"data": map[string]any{"Viewer": map[string]any{"id": f.UserID, "name": f.UserName}}})
	case "MediaList":
		if num("userId") != f.UserID {
			gqlError(w, 404, "Not Found.")
			return
		}
		e, ok := f.entries[num("mediaId")]
		if !ok {
			writeJSON(w, 404, map[string]any{"errors": []map[string]any{{"message": "Not Found.", "status": 404}}, "data": map[string]any{"MediaList": nil}})
			return
		}
		writeJSON(w, 200, map[string]any{"data": map[string]any{"MediaList": map[string]any{"id": num("mediaId") * 10, "progress": e.Progress, "status": e.Status}}})
	case "SaveMediaListEntry":
		id := num("mediaId")
		e, ok := f.entries[id]
		if !ok {
			e = &Entry{}
			f.entries[id] = e
		}
		if p, ok := req.Variables["progress"].(float64); ok {
			e.Progress = int(p)
		}
		if s, ok := req.Variables["status"].(string); ok {
			e.Status = s
		}
		writeJSON(w, 200, map[string]any{"data": map[string]any{"SaveMediaListEntry": map[string]any{"id": id * 10, "mediaId": id, "progress": e.Progress, "status": e.Status}}})
	case "MediaListCollection":
		var entries []map[string]any
		for id, e := range f.entries {
			var links []map[string]any
			for _, l := range e.Links {
				links = append(links, map[string]any{"url": l})
			}
			entries = append(entries, map[string]any{"mediaId": id, "progress": e.Progress, "status": e.Status,
				"media": map[string]any{"title": map[string]any{"romaji": e.Title, "english": nil}, "externalLinks": links}})
		}
		writeJSON(w, 200, map[string]any{"data": map[string]any{"MediaListCollection": map[string]any{"lists": []map[string]any{{"entries": entries}}}}})
	default:
		gqlError(w, 400, "Unknown query")
	}
}

func (f *Fake) aniSearch(w http.ResponseWriter, q any) {
	s, _ := q.(string)
	f.mu.Lock()
	defer f.mu.Unlock()
	var media []map[string]any
	for id, title := range f.Catalog {
		if strings.Contains(strings.ToLower(title), strings.ToLower(s)) {
			media = append(media, map[string]any{"id": id, "title": map[string]any{"romaji": title, "english": nil},
				"siteUrl": "https://anilist.co/manga/" + itoa(id), "startDate": map[string]any{"year": 2018}})
		}
	}
	writeJSON(w, 200, map[string]any{"data": map[string]any{"Page": map[string]any{"media": media}}})
}

// aniToken is the authorisation code grant: JSON in, the token out.
func (f *Fake) aniToken(w http.ResponseWriter, r *http.Request) {
	body := readBody(r)
	if f.record(w, r, "token", body) {
		return
	}
	var req map[string]string
	_ = json.Unmarshal([]byte(body), &req)
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.codes[req["code"]]
	delete(f.codes, req["code"])
	if !ok || req["grant_type"] != "authorization_code" || req["client_id"] != f.ClientID || req["client_secret"] != f.ClientSecret ||
		req["redirect_uri"] != c.redirect {
		writeJSON(w, 400, map[string]any{"error": "invalid_grant", "message": "The authorization code is invalid"})
		return
	}
	writeJSON(w, 200, map[string]any{"token_type": "Bearer", "expires_in": 31536000, "access_token": f.Token, "refresh_token": f.Refresh})
}
