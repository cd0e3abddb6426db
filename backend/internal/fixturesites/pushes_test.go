package fixturesites_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
)

// The push stand-ins answer as their services do and list what they got,
// newest first, at PushesPath on the fixture server's own address.
func TestPushStandIns(t *testing.T) {
	t.Parallel()
	s := start(t)
	g := gateFor(s)
	send := func(method, rawURL, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), method, rawURL, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := g.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := send(http.MethodPost, "https://discord.com/api/webhooks/1/tok?wait=true", `{"embeds":[{"title":"Solo Leveling"}]}`)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `"id"`)
	code, body = send(http.MethodPost, "https://api.telegram.org/bot1:tok/sendMessage", `{"chat_id":"5","text":"hi"}`)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `"ok":true`)
	code, body = send(http.MethodGet, "https://"+fixturesites.PushMatrixHost+"/_matrix/client/v3/directory/room/%23manga:"+fixturesites.PushMatrixHost, "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `"room_id":"!demo:`)
	code, _ = send(http.MethodPut, "https://"+fixturesites.PushMatrixHost+"/_matrix/client/v3/rooms/!demo:x/send/m.room.message/t1", `{"msgtype":"m.text","body":"hi"}`)
	require.Equal(t, http.StatusOK, code)

	got := s.Pushes()
	require.Len(t, got, 3, "the alias lookup is not a message")
	require.Equal(t, "matrix", got[0].Service, "newest first")
	require.Equal(t, "discord", got[2].Service)

	// Listed as JSON at the fixture server's own address (its certificate
	// names the stand-in hosts, not the loopback address: verified as one).
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: s.RootCAs(), ServerName: fixturesites.PushHooksHost}}}
	resp, err := client.Get("https://" + s.Addr() + fixturesites.PushesPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var list []struct {
		Service, Method, Path string
		Body                  json.RawMessage
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	require.Len(t, list, 3)
	require.Equal(t, "/api/webhooks/1/tok", list[2].Path)
	require.Equal(t, http.MethodPost, list[2].Method)
	require.JSONEq(t, `{"embeds":[{"title":"Solo Leveling"}]}`, string(list[2].Body))
}
