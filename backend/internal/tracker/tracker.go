// Package tracker links a Reader's Bookmarks to the outside list services
// they keep their canonical list on (AniList, MyAnimeList, MangaUpdates):
// linking an account (OAuth with state and PKCE, AniList's pasted token,
// MangaUpdates' session), mapping a Bookmark to a tracker entry, the sync
// job that pushes Progress (never lowering it) and pulls a higher count
// back, and the tracker's reading list as an import.
//
// Trackers are the Owner's configuration (their API and OAuth endpoints),
// not addresses found in third-party pages: requests to them do not pass
// the destination gate. Tokens are sealed at rest with SECRET_KEY
// (package secretbox) and never logged. docs/trackers.md is the reference;
// the decisions are in docs/adr/0014-trackers.md.
package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/errs"
)

// The trackers, as stored.
const (
	AniList      = "anilist"
	MyAnimeList  = "myanimelist"
	MangaUpdates = "mangaupdates"
)

// Names lists the trackers in the order Settings shows them.
var Names = []string{AniList, MyAnimeList, MangaUpdates}

// Label is a tracker's name as people write it.
func Label(name string) string {
	switch name {
	case AniList:
		return "AniList"
	case MyAnimeList:
		return "MyAnimeList"
	case MangaUpdates:
		return "MangaUpdates"
	}
	return name
}

// Known reports whether name is a tracker.
func Known(name string) bool {
	return name == AniList || name == MyAnimeList || name == MangaUpdates
}

// Token is what a tracker gave a Reader's link: the access token (for
// MangaUpdates the session token), and for OAuth a refresh token and an
// expiry when it has them.
type Token struct {
	Access  string
	Refresh string
	Expires *time.Time
}

// User is the tracker account a token belongs to.
type User struct {
	ID   string
	Name string
}

// The list statuses Lectern reasons about; each client maps its tracker's
// own names to these.
const (
	StatusReading   = "reading"
	StatusCompleted = "completed"
	StatusPlanning  = "planning"
	StatusPaused    = "paused"
	StatusDropped   = "dropped"
	StatusRepeating = "repeating"
)

// Entry is a list entry as the tracker holds it.
type Entry struct {
	Progress int
	Status   string
}

// Candidate is an entry a tracker's search offers for a title.
type Candidate struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	URL   string `json:"url"`
	Year  int    `json:"year,omitempty"`
}

// ListItem is one entry of a Reader's list on a tracker, for the import.
type ListItem struct {
	ID       string
	Title    string
	Progress int
	Status   string
	// SiteURLs are pages the tracker links the entry to; one on a
	// supported Site places it.
	SiteURLs []string
}

// Client is one tracker's API.
type Client interface {
	Name() string
	// Identify returns the account a token belongs to; it is also the
	// check that a token works.
	Identify(ctx context.Context, tok Token) (User, error)
	// Get returns the Reader's list entry for id; found is false when the
	// entry is not on their list.
	Get(ctx context.Context, tok Token, user User, id string) (e Entry, found bool, err error)
	// Save writes progress and status (one of the Status constants) to the
	// entry, adding it to the list when it is not there (found false).
	Save(ctx context.Context, tok Token, id string, found bool, progress int, status string) error
	// List is the Reader's whole list.
	List(ctx context.Context, tok Token, user User) ([]ListItem, error)
	// Search finds entries by title.
	Search(ctx context.Context, tok Token, title string) ([]Candidate, error)
	// EntryURL is the entry's page on the tracker.
	EntryURL(id string) string
}

// OAuthClient is a tracker linked through its authorisation page.
type OAuthClient interface {
	Client
	// Configured reports whether the Owner set the client id.
	Configured() bool
	// PKCE reports whether the tracker takes a code challenge.
	PKCE() bool
	AuthorizeURL(state, challenge, redirect string) string
	Exchange(ctx context.Context, code, verifier, redirect string) (Token, error)
	// Refresh trades the refresh token for new tokens; ErrNoRefresh when
	// the tracker has no such grant.
	Refresh(ctx context.Context, tok Token) (Token, error)
}

// PasswordClient is a tracker linked with the account's name and password
// (MangaUpdates): only the session token it answers is kept.
type PasswordClient interface {
	Client
	Login(ctx context.Context, username, password string) (Token, User, error)
}

// ErrNoRefresh: the tracker has no refresh grant (AniList's tokens last a
// year and are linked again).
var ErrNoRefresh = errors.New("the tracker cannot refresh a token")

// Kinds of tracker failure, which decide what a sync does next.
type Kind int

