package tracker

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// AniListClient is AniList's GraphQL API (https://docs.anilist.co) and its
// OAuth2 authorisation code grant; a token from the implicit grant, pasted
// by the Reader, works the same.
type AniListClient struct {
	api
	// Endpoint is ANILIST_API_URL, the GraphQL endpoint; OAuth is
	// ANILIST_OAUTH_URL, under which authorize and token live.
	Endpoint, OAuth        string
	ClientID, ClientSecret string
}

// NewAniList builds the client; hc nil means a client with a 30 s timeout.
func NewAniList(endpoint, oauth, clientID, clientSecret, userAgent string, hc *http.Client) *AniListClient {
	return &AniListClient{api: newAPI(AniList, hc, userAgent), Endpoint: endpoint, OAuth: strings.TrimRight(oauth, "/"),
		ClientID: clientID, ClientSecret: clientSecret}
}

// Name implements Client.
func (c *AniListClient) Name() string { return AniList }

// Configured implements OAuthClient.
func (c *AniListClient) Configured() bool { return c.ClientID != "" }

// PKCE implements OAuthClient: AniList documents no code challenge; the
// state alone binds its callback.
func (c *AniListClient) PKCE() bool { return false }

// EntryURL implements Client.
func (c *AniListClient) EntryURL(id string) string { return "https://anilist.co/manga/" + id }

// graphql sends one query. AniList answers errors with a matching HTTP
// status and an errors list; a 404 is "not on the list" to the caller.
func (c *AniListClient) graphql(ctx context.Context, tok Token, query string, vars map[string]any, out any) error {
	body := jsonBody(map[string]any{"query": query, "variables": vars})
	return c.call(ctx, http.MethodPost, c.Endpoint, tok.Access, "application/json", body, out)
}

// Identify implements Client with the Viewer query.
func (c *AniListClient) Identify(ctx context.Context, tok Token) (User, error) {
	var res struct {
		Data struct {
			Viewer *struct {
				ID   int64  `json:"id"`
				Name string `json:"name"`
			} `json:"Viewer"`
		} `json:"data"`
	}
	if err := c.graphql(ctx, tok, `query { Viewer { id name } }`, nil, &res); err != nil {
		return User{}, err
	}
	if res.Data.Viewer == nil {
		return User{}, &Error{Tracker: AniList, Kind: Refused, Msg: "no Viewer for this token"}
	}
	return User{ID: strconv.FormatInt(res.Data.Viewer.ID, 10), Name: res.Data.Viewer.Name}, nil
}

var aniStatus = map[string]string{
	"CURRENT": StatusReading, "COMPLETED": StatusCompleted, "PLANNING": StatusPlanning,
	"PAUSED": StatusPaused, "DROPPED": StatusDropped, "REPEATING": StatusRepeating,
}

func aniListStatus(s string) string {
	for k, v := range aniStatus {
		if v == s {
			return k
		}
	}
	return "CURRENT"
}

// Get implements Client with the MediaList query.
func (c *AniListClient) Get(ctx context.Context, tok Token, user User, id string) (Entry, bool, error) {
	mediaID, _ := strconv.ParseInt(id, 10, 64)
	userID, _ := strconv.ParseInt(user.ID, 10, 64)
	var res struct {
		Data struct {
			MediaList *struct {
				Progress int    `json:"progress"`
				Status   string `json:"status"`
			} `json:"MediaList"`
		} `json:"data"`
	}
	err := c.graphql(ctx, tok, `query ($userId: Int, $mediaId: Int) { MediaList(userId: $userId, mediaId: $mediaId) { id progress status } }`,
		map[string]any{"userId": userID, "mediaId": mediaID}, &res)
	if e, ok := err.(*Error); ok && e.Status == http.StatusNotFound {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, err
	}
	if res.Data.MediaList == nil {
		return Entry{}, false, nil
	}
	return Entry{Progress: res.Data.MediaList.Progress, Status: aniStatus[res.Data.MediaList.Status]}, true, nil
}

// Save implements Client with SaveMediaListEntry, which adds or updates.
func (c *AniListClient) Save(ctx context.Context, tok Token, id string, _ bool, progress int, status string) error {
	mediaID, _ := strconv.ParseInt(id, 10, 64)
	var res struct {
		Data struct {
			SaveMediaListEntry *struct {
				ID int64 `json:"id"`
			} `json:"SaveMediaListEntry"`
		} `json:"data"`
	}
	err := c.graphql(ctx, tok, `mutation ($mediaId: Int, $progress: Int, $status: MediaListStatus) { SaveMediaListEntry(mediaId: $mediaId, progress: $progress, status: $status) { id mediaId progress status } }`,
		map[string]any{"mediaId": mediaID, "progress": progress, "status": aniListStatus(status)}, &res)
	if err != nil {
		return err
	}
	if res.Data.SaveMediaListEntry == nil {
		return &Error{Tracker: AniList, Kind: Permanent, Msg: "the entry was not saved"}
	}
	return nil
}

type aniTitle struct {
	Romaji  string `json:"romaji"`
	English string `json:"english"`
}

