package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/secretbox"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The services' public hosts. Self-hosted services (Gotify, Matrix, ntfy,
// webhooks) name theirs in the URL.
const (
	DiscordHost  = "discord.com"
	TelegramHost = "api.telegram.org"
)

// ErrNoSecretKey refuses a target with a credential while the Owner has not
// set SECRET_KEY: credentials are stored only sealed with it.
var ErrNoSecretKey = errs.New(errs.Invalid, "this target holds a credential, and storing one needs SECRET_KEY, which the Owner has not set: credentials are encrypted at rest with it")

// Reply is what the service answered a message: shown by the Test button.
type Reply struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
}

// maxReply bounds the answer kept for the Test button.
const maxReply = 2 << 10

// sealing places: the additional data binds a sealed value to its Reader
// and its use, so a value copied into another Reader's row does not open.
func urlAAD(readerID int64) []byte {
	return []byte("notify_target/url/" + strconv.FormatInt(readerID, 10))
}

func signingAAD(readerID int64) []byte {
	return []byte("notify_target/signing/" + strconv.FormatInt(readerID, 10))
}

// WebhookSecretPrefix starts a Standard Webhooks signing secret.
const WebhookSecretPrefix = "whsec_"

// NewWebhookSecret makes a signing secret: whsec_ and 24 random bytes in
// base64, the form Standard Webhooks libraries read.
func NewWebhookSecret() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// Sign is the Standard Webhooks signature of a message: "v1," and the
// base64 HMAC-SHA256, keyed with the secret's bytes, of "id.timestamp.body".
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, WebhookSecretPrefix))
	if err != nil {
		return "", fmt.Errorf("signing secret: %w", err)
	}
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%d.", id, timestamp)
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}

// endpoint opens a target's URL (and signing secret) for sending.
func (s *Sender) endpoint(t store.Target) (Endpoint, string, error) {
	raw := t.URL
	if t.SealedURL != nil {
		if s.Box == nil {
			return Endpoint{}, "", ErrNoSecretKey
		}
		b, err := s.Box.Open(t.SealedURL, urlAAD(t.ReaderID))
		if err != nil {
			return Endpoint{}, "", fmt.Errorf("open target %d: %w", t.ID, err)
		}
		raw = string(b)
	}
	e, err := ParseApprise(raw)
	if err != nil {
		return Endpoint{}, "", fmt.Errorf("target %d: %w", t.ID, err)
	}
	var signing string
	if t.SigningSecret != nil {
		if s.Box == nil {
			return Endpoint{}, "", ErrNoSecretKey
		}
		b, err := s.Box.Open(t.SigningSecret, signingAAD(t.ReaderID))
		if err != nil {
			return Endpoint{}, "", fmt.Errorf("open signing secret of target %d: %w", t.ID, err)
		}
		signing = string(b)
	}
	return e, signing, nil
}

// Send delivers msg to t in its service's native shape, through the
// destination gate, and returns the service's answer. The error says why
// it failed, never with a credential in it, and matches ErrPermanent when
// a retry would fail the same way.
func (s *Sender) Send(ctx context.Context, t store.Target, msg Message) (Reply, error) {
	e, signing, err := s.endpoint(t)
	if err != nil {
		return Reply{}, permanent{err}
	}
	id := s.messageID(t, msg)
	if e.Service == ServiceMatrix && !strings.HasPrefix(e.ID, "!") {
		room, reply, err := s.matrixRoom(ctx, e)
		if err != nil {
			return reply, err
		}
		e.ID = room
	}
	req, err := s.request(ctx, e, signing, id, msg)
	if err != nil {
		return Reply{}, permanent{err}
	}
	req.Header.Set("Idempotency-Key", id)
	req.Header.Set("X-Lectern-Delivery", id)
	return s.do(req, e)
}

