package tracker

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MALClient is MyAnimeList's API v2 (https://myanimelist.net/apiconfig/references/api/v2)
// and its OAuth2 authorisation code grant with PKCE (MyAnimeList takes only
// the "plain" challenge method).
type MALClient struct {
	api
	// Base is MAL_API_URL (…/v2); OAuth is MAL_OAUTH_URL (…/v1/oauth2).
	Base, OAuth            string
	ClientID, ClientSecret string
}

// NewMAL builds the client; hc nil means a client with a 30 s timeout.
func NewMAL(base, oauth, clientID, clientSecret, userAgent string, hc *http.Client) *MALClient {
	return &MALClient{api: newAPI(MyAnimeList, hc, userAgent), Base: strings.TrimRight(base, "/"), OAuth: strings.TrimRight(oauth, "/"),
		ClientID: clientID, ClientSecret: clientSecret}
}

// Name implements Client.
func (c *MALClient) Name() string { return MyAnimeList }

// Configured implements OAuthClient.
func (c *MALClient) Configured() bool { return c.ClientID != "" }

// PKCE implements OAuthClient.
func (c *MALClient) PKCE() bool { return true }

// EntryURL implements Client.
func (c *MALClient) EntryURL(id string) string { return "https://myanimelist.net/manga/" + id }

func (c *MALClient) get(ctx context.Context, tok Token, path string, q url.Values, out any) error {
	u := c.Base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return c.call(ctx, http.MethodGet, u, tok.Access, "", nil, out)
}

// Identify implements Client with GET /users/@me.
func (c *MALClient) Identify(ctx context.Context, tok Token) (User, error) {
	var me struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	if err := c.get(ctx, tok, "/users/@me", nil, &me); err != nil {
		return User{}, err
	}
	return User{ID: strconv.FormatInt(me.ID, 10), Name: me.Name}, nil
}

var malStatus = map[string]string{
	"reading": StatusReading, "completed": StatusCompleted, "plan_to_read": StatusPlanning,
	"on_hold": StatusPaused, "dropped": StatusDropped,
}

type malListStatus struct {
	Status          string `json:"status"`
	NumChaptersRead int    `json:"num_chapters_read"`
	IsRereading     bool   `json:"is_rereading"`
}

func (s malListStatus) entry() Entry {
	st := malStatus[s.Status]
	if s.IsRereading {
		st = StatusRepeating
	}
	return Entry{Progress: s.NumChaptersRead, Status: st}
}

// Get implements Client with GET /manga/{id}?fields=my_list_status.
func (c *MALClient) Get(ctx context.Context, tok Token, _ User, id string) (Entry, bool, error) {
	var m struct {
		MyListStatus *malListStatus `json:"my_list_status"`
	}
	if err := c.get(ctx, tok, "/manga/"+id, url.Values{"fields": {"my_list_status"}}, &m); err != nil {
		return Entry{}, false, err
	}
	if m.MyListStatus == nil {
		return Entry{}, false, nil
	}
	return m.MyListStatus.entry(), true, nil
}

// Save implements Client with PATCH /manga/{id}/my_list_status, which adds
// or updates.
func (c *MALClient) Save(ctx context.Context, tok Token, id string, _ bool, progress int, status string) error {
	form := url.Values{"num_chapters_read": {strconv.Itoa(progress)}}
	switch status {
	case StatusRepeating:
		form.Set("is_rereading", "true")
	default:
		for k, v := range malStatus {
			if v == status {
				form.Set("status", k)
			}
		}
	}
	return c.call(ctx, http.MethodPatch, c.Base+"/manga/"+id+"/my_list_status", tok.Access,
		"application/x-www-form-urlencoded", []byte(form.Encode()), nil)
}

// List implements Client with GET /users/@me/mangalist, page by page.
func (c *MALClient) List(ctx context.Context, tok Token, _ User) ([]ListItem, error) {
	var out []ListItem
	for offset := 0; ; {
		var page struct {
			Data []struct {
				Node struct {
					ID    int64  `json:"id"`
					Title string `json:"title"`
				} `json:"node"`
				ListStatus malListStatus `json:"list_status"`
			} `json:"data"`
			Paging struct {
				Next string `json:"next"`
			} `json:"paging"`
		}
		q := url.Values{"fields": {"list_status"}, "limit": {"1000"}, "offset": {strconv.Itoa(offset)}, "nsfw": {"true"}}
		if err := c.get(ctx, tok, "/users/@me/mangalist", q, &page); err != nil {
			return nil, err
		}
		for _, d := range page.Data {
			e := d.ListStatus.entry()
			out = append(out, ListItem{ID: strconv.FormatInt(d.Node.ID, 10), Title: d.Node.Title, Progress: e.Progress, Status: e.Status})
		}
		if page.Paging.Next == "" || len(page.Data) == 0 || len(out) >= 50000 {
			return out, nil
		}
		offset += len(page.Data)
	}
}

// Search implements Client with GET /manga?q=.
func (c *MALClient) Search(ctx context.Context, tok Token, title string) ([]Candidate, error) {
	// MyAnimeList refuses a query over 64 characters.
	if r := []rune(title); len(r) > 64 {
		title = string(r[:64])
	}
	var res struct {
		Data []struct {
			Node struct {
				ID    int64  `json:"id"`
				Title string `json:"title"`
			} `json:"node"`
		} `json:"data"`
	}
	if err := c.get(ctx, tok, "/manga", url.Values{"q": {title}, "limit": {"10"}, "nsfw": {"true"}}, &res); err != nil {
		return nil, err
	}
	var out []Candidate
	for _, d := range res.Data {
		id := strconv.FormatInt(d.Node.ID, 10)
		out = append(out, Candidate{ID: id, Title: d.Node.Title, URL: c.EntryURL(id)})
	}
	return out, nil
}

// AuthorizeURL implements OAuthClient.
func (c *MALClient) AuthorizeURL(state, challenge, redirect string) string {
	q := url.Values{"response_type": {"code"}, "client_id": {c.ClientID}, "state": {state}, "redirect_uri": {redirect},
		"code_challenge": {challenge}, "code_challenge_method": {"plain"}}
	return c.OAuth + "/authorize?" + q.Encode()
}

func (c *MALClient) token(ctx context.Context, form url.Values) (Token, error) {
	form.Set("client_id", c.ClientID)
	if c.ClientSecret != "" {
		form.Set("client_secret", c.ClientSecret)
	}
	var res oauthToken
	if err := c.call(ctx, http.MethodPost, c.OAuth+"/token", "", "application/x-www-form-urlencoded", []byte(form.Encode()), &res); err != nil {
		return Token{}, tokenError(err)
	}
	t, err := res.token(time.Now())
	if e, ok := err.(*Error); ok {
		e.Tracker = MyAnimeList
	}
	return t, err
}

// Exchange implements OAuthClient.
func (c *MALClient) Exchange(ctx context.Context, code, verifier, redirect string) (Token, error) {
	return c.token(ctx, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "code_verifier": {verifier}})
}

// Refresh implements OAuthClient.
func (c *MALClient) Refresh(ctx context.Context, tok Token) (Token, error) {
	if tok.Refresh == "" {
		return Token{}, ErrNoRefresh
	}
	return c.token(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.Refresh}})
}
