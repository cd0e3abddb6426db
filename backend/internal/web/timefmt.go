package web

import (
	"fmt"
	"time"
)

// when is a time as pages show it: relative text, with the exact UTC time in
// a title and a machine-readable datetime.
type when struct {
	Ago  string
	Full string
	ISO  string
}

func (u *UI) when(t *time.Time) *when {
	if t == nil || t.IsZero() {
		return nil
	}
	return &when{Ago: ago(u.now(), *t), Full: t.UTC().Format("2 Jan 2006 15:04 UTC"), ISO: t.UTC().Format(time.RFC3339)}
}

// ago is a short relative time: "just now", "5 min ago", "3 h ago",
// "4 days ago", then the date.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	case d < 30*24*time.Hour:
		n := int(d / (24 * time.Hour))
		return fmt.Sprintf("%d %s ago", n, plural(n, "day", "days"))
	case t.Year() == now.Year():
		return t.UTC().Format("2 Jan")
	default:
		return t.UTC().Format("2 Jan 2006")
	}
}
