package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ago counts whole units down: a page shows "20 min ago" from 20 minutes
// until 21.
func TestAgo(t *testing.T) {
	now := time.Date(2026, time.December, 7, 15, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		before time.Duration
		want   string
	}{
		{0, "just now"},
		{59 * time.Second, "just now"},
		{20 * time.Minute, "20 min ago"},
		{21*time.Minute - time.Microsecond, "20 min ago"},
		{21 * time.Minute, "21 min ago"},
		{59*time.Minute + 59*time.Second, "59 min ago"},
		{time.Hour, "1 h ago"},
		{23*time.Hour + 59*time.Minute, "23 h ago"},
		{24 * time.Hour, "1 day ago"},
		{29 * 24 * time.Hour, "29 days ago"},
		{30 * 24 * time.Hour, "7 Nov"},
		{400 * 24 * time.Hour, "2 Nov 2025"},
	} {
		require.Equal(t, c.want, ago(now, now.Add(-c.before)), "%s before", c.before)
	}
}