// do sends one request and reads the answer.
func (s *Sender) do(req *http.Request, e Endpoint) (Reply, error) {
	resp, err := s.HTTP.Do(req)
	if err != nil {
		err = scrub(err, e)
		if c := gate.Class(err); c != "" && c != gate.ClassTimeout && c != gate.ClassTooLarge {
			return Reply{}, permanent{err}
		}
		return Reply{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	reply := Reply{Status: resp.StatusCode, Body: string(bytes.ToValidUTF8(body, nil))}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return reply, nil
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return reply, fmt.Errorf("%s answered %s", e.Masked(), resp.Status)
	}
	return reply, permanent{fmt.Errorf("%s answered %s", e.Masked(), resp.Status)}
}

// scrubbed is an error whose text has the target's credentials cut: the
// gate's errors name the URL (a Discord or Telegram token sits in its
// path), and the text is stored and logged.
type scrubbed struct {
	msg string
	err error
}

func (e scrubbed) Error() string { return e.msg }
func (e scrubbed) Unwrap() error { return e.err }

func scrub(err error, e Endpoint) error {
	msg := err.Error()
	secrets := []string{e.Token, url.PathEscape(e.Token)}
	if e.Query != "" {
		secrets = append(secrets, e.Query)
	}
	for _, sec := range secrets {
		if sec != "" {
			msg = strings.ReplaceAll(msg, sec, "…")
		}
	}
	if msg == err.Error() {
		return err
	}
	return scrubbed{msg: msg, err: err}
}

// request builds the service's native request.
func (s *Sender) request(ctx context.Context, e Endpoint, signing, id string, msg Message) (*http.Request, error) {
	switch e.Service {
	case ServiceDiscord:
		return jsonRequest(ctx, http.MethodPost, "https://"+DiscordHost+"/api/webhooks/"+e.ID+"/"+url.PathEscape(e.Token)+"?wait=true", s.discord(msg))
	case ServiceTelegram:
		return jsonRequest(ctx, http.MethodPost, "https://"+TelegramHost+"/bot"+e.Token+"/sendMessage", s.telegram(e, msg))
	case ServiceGotify:
		req, err := jsonRequest(ctx, http.MethodPost, "https://"+e.Host+e.Path+"/message", s.gotify(e, msg))
		if err == nil {
			req.Header.Set("X-Gotify-Key", e.Token)
		}
		return req, err
	case ServiceMatrix:
		req, err := jsonRequest(ctx, http.MethodPut, "https://"+e.Host+"/_matrix/client/v3/rooms/"+url.PathEscape(e.ID)+
			"/send/m.room.message/"+url.PathEscape(id), s.matrix(msg))
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+e.Token)
		}
		return req, err
	case ServiceNtfy:
		return s.ntfyRequest(ctx, e, msg)
	case ServiceJSON:
		return s.webhookRequest(ctx, e, signing, id, msg)
	}
	return nil, fmt.Errorf("unknown service %q", e.Service)
}

// --- Discord: an execute-webhook request with one embed per chapter.

type discordMessage struct {
	Username        string         `json:"username"`
	Content         string         `json:"content,omitempty"`
	Embeds          []discordEmbed `json:"embeds"`
	AllowedMentions map[string]any `json:"allowed_mentions"`
}

type discordEmbed struct {
	Title       string         `json:"title"`
	URL         string         `json:"url,omitempty"`
	Description string         `json:"description,omitempty"`
	Color       int            `json:"color"`
	Fields      []discordField `json:"fields,omitempty"`
	Thumbnail   *discordImage  `json:"thumbnail,omitempty"`
	Timestamp   string         `json:"timestamp,omitempty"`
}

type discordField struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Inline bool   `json:"inline"`
}

type discordImage struct {
	URL string `json:"url"`
}

// discordMaxEmbeds is Discord's limit of embeds in one message.
const discordMaxEmbeds = 10

const lecternColor = 0x3b6ea5

