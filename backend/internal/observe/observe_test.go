package observe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/lectern-reader/lectern/backend/internal/observe"
	"github.com/stretchr/testify/require"
)

func decode(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		out = append(out, m)
	}
	return out
}

func TestContextAttrsReachEveryLineOnce(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(observe.LogHandler(slog.NewJSONHandler(&buf, nil)))
	ctx := observe.WithLogAttrs(context.Background(), slog.String("request_id", "r1"))
	ctx = observe.WithLogAttrs(ctx, slog.String("series", "asura:x"), slog.String("site", "asura"))
	ctx = observe.WithLogAttrs(ctx, slog.String("series", "asura:y")) // replaces, never repeats

	log.InfoContext(ctx, "plain")
	log.InfoContext(ctx, "own key wins", "series", "demonic:z")
	log.With("site", "demonic").InfoContext(ctx, "logger key wins")
	log.WithGroup("g").InfoContext(ctx, "grouped", "a", 1)
	log.Info("no context")

	lines := decode(t, &buf)
	require.Len(t, lines, 5)
	require.Equal(t, "r1", lines[0]["request_id"])
	require.Equal(t, "asura:y", lines[0]["series"])
	require.Equal(t, "asura", lines[0]["site"])
	require.Equal(t, "demonic:z", lines[1]["series"])
	require.Equal(t, "r1", lines[1]["request_id"])
	require.Equal(t, "demonic", lines[2]["site"])
	require.Equal(t, 1, strings.Count(strings.Split(buf.String(), "\n")[2], `"site"`), "one site key on the line")
	require.NotContains(t, lines[4], "request_id")
	// Wrapping twice changes nothing.
	h := observe.LogHandler(slog.NewJSONHandler(&buf, nil))
	require.Same(t, h, observe.LogHandler(h))
}

func TestSecretsNeverReachTheLog(t *testing.T) {
	t.Parallel()
	const token = "lec_Q2hhcHRlciAxMjMgaXMgb3V0IG5vdyBmb3IgcmVhbA"
	const pw = "correct horse battery staple"
	var buf bytes.Buffer
	log := slog.New(observe.LogHandler(slog.NewTextHandler(&buf, nil)))
	log.Info("login", "password", pw, "name", "olive")
	log.Info("header", "Authorization", "Bearer "+token)
	log.Info("oops "+token, "err", errors.New("lookup "+token+" failed"), "detail", "sent bearer abcdefghijklmnop")
	log.With("api_token", token).Info("with attrs")
	log.Info("group", slog.Group("req", slog.String("cookie", "lectern_session=abc"), slog.String("url", "https://x/?t="+token)))
	log.Info("harmless", "token_id", 42, "token_name", "laptop")

	out := buf.String()
	require.NotContains(t, out, token)
	require.NotContains(t, out, pw)
	require.NotContains(t, out, "abcdefghijklmnop")
	require.NotContains(t, out, "lectern_session=abc")
	require.Contains(t, out, "name=olive")
	require.Contains(t, out, "token_id=42", "an id is not a secret")
	require.Contains(t, out, "token_name=laptop")
	require.Equal(t, 8, strings.Count(out, "[redacted]"), out)
}

// Trackers' credentials: tokens by attribute name, a PKCE verifier, and an
// AniList token (a JWT) that slipped into a message.
func TestTrackerSecretsNeverReachTheLog(t *testing.T) {
	t.Parallel()
	const jwt = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.eyJhdWQiOiIxMjM0Iiwic3ViIjoiNDIifQ.c2lnbmF0dXJlLWJ5dGVz"
	var buf bytes.Buffer
	log := slog.New(observe.LogHandler(slog.NewTextHandler(&buf, nil)))
	log.Info("linked", "access_token", "mal-access", "refresh_token", "mal-refresh", "session_token", "mu-session", "code_verifier", "pkce-verifier")
	log.Warn("tracker said "+jwt, "err", errors.New("token "+jwt+" refused"))
	log.Info("fine", "tracker", "anilist", "tracker_user", "ann")
	out := buf.String()
	for _, secret := range []string{"mal-access", "mal-refresh", "mu-session", "pkce-verifier", jwt, "c2lnbmF0dXJlLWJ5dGVz"} {
		require.NotContains(t, out, secret)
	}
	require.Contains(t, out, "tracker=anilist")
	require.Contains(t, out, "tracker_user=ann")
}
