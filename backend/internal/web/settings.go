package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// maxTokenName matches the api_tokens.name column's limit.
const maxTokenName = 100

type tokenRow struct {
	Name       string
	Created    *when
	LastUsed   *when
	Revoked    *when
	RevokePath string
}

type newToken struct{ Name, Value string }

type settingsPage struct {
	common
	MangaScript, NovelScript string
	MangaSites, NovelSites   string
	Tokens                   []tokenRow
	NewToken                 *newToken
	TokenName, TokenError    string
	PasswordError            string
	MaxTokenName             int
	MinPassword              int
	// Notify is the feed and push targets section (notify.go); nil when
	// notifications are not configured.
	Notify *notifySection
	// Trackers is the trackers section (trackers.go); nil without them.
	Trackers *trackerSection
}

func (u *UI) settingsShow(w http.ResponseWriter, r *http.Request) {
	u.renderSettings(w, r, http.StatusOK, func(*settingsPage) {})
}

// renderSettings draws the settings page; edit fills in what an action
// adds (a new token, a form error).
func (u *UI) renderSettings(w http.ResponseWriter, r *http.Request, status int, edit func(*settingsPage)) {
	reader, _ := readerFrom(r)
	tokens, err := u.store.ListTokens(r.Context(), reader.ID)
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	p := settingsPage{
		common:      u.base(r, "Settings", "settings"),
		MangaScript: u.cfg.PublicBaseURL + "/userscripts/lectern-manga.user.js",
		NovelScript: u.cfg.PublicBaseURL + "/userscripts/lectern-novel.user.js",
		MangaSites:  u.siteNames(latest.Manga), NovelSites: u.siteNames(latest.Novel),
		MaxTokenName: maxTokenName, MinPassword: credential.MinPasswordLen,
	}
	if p.Trackers, err = u.loadTrackers(r.Context(), reader.ID); err != nil {
		u.serverError(w, r, err)
		return
	}
	if p.Notify, err = u.loadNotify(r.Context(), reader.ID); err != nil {
		u.serverError(w, r, err)
		return
	}
	for _, t := range tokens {
		p.Tokens = append(p.Tokens, tokenRow{
			Name: t.Name, Created: u.when(&t.CreatedAt), LastUsed: u.when(t.LastUsedAt), Revoked: u.when(t.RevokedAt),
			RevokePath: "/settings/tokens/" + strconv.FormatInt(t.ID, 10) + "/revoke",
		})
	}
	edit(&p)
	u.render(w, r, status, "settings", p)
}

func (u *UI) siteNames(kind latest.Kind) string {
	var names []string
	for _, s := range u.lib.Registry.Sites() {
		if s.Kind == kind {
			names = append(names, s.Name)
		}
	}
	return strings.Join(names, ", ")
}
