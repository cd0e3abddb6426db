package poll

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func num(f float64) *float64 { return &f }

// What keep archiving takes from a poll: the chapters listed after the
// previous Latest Chapter (by place, or by number when the list no longer
// shows it), and the newest always; a first poll takes the newest alone.
func TestListedAfterThePreviousLatestChapter(t *testing.T) {
	t.Parallel()
	ch := func(n float64) latest.Chapter {
		return latest.Chapter{Label: "Chapter", Number: num(n), URL: fmt.Sprintf("https://site.test/c/%g", n)}
	}
	list := []latest.Chapter{ch(1), ch(2), ch(3), ch(4), ch(5)}
	newest := ch(5)
	prev := func(c latest.Chapter) store.LatestChapter {
		return store.LatestChapter{Label: c.Label, Number: c.Number, URL: c.URL}
	}
	require.Equal(t, []latest.Chapter{ch(4), ch(5)}, listedAfter(list, prev(ch(3)), newest), "two released at once")
	require.Equal(t, []latest.Chapter{ch(5)}, listedAfter(list, prev(ch(4)), newest))
	require.Equal(t, []latest.Chapter{ch(5)}, listedAfter(list, store.LatestChapter{}, newest), "the first poll: from now on")
	moved := store.LatestChapter{Label: "Chapter 2", Number: num(2), URL: "https://site.test/old-url/2"}
	require.Equal(t, []latest.Chapter{ch(3), ch(4), ch(5)}, listedAfter(list, moved, newest), "by number when its URL is gone")
	require.Equal(t, []latest.Chapter{ch(5)}, listedAfter(list, store.LatestChapter{URL: "https://site.test/gone"}, newest),
		"neither its URL nor a number: the newest only")
	require.Equal(t, []latest.Chapter{ch(4), ch(5), ch(6)}, listedAfter(list, prev(ch(3)), ch(6)), "the newest even when the list lacks it")
	require.Equal(t, []latest.Chapter{ch(5)}, listedAfter(nil, prev(ch(3)), newest), "no list: the newest")

	require.True(t, reaches(list, prev(ch(3))))
	require.True(t, reaches(list[1:], moved), "listing a chapter numbered at or below it")
	require.False(t, reaches(list[2:], moved))
	require.False(t, reaches(list, store.LatestChapter{URL: "https://site.test/gone"}))
}

// A Site's state: the Owner's pause first, then a back-off, then failing
// (more than half of its recent polls failed), else healthy.
func TestSiteState(t *testing.T) {
	t.Parallel()
	st := func(f func(*SiteStatus)) string {
		var s SiteStatus
		f(&s)
		return StateOf(s)
	}
	require.Equal(t, StateHealthy, st(func(*SiteStatus) {}))
	require.Equal(t, StatePaused, st(func(s *SiteStatus) { s.OwnerPaused, s.BackingOff = true, true }))
	require.Equal(t, StatePaused, st(func(s *SiteStatus) { s.AllPaused = true }))
	require.Equal(t, StateBackingOff, st(func(s *SiteStatus) { s.BackingOff, s.RecentPolls, s.RecentFailed = true, 4, 4 }))
	require.Equal(t, StateFailing, st(func(s *SiteStatus) { s.RecentPolls, s.RecentFailed = 20, 11 }))
	require.Equal(t, StateHealthy, st(func(s *SiteStatus) { s.RecentPolls, s.RecentFailed = 20, 10 }), "half is not more than half")
	require.Equal(t, StateFailing, st(func(s *SiteStatus) { s.RecentPolls, s.RecentFailed = 1, 1 }))
}

// The text form of a change, as the console's form and `lectern site set`
// send it, and its checks.
func TestParseSiteChange(t *testing.T) {
	t.Parallel()
	c, err := ParseSiteChange("1.5s", "600")
	require.NoError(t, err)
	require.Equal(t, 1500*time.Millisecond, *c.Pace)
	require.Equal(t, 600, *c.Budget)
	c, err = ParseSiteChange(" default ", "")
	require.NoError(t, err)
	require.True(t, c.DefaultPace)
	require.Nil(t, c.Budget)
	require.False(t, c.DefaultBudget)
	c, err = ParseSiteChange("0", "DEFAULT")
	require.NoError(t, err)
	require.Zero(t, *c.Pace, "an unpaced Site")
	require.True(t, c.DefaultBudget)
	for _, in := range [][2]string{{"soon", ""}, {"", "many"}, {"-1s", ""}, {"25h", ""}, {"1.5ms", ""}, {"1s", "0"}, {"2s", "3600001"}, {"", ""}} {
		pace, budget := in[0], in[1]
		_, err := ParseSiteChange(pace, budget)
		require.ErrorIs(t, err, ErrBadSiteChange, "%q %q", pace, budget)
		require.Equal(t, errs.Invalid, errs.CodeOf(err))
	}
	d := time.Second
	require.ErrorIs(t, SiteChange{Pace: &d, DefaultPace: true}.Check(), ErrBadSiteChange)
}
