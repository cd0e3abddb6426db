package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// First run: while no Reader exists, the browser creates the Owner. Once one
// exists these pages are gone for good (store.CreateFirstOwner decides under
// a table lock, so two browsers racing cannot both win).
//
// Until then whoever reaches the port could make themselves the Owner, so
// set-up accepts a request only from this machine (the client address is
// loopback: the peer, or behind TRUSTED_PROXIES the address the proxy saw),
// or with the one-time setup code `lectern serve` writes in its log at start
// (server.New, "first run: no Owner yet").

// setupCode is the one-time code of a first run, made when the UI is built
// and spent by the set-up that creates the Owner.
type setupCode struct {
	mu    sync.Mutex
	code  string
	spent bool
}

func newSetupCode() (*setupCode, error) {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("setup code: %w", err)
	}
	c := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])
	return &setupCode{code: c[0:4] + "-" + c[4:8] + "-" + c[8:12] + "-" + c[12:16]}, nil
}

// normalCode is a code as typed: upper case, without spaces or dashes.
func normalCode(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return -1
		}
		return r
	}, strings.ToUpper(strings.TrimSpace(s)))
}

// matches reports typed as the unspent code, in constant time.
func (c *setupCode) matches(typed string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	want, got := normalCode(c.code), normalCode(typed)
	return !c.spent && len(got) == len(want) && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func (c *setupCode) spend() {
	c.mu.Lock()
	c.spent = true
	c.mu.Unlock()
}

// SetupCode is the first run's one-time setup code, for serve's log.
func (u *UI) SetupCode() string { return u.setup.code }

// fromThisMachine reports a request whose client address is loopback.
func (u *UI) fromThisMachine(r *http.Request) bool {
	a := u.proxies.Of(r)
	return a.IsValid() && a.IsLoopback()
}

type setupPage struct {
	common
	Name        string
	Error       string
	MinPassword int
	// NeedCode: the request is not from this machine, so the form asks for
	// the setup code.
	NeedCode bool
}

func (u *UI) setupShow(w http.ResponseWriter, r *http.Request) {
	n, err := u.store.CountReaders(r.Context())
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	if n > 0 {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	u.renderSetup(w, r, http.StatusOK, "", "")
}

func (u *UI) renderSetup(w http.ResponseWriter, r *http.Request, status int, name, msg string) {
	token, err := u.anonCSRF(w, r)
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	p := setupPage{common: u.base(r, "Set up Lectern", ""), Name: name, Error: msg, MinPassword: credential.MinPasswordLen,
		NeedCode: !u.fromThisMachine(r)}
	p.CSRF = maskToken(token)
	p.Narrow = true
	u.render(w, r, status, "setup", p)
}

func (u *UI) setupCreate(w http.ResponseWriter, r *http.Request) {
	if !u.parseForm(w, r) {
		return
	}
	if !u.anonCSRFOK(r) {
		u.csrfRefused(w, r)
		return
	}
	name := strings.TrimSpace(r.PostForm.Get("name"))
	if !u.fromThisMachine(r) && !u.setup.matches(r.PostForm.Get("setup_code")) {
		u.log.WarnContext(r.Context(), "first-run set-up refused: not from this machine and no valid setup code", "client", u.proxies.Of(r).String())
		u.renderSetup(w, r, http.StatusForbidden, name,
			"This request does not come from the machine Lectern runs on, so set-up needs the setup code from the server's log.")
		return
	}
	password := r.PostForm.Get("password")
	if err := credential.ValidName(name); err != nil {
		u.renderSetup(w, r, http.StatusUnprocessableEntity, name, "Name: "+err.Error()+".")
		return
	}
	if password != r.PostForm.Get("confirm") {
		u.renderSetup(w, r, http.StatusUnprocessableEntity, name, "The two passwords differ.")
		return
	}
	hash, err := credential.HashPassword(password)
	if err != nil {
		u.renderSetup(w, r, http.StatusUnprocessableEntity, name, "Password: "+err.Error()+".")
		return
	}
	reader, err := u.store.CreateFirstOwner(r.Context(), name, hash)
	if errors.Is(err, store.ErrConflict) {
		u.fail(w, r, http.StatusConflict, "Already set up",
			"This Lectern already has an Owner, so first-run set-up is closed. Sign in, or ask the Owner for an account.")
		return
	}
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	u.setup.spend()
	u.log.InfoContext(r.Context(), "owner created at first run", "reader", reader.ID)
	if err := u.startSession(r.Context(), w, reader.ID); err != nil {
		u.serverError(w, r, err)
		return
	}
	http.Redirect(w, r, "/library/manga?msg=welcome", http.StatusSeeOther)
}
