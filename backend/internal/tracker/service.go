package tracker

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/secretbox"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Tuning of the sync.
const (
	// SyncDelay is how long after the first unsent Progress record its
	// sync job runs: a burst of records (a Reader paging through chapters)
	// becomes one request carrying the last of them.
	SyncDelay = 5 * time.Second
	// MaxPaceWait is the longest a job sleeps for its tracker's pace;
	// further off, it snoozes (and holds no worker).
	MaxPaceWait = 15 * time.Second
	// OAuthTimeout bounds an authorisation from Settings to the callback.
	OAuthTimeout = 10 * time.Minute
	// DefaultRetryAfter is the wait after a 429 that names none.
	DefaultRetryAfter = time.Minute
)

// DefaultPaces are the trackers' request paces: AniList documents 90
// requests a minute and currently allows 30; MyAnimeList and MangaUpdates
// publish none, so one a second.
var DefaultPaces = map[string]time.Duration{AniList: 2 * time.Second, MyAnimeList: time.Second, MangaUpdates: time.Second}

// Service is the trackers as the API, the web UI and the sync job use them.
type Service struct {
	Store *store.Store
	// Box seals tokens; nil without SECRET_KEY, when nothing can be linked.
	Box     *secretbox.Box
	Clients map[string]Client
	River   *river.Client[pgx.Tx]
	// BaseURL is PUBLIC_BASE_URL: OAuth callbacks return there.
	BaseURL string
	// Paces replace DefaultPaces per tracker (TRACKER_PACE; 0 = unpaced).
	Paces  map[string]time.Duration
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Backoff is the wait before a sync retries after its nth failure in a
	// row; nil means 30 s doubling to 6 h.
	Backoff func(n int) time.Duration
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Service) pace(tracker string) time.Duration {
	if d, ok := s.Paces[tracker]; ok {
		return d
	}
	return DefaultPaces[tracker]
}

func (s *Service) backoff(n int) time.Duration {
	if s.Backoff != nil {
		return s.Backoff(n)
	}
	d := 30 * time.Second
	for i := 1; i < n && d < 6*time.Hour; i++ {
		d *= 2
	}
	return min(d, 6*time.Hour)
}

// Client returns a tracker's client; ErrUnknownTracker for an unknown name.
func (s *Service) Client(name string) (Client, error) {
	c, ok := s.Clients[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTracker, name)
	}
	return c, nil
}

// Link methods, as Settings offers them.
const (
	LinkOAuth    = "oauth"
	LinkToken    = "token"
	LinkPassword = "password"
)

// Methods lists how a Reader may link a tracker on this deployment.
func (s *Service) Methods(name string) []string {
	var out []string
	switch c := s.Clients[name].(type) {
	case OAuthClient:
		if c.Configured() {
			out = append(out, LinkOAuth)
		}
		if name == AniList {
			out = append(out, LinkToken)
		}
	case PasswordClient:
		out = append(out, LinkPassword)
	}
	return out
}

// Account is a Reader's account on a tracker as Settings and the API show
// it. Fields are only ever added.
type Account struct {
	Tracker        string     `json:"tracker"`
	Label          string     `json:"label"`
	Methods        []string   `json:"methods"`
	Linked         bool       `json:"linked"`
	UserID         string     `json:"user_id"`
	UserName       string     `json:"user_name"`
	LinkedAt       *time.Time `json:"linked_at"`
	UnlinkedAt     *time.Time `json:"unlinked_at"`
	UnlinkedReason string     `json:"unlinked_reason"`
	LastSyncAt     *time.Time `json:"last_sync_at"`
	LastError      string     `json:"last_error"`
	LastErrorAt    *time.Time `json:"last_error_at"`
	Entries        int        `json:"entries"`
}

