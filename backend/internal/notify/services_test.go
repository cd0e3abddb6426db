package notify_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fakenet"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/notify"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// services is discord.com, api.telegram.org, a Gotify, a Matrix and a
// webhook host on the fake network, each answering only the request shape
// its service documents (a request of another shape gets the service's
// error) and recording what it accepted.
func services(t *testing.T) *fakenet.Net {
	t.Helper()
	n := fakenet.New(t)
	refuse := func(w http.ResponseWriter, status int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
	isJSON := func(r *http.Request) bool { return strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") }

	// Discord: POST /api/webhooks/{id}/{token}; with ?wait=true the answer
	// is the message created. Up to 10 embeds, a title up to 256.
	n.HandleHost(notify.DiscordHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/webhooks/"), "/")
		if r.Method != http.MethodPost || len(parts) != 2 || !isJSON(r) {
			refuse(w, http.StatusMethodNotAllowed, `{"message": "405: Method Not Allowed", "code": 0}`)
			return
		}
		if parts[1] != "discord-token-0123456789" {
			refuse(w, http.StatusUnauthorized, `{"message": "Invalid Webhook Token", "code": 50027}`)
			return
		}
		var m struct {
			Content string `json:"content"`
			Embeds  []struct {
				Title string `json:"title"`
			} `json:"embeds"`
		}
		if json.NewDecoder(r.Body).Decode(&m) != nil || (m.Content == "" && len(m.Embeds) == 0) || len(m.Embeds) > 10 {
			refuse(w, http.StatusBadRequest, `{"message": "Cannot send an empty message", "code": 50006}`)
			return
		}
		for _, e := range m.Embeds {
			if e.Title == "" || len([]rune(e.Title)) > 256 {
				refuse(w, http.StatusBadRequest, `{"embeds": ["0"]}`)
				return
			}
		}
		refuse(w, http.StatusOK, `{"id": "1300000000000000001", "channel_id": "1200000000000000000", "webhook_id": "`+parts[0]+`"}`)
	}))

	// Telegram: POST /bot{token}/sendMessage with chat_id and text.
	n.HandleHost(notify.TelegramHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/bot123456789:AAF-telegram_token/sendMessage" {
			refuse(w, http.StatusNotFound, `{"ok":false,"error_code":404,"description":"Not Found"}`)
			return
		}
		var m struct {
			ChatID    string `json:"chat_id"`
			Text      string `json:"text"`
			ParseMode string `json:"parse_mode"`
		}
		if !isJSON(r) || json.NewDecoder(r.Body).Decode(&m) != nil || m.ChatID == "" || m.Text == "" {
			refuse(w, http.StatusBadRequest, `{"ok":false,"error_code":400,"description":"Bad Request: message text is empty"}`)
			return
		}
		refuse(w, http.StatusOK, `{"ok":true,"result":{"message_id":42,"chat":{"id":`+m.ChatID+`}}}`)
	}))

	// Gotify: POST /message with the app token as X-Gotify-Key.
	n.HandleHost("gotify.test", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/push/message" || r.Method != http.MethodPost {
			refuse(w, http.StatusNotFound, `{"error":"Not Found","errorCode":404}`)
			return
		}
		if r.Header.Get("X-Gotify-Key") != "AppToken123" {
			refuse(w, http.StatusUnauthorized, `{"error":"Unauthorized","errorCode":401,"errorDescription":"you need to provide a valid access token or user credentials to access this api"}`)
			return
		}
		var m struct {
			Message  string `json:"message"`
			Priority *int   `json:"priority"`
		}
		if json.NewDecoder(r.Body).Decode(&m) != nil || m.Message == "" {
			refuse(w, http.StatusBadRequest, `{"error":"Bad Request","errorCode":400,"errorDescription":"Field 'message' is required"}`)
			return
		}
		refuse(w, http.StatusOK, `{"id":7,"appid":1,"message":"ok"}`)
	}))

	// Matrix: the alias resolves through the directory, the message is a
	// PUT under a transaction id, both with the access token as Bearer.
	n.HandleHost("matrix.test", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer syt_matrix_token" {
			refuse(w, http.StatusUnauthorized, `{"errcode":"M_UNKNOWN_TOKEN","error":"Invalid access token passed."}`)
			return
		}
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/_matrix/client/v3/directory/room/#manga:matrix.test":
			refuse(w, http.StatusOK, `{"room_id":"!AbCdEf:matrix.test","servers":["matrix.test"]}`)
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/_matrix/client/v3/directory/room/"):
			refuse(w, http.StatusNotFound, `{"errcode":"M_NOT_FOUND","error":"Room alias not found"}`)
		case r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/_matrix/client/v3/rooms/!AbCdEf:matrix.test/send/m.room.message/"):
			var m struct {
				MsgType string `json:"msgtype"`
				Body    string `json:"body"`
			}
			if json.NewDecoder(r.Body).Decode(&m) != nil || m.MsgType == "" || m.Body == "" {
				refuse(w, http.StatusBadRequest, `{"errcode":"M_BAD_JSON","error":"Content not JSON."}`)
				return
			}
			refuse(w, http.StatusOK, `{"event_id":"$event1"}`)
		default:
			refuse(w, http.StatusNotFound, `{"errcode":"M_UNRECOGNIZED","error":"Unrecognized request"}`)
		}
	}))

	n.HandleHost("hooks.test", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refuse(w, http.StatusOK, `{"received":true}`)
	}))
	return n
}

