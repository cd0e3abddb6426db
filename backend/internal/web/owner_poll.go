package web

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
)

// The Owner console's view of the Poll: Sites (owner_sites.go), failing
// Series (owner_failing.go) and the queue (owner_queue.go), and the Poll's
// facts on the Series page. Every action is a POST behind requireOwner and
// the CSRF check, through the same controls as the Owner's API.

func init() {
	pages = append(pages, "owner_sites", "owner_failing", "owner_queue")
	for code, msg := range map[string]string{
		"site-resumed":  "Site resumed: its waiting polls run now.",
		"site-paused":   "Site paused: nothing reaches it until you resume it; its work waits.",
		"site-changed":  "Site settings changed: every replica applies them within a minute.",
		"all-paused":    "All background work paused: every job waits until you resume.",
		"all-resumed":   "Background work resumed: the waiting jobs run now.",
		"poll-queued":   "Poll queued: it runs now.",
		"cover-queued":  "Cover refetch queued: the Series page is fetched again now.",
		"job-retried":   "Job queued to run again.",
		"job-cancelled": "Job cancelled.",
	} {
		flashes[code] = msg
	}
}

// ownerPollRoutes adds the Poll's Owner pages and actions (behind
// requireOwner).
func (u *UI) ownerPollRoutes(r chi.Router) {
	r.Get("/sites", u.ownerSites)
	r.Post("/sites/{site}/resume", u.siteResume)
	r.Post("/sites/{site}/pause", u.sitePause)
	r.Post("/sites/{site}/settings", u.siteSettings)
	if u.sites != nil {
		r.Post("/sites/add", u.siteAdd)
		r.Post("/sites/test", u.siteTest)
		r.Post("/sites/{site}/definition", u.siteDefinition)
		r.Post("/sites/{site}/remove", u.siteRemove)
	}
	r.Post("/pause", u.pauseAll)
	r.Post("/resume", u.resumeAll)
	r.Get("/failing", u.ownerFailing)
	r.Post("/series/{key}/poll", u.seriesPollNow)
	r.Post("/series/{key}/cover/refetch", u.seriesRefetchCover)
	r.Get("/queue", u.ownerQueue)
	r.Post("/jobs/{id}/retry", u.jobRetry)
	r.Post("/jobs/{id}/cancel", u.jobCancel)
}

// navLink is one tab of a sub-navigation.
type navLink struct {
	Href, Label string
	Current     bool
}

// ownerNav is the Owner console's tabs, the current one marked.
func (u *UI) ownerNav(path string) []navLink {
	links := []navLink{{Href: "/owner/readers", Label: "Readers"}}
	if u.poll != nil {
		links = append(links, navLink{Href: "/owner/sites", Label: "Sites"},
			navLink{Href: "/owner/failing", Label: "Failing"}, navLink{Href: "/owner/queue", Label: "Queue"})
	}
	if u.archive != nil {
		links = append(links, navLink{Href: "/owner/archive", Label: "Archive"})
	}
	for i := range links {
		links[i].Current = path == links[i].Href || strings.HasPrefix(path, links[i].Href+"/")
	}
	return links
}

// nextPoll is a Series' next poll as pages show it.
type nextPoll struct {
	// In is "in 12 min", "now" or "overdue"; Full and ISO as in when.
	In, Full, ISO string
	// Reason says why; Planning is true while the plan has not decided yet.
	Reason   string
	Planning bool
}

func (u *UI) nextPoll(at *time.Time, reason string) nextPoll {
	if at == nil || reason == "" {
		return nextPoll{Planning: true, Reason: "being planned"}
	}
	return nextPoll{In: until(u.now(), *at), Full: at.UTC().Format("2 Jan 2006 15:04 UTC"), ISO: at.UTC().Format(time.RFC3339), Reason: reason}
}

// until is a short time ahead: "now", "in 5 min", "in 3 h", "in 2 days";
// a time already past is "due now".
func until(now, t time.Time) string {
	d := t.Sub(now)
	switch {
	case d < -time.Minute:
		return "due now"
	case d < time.Minute:
		return "now"
	case d < time.Hour:
		return fmt.Sprintf("in %d min", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("in %d h", int(d/time.Hour))
	}
	return fmt.Sprintf("in %d days", int(d/(24*time.Hour)))
}

// shortDuration renders a duration without its zero tail: "1h", "1h30m",
// "10m", not "1h0m0s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// byteCount renders a body length for the Owner: "0 bytes", "1,234 bytes".
func byteCount(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[0] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if n == 1 {
		return b.String() + " byte"
	}
	return b.String() + " bytes"
}

// ownerDone redirects after an Owner's action to back (a path on this site,
// under /owner/ or /series/), else to fallback, with a flash code.
func ownerDone(w http.ResponseWriter, r *http.Request, fallback, msg string) {
	back := localPath(r.PostForm.Get("back"), fallback)
	if !strings.HasPrefix(back, "/owner/") && !strings.HasPrefix(back, "/series/") {
		back = fallback
	}
	http.Redirect(w, r, withMsg(back, msg), http.StatusSeeOther)
}
