package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/notify"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The settings page's notification sections: the private feed URL (shown
// once, like a token, since only its hash is kept) and the push targets
// with their "send test" buttons.

func init() {
	for code, msg := range map[string]string{
		"feed-revoked":   "Feed URL revoked. Feed readers using it now get 404.",
		"target-added":   "Notification target added. New chapters will be sent there; try “Send test”.",
		"target-deleted": "Notification target removed.",
		"muted":          "Notifications muted: new chapters of this Series reach none of your targets.",
		"unmuted":        "Notifications on: new chapters of this Series reach your targets again.",
	} {
		flashes[code] = msg
	}
}

// notifyRoutes adds the settings actions (behind requireReader and the
// CSRF check).
func (u *UI) notifyRoutes(r chi.Router) {
	r.Get("/import", u.importShow)
	r.Get("/export", u.exportDownload)
	if u.notify == nil {
		return
	}
	r.Post("/settings/feed", u.feedCreate)
	r.Post("/settings/feed/revoke", u.feedRevoke)
	r.Post("/settings/notify", u.targetCreate)
	r.Post("/settings/notify/{id}/delete", u.targetDelete)
	r.Post("/settings/notify/{id}/test", u.targetTest)
	r.Post("/series/{key}/mute", u.seriesMute)
}

// seriesMute mutes or unmutes a held Series for every target of the Reader.
func (u *UI) seriesMute(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	key, ok := u.seriesKey(w, r)
	if !ok {
		return
	}
	muted := r.PostForm.Get("muted") == "1"
	err := u.store.SetMute(r.Context(), reader.ID, key, muted)
	if errors.Is(err, store.ErrNotFound) {
		u.refuse(w, r, err, "No such Bookmark", "You hold no Bookmark on "+key+".")
		return
	}
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	msg := "unmuted"
	if muted {
		msg = "muted"
	}
	http.Redirect(w, r, withMsg(seriesPath(key), msg)+"#notify-mute", http.StatusSeeOther)
}

// notifySection is what the settings page shows of notifications.
type notifySection struct {
	Feed       *feedInfo
	NewFeedURL string // only in the answer to the POST that made it
	Targets    []targetRow
	MaxTargets int
	// The add form, refilled after an error.
	TargetKind, TargetURL, TargetError string
	Form                               notify.TargetSpec
	Test                               *testResult
	// NewSecret is a signed webhook's whsec_ secret, in the answer to the
	// POST that made it only.
	NewSecret *newSecret
}

type newSecret struct {
	Target, Secret string
}

type feedInfo struct {
	Created, LastUsed *when
}

type targetRow struct {
	ID                   int64
	Kind, Shown, Name    string
	Terms                string
	Sent, Pending        int
	Failed               int
	LastSent             *when
	LastError            string
	TestPath, DeletePath string
}

type testResult struct {
	Target string
	OK     bool
	Error  string
	// The service's answer.
	Status int
	Answer string
}

// loadNotify fills the section for renderSettings; nil when notifications
// are not configured.
func (u *UI) loadNotify(ctx context.Context, readerID int64) (*notifySection, error) {
	if u.notify == nil {
		return nil, nil
	}
	sec := &notifySection{MaxTargets: notify.MaxTargets, TargetKind: "apprise", Form: notify.TargetSpec{Mode: notify.ModeEach}}
	fs, err := u.store.FeedSecretOf(ctx, readerID)
	switch {
	case err == nil:
		sec.Feed = &feedInfo{Created: u.when(&fs.CreatedAt), LastUsed: u.when(fs.LastUsedAt)}
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	targets, err := u.store.ListTargets(ctx, readerID)
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		id := strconv.FormatInt(t.ID, 10)
		sec.Targets = append(sec.Targets, targetRow{
			ID: t.ID, Kind: t.Kind, Shown: t.URL, Name: t.Name, Terms: termsText(t.TargetTerms),
			Sent: t.Sent, Pending: t.Pending, Failed: t.Failed, LastSent: u.when(t.LastSentAt), LastError: t.LastError,
			TestPath: "/settings/notify/" + id + "/test", DeletePath: "/settings/notify/" + id + "/delete",
		})
	}
	return sec, nil
}

// termsText says when a target sends, for the list.
func termsText(t store.TargetTerms) string {
	switch t.Mode {
	case notify.ModeThreshold:
		return "once " + strconv.Itoa(t.Threshold) + " chapters wait"
	case notify.ModeDigest:
		return t.Digest + " digest at " + strconv.Itoa(t.DigestHour) + ":00 " + t.TimeZone
	}
	return "each chapter"
}