func servicesGate(n *fakenet.Net) *gate.Client {
	return notify.NewGate(gate.Options{Timeout: 10 * time.Second, RootCAs: n.RootCAs(), Resolver: n, Dial: n.DialContext})
}

func sampleEvent() store.ChapterEvent {
	n := 180.0
	return store.ChapterEvent{HistoryID: 77, SeriesKey: "asura:solo-leveling", Site: "asura", Kind: "manga",
		SeriesURL: "https://asurascans.com/comics/solo-leveling-1a2b3c4d", Title: "Solo Leveling <3",
		CoverAddress: "c0ffee", CoverType: "image/jpeg", Label: "Chapter 180", Number: &n,
		URL: "https://asurascans.com/comics/solo-leveling-1a2b3c4d/chapter/180", FirstSeenAt: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
}

// target builds a stored target as AddTarget would, without a database.
func sealedTarget(t *testing.T, raw string) (store.Target, string) {
	t.Helper()
	e, err := notify.ParseApprise(raw)
	require.NoError(t, err)
	shown, sealedURL, sealedSigning, signing, err := notify.Seal(testBox, 9, e)
	require.NoError(t, err)
	return store.Target{ID: 1, ReaderID: 9, Kind: e.Service, URL: shown, SealedURL: sealedURL, SigningSecret: sealedSigning}, signing
}

func lastRequest(t *testing.T, n *fakenet.Net, host string) fakenet.Request {
	t.Helper()
	var last *fakenet.Request
	for _, r := range n.Requests() {
		if r.Host == host {
			last = &r
		}
	}
	require.NotNil(t, last, "nothing reached %s", host)
	return *last
}

// Each service receives its native message for a new chapter, linking the
// chapter itself, through the gate; the Test button's answer is the
// service's own.
func TestNativeMessages(t *testing.T) {
	t.Parallel()
	n := services(t)
	s := &notify.Sender{HTTP: servicesGate(n), BaseURL: base, Box: testBox}
	ctx := context.Background()
	msg := notify.Message{ReaderName: "ann", Events: []store.ChapterEvent{sampleEvent()}}
	chapter := sampleEvent().URL
	coverURL := base + "/covers/c0ffee.jpg"

	t.Run("discord", func(t *testing.T) {
		tg, _ := sealedTarget(t, "discord://112233445566778899/discord-token-0123456789")
		require.NotContains(t, tg.URL, "discord-token", "stored masked")
		reply, err := s.Send(ctx, tg, msg)
		require.NoError(t, err)
		require.Contains(t, reply.Body, `"webhook_id": "112233445566778899"`)
		r := lastRequest(t, n, notify.DiscordHost)
		require.Equal(t, "/api/webhooks/112233445566778899/discord-token-0123456789", r.Path)
		require.Equal(t, "wait=true", r.RawQuery)
		var m struct {
			Username string
			Embeds   []struct {
				Title, URL string
				Fields     []struct{ Name, Value string }
				Thumbnail  struct{ URL string }
			}
			AllowedMentions struct{ Parse []string } `json:"allowed_mentions"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &m))
		require.Len(t, m.Embeds, 1)
		em := m.Embeds[0]
		require.Equal(t, "Solo Leveling <3", em.Title)
		require.Equal(t, chapter, em.URL)
		require.Equal(t, coverURL, em.Thumbnail.URL, "the Cover from PUBLIC_BASE_URL")
		require.Equal(t, "Chapter", em.Fields[0].Name)
		require.Equal(t, "Chapter 180", em.Fields[0].Value)
		require.Equal(t, "asura", em.Fields[1].Value)
		require.Empty(t, m.AllowedMentions.Parse, "a title never pings anyone")

		bad, _ := sealedTarget(t, "discord://112233445566778899/wrong-token-0123456789")
		reply, err = s.Send(ctx, bad, msg)
		require.ErrorIs(t, err, notify.ErrPermanent)
		require.Equal(t, http.StatusUnauthorized, reply.Status)
		require.Contains(t, reply.Body, "Invalid Webhook Token")
		require.NotContains(t, err.Error(), "wrong-token", "the error names the masked URL")
	})

	t.Run("discord many", func(t *testing.T) {
		tg, _ := sealedTarget(t, "discord://112233445566778899/discord-token-0123456789")
		many := notify.Message{}
		for i := range 12 {
			e := sampleEvent()
			e.HistoryID = int64(i)
			many.Events = append(many.Events, e)
		}
		_, err := s.Send(ctx, tg, many)
		require.NoError(t, err, "Discord's limit of 10 embeds is kept")
		require.Contains(t, string(lastRequest(t, n, notify.DiscordHost).Body), "… and 2 more")
	})

	t.Run("telegram", func(t *testing.T) {
		tg, _ := sealedTarget(t, "tgram://123456789:AAF-telegram_token/-1001234")
		reply, err := s.Send(ctx, tg, msg)
		require.NoError(t, err)
		require.Contains(t, reply.Body, `"message_id":42`)
		var m struct {
			ChatID      string `json:"chat_id"`
			Text        string
			ParseMode   string `json:"parse_mode"`
			ReplyMarkup struct {
				InlineKeyboard [][]struct{ Text, URL string } `json:"inline_keyboard"`
			} `json:"reply_markup"`
		}
		require.NoError(t, json.Unmarshal(lastRequest(t, n, notify.TelegramHost).Body, &m))
		require.Equal(t, "-1001234", m.ChatID)
		require.Equal(t, "HTML", m.ParseMode)
		require.Contains(t, m.Text, "<b>Solo Leveling &lt;3: Chapter 180</b>", "the title is escaped HTML")
		require.Equal(t, chapter, m.ReplyMarkup.InlineKeyboard[0][0].URL, "the button opens the chapter")
		require.Equal(t, "Read Chapter 180", m.ReplyMarkup.InlineKeyboard[0][0].Text)
	})

	t.Run("gotify", func(t *testing.T) {
		tg, _ := sealedTarget(t, "gotifys://gotify.test/push/AppToken123?priority=7")
		reply, err := s.Send(ctx, tg, msg)
		require.NoError(t, err)
		require.Contains(t, reply.Body, `"id":7`)
		var m struct {
			Title, Message string
			Priority       int
			Extras         map[string]map[string]any
		}
		require.NoError(t, json.Unmarshal(lastRequest(t, n, "gotify.test").Body, &m))
		require.Equal(t, 7, m.Priority)
		require.Equal(t, "Solo Leveling <3: Chapter 180", m.Title)
		require.Equal(t, map[string]any{"url": chapter}, m.Extras["client::notification"]["click"])
		require.Equal(t, coverURL, m.Extras["client::notification"]["bigImageUrl"])

		wrong, _ := sealedTarget(t, "gotifys://gotify.test/push/WrongToken")
		reply, err = s.Send(ctx, wrong, msg)
		require.ErrorIs(t, err, notify.ErrPermanent)
		require.Contains(t, reply.Body, "valid access token")
	})

	t.Run("matrix", func(t *testing.T) {
		tg, _ := sealedTarget(t, "matrixs://lectern:syt_matrix_token@matrix.test/#manga")
		reply, err := s.Send(ctx, tg, msg)
		require.NoError(t, err)
		require.Contains(t, reply.Body, "$event1")
		r := lastRequest(t, n, "matrix.test")
		require.Equal(t, http.MethodPut, r.Method)
		require.True(t, strings.HasPrefix(r.Path, "/_matrix/client/v3/rooms/!AbCdEf:matrix.test/send/m.room.message/"), r.Path)
		txn := strings.TrimPrefix(r.Path, "/_matrix/client/v3/rooms/!AbCdEf:matrix.test/send/m.room.message/")
		require.Equal(t, notify.DeliveryID(1, msg.Events), txn, "a resend reuses the transaction id, so Matrix shows it once")
		var m struct {
			MsgType       string `json:"msgtype"`
			Body          string
			Format        string
			FormattedBody string `json:"formatted_body"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &m))
		require.Equal(t, "m.text", m.MsgType)
		require.Equal(t, "org.matrix.custom.html", m.Format)
		require.Contains(t, m.FormattedBody, `<a href="`+chapter+`">Solo Leveling &lt;3: Chapter 180</a>`)
		require.Contains(t, m.Body, chapter)

		gone, _ := sealedTarget(t, "matrixs://lectern:syt_matrix_token@matrix.test/#other")
		reply, err = s.Send(ctx, gone, msg)
		require.ErrorIs(t, err, notify.ErrPermanent)
		require.Contains(t, reply.Body, "M_NOT_FOUND")
	})

	t.Run("signed webhook", func(t *testing.T) {
		tg, secret := sealedTarget(t, "jsons://hooks.test/lectern")
		require.True(t, strings.HasPrefix(secret, "whsec_"))
		_, err := s.Send(ctx, tg, msg)
		require.NoError(t, err)
		r := lastRequest(t, n, "hooks.test")
		require.True(t, verifyStandardWebhook(t, secret, r.Header, r.Body), "the signature verifies with the documented algorithm")
		require.False(t, verifyStandardWebhook(t, secret, r.Header, append(r.Body, ' ')), "and fails for another body")
		_, other := sealedTarget(t, "jsons://hooks.test/lectern")
		require.False(t, verifyStandardWebhook(t, other, r.Header, r.Body), "and under another secret")
		body := decode[notify.WebhookBody](t, r.Body)
		require.Equal(t, r.Header.Get("webhook-id"), body.ID)
		require.Equal(t, chapter, body.Chapters[0].ChapterURL)
	})
}