// Accounts lists every tracker this deployment offers with the Reader's
// account on it.
func (s *Service) Accounts(ctx context.Context, readerID int64) ([]Account, error) {
	list, err := s.Store.TrackerAccounts(ctx, readerID)
	if err != nil {
		return nil, err
	}
	have := map[string]store.TrackerAccount{}
	for _, a := range list {
		have[a.Tracker] = a
	}
	entries, err := s.Store.TrackerEntries(ctx, readerID, "", "")
	if err != nil {
		return nil, err
	}
	count := map[string]int{}
	for _, e := range entries {
		count[e.Tracker]++
	}
	var out []Account
	for _, name := range Names {
		if _, ok := s.Clients[name]; !ok {
			continue
		}
		acc := Account{Tracker: name, Label: Label(name), Methods: s.Methods(name), Entries: count[name]}
		if len(acc.Methods) == 0 {
			continue
		}
		if a, ok := have[name]; ok {
			acc.Linked, acc.UserID, acc.UserName = a.Linked(), a.UserID, a.UserName
			acc.UnlinkedAt, acc.UnlinkedReason = utc(a.UnlinkedAt), a.UnlinkedReason
			acc.LastSyncAt, acc.LastError, acc.LastErrorAt = utc(a.LastSyncAt), a.LastError, utc(a.LastErrorAt)
			if a.Linked() {
				t := a.LinkedAt.UTC()
				acc.LinkedAt = &t
			}
		}
		out = append(out, acc)
	}
	return out, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// aad binds a sealed value to its row and purpose.
func aad(readerID int64, tracker, what string) []byte {
	return fmt.Appendf(nil, "lectern/tracker/%d/%s/%s", readerID, tracker, what)
}

func (s *Service) seal(readerID int64, tracker, what, v string) []byte {
	if v == "" {
		return nil
	}
	return s.Box.Seal([]byte(v), aad(readerID, tracker, what))
}

// token opens an account's tokens.
func (s *Service) token(a store.TrackerAccount) (Token, error) {
	if s.Box == nil {
		return Token{}, ErrNoSecretKey
	}
	if a.Token == nil {
		return Token{}, ErrNotLinked
	}
	access, err := s.Box.Open(a.Token, aad(a.ReaderID, a.Tracker, "access"))
	if err != nil {
		return Token{}, fmt.Errorf("open %s token of reader %d: %w", a.Tracker, a.ReaderID, err)
	}
	tok := Token{Access: string(access), Expires: a.ExpiresAt}
	if a.RefreshToken != nil {
		r, err := s.Box.Open(a.RefreshToken, aad(a.ReaderID, a.Tracker, "refresh"))
		if err != nil {
			return Token{}, fmt.Errorf("open %s refresh token of reader %d: %w", a.Tracker, a.ReaderID, err)
		}
		tok.Refresh = string(r)
	}
	return tok, nil
}

// link stores a verified token and queues the backfill of every mapped
// entry both ways.
func (s *Service) link(ctx context.Context, readerID int64, tracker string, tok Token, user User) error {
	a := store.TrackerAccount{ReaderID: readerID, Tracker: tracker, UserID: user.ID, UserName: user.Name,
		Token: s.seal(readerID, tracker, "access", tok.Access), RefreshToken: s.seal(readerID, tracker, "refresh", tok.Refresh),
		ExpiresAt: tok.Expires}
	err := s.Store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.LinkTracker(ctx, a); err != nil {
			return err
		}
		if err := tx.ForgetSynced(ctx, readerID, tracker); err != nil {
			return err
		}
		return s.queue(ctx, tx, readerID, nil, tracker, "")
	})
	if err != nil {
		return err
	}
	s.log().InfoContext(ctx, "tracker linked", "reader", readerID, "tracker", tracker, "tracker_user", user.Name)
	return nil
}

