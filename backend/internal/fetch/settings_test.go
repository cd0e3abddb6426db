package fetch

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// settingsTable is what the Owner stored, as the store would read it, with
// a count of reads.
type settingsTable struct {
	mu    sync.Mutex
	s     Settings
	err   error
	reads int
}

func (t *settingsTable) Settings(context.Context) (Settings, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reads++
	return t.s, t.err
}

func (t *settingsTable) set(s Settings) {
	t.mu.Lock()
	t.s = s
	t.mu.Unlock()
}

// A replica's copy of the settings is read again once older than its TTL
// (or at once after a change of its own), and a failed read is an error,
// never "nothing paused".
func TestSettingsReaderKeepsACopyForItsTTL(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	table := &settingsTable{}
	r := &SettingsReader{Source: table, TTL: time.Minute, Now: func() time.Time { return now }}
	ctx := context.Background()

	got, err := r.Get(ctx)
	require.NoError(t, err)
	require.False(t, got.AllPaused)
	table.set(Settings{AllPaused: true})
	got, _ = r.Get(ctx)
	require.False(t, got.AllPaused, "the copy is younger than the TTL")
	require.Equal(t, 1, table.reads)
	now = now.Add(time.Minute)
	got, _ = r.Get(ctx)
	require.True(t, got.AllPaused, "a minute old: read again")
	require.Equal(t, 2, table.reads)

	table.set(Settings{})
	r.Invalidate()
	got, _ = r.Get(ctx)
	require.False(t, got.AllPaused, "this replica's own change applies at once")

	table.err = errors.New("conn closed")
	r.Invalidate()
	_, err = r.Get(ctx)
	require.ErrorContains(t, err, "conn closed")
}

// The Policy's one decision for every request: an Owner's pause of the
// Site owning the host, of the Series' Site for a host no Site owns, or of
// everything refuses it (ErrPaused); otherwise it goes at the pace of the
// Owner, SITE_PACE or the Site, in that order.
func TestPolicyAdmitsRequestsAsTheOwnerSays(t *testing.T) {
	t.Parallel()
	reg := latest.Default()
	asura, _ := reg.Lookup("asura")
	demonic, _ := reg.Lookup("demonic")
	table := &settingsTable{}
	p := &Policy{Registry: reg, Paces: Paces{"demonic": 700 * time.Millisecond}, Settings: &SettingsReader{Source: table}}
	ctx := context.Background()
	admit := func(host string, series *latest.Site) (time.Duration, error) {
		t.Helper()
		p.Settings.Invalidate()
		return p.Admit(ctx, host, series)
	}

	every, err := admit("asurascans.com", nil)
	require.NoError(t, err)
	require.Equal(t, asura.Pace, every, "the Site's own")
	every, _ = admit("cdn.demoniclibs.com", demonic)
	require.Equal(t, 700*time.Millisecond, every, "SITE_PACE, for a CDN of the Series' Site")
	pace := 3 * time.Second
	table.set(Settings{Sites: map[string]SiteSettings{"demonic": {Pace: &pace}}})
	every, _ = admit("demonicscans.org", nil)
	require.Equal(t, pace, every, "the Owner's")
	require.Equal(t, "owner", p.Paces.Source(table.s, demonic))
	require.Equal(t, "site", p.Paces.Source(table.s, asura))

	table.set(Settings{Sites: map[string]SiteSettings{"demonic": {Paused: true}}})
	for _, tc := range []struct {
		host   string
		series *latest.Site
	}{{"demonicscans.org", nil}, {"www.demonicscans.org", nil}, {"cdn.demoniclibs.com", demonic}, {"asurascans.com", demonic}} {
		_, err := admit(tc.host, tc.series)
		require.ErrorIs(t, err, ErrPaused, tc.host)
	}
	_, err = admit("asurascans.com", asura)
	require.NoError(t, err, "another Site goes on")
	_, err = admit("cdn.example.net", nil)
	require.NoError(t, err, "a host of no Site, for no Series")

	h, err := p.Hold(ctx, "demonic")
	require.NoError(t, err)
	require.True(t, h.Site && h.ByOwner() && h.Held())
	require.GreaterOrEqual(t, p.HoldSnooze(h), PauseRecheck)

	table.set(Settings{AllPaused: true})
	_, err = admit("asurascans.com", nil)
	require.ErrorIs(t, err, ErrPaused)
	p.Settings.Invalidate()
	h, _ = p.Hold(ctx, "asura")
	require.True(t, h.All)

	// The browser's proxy dials through the same decision.
	dialed := 0
	dial := p.GuardDial(func(context.Context, string, string) (net.Conn, error) { dialed++; return nil, nil })
	table.set(Settings{Sites: map[string]SiteSettings{"demonic": {Paused: true}}})
	p.Settings.Invalidate()
	_, err = dial(ctx, "tcp", "demonicscans.org:443")
	require.ErrorIs(t, err, ErrPaused)
	_, err = dial(ctx, "tcp", "asurascans.com:443")
	require.NoError(t, err)
	require.Equal(t, 1, dialed)
}

// Without a back-off or a pause a Site is not held; a back-off is held to
// its end.
func TestHoldOfABackOff(t *testing.T) {
	t.Parallel()
	until := time.Now().Add(time.Hour)
	p := &Policy{Registry: latest.Default(), States: backOff{"kagane": until}, Settings: &SettingsReader{Source: &settingsTable{}}}
	h, err := p.Hold(context.Background(), "asura")
	require.NoError(t, err)
	require.False(t, h.Held())
	h, err = p.Hold(context.Background(), "kagane")
	require.NoError(t, err)
	require.True(t, h.Held())
	require.False(t, h.ByOwner())
	require.Equal(t, until, h.Until)
	require.InDelta(t, time.Hour.Seconds(), p.HoldSnooze(h).Seconds(), 6*60, "to the back-off's end, jittered")
}

type backOff map[string]time.Time

func (b backOff) BackingOffUntil(_ context.Context, site string, now time.Time) (time.Time, bool, error) {
	until, ok := b[site]
	return until, ok && until.After(now), nil
}