// The kinds.
const (
	// Transient: an outage (5xx, the network); retried with back-off.
	Transient Kind = iota
	// Refused: the token was refused (revoked or expired); the account
	// shows as unlinked with the reason.
	Refused
	// Limited: rate limited; retried after Retry-After, and the tracker is
	// paced for every Reader until then.
	Limited
	// Permanent: a request the tracker will never take (no such entry);
	// recorded, not retried.
	Permanent
)

// Error is a tracker's refusal or failure. Msg never holds a token or a
// response body's secrets: it is stored and shown.
type Error struct {
	Tracker    string
	Kind       Kind
	Status     int
	RetryAfter time.Duration
	Msg        string
}

func (e *Error) Error() string {
	if e.Status > 0 {
		return fmt.Sprintf("%s answered %d: %s", Label(e.Tracker), e.Status, e.Msg)
	}
	return Label(e.Tracker) + ": " + e.Msg
}

// KindOf is the kind of err: Transient for an error that is not an *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Transient
}

// Errors the faces answer.
var (
	// ErrUnknownTracker names no tracker.
	ErrUnknownTracker = errs.New(errs.NotFound, "no such tracker: anilist, myanimelist or mangaupdates")
	// ErrNoSecretKey: tokens cannot be sealed without SECRET_KEY.
	ErrNoSecretKey = errs.New(errs.Unavailable, "linking a tracker needs SECRET_KEY, which the Owner has not set: tokens are encrypted at rest with it")
	// ErrNotConfigured: the Owner has not registered Lectern with the
	// tracker (ANILIST_CLIENT_ID, MAL_CLIENT_ID).
	ErrNotConfigured = errs.New(errs.Invalid, "the Owner has not configured this tracker's client id")
	// ErrNotLinked: the Reader has not linked the tracker.
	ErrNotLinked = errs.New(errs.Conflict, "link this tracker in Settings first")
	// ErrBadEntryID: an entry id the tracker could not name.
	ErrBadEntryID = errs.New(errs.Invalid, "not an entry id of this tracker")
	// ErrTokenRefused: the tracker refused the token or credentials given.
	ErrTokenRefused = errs.New(errs.Invalid, "the tracker refused these credentials")
	// ErrBadState: an OAuth callback that does not match an authorisation
	// this Reader started (or one used or expired).
	ErrBadState = errs.New(errs.Invalid, "this authorisation was not started here, was used already or has expired: start again from Settings")
	// ErrTrackerDown: the tracker did not answer a Reader's request.
	ErrTrackerDown = errs.New(errs.Unavailable, "the tracker did not answer; try again shortly")
)

// ParseEntryID reads the id a Reader gives for an entry: a JSON number,
// or a string holding the number or the entry's page URL. MangaUpdates
// names an entry by a base-36 id in its URLs and a number in its API: a
// string with a letter in it (or its URL) is the former.
func ParseEntryID(tracker string, raw json.RawMessage) (string, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return "", fmt.Errorf("%w: id is required", ErrBadEntryID)
	}
	if s[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%w: %v", ErrBadEntryID, err)
		}
		s = strings.TrimSpace(s)
		if u, err := url.Parse(s); err == nil && u.Host != "" {
			return idFromURL(tracker, u)
		}
		if tracker == MangaUpdates && strings.ContainsFunc(s, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }) {
			return fromBase36(s)
		}
	}
	n, err := strconv.ParseUint(s, 10, 63)
	if err != nil || n == 0 {
		return "", fmt.Errorf("%w: %s is not a positive whole number", ErrBadEntryID, shorten(s))
	}
	return strconv.FormatUint(n, 10), nil
}

func idFromURL(tracker string, u *url.URL) (string, error) {
	host := strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	bad := fmt.Errorf("%w: %s is not a %s entry page", ErrBadEntryID, shorten(u.String()), Label(tracker))
	switch {
	case tracker == AniList && host == "anilist.co" && len(parts) >= 2 && parts[0] == "manga",
		tracker == MyAnimeList && host == "myanimelist.net" && len(parts) >= 2 && parts[0] == "manga":
		n, err := strconv.ParseUint(parts[1], 10, 63)
		if err != nil || n == 0 {
			return "", bad
		}
		return strconv.FormatUint(n, 10), nil
	case tracker == MangaUpdates && host == "mangaupdates.com" && len(parts) >= 2 && parts[0] == "series":
		return fromBase36(parts[1])
	}
	return "", bad
}

func fromBase36(s string) (string, error) {
	n, err := strconv.ParseUint(strings.ToLower(s), 36, 63)
	if err != nil || n == 0 {
		return "", fmt.Errorf("%w: %s is not a MangaUpdates id", ErrBadEntryID, shorten(s))
	}
	return strconv.FormatUint(n, 10), nil
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