func (s *Sender) discord(msg Message) discordMessage {
	m := discordMessage{Username: "Lectern", Embeds: []discordEmbed{}, AllowedMentions: map[string]any{"parse": []string{}}}
	if msg.Test || msg.Alert != nil {
		title, text, click := s.summary(msg)
		m.Embeds = append(m.Embeds, discordEmbed{Title: title, URL: click, Description: text, Color: lecternColor})
		return m
	}
	for i, e := range msg.Events {
		if i == discordMaxEmbeds {
			m.Content = fmt.Sprintf("… and %d more new chapters", len(msg.Events)-i)
			break
		}
		em := discordEmbed{Title: eventTitle(e), URL: e.URL, Color: lecternColor,
			Fields:    []discordField{{Name: "Chapter", Value: eventLabel(e), Inline: true}, {Name: "Site", Value: e.Site, Inline: true}},
			Timestamp: e.FirstSeenAt.UTC().Format("2006-01-02T15:04:05Z")}
		if em.URL == "" {
			em.URL = e.SeriesURL
		}
		if c := cover.URL(s.BaseURL, e.CoverAddress, e.CoverType); c != "" {
			em.Thumbnail = &discordImage{URL: c}
		}
		m.Embeds = append(m.Embeds, em)
	}
	return m
}

// --- Telegram: sendMessage in HTML with a button that opens the chapter.

type telegramMessage struct {
	ChatID      string         `json:"chat_id"`
	Text        string         `json:"text"`
	ParseMode   string         `json:"parse_mode"`
	ReplyMarkup telegramMarkup `json:"reply_markup"`
}

type telegramMarkup struct {
	InlineKeyboard [][]telegramButton `json:"inline_keyboard"`
}

type telegramButton struct {
	Text string `json:"text"`
	URL  string `json:"url"`
}

func (s *Sender) telegram(e Endpoint, msg Message) telegramMessage {
	title, text, click := s.summary(msg)
	button := "Open"
	if len(msg.Events) == 1 {
		button = "Read " + eventLabel(msg.Events[0])
	}
	return telegramMessage{ChatID: e.ID, ParseMode: "HTML",
		Text:        "<b>" + html.EscapeString(title) + "</b>\n" + html.EscapeString(text),
		ReplyMarkup: telegramMarkup{InlineKeyboard: [][]telegramButton{{{Text: button, URL: click}}}}}
}

// --- Gotify: a message with priority and the click URL Gotify's clients open.

type gotifyMessage struct {
	Title    string         `json:"title"`
	Message  string         `json:"message"`
	Priority int            `json:"priority"`
	Extras   map[string]any `json:"extras"`
}

func (s *Sender) gotify(e Endpoint, msg Message) gotifyMessage {
	title, text, click := s.summary(msg)
	n := map[string]any{"click": map[string]string{"url": click}}
	if len(msg.Events) == 1 {
		if c := cover.URL(s.BaseURL, msg.Events[0].CoverAddress, msg.Events[0].CoverType); c != "" {
			n["bigImageUrl"] = c
		}
	}
	return gotifyMessage{Title: title, Message: text, Priority: e.Priority,
		Extras: map[string]any{"client::display": map[string]string{"contentType": "text/plain"}, "client::notification": n}}
}

// --- Matrix: m.room.message with an HTML body, sent under the message id
// as transaction id (a resend with the same id is no second message).

type matrixMessage struct {
	MsgType       string `json:"msgtype"`
	Body          string `json:"body"`
	Format        string `json:"format"`
	FormattedBody string `json:"formatted_body"`
}

func (s *Sender) matrix(msg Message) matrixMessage {
	title, text, click := s.summary(msg)
	var b strings.Builder
	fmt.Fprintf(&b, `<p><strong><a href="%s">%s</a></strong></p>`, html.EscapeString(click), html.EscapeString(title))
	if len(msg.Events) > 1 || msg.Test || msg.Alert != nil {
		b.WriteString("<ul>")
		for _, line := range strings.Split(text, "\n") {
			fmt.Fprintf(&b, "<li>%s</li>", html.EscapeString(line))
		}
		b.WriteString("</ul>")
	} else {
		fmt.Fprintf(&b, "<p>%s</p>", html.EscapeString(text))
	}
	return matrixMessage{MsgType: "m.text", Body: title + "\n" + text + "\n" + click, Format: "org.matrix.custom.html", FormattedBody: b.String()}
}

