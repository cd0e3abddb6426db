package web

import (
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/lectern-reader/lectern/backend/internal/credential"
)

// tokenCreate makes an API token and shows it in the response to the POST
// itself, once: only its hash is stored, and it is never put in a cookie, a
// redirect URL or a later page.
func (u *UI) tokenCreate(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	name := strings.TrimSpace(r.PostForm.Get("name"))
	switch {
	case name == "":
		u.renderSettings(w, r, http.StatusUnprocessableEntity, func(p *settingsPage) {
			p.TokenError = "Give the token a name, such as the browser it is for."
		})
		return
	case utf8.RuneCountInString(name) > maxTokenName:
		u.renderSettings(w, r, http.StatusUnprocessableEntity, func(p *settingsPage) {
			p.TokenError = fmt.Sprintf("A token name may have at most %d characters.", maxTokenName)
			p.TokenName = name
		})
		return
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f {
			u.renderSettings(w, r, http.StatusUnprocessableEntity, func(p *settingsPage) {
				p.TokenError = "A token name may not contain control characters."
			})
			return
		}
	}
	token, hash, err := credential.NewToken()
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	if _, err := u.store.CreateToken(r.Context(), reader.ID, name, hash); err != nil {
		u.serverError(w, r, err)
		return
	}
	u.renderSettings(w, r, http.StatusOK, func(p *settingsPage) {
		p.NewToken = &newToken{Name: name, Value: token}
	})
}
