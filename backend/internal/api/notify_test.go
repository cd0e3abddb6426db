package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/secretbox"
)

type apiTarget struct {
	ID            int64  `json:"id"`
	Service       string `json:"service"`
	URL           string `json:"url"`
	Name          string `json:"name"`
	Mode          string `json:"mode"`
	Threshold     int    `json:"threshold"`
	Digest        string `json:"digest"`
	DigestHour    int    `json:"digest_hour"`
	TimeZone      string `json:"time_zone"`
	Signed        bool   `json:"signed"`
	SigningSecret string `json:"signing_secret"`
}

// A Reader manages their targets over the API as on the settings page:
// created with the secret parts masked in every answer, refused with 422
// naming the mistake, tested synchronously with the service's answer, and
// removed.
func TestNotifyTargetsOverTheAPI(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{Config: func(c *config.Config) { c.SecretKey = secretbox.NewKey() }})
	discord := 0
	a.Net.HandleHost("discord.com", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		discord++
		if !strings.HasSuffix(r.URL.Path, "/discord-token-0123456789") {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"message": "Invalid Webhook Token", "code": 50027}`))
			return
		}
		_, _ = w.Write([]byte(`{"id": "1300000000000000001"}`))
	}))
	tok := a.Token("ann", false)

	res := a.Do(http.MethodPost, "/api/notify/targets", tok, map[string]any{
		"url": "discord://112233445566778899/discord-token-0123456789", "name": "Manga channel",
		"mode": "digest", "digest": "weekly", "digest_hour": 0, "time_zone": "Europe/Berlin"})
	require.Equal(t, http.StatusCreated, res.Code, "%s", res.Body)
	var d apiTarget
	res.JSON(t, &d)
	require.Equal(t, apiTarget{ID: d.ID, Service: "discord", URL: "discord://112233445566778899/disc…", Name: "Manga channel",
		Mode: "digest", Threshold: 1, Digest: "weekly", DigestHour: 0, TimeZone: "Europe/Berlin"}, d)
	require.NotContains(t, string(res.Body), "discord-token")

	res = a.Do(http.MethodPost, "/api/notify/targets", tok, map[string]any{"url": "jsons://hooks.example.com/lectern", "mode": "threshold"})
	require.Equal(t, http.StatusCreated, res.Code, "%s", res.Body)
	var hook apiTarget
	res.JSON(t, &hook)
	require.True(t, hook.Signed)
	require.Equal(t, 3, hook.Threshold, "threshold mode's default")
	require.True(t, strings.HasPrefix(hook.SigningSecret, "whsec_"), "the signing secret is shown at creation")

	list := a.Do(http.MethodGet, "/api/notify/targets", tok, nil)
	require.Equal(t, http.StatusOK, list.Code)
	require.NotContains(t, string(list.Body), hook.SigningSecret, "and never again")
	require.NotContains(t, string(list.Body), "discord-token")
	var all []apiTarget
	list.JSON(t, &all)
	require.Len(t, all, 2)

	for _, tc := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"url": "json://hooks.example.com/x"}, "use jsons://"},
		{map[string]any{"url": "gotify://push.example.net/AbCdEf12345"}, "use gotifys://"},
		{map[string]any{"url": "jsons://10.0.0.8/x"}, "10.0.0.8 is not a public address"},
		{map[string]any{"url": "tgram://123/456"}, "bot token is malformed"},
		{map[string]any{"url": "ntfy://ann", "mode": "sometimes"}, "mode is each, threshold or digest"},
		{map[string]any{"url": "ntfy://ann", "digest_hour": 24}, "digest_hour is an hour from 0 to 23"},
		{map[string]any{"url": "ntfy://ann", "time_zone": "Mars/Olympus"}, "not an IANA time zone"},
		{map[string]any{"url": "ntfy://ann", "threshold": -1}, "threshold is a number"},
	} {
		res := a.Do(http.MethodPost, "/api/notify/targets", tok, tc.body)
		require.Equal(t, http.StatusUnprocessableEntity, res.Code, "%v: %s", tc.body, res.Body)
		require.Contains(t, res.ErrorMsg(t), tc.want)
	}

	// Test: synchronous, with the service's own answer.
	res = a.Do(http.MethodPost, fmt.Sprintf("/api/notify/targets/%d/test", d.ID), tok, nil)
	require.Equal(t, http.StatusOK, res.Code, "%s", res.Body)
	var out struct {
		OK     bool   `json:"ok"`
		Status int    `json:"status"`
		Answer string `json:"answer"`
	}
	require.NoError(t, json.Unmarshal(res.Body, &out))
	require.Equal(t, true, out.OK)
	require.Equal(t, 200, out.Status)
	require.Contains(t, out.Answer, "1300000000000000001")
	require.Equal(t, 1, discord)

	other := a.Token("bob", false)
	require.Equal(t, http.StatusNotFound, a.Do(http.MethodPost, fmt.Sprintf("/api/notify/targets/%d/test", d.ID), other, nil).Code)
	require.Equal(t, http.StatusNotFound, a.Do(http.MethodDelete, fmt.Sprintf("/api/notify/targets/%d", d.ID), other, nil).Code)
	require.Equal(t, http.StatusNoContent, a.Do(http.MethodDelete, fmt.Sprintf("/api/notify/targets/%d", d.ID), tok, nil).Code)
	require.Equal(t, http.StatusNotFound, a.Do(http.MethodDelete, fmt.Sprintf("/api/notify/targets/%d", d.ID), tok, nil).Code)
}

// Without SECRET_KEY a target with a credential is refused naming it; one
// without a credential is still accepted (an unsigned webhook, an ntfy
// topic).
func TestNotifyTargetsWithoutSecretKey(t *testing.T) {
	t.Parallel()
	a := apptest.New(t)
	tok := a.Token("ann", false)
	res := a.Do(http.MethodPost, "/api/notify/targets", tok, map[string]any{"url": "tgram://123456789:AAF-telegram_token/42"})
	require.Equal(t, http.StatusUnprocessableEntity, res.Code, "%s", res.Body)
	require.Contains(t, res.ErrorMsg(t), "SECRET_KEY")
	res = a.Do(http.MethodPost, "/api/notify/targets", tok, map[string]any{"url": "jsons://hooks.example.com/x"})
	require.Equal(t, http.StatusCreated, res.Code, "%s", res.Body)
	var hook apiTarget
	res.JSON(t, &hook)
	require.False(t, hook.Signed)
	require.Empty(t, hook.SigningSecret)
}
