package notify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Target kinds.
const (
	KindNtfy    = "ntfy"
	KindWebhook = "webhook"
)

// WebhookVersion is the version field of the webhook body; it changes only
// when a field changes meaning (fields are only ever added).
const WebhookVersion = 1

// MaxTargets bounds a Reader's targets.
const MaxTargets = 5

// ErrInvalidTarget is a target URL refused at save time.
var ErrInvalidTarget = errors.New("invalid notification target")

// ntfy topic names: what ntfy itself accepts.
var ntfyTopic = regexp.MustCompile(`^[-_A-Za-z0-9]{1,64}$`)

// ValidateTarget checks a target URL when a Reader saves it and returns it
// normalised. Only https URLs on port 443 with a host name or a public IP
// literal pass: the destination gate refuses everything else at send time
// anyway (and re-checks the address actually dialled then, so a name that
// resolves to the Owner's network is still refused), but a Reader learns it
// here rather than from a failed delivery.
func ValidateTarget(kind, raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	bad := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("%w: %s", ErrInvalidTarget, fmt.Sprintf(format, args...))
	}
	if kind != KindNtfy && kind != KindWebhook {
		return bad("the kind must be ntfy or webhook")
	}
	if raw == "" {
		return bad("a URL is required")
	}
	if len(raw) > 2048 || !utf8.ValidString(raw) || strings.ContainsAny(raw, "\x00\r\n\t ") {
		return bad("the URL is malformed")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return bad("the URL is malformed")
	}
	switch {
	case u.Scheme != "https":
		return bad("only https URLs are allowed (not %q)", u.Scheme)
	case u.User != nil:
		return bad("credentials in the URL are not allowed; ntfy takes an access token as ?auth=")
	case u.Hostname() == "":
		return bad("the URL has no host")
	case u.Port() != "" && u.Port() != "443":
		return bad("only the https port 443 is allowed (not %s)", u.Port())
	case u.Fragment != "":
		return bad("the URL may not have a #fragment")
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		if !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() || cgnat.Contains(a) {
			return bad("%s is not a public address", host)
		}
	} else if host == "localhost" || strings.HasSuffix(host, ".localhost") || !strings.Contains(host, ".") {
		return bad("%s is not a public host name", host)
	}
	if kind == KindNtfy {
		if _, _, err := ntfySplit(u); err != nil {
			return bad("%v", err)
		}
	}
	return u.String(), nil
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// ntfySplit splits a topic URL into the server's publishing URL (where ntfy
// takes a JSON message) and the topic.
func ntfySplit(u *url.URL) (publish *url.URL, topic string, err error) {
	path := strings.TrimRight(u.Path, "/")
	i := strings.LastIndexByte(path, '/')
	topic = path[i+1:]
	if i < 0 || !ntfyTopic.MatchString(topic) {
		return nil, "", errors.New("an ntfy URL names a topic: https://ntfy.sh/your-topic")
	}
	p := *u
	p.Path = path[:i+1]
	p.RawPath = ""
	return &p, topic, nil
}

// Doer sends one HTTP request; gate.Client is the production one.
type Doer interface {
	Do(req *http.Request) (*http.Response, error)
}

// Sender turns deliveries into one request to a target, through the
// destination gate.
type Sender struct {
	HTTP Doer
	// BaseURL is PUBLIC_BASE_URL, for Cover URLs and links to the library.
	BaseURL string
	// Now is the clock of sent_at; nil means time.Now.
	Now func() time.Time
}

// Message is what one request announces.
type Message struct {
	ReaderName string
	Events     []store.ChapterEvent // oldest first
	// Test marks the "send test" button's message.
	Test bool
}

// ErrPermanent is matched (errors.Is) by a failure that retrying the same
// request cannot fix: the gate refused the destination, or the receiver
// answered 4xx (other than 408 and 429).
var ErrPermanent = errors.New("permanent failure")

type permanent struct{ err error }

func (p permanent) Error() string        { return p.err.Error() }
func (p permanent) Unwrap() error        { return p.err }
func (p permanent) Is(target error) bool { return target == ErrPermanent }