// verifyStandardWebhook checks a request as the Standard Webhooks
// specification tells a receiver to: base64-decode the secret after
// "whsec_", HMAC-SHA256 "id.timestamp.body", compare against each "v1,"
// signature in constant time.
func verifyStandardWebhook(t *testing.T, secret string, h http.Header, body []byte) bool {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	require.NoError(t, err)
	require.InDelta(t, time.Now().Unix(), sec, 300, "a fresh timestamp")
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		v, b64, _ := strings.Cut(sig, ",")
		got, err := base64.StdEncoding.DecodeString(b64)
		if v == "v1" && err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

// Every service's send is refused for a name resolving to a private
// address: the gate checks the address dialled, whatever the URL said.
func TestEveryServiceRefusesAPrivateAddress(t *testing.T) {
	t.Parallel()
	n := services(t)
	s := &notify.Sender{HTTP: servicesGate(n), BaseURL: base, Box: testBox}
	msg := notify.Message{Events: []store.ChapterEvent{sampleEvent()}}
	for host, raw := range map[string]string{
		notify.DiscordHost:  "discord://112233445566778899/discord-token-0123456789",
		notify.TelegramHost: "tgram://123456789:AAF-telegram_token/5",
		"gotify.test":       "gotifys://gotify.test/push/AppToken123",
		"matrix.test":       "matrixs://syt_matrix_token@matrix.test/!AbCdEf:matrix.test",
		"hooks.test":        "jsons://hooks.test/x",
		"ntfy.test":         "ntfys://ntfy.test/topic",
	} {
		n.Resolve(host, netip.MustParseAddr("192.168.10.1"))
		tg, _ := sealedTarget(t, raw)
		_, err := s.Send(context.Background(), tg, msg)
		require.ErrorIs(t, err, notify.ErrPermanent, host)
		require.Equal(t, gate.ClassPrivate, gate.Class(err), host)
	}
	require.Empty(t, n.Requests(), "nothing left")
}
