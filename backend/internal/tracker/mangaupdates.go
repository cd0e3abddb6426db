package tracker

import (
	"context"
	"net/http"
	"strconv"
	"strings"
)

// MUClient is MangaUpdates' API v1 (https://api.mangaupdates.com): an
// account session from the Reader's name and password (only the session
// token is kept), and the list endpoints.
type MUClient struct {
	api
	// Base is MANGAUPDATES_API_URL (…/v1).
	Base string
}

// NewMangaUpdates builds the client; hc nil means a client with a 30 s
// timeout.
func NewMangaUpdates(base, userAgent string, hc *http.Client) *MUClient {
	return &MUClient{api: newAPI(MangaUpdates, hc, userAgent), Base: strings.TrimRight(base, "/")}
}

// MangaUpdates' lists, by list_id.
const (
	muReading  = 0
	muWish     = 1
	muComplete = 2
	muDropped  = 3 // "unfinished"
	muOnHold   = 4
)

var muStatus = map[int]string{muReading: StatusReading, muWish: StatusPlanning, muComplete: StatusCompleted, muDropped: StatusDropped, muOnHold: StatusPaused}

func muList(status string) int {
	for k, v := range muStatus {
		if v == status {
			return k
		}
	}
	return muReading
}

// Name implements Client.
func (c *MUClient) Name() string { return MangaUpdates }

// EntryURL implements Client: MangaUpdates' pages name a series by its id
// in base 36.
func (c *MUClient) EntryURL(id string) string {
	n, err := strconv.ParseUint(id, 10, 63)
	if err != nil {
		return "https://www.mangaupdates.com/"
	}
	return "https://www.mangaupdates.com/series/" + strconv.FormatUint(n, 36)
}

const muJSON = "application/json"

// Login implements PasswordClient with PUT /account/login.
func (c *MUClient) Login(ctx context.Context, username, password string) (Token, User, error) {
	var res struct {
		Status  string `json:"status"`
		Context struct {
			SessionToken string `json:"session_token"`
			UID          int64  `json:"uid"`
		} `json:"context"`
	}
	body := jsonBody(map[string]string{"username": username, "password": password})
	if err := c.call(ctx, http.MethodPut, c.Base+"/account/login", "", muJSON, body, &res); err != nil {
		if e, ok := err.(*Error); ok && e.Status >= 400 && e.Status < 500 && e.Kind != Limited {
			e.Kind = Refused
		}
		return Token{}, User{}, err
	}
	if res.Status != "success" || res.Context.SessionToken == "" {
		return Token{}, User{}, &Error{Tracker: MangaUpdates, Kind: Refused, Msg: "the login was not accepted"}
	}
	return Token{Access: res.Context.SessionToken}, User{ID: strconv.FormatInt(res.Context.UID, 10), Name: username}, nil
}

// Identify implements Client with GET /account/profile.
func (c *MUClient) Identify(ctx context.Context, tok Token) (User, error) {
	var me struct {
		UserID   int64  `json:"user_id"`
		Username string `json:"username"`
	}
	if err := c.call(ctx, http.MethodGet, c.Base+"/account/profile", tok.Access, "", nil, &me); err != nil {
		return User{}, err
	}
	return User{ID: strconv.FormatInt(me.UserID, 10), Name: me.Username}, nil
}

type muListItem struct {
	Series struct {
		ID    int64  `json:"id"`
		Title string `json:"title"`
		URL   string `json:"url"`
	} `json:"series"`
	ListID int `json:"list_id"`
	Status struct {
		Chapter int `json:"chapter"`
	} `json:"status"`
}

// Get implements Client with GET /lists/series/{id}: 404 when the series is
// on none of the Reader's lists.
func (c *MUClient) Get(ctx context.Context, tok Token, _ User, id string) (Entry, bool, error) {
	var it muListItem
	err := c.call(ctx, http.MethodGet, c.Base+"/lists/series/"+id, tok.Access, "", nil, &it)
	if e, ok := err.(*Error); ok && e.Status == http.StatusNotFound {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, err
	}
	return Entry{Progress: it.Status.Chapter, Status: muStatus[it.ListID]}, true, nil
}

// Save implements Client: POST /lists/series/update for an entry on a list,
// POST /lists/series to add one.
func (c *MUClient) Save(ctx context.Context, tok Token, id string, found bool, progress int, status string) error {
	n, _ := strconv.ParseInt(id, 10, 64)
	item := map[string]any{"series": map[string]any{"id": n}, "list_id": muList(status), "status": map[string]any{"chapter": progress}}
	path := "/lists/series"
	if found {
		path += "/update"
	}
	return c.call(ctx, http.MethodPost, c.Base+path, tok.Access, muJSON, jsonBody([]any{item}), nil)
}

// List implements Client with POST /lists/{id}/search over the reading,
// wish, complete and on-hold lists, page by page.
func (c *MUClient) List(ctx context.Context, tok Token, _ User) ([]ListItem, error) {
	var out []ListItem
	for _, list := range []int{muReading, muWish, muComplete, muOnHold, muDropped} {
		for page := 1; page <= 500; page++ {
			var res struct {
				TotalHits int `json:"total_hits"`
				Results   []struct {
					Record muListItem `json:"record"`
				} `json:"results"`
			}
			body := jsonBody(map[string]int{"page": page, "perpage": 100})
			err := c.call(ctx, http.MethodPost, c.Base+"/lists/"+strconv.Itoa(list)+"/search", tok.Access, muJSON, body, &res)
			if e, ok := err.(*Error); ok && e.Status == http.StatusNotFound {
				break // a list the Reader does not have
			}
			if err != nil {
				return nil, err
			}
			for _, r := range res.Results {
				it := ListItem{ID: strconv.FormatInt(r.Record.Series.ID, 10), Title: r.Record.Series.Title,
					Progress: r.Record.Status.Chapter, Status: muStatus[list]}
				out = append(out, it)
			}
			if len(res.Results) == 0 || page*100 >= res.TotalHits {
				break
			}
		}
	}
	return out, nil
}

// Search implements Client with POST /series/search.
func (c *MUClient) Search(ctx context.Context, tok Token, title string) ([]Candidate, error) {
	var res struct {
		Results []struct {
			Record struct {
				SeriesID int64  `json:"series_id"`
				Title    string `json:"title"`
				URL      string `json:"url"`
				Year     string `json:"year"`
			} `json:"record"`
		} `json:"results"`
	}
	body := jsonBody(map[string]any{"search": title, "perpage": 10})
	if err := c.call(ctx, http.MethodPost, c.Base+"/series/search", tok.Access, muJSON, body, &res); err != nil {
		return nil, err
	}
	var out []Candidate
	for _, r := range res.Results {
		id := strconv.FormatInt(r.Record.SeriesID, 10)
		y, _ := strconv.Atoi(r.Record.Year)
		u := r.Record.URL
		if !strings.HasPrefix(u, "https://") {
			u = c.EntryURL(id)
		}
		out = append(out, Candidate{ID: id, Title: r.Record.Title, URL: u, Year: y})
	}
	return out, nil
}