// Send delivers msg to t. The error says why it failed, and matches
// ErrPermanent when a retry would fail the same way.
func (s *Sender) Send(ctx context.Context, t store.Target, msg Message) error {
	var req *http.Request
	var err error
	id := s.messageID(t, msg)
	switch t.Kind {
	case KindNtfy:
		req, err = s.ntfyRequest(ctx, t, msg)
	case KindWebhook:
		req, err = jsonRequest(ctx, t.URL, s.Webhook(id, msg))
	default:
		err = fmt.Errorf("unknown target kind %q", t.Kind)
	}
	if err != nil {
		return permanent{err}
	}
	req.Header.Set("Idempotency-Key", id)
	req.Header.Set("X-Lectern-Delivery", id)
	resp, err := s.HTTP.Do(req)
	if err != nil {
		err = scrub(err, req.URL)
		if c := gate.Class(err); c != "" && c != gate.ClassTimeout && c != gate.ClassTooLarge {
			return permanent{err}
		}
		return err
	}
	defer resp.Body.Close()
	// A small read lets the connection be reused; the gate caps it anyway.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return fmt.Errorf("%s answered %s", redacted(req.URL), resp.Status)
	}
	return permanent{fmt.Errorf("%s answered %s", redacted(req.URL), resp.Status)}
}

// scrubbed is an error whose text has the target URL's query removed:
// ntfy's ?auth= token lives there, and the text is stored and logged.
type scrubbed struct {
	msg string
	err error
}

func (e scrubbed) Error() string { return e.msg }
func (e scrubbed) Unwrap() error { return e.err }

func scrub(err error, u *url.URL) error {
	if u.RawQuery == "" || !strings.Contains(err.Error(), u.RawQuery) {
		return err
	}
	return scrubbed{msg: strings.ReplaceAll(err.Error(), u.RawQuery, "…"), err: err}
}

// redacted is a URL for messages a Reader sees and logs: no query (ntfy's
// ?auth= token lives there).
func redacted(u *url.URL) string {
	c := *u
	c.RawQuery, c.User = "", nil
	return c.String()
}