// refused turns a tracker's answer to a Reader's own request into what the
// faces show: a refusal of the credentials, or the tracker being down.
func refused(err error) error {
	switch KindOf(err) {
	case Refused, Permanent:
		return fmt.Errorf("%w: %v", ErrTokenRefused, err)
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w (%v)", ErrTrackerDown, err)
}

// LinkToken links AniList with a token from its implicit grant, pasted by
// the Reader: it is checked with the Viewer query before it is kept.
func (s *Service) LinkToken(ctx context.Context, readerID int64, tracker, token string) (User, error) {
	c, err := s.Client(tracker)
	if err != nil {
		return User{}, err
	}
	if tracker != AniList {
		return User{}, fmt.Errorf("%w: %s is not linked with a pasted token", ErrTokenRefused, Label(tracker))
	}
	if s.Box == nil {
		return User{}, ErrNoSecretKey
	}
	token = strings.TrimSpace(token)
	if token == "" || len(token) > 4096 || strings.ContainsAny(token, " \t\r\n") {
		return User{}, fmt.Errorf("%w: paste the access token AniList showed, without spaces", ErrTokenRefused)
	}
	tok := Token{Access: token}
	user, err := c.Identify(ctx, tok)
	if err != nil {
		return User{}, refused(err)
	}
	// A token from the implicit grant lasts a year; AniList does not say
	// when it ends, so none is recorded and a refusal unlinks it.
	return user, s.link(ctx, readerID, tracker, tok, user)
}

// LinkPassword links MangaUpdates with the Reader's name and password,
// which are sent to MangaUpdates once and not kept: only its session
// token is.
func (s *Service) LinkPassword(ctx context.Context, readerID int64, tracker, username, password string) (User, error) {
	c, err := s.Client(tracker)
	if err != nil {
		return User{}, err
	}
	pc, ok := c.(PasswordClient)
	if !ok {
		return User{}, fmt.Errorf("%w: %s is not linked with a password", ErrTokenRefused, Label(tracker))
	}
	if s.Box == nil {
		return User{}, ErrNoSecretKey
	}
	username = strings.TrimSpace(username)
	if username == "" || password == "" || len(username) > 200 || len(password) > 1024 {
		return User{}, fmt.Errorf("%w: a user name and a password are required", ErrTokenRefused)
	}
	tok, user, err := pc.Login(ctx, username, password)
	if err != nil {
		return User{}, refused(err)
	}
	return user, s.link(ctx, readerID, tracker, tok, user)
}

// CallbackURL is where a tracker's authorisation page sends the Reader
// back: it must be registered with the tracker as the redirect URI.
func (s *Service) CallbackURL(tracker string) string {
	return strings.TrimRight(s.BaseURL, "/") + "/settings/trackers/" + tracker + "/callback"
}

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// StartOAuth begins linking through the tracker's authorisation page: a
// state (only its hash kept) that the callback must bring back, and for a
// PKCE tracker a verifier (sealed) whose challenge goes with the Reader.
// It returns the address to send the Reader to.
func (s *Service) StartOAuth(ctx context.Context, readerID int64, tracker string) (string, error) {
	c, err := s.Client(tracker)
	if err != nil {
		return "", err
	}
	oc, ok := c.(OAuthClient)
	if !ok || !oc.Configured() {
		return "", fmt.Errorf("%w (%s)", ErrNotConfigured, Label(tracker))
	}
	if s.Box == nil {
		return "", ErrNoSecretKey
	}
	state := randomString(32)
	// 64 random bytes are 86 characters of RFC 7636's unreserved set, within
	// its 43 to 128; with the plain method MyAnimeList takes, the challenge
	// is the verifier itself.
	verifier := randomString(64)
	sum := sha256.Sum256([]byte(state))
	err = s.Store.PutOAuthState(ctx, sum[:], store.OAuthState{ReaderID: readerID, Tracker: tracker,
		Verifier: s.Box.Seal([]byte(verifier), aad(readerID, tracker, "verifier")), ExpiresAt: s.now().Add(OAuthTimeout)})
	if err != nil {
		return "", err
	}
	challenge := ""
	if oc.PKCE() {
		challenge = verifier
	}
	return oc.AuthorizeURL(state, challenge, s.CallbackURL(tracker)), nil
}

// FinishOAuth completes linking at the callback: the state must be one this
// Reader started for this tracker, unused and unexpired; the code is
// exchanged with the verifier, and the token checked before it is kept.
func (s *Service) FinishOAuth(ctx context.Context, readerID int64, tracker, state, code string) (User, error) {
	c, err := s.Client(tracker)
	if err != nil {
		return User{}, err
	}
	oc, ok := c.(OAuthClient)
	if !ok || !oc.Configured() {
		return User{}, fmt.Errorf("%w (%s)", ErrNotConfigured, Label(tracker))
	}
	if s.Box == nil {
		return User{}, ErrNoSecretKey
	}
	if state == "" || code == "" || len(state) > 200 || len(code) > 4096 {
		return User{}, ErrBadState
	}
	sum := sha256.Sum256([]byte(state))
	st, err := s.Store.TakeOAuthState(ctx, sum[:])
	if errors.Is(err, store.ErrNotFound) {
		return User{}, ErrBadState
	}
	if err != nil {
		return User{}, err
	}
	if st.ReaderID != readerID || st.Tracker != tracker || s.now().After(st.ExpiresAt) {
		return User{}, ErrBadState
	}
	verifier, err := s.Box.Open(st.Verifier, aad(readerID, tracker, "verifier"))
	if err != nil {
		return User{}, fmt.Errorf("oauth verifier: %w", err)
	}
	tok, err := oc.Exchange(ctx, code, string(verifier), s.CallbackURL(tracker))
	if err != nil {
		return User{}, refused(err)
	}
	user, err := c.Identify(ctx, tok)
	if err != nil {
		return User{}, refused(err)
	}
	return user, s.link(ctx, readerID, tracker, tok, user)
}

// Unlink drops the Reader's tokens for a tracker; the mappings stay, and a
// later link backfills them.
func (s *Service) Unlink(ctx context.Context, readerID int64, tracker string) error {
	if _, err := s.Client(tracker); err != nil {
		return err
	}
	err := s.Store.UnlinkTracker(ctx, readerID, tracker, "unlinked in Lectern")
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrNotLinked, Label(tracker))
	}
	return err
}