// editNotify runs edit on the notifications section of the settings page.
func (u *UI) editNotify(w http.ResponseWriter, r *http.Request, status int, edit func(*notifySection)) {
	u.renderSettings(w, r, status, func(p *settingsPage) {
		if p.Notify != nil {
			edit(p.Notify)
		}
	})
}

// feedCreate makes (or remakes) the Reader's feed URL and shows it once.
func (u *UI) feedCreate(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	secret, err := u.notify.NewFeedSecret(r.Context(), reader.ID)
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	u.editNotify(w, r, http.StatusOK, func(s *notifySection) { s.NewFeedURL = u.notify.FeedURL(secret) })
}

func (u *UI) feedRevoke(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	err := u.notify.RevokeFeed(r.Context(), reader.ID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		u.serverError(w, r, err)
		return
	}
	http.Redirect(w, r, "/settings?msg=feed-revoked#feed", http.StatusSeeOther)
}

func (u *UI) targetCreate(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	f := r.PostForm
	kind, raw := f.Get("kind"), f.Get("url")
	spec := notify.TargetSpec{URL: raw, Name: f.Get("name"), Mode: f.Get("mode"), Digest: f.Get("digest"), TimeZone: f.Get("time_zone")}
	if kind == notify.KindNtfy || kind == notify.KindWebhook {
		spec.URL = notify.FromLegacy(kind, raw) // the https URLs of the form before Apprise URLs
	}
	var formErr string
	if v := f.Get("threshold"); v != "" && spec.Mode == notify.ModeThreshold {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			formErr = "The threshold is a number of chapters from 1 up."
		}
		spec.Threshold = n
	}
	if v := f.Get("digest_hour"); v != "" {
		h, err := strconv.Atoi(v)
		if err != nil {
			formErr = "The digest hour is a number from 0 to 23."
		}
		spec.DigestHour = &h
	}
	var c notify.Created
	var err error
	if formErr == "" {
		c, err = u.notify.AddTarget(r.Context(), reader.ID, spec)
	}
	msg := formErr
	switch {
	case formErr != "":
	case err == nil && c.SigningSecret != "":
		// Shown once: the page answers the POST itself rather than
		// redirecting, so the secret is in no URL and no later page.
		u.editNotify(w, r, http.StatusOK, func(s *notifySection) {
			s.NewSecret = &newSecret{Target: c.URL, Secret: c.SigningSecret}
		})
		return
	case err == nil:
		http.Redirect(w, r, "/settings?msg=target-added#notifications", http.StatusSeeOther)
		return
	case errors.Is(err, notify.ErrInvalidTarget), errors.Is(err, notify.ErrNoSecretKey):
		msg = err.Error() + "."
	case errors.Is(err, notify.ErrTooManyTargets):
		msg = "You have " + strconv.Itoa(notify.MaxTargets) + " targets already: remove one first."
	case errors.Is(err, store.ErrConflict):
		msg = "That target is in your list already."
	default:
		u.serverError(w, r, err)
		return
	}
	u.editNotify(w, r, http.StatusUnprocessableEntity, func(s *notifySection) {
		s.TargetError, s.TargetKind, s.TargetURL, s.Form = msg, kind, raw, spec
	})
}

// targetID reads {id}, answering 404 itself for one the Reader does not
// have.
func (u *UI) targetID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		u.fail(w, r, http.StatusNotFound, "No such target", "You have no notification target with that id.")
		return 0, false
	}
	return id, true
}

func (u *UI) targetDelete(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	id, ok := u.targetID(w, r)
	if !ok {
		return
	}
	err := u.store.DeleteTarget(r.Context(), reader.ID, id)
	if errs.CodeOf(err) == errs.NotFound {
		u.refuse(w, r, err, "No such target", "You have no notification target with that id.")
		return
	}
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	http.Redirect(w, r, "/settings?msg=target-deleted#notifications", http.StatusSeeOther)
}

// targetTest sends the test message now and shows how it went: the same
// gate as every delivery, so a refused address says so here.
func (u *UI) targetTest(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	id, ok := u.targetID(w, r)
	if !ok {
		return
	}
	t, err := u.store.TargetByID(r.Context(), reader.ID, id)
	if errs.CodeOf(err) == errs.NotFound {
		u.refuse(w, r, err, "No such target", "You have no notification target with that id.")
		return
	}
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	res := &testResult{Target: t.URL, OK: true}
	reply, err := u.notify.SendTest(r.Context(), reader, id)
	res.Status, res.Answer = reply.Status, reply.Body
	if err != nil {
		res.OK = false
		res.Error = err.Error()
		if c := gate.Class(err); c != "" && c != gate.ClassTimeout {
			res.Error = "Lectern refused to send there (" + c + "): notifications go only to public https addresses. " + err.Error()
		}
	}
	u.editNotify(w, r, http.StatusOK, func(s *notifySection) { s.Test = res })
}