// DeliveryID names one batch: the same target and changes always give the
// same id, so a receiver that saw a batch before can tell a resend.
func DeliveryID(targetID int64, events []store.ChapterEvent) string {
	h := sha256.New()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(targetID))
	h.Write(b[:])
	for _, e := range events {
		binary.BigEndian.PutUint64(b[:], uint64(e.HistoryID))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// messageID is DeliveryID, or for a test message one that differs every
// time, so a receiver that drops repeats still shows each test.
func (s *Sender) messageID(t store.Target, msg Message) string {
	if msg.Test {
		return "test-" + strconv.FormatInt(s.now().UnixNano(), 36)
	}
	return DeliveryID(t.ID, msg.Events)
}

// maxText bounds a message's human-readable text: chat services cut or
// refuse long messages (Discord at 2,000 characters).
const maxText = 1800

// summary is a message's title and text for people.
func (s *Sender) summary(msg Message) (title, text, click string) {
	if msg.Test {
		return "Lectern test", "Notifications from Lectern reach you here. New chapters of your Bookmarks will arrive like this.", s.BaseURL + "/settings"
	}
	click = s.BaseURL + "/library/manga"
	if len(msg.Events) == 1 {
		e := msg.Events[0]
		title = eventTitle(e) + ": " + eventLabel(e)
		if e.URL != "" {
			click = e.URL
		}
		return title, eventLabel(e) + " of " + eventTitle(e) + " is out.", click
	}
	title = fmt.Sprintf("%d new chapters", len(msg.Events))
	var b strings.Builder
	for i, e := range msg.Events {
		line := eventTitle(e) + ": " + eventLabel(e)
		if b.Len()+len(line)+1 > maxText {
			fmt.Fprintf(&b, "… and %d more", len(msg.Events)-i)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
	}
	return title, b.String(), click
}

func eventTitle(e store.ChapterEvent) string {
	if e.Title != "" {
		return e.Title
	}
	return e.SeriesKey
}

func eventLabel(e store.ChapterEvent) string {
	if e.Locked {
		return e.Label + " (early access)"
	}
	return e.Label
}

// ntfyMessage is ntfy's JSON publishing body.
type ntfyMessage struct {
	Topic   string   `json:"topic"`
	Title   string   `json:"title"`
	Message string   `json:"message"`
	Click   string   `json:"click,omitempty"`
	Icon    string   `json:"icon,omitempty"`
	Tags    []string `json:"tags"`
}

// ntfyRequest publishes as JSON to the server's root rather than with
// headers on the topic URL: titles are any Unicode, which headers carry
// badly.
func (s *Sender) ntfyRequest(ctx context.Context, t store.Target, msg Message) (*http.Request, error) {
	u, err := url.Parse(t.URL)
	if err != nil {
		return nil, fmt.Errorf("target URL: %w", err)
	}
	publish, topic, err := ntfySplit(u)
	if err != nil {
		return nil, err
	}
	title, text, click := s.summary(msg)
	m := ntfyMessage{Topic: topic, Title: title, Message: text, Click: click, Tags: []string{"books"}}
	if len(msg.Events) == 1 {
		// ntfy shows JPEG and PNG icons only.
		if e := msg.Events[0]; e.CoverType == imagetype.TypeJPEG || e.CoverType == imagetype.TypePNG {
			m.Icon = cover.URL(s.BaseURL, e.CoverAddress, e.CoverType)
		}
	}
	return jsonRequest(ctx, publish.String(), m)
}

// WebhookBody is the JSON body of a webhook (docs/notifications.md).
type WebhookBody struct {
	Version int    `json:"version"`
	Type    string `json:"type"` // "new_chapters" or "test"
	// ID is the delivery id, also sent as Idempotency-Key.
	ID       string           `json:"id"`
	SentAt   time.Time        `json:"sent_at"`
	Reader   string           `json:"reader"`
	Chapters []WebhookChapter `json:"chapters"`
	// Human-readable copies under the names common services read (Gotify:
	// title, message; Slack, Mattermost: text; Discord: content), so such a
	// webhook can show something without a relay in between.
	Title   string `json:"title"`
	Message string `json:"message"`
	Text    string `json:"text"`
	Content string `json:"content"`
}

// WebhookChapter is one new Latest Chapter in a webhook body.
type WebhookChapter struct {
	ID            int64     `json:"id"` // the change's id: the same in every resend
	Key           string    `json:"key"`
	Site          string    `json:"site"`
	Kind          string    `json:"kind"`
	Title         string    `json:"title"`
	SeriesURL     string    `json:"series_url"`
	Cover         string    `json:"cover"`
	Chapter       string    `json:"chapter"`
	ChapterNumber *float64  `json:"chapter_number"`
	ChapterURL    string    `json:"chapter_url"`
	Locked        bool      `json:"locked"`
	FirstSeenAt   time.Time `json:"first_seen_at"`
}

// Webhook builds the body of message id.
func (s *Sender) Webhook(id string, msg Message) WebhookBody {
	title, text, _ := s.summary(msg)
	b := WebhookBody{Version: WebhookVersion, Type: "new_chapters", ID: id, SentAt: s.now().UTC(),
		Reader: msg.ReaderName, Chapters: []WebhookChapter{},
		Title: title, Message: text, Text: title + "\n" + text, Content: title + "\n" + text}
	if msg.Test {
		b.Type = "test"
	}
	for _, e := range msg.Events {
		b.Chapters = append(b.Chapters, WebhookChapter{
			ID: e.HistoryID, Key: e.SeriesKey, Site: e.Site, Kind: e.Kind, Title: e.Title, SeriesURL: e.SeriesURL,
			Cover: cover.URL(s.BaseURL, e.CoverAddress, e.CoverType), Chapter: e.Label, ChapterNumber: e.Number,
			ChapterURL: e.URL, Locked: e.Locked, FirstSeenAt: e.FirstSeenAt.UTC(),
		})
	}
	return b
}

func jsonRequest(ctx context.Context, target string, v any) (*http.Request, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode message: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, &buf)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

func (s *Sender) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