// unlinkRefused marks an account unlinked because the tracker refused its
// token (revoked, expired), with the reason for Settings.
func (s *Service) unlinkRefused(ctx context.Context, readerID int64, tracker string, cause error) {
	reason := fmt.Sprintf("%s refused the token (%v): link it again in Settings", Label(tracker), cause)
	if err := s.Store.UnlinkTracker(ctx, readerID, tracker, reason); err != nil {
		s.log().ErrorContext(ctx, "record unlinked tracker", "reader", readerID, "tracker", tracker, "err", err)
		return
	}
	s.log().WarnContext(ctx, "tracker token refused: unlinked", "reader", readerID, "tracker", tracker, "reason", cause.Error())
}

// EntryView is a Bookmark's mapping as the faces show it. Fields are only
// ever added.
type EntryView struct {
	Tracker        string     `json:"tracker"`
	Label          string     `json:"label"`
	ID             string     `json:"id"`
	URL            string     `json:"url"`
	Title          string     `json:"title"`
	Source         string     `json:"source"`
	SyncedProgress *int       `json:"synced_progress"`
	SyncedStatus   string     `json:"synced_status"`
	Waiting        bool       `json:"waiting"`
	LastSyncAt     *time.Time `json:"last_sync_at"`
	LastError      string     `json:"last_error"`
	LastErrorAt    *time.Time `json:"last_error_at"`
}

func (s *Service) view(e store.TrackerEntry) EntryView {
	v := EntryView{Tracker: e.Tracker, Label: Label(e.Tracker), ID: e.EntryID, Title: e.Title, Source: e.Source,
		SyncedProgress: e.SyncedProgress, SyncedStatus: e.SyncedStatus, Waiting: e.Dirty,
		LastSyncAt: utc(e.LastSyncAt), LastError: e.LastError, LastErrorAt: utc(e.LastErrorAt)}
	if c, ok := s.Clients[e.Tracker]; ok {
		v.URL = c.EntryURL(e.EntryID)
	}
	return v
}

// Suggestion is an entry a Site's page names for a Series: offered to the
// Reader to confirm.
type Suggestion struct {
	Tracker string `json:"tracker"`
	Label   string `json:"label"`
	ID      string `json:"id"`
	URL     string `json:"url"`
}

// BookmarkTrackers is what GET /api/bookmarks/{key}/trackers answers.
type BookmarkTrackers struct {
	Key         string       `json:"key"`
	Completed   bool         `json:"completed"`
	Entries     []EntryView  `json:"entries"`
	Suggestions []Suggestion `json:"suggestions"`
}

// Bookmark returns a Bookmark's mappings, the Reader's completed mark and
// the entries its Site names that are not mapped yet; ErrNotFound when the
// Reader holds no Bookmark on key.
func (s *Service) Bookmark(ctx context.Context, readerID int64, key string) (BookmarkTrackers, error) {
	out := BookmarkTrackers{Key: key, Entries: []EntryView{}, Suggestions: []Suggestion{}}
	done, err := s.Store.Completed(ctx, readerID, key)
	if err != nil {
		return out, err
	}
	out.Completed = done
	list, err := s.Store.TrackerEntries(ctx, readerID, key, "")
	if err != nil {
		return out, err
	}
	mapped := map[string]bool{}
	for _, e := range list {
		out.Entries = append(out.Entries, s.view(e))
		mapped[e.Tracker] = true
	}
	ids, err := s.Store.SeriesTrackerIDs(ctx, key)
	if err != nil {
		return out, err
	}
	for _, name := range Names {
		c, ok := s.Clients[name]
		if id := ids[name]; ok && id != "" && !mapped[name] {
			out.Suggestions = append(out.Suggestions, Suggestion{Tracker: name, Label: Label(name), ID: id, URL: c.EntryURL(id)})
		}
	}
	return out, nil
}

