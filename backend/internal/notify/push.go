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
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/secretbox"
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

// ErrInvalidTarget is a target refused at save time (422).
var ErrInvalidTarget = errs.New(errs.Invalid, "invalid notification target")

// ntfy topic names: what ntfy itself accepts.
var ntfyTopic = regexp.MustCompile(`^[-_A-Za-z0-9]{1,64}$`)

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

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
	// Box opens sealed target URLs and signing secrets; nil without
	// SECRET_KEY, when only targets without a secret can send.
	Box *secretbox.Box
	// Now is the clock of sent_at and webhook-timestamp; nil means time.Now.
	Now func() time.Time
}

// Message is what one request announces.
type Message struct {
	ReaderName string
	Events     []store.ChapterEvent // oldest first
	// Test marks the "send test" button's message.
	Test bool
	// Alert, when set, makes this an Owner alert (or its recovery notice)
	// instead of news of chapters.
	Alert *Notice
}

// ErrPermanent is matched (errors.Is) by a failure that retrying the same
// request cannot fix: the gate refused the destination, or the receiver
// answered 4xx (other than 408 and 429).
var ErrPermanent = errors.New("permanent failure")

type permanent struct{ err error }

func (p permanent) Error() string        { return p.err.Error() }
func (p permanent) Unwrap() error        { return p.err }
func (p permanent) Is(target error) bool { return target == ErrPermanent }

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
	if a := msg.Alert; a != nil {
		// One id per raising and per recovery of an alert, the same on a
		// resend.
		h := sha256.New()
		fmt.Fprintf(h, "%d/%s/%v/%v", t.ID, a.Alert.Key, a.Alert.RaisedAt, a.Recovered)
		return "alert-" + hex.EncodeToString(h.Sum(nil)[:12])
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
	if a := msg.Alert; a != nil {
		text = a.Alert.Message
		if a.Recovered {
			text = "Resolved. It was: " + a.Alert.Message
		}
		return AlertTitle(*a), text, s.BaseURL + "/owner/sites"
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
	switch {
	case msg.Test:
		b.Type = "test"
	case msg.Alert != nil && msg.Alert.Recovered:
		b.Type = "owner_recovery"
	case msg.Alert != nil:
		b.Type = "owner_alert"
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

func jsonRequest(ctx context.Context, method, target string, v any) (*http.Request, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode message: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, &buf)
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