func (t aniTitle) best() string {
	if t.English != "" {
		return t.English
	}
	return t.Romaji
}

// List implements Client with MediaListCollection of type MANGA.
func (c *AniListClient) List(ctx context.Context, tok Token, user User) ([]ListItem, error) {
	userID, _ := strconv.ParseInt(user.ID, 10, 64)
	var res struct {
		Data struct {
			MediaListCollection *struct {
				Lists []struct {
					Entries []struct {
						MediaID  int64  `json:"mediaId"`
						Progress int    `json:"progress"`
						Status   string `json:"status"`
						Media    struct {
							Title         aniTitle `json:"title"`
							ExternalLinks []struct {
								URL string `json:"url"`
							} `json:"externalLinks"`
						} `json:"media"`
					} `json:"entries"`
				} `json:"lists"`
			} `json:"MediaListCollection"`
		} `json:"data"`
	}
	err := c.graphql(ctx, tok, `query ($userId: Int) { MediaListCollection(userId: $userId, type: MANGA) { lists { entries { mediaId progress status media { title { romaji english } externalLinks { url } } } } } }`,
		map[string]any{"userId": userID}, &res)
	if err != nil {
		return nil, err
	}
	var out []ListItem
	seen := map[int64]bool{}
	if res.Data.MediaListCollection == nil {
		return nil, nil
	}
	for _, l := range res.Data.MediaListCollection.Lists {
		for _, e := range l.Entries {
			if seen[e.MediaID] { // an entry in a custom list appears twice
				continue
			}
			seen[e.MediaID] = true
			it := ListItem{ID: strconv.FormatInt(e.MediaID, 10), Title: e.Media.Title.best(), Progress: e.Progress, Status: aniStatus[e.Status]}
			for _, x := range e.Media.ExternalLinks {
				it.SiteURLs = append(it.SiteURLs, x.URL)
			}
			out = append(out, it)
		}
	}
	return out, nil
}

// Search implements Client with a Page of media of type MANGA.
func (c *AniListClient) Search(ctx context.Context, tok Token, title string) ([]Candidate, error) {
	var res struct {
		Data struct {
			Page struct {
				Media []struct {
					ID        int64    `json:"id"`
					Title     aniTitle `json:"title"`
					SiteURL   string   `json:"siteUrl"`
					StartDate struct {
						Year int `json:"year"`
					} `json:"startDate"`
				} `json:"media"`
			} `json:"Page"`
		} `json:"data"`
	}
	err := c.graphql(ctx, tok, `query ($search: String) { Page(perPage: 10) { media(search: $search, type: MANGA) { id title { romaji english } siteUrl startDate { year } } } }`,
		map[string]any{"search": title}, &res)
	if err != nil {
		return nil, err
	}
	var out []Candidate
	for _, m := range res.Data.Page.Media {
		id := strconv.FormatInt(m.ID, 10)
		out = append(out, Candidate{ID: id, Title: m.Title.best(), URL: c.EntryURL(id), Year: m.StartDate.Year})
	}
	return out, nil
}

// AuthorizeURL implements OAuthClient: the authorisation code grant.
func (c *AniListClient) AuthorizeURL(state, _, redirect string) string {
	q := url.Values{"client_id": {c.ClientID}, "redirect_uri": {redirect}, "response_type": {"code"}, "state": {state}}
	return c.OAuth + "/authorize?" + q.Encode()
}

// Exchange implements OAuthClient.
func (c *AniListClient) Exchange(ctx context.Context, code, _, redirect string) (Token, error) {
	var res oauthToken
	body := jsonBody(map[string]string{"grant_type": "authorization_code", "client_id": c.ClientID, "client_secret": c.ClientSecret,
		"redirect_uri": redirect, "code": code})
	if err := c.call(ctx, http.MethodPost, c.OAuth+"/token", "", "application/json", body, &res); err != nil {
		return Token{}, tokenError(err)
	}
	return res.token(time.Now())
}

// Refresh implements OAuthClient: AniList has no refresh grant.
func (c *AniListClient) Refresh(context.Context, Token) (Token, error) { return Token{}, ErrNoRefresh }

// oauthToken is an OAuth2 token answer (RFC 6749 §5.1).
type oauthToken struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
}

func (t oauthToken) token(now time.Time) (Token, error) {
	if t.AccessToken == "" {
		return Token{}, &Error{Kind: Refused, Msg: "the token answer has no access token"}
	}
	tok := Token{Access: t.AccessToken, Refresh: t.RefreshToken}
	if t.ExpiresIn > 0 {
		exp := now.Add(time.Duration(t.ExpiresIn) * time.Second)
		tok.Expires = &exp
	}
	return tok, nil
}

// tokenError: a token endpoint's 400 (invalid_grant: a used or wrong
// code, a wrong verifier) means the credentials were refused.
func tokenError(err error) error {
	if e, ok := err.(*Error); ok && (e.Status == http.StatusBadRequest || e.Status == http.StatusUnauthorized) {
		e.Kind = Refused
	}
	return err
}