// Map sets a Bookmark's entry on a tracker from the id the Reader gives
// (json: a number or a string, see ParseEntryID) and queues its sync, which
// backfills both ways. created is true for a new mapping.
func (s *Service) Map(ctx context.Context, readerID int64, key, tracker string, id json.RawMessage, title string) (EntryView, bool, error) {
	if _, err := s.Client(tracker); err != nil {
		return EntryView{}, false, err
	}
	entryID, err := ParseEntryID(tracker, id)
	if err != nil {
		return EntryView{}, false, err
	}
	if len([]rune(title)) > 300 {
		title = string([]rune(title)[:300])
	}
	source := store.EntryByReader
	if ids, err := s.Store.SeriesTrackerIDs(ctx, key); err == nil && ids[tracker] == entryID {
		source = store.EntryBySite
	}
	var e store.TrackerEntry
	var created bool
	err = s.Store.InTx(ctx, func(tx *store.Store) error {
		var err error
		if e, created, err = tx.PutTrackerEntry(ctx, readerID, key, tracker, entryID, strings.TrimSpace(title), source); err != nil {
			return err
		}
		return s.queue(ctx, tx, readerID, []string{key}, tracker, "")
	})
	if err != nil {
		return EntryView{}, false, err
	}
	return s.view(e), created, nil
}

// Unmap removes a Bookmark's entry on a tracker.
func (s *Service) Unmap(ctx context.Context, readerID int64, key, tracker string) error {
	if _, err := s.Client(tracker); err != nil {
		return err
	}
	return s.Store.DeleteTrackerEntry(ctx, readerID, key, tracker)
}

// Search asks a tracker for entries matching a title (the Series' title
// when q is empty), for the Reader to confirm one. The Reader's token is
// used when they linked the tracker (MyAnimeList needs one).
func (s *Service) Search(ctx context.Context, readerID int64, tracker, q string) ([]Candidate, error) {
	c, err := s.Client(tracker)
	if err != nil {
		return nil, err
	}
	q = strings.TrimSpace(q)
	if q == "" {
		return nil, fmt.Errorf("%w: a title to search for is required", ErrBadEntryID)
	}
	var tok Token
	if a, err := s.Store.TrackerAccount(ctx, readerID, tracker); err == nil && a.Linked() && s.Box != nil {
		if tok, err = s.token(a); err != nil {
			return nil, err
		}
	} else if tracker == MyAnimeList {
		return nil, fmt.Errorf("%w: %s", ErrNotLinked, Label(tracker))
	}
	list, err := c.Search(ctx, tok, q)
	if err != nil {
		return nil, refused(err)
	}
	return list, nil
}

// SetCompleted records the Reader's completed mark on a Bookmark and
// queues its syncs: completed is the one status only the Reader sets.
func (s *Service) SetCompleted(ctx context.Context, readerID int64, key string, done bool) error {
	return s.Store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.SetCompleted(ctx, readerID, key, done); err != nil {
			return err
		}
		return s.queue(ctx, tx, readerID, []string{key}, "", "")
	})
}

// Recorded is the Bookmark service's hook: Progress was recorded on keys
// (an import's many, a PUT's one), inside tx. Each linked tracker entry of
// them gets its sync job, due SyncDelay after its first unsent record.
func (s *Service) Recorded(ctx context.Context, tx *store.Store, readerID int64, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	return s.queue(ctx, tx, readerID, keys, "", "")
}

// queue marks entries unsent and inserts their sync jobs in tx. A job of
// the same round already waiting absorbs the insert (River's uniqueness):
// that is what turns ten quick records into one request.
func (s *Service) queue(ctx context.Context, tx *store.Store, readerID int64, keys []string, tracker, except string) error {
	tickets, err := tx.MarkUnsynced(ctx, readerID, keys, tracker, except)
	if err != nil || len(tickets) == 0 {
		return err
	}
	params := make([]river.InsertManyParams, len(tickets))
	for i, t := range tickets {
		params[i] = river.InsertManyParams{Args: SyncArgs{Entry: t.EntryID, Round: t.Round},
			InsertOpts: &river.InsertOpts{ScheduledAt: t.DirtySince.Add(SyncDelay)}}
	}
	if _, err := s.River.InsertManyTx(ctx, tx.Tx(), params); err != nil {
		return fmt.Errorf("queue tracker sync: %w", err)
	}
	return nil
}