// matrixRoom resolves a room alias to the room id messages are sent to.
func (s *Sender) matrixRoom(ctx context.Context, e Endpoint) (string, Reply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+e.Host+"/_matrix/client/v3/directory/room/"+url.PathEscape(e.ID), nil)
	if err != nil {
		return "", Reply{}, permanent{fmt.Errorf("build request: %w", err)}
	}
	req.Header.Set("Authorization", "Bearer "+e.Token)
	reply, err := s.do(req, e)
	if err != nil {
		return "", reply, fmt.Errorf("resolve room %s: %w", e.ID, err)
	}
	var room struct {
		RoomID string `json:"room_id"`
	}
	if err := json.Unmarshal([]byte(reply.Body), &room); err != nil || !strings.HasPrefix(room.RoomID, "!") {
		return "", reply, permanent{fmt.Errorf("resolve room %s: the server answered no room id", e.ID)}
	}
	return room.RoomID, reply, nil
}

// --- ntfy: JSON publishing to the server's root (titles are any Unicode,
// which headers carry badly).

type ntfyMessage struct {
	Topic   string   `json:"topic"`
	Title   string   `json:"title"`
	Message string   `json:"message"`
	Click   string   `json:"click,omitempty"`
	Icon    string   `json:"icon,omitempty"`
	Tags    []string `json:"tags"`
}

func (s *Sender) ntfyRequest(ctx context.Context, e Endpoint, msg Message) (*http.Request, error) {
	title, text, click := s.summary(msg)
	m := ntfyMessage{Topic: e.ID, Title: title, Message: text, Click: click, Tags: []string{"books"}}
	if len(msg.Events) == 1 {
		// ntfy shows JPEG and PNG icons only.
		if ev := msg.Events[0]; ev.CoverType == imagetype.TypeJPEG || ev.CoverType == imagetype.TypePNG {
			m.Icon = cover.URL(s.BaseURL, ev.CoverAddress, ev.CoverType)
		}
	}
	target := "https://" + e.Host + e.Path + "/"
	if e.Query != "" {
		target += "?" + e.Query
	}
	req, err := jsonRequest(ctx, http.MethodPost, target, m)
	if err != nil {
		return nil, err
	}
	switch {
	case e.User != "":
		req.SetBasicAuth(e.User, e.Token)
	case e.Token != "":
		req.Header.Set("Authorization", "Bearer "+e.Token)
	}
	return req, nil
}

// --- Generic webhooks: Lectern's JSON body, signed the Standard Webhooks
// way when the target has a secret.

func (s *Sender) webhookRequest(ctx context.Context, e Endpoint, signing, id string, msg Message) (*http.Request, error) {
	target := "https://" + e.Host + e.Path
	if e.Query != "" {
		target += "?" + e.Query
	}
	req, err := jsonRequest(ctx, http.MethodPost, target, s.Webhook(id, msg))
	if err != nil {
		return nil, err
	}
	if e.User != "" {
		req.SetBasicAuth(e.User, e.Token)
	}
	if signing != "" {
		body, _ := req.GetBody()
		b, _ := io.ReadAll(body)
		ts := s.now().Unix()
		sig, err := Sign(signing, id, ts, b)
		if err != nil {
			return nil, err
		}
		req.Header.Set("webhook-id", id)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
		req.Header.Set("webhook-signature", sig)
	}
	return req, nil
}

// Seal prepares a parsed target for storing: the URL shown (masked when it
// holds a credential) and the sealed full URL, and for a jsons:// target a
// new signing secret (returned in the clear once, to be shown once).
// Without a Box, a credential is ErrNoSecretKey and a webhook is unsigned.
func Seal(box *secretbox.Box, readerID int64, e Endpoint) (shown string, sealedURL, sealedSigning []byte, signing string, err error) {
	shown = e.String()
	if e.HasSecret() {
		if box == nil {
			return "", nil, nil, "", ErrNoSecretKey
		}
		shown = e.Masked()
		sealedURL = box.Seal([]byte(e.String()), urlAAD(readerID))
	}
	if e.Service == ServiceJSON && box != nil {
		signing = NewWebhookSecret()
		sealedSigning = box.Seal([]byte(signing), signingAAD(readerID))
	}
	return shown, sealedURL, sealedSigning, signing, nil
}
