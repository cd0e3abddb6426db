package tracker_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/tracker"
)

func urlParseQuery(s string) (url.Values, error) { return url.ParseQuery(s) }

// MyAnimeList's OAuth flow: the authorisation URL carries a state and a
// PKCE challenge; the callback must bring back a state this Reader started
// for this tracker, once, and the token endpoint gets the verifier.
func TestMALOAuthStateAndPKCE(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	to, err := b.svc.StartOAuth(ctx, b.readerID, tracker.MyAnimeList)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(to, b.mal.MALOAuthURL()+"/authorize?"))
	q := parseQuery(t, to)
	require.Equal(t, b.mal.ClientID, q.Get("client_id"))
	require.Equal(t, "code", q.Get("response_type"))
	require.Equal(t, "plain", q.Get("code_challenge_method"))
	require.GreaterOrEqual(t, len(q.Get("code_challenge")), 43, "RFC 7636: 43 to 128 characters")
	require.LessOrEqual(t, len(q.Get("code_challenge")), 128)
	require.Equal(t, b.app.Config.PublicBaseURL+"/settings/trackers/myanimelist/callback", q.Get("redirect_uri"))
	state := q.Get("state")
	require.NotEmpty(t, state)

	var stored int
	require.NoError(t, b.app.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM tracker_oauth_states WHERE position($1::bytea IN verifier) > 0`,
		[]byte(q.Get("code_challenge"))).Scan(&stored))
	require.Zero(t, stored, "the verifier is sealed at rest")

	code := b.mal.IssueCode(q.Get("code_challenge"), q.Get("redirect_uri"))
	other := b.app.Reader("bob", false)
	_, err = b.svc.FinishOAuth(ctx, other.ID, tracker.MyAnimeList, state, code)
	require.ErrorIs(t, err, tracker.ErrBadState, "another Reader's state")
	// The state was spent by that attempt: a state is good once.
	_, err = b.svc.FinishOAuth(ctx, b.readerID, tracker.MyAnimeList, state, code)
	require.ErrorIs(t, err, tracker.ErrBadState)
	_, err = b.svc.FinishOAuth(ctx, b.readerID, tracker.MyAnimeList, "forged-state", code)
	require.ErrorIs(t, err, tracker.ErrBadState)
	require.Zero(t, b.mal.Count("token"), "no code was exchanged for a bad state")

	// A good round: the verifier reaches the token endpoint and matches.
	to, err = b.svc.StartOAuth(ctx, b.readerID, tracker.MyAnimeList)
	require.NoError(t, err)
	q = parseQuery(t, to)
	code = b.mal.IssueCode(q.Get("code_challenge"), q.Get("redirect_uri"))
	user, err := b.svc.FinishOAuth(ctx, b.readerID, tracker.MyAnimeList, q.Get("state"), code)
	require.NoError(t, err)
	require.Equal(t, b.mal.UserName, user.Name)
	reqs := b.mal.Requests()
	var tok = reqs[0]
	for _, r := range reqs {
		if r.Op == "token" {
			tok = r
		}
	}
	require.Equal(t, q.Get("code_challenge"), tok.Form.Get("code_verifier"))
	require.Equal(t, "authorization_code", tok.Form.Get("grant_type"))
	require.True(t, b.accounts()[tracker.MyAnimeList].Linked)

	// A code whose verifier does not match is refused by the tracker, and
	// nothing is linked from it.
	to, err = b.svc.StartOAuth(ctx, other.ID, tracker.MyAnimeList)
	require.NoError(t, err)
	q = parseQuery(t, to)
	code = b.mal.IssueCode("a-challenge-for-another-verifier-0123456789abcdef", q.Get("redirect_uri"))
	_, err = b.svc.FinishOAuth(ctx, other.ID, tracker.MyAnimeList, q.Get("state"), code)
	require.ErrorIs(t, err, tracker.ErrTokenRefused)
}

// AniList's flow binds its callback with the state (AniList takes no code
// challenge); a pasted token is checked with Viewer before it is kept.
func TestAniListOAuthAndPastedToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	to, err := b.svc.StartOAuth(ctx, b.readerID, tracker.AniList)
	require.NoError(t, err)
	q := parseQuery(t, to)
	require.Empty(t, q.Get("code_challenge"))
	code := b.ani.IssueCode("", q.Get("redirect_uri"))
	_, err = b.svc.FinishOAuth(ctx, b.readerID, tracker.AniList, "not-"+q.Get("state"), code)
	require.ErrorIs(t, err, tracker.ErrBadState)
	_, err = b.svc.FinishOAuth(ctx, b.readerID, tracker.AniList, q.Get("state"), code)
	require.NoError(t, err)
	require.Equal(t, 1, b.ani.Count("Viewer"), "the token is checked with Viewer")

	res := b.do("POST", "/api/trackers/anilist", map[string]string{"token": "not-the-token"})
	require.Equal(t, 422, res.Code, "%s", res.Body)
	require.Contains(t, res.ErrorMsg(t), "Invalid token")
	res = b.do("POST", "/api/trackers/anilist", map[string]string{"token": b.ani.Token})
	require.Equal(t, 200, res.Code, "%s", res.Body)
	var linked struct {
		UserName string `json:"user_name"`
		Import   string `json:"import"`
	}
	res.JSON(t, &linked)
	require.Equal(t, b.ani.UserName, linked.UserName)
	require.Equal(t, "/api/trackers/anilist/import?dry_run=true", linked.Import)
	res = b.do("POST", "/api/trackers/myanimelist", map[string]string{"token": "x"})
	require.Equal(t, 422, res.Code, "MyAnimeList links through its page")
	res = b.do("POST", "/api/trackers/kitsu", map[string]string{"token": "x"})
	require.Equal(t, 404, res.Code)
}
