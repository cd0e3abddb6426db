package schedule

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseMix(t *testing.T) {
	t.Parallel()
	m, err := ParseMix("weekly=0.55,twice=0.1,daily=0.12,irregular=0.15,dormant=0.08")
	require.NoError(t, err)
	require.Equal(t, DefaultMix, m)
	m, err = ParseMix(DefaultMix.String())
	require.NoError(t, err)
	require.Equal(t, DefaultMix, m)

	m, err = ParseMix(" irregular = 0.5 , weekly=0.5 ")
	require.NoError(t, err)
	require.Equal(t, Mix{Weekly: 0.5, Irregular: 0.5}, m)

	m, err = ParseMix("weekly=0.333,daily=0.333,irregular=0.333")
	require.NoError(t, err)
	require.InDelta(t, 1.0/3, m[Daily], 1e-9, "shares within 0.01 of 1 are normalised")

	for _, bad := range []string{
		"", "weekly", "weekly=1,weekly=0", "monthly=1", "weekly=-0.5,daily=1.5",
		"weekly=NaN", "weekly=0.5", "weekly=0.6,daily=0.6", "weekly=1e400", "weekly=0x1p-2,daily=0.75,=",
	} {
		_, err := ParseMix(bad)
		require.ErrorIs(t, err, ErrMix, "%q", bad)
	}
}

func TestSimulateRejectsBadConfig(t *testing.T) {
	t.Parallel()
	ok := SimConfig{Series: 10, Weeks: 4, Budget: 0.5, Mix: DefaultMix}
	for name, mut := range map[string]func(*SimConfig){
		"no series":      func(c *SimConfig) { c.Series = 0 },
		"too many":       func(c *SimConfig) { c.Series = 10_000_000 },
		"one week":       func(c *SimConfig) { c.Weeks = 1 },
		"zero budget":    func(c *SimConfig) { c.Budget = 0 },
		"tiny budget":    func(c *SimConfig) { c.Budget = 0.01 },
		"mix":            func(c *SimConfig) { c.Mix = Mix{Weekly: 0.2} },
		"planner":        func(c *SimConfig) { c.Planner.MinGap = -time.Minute },
		"negative share": func(c *SimConfig) { c.Mix = Mix{Weekly: 1.5, Daily: -0.5} },
	} {
		c := ok
		mut(&c)
		_, err := Simulate(context.Background(), c)
		require.Error(t, err, name)
		require.True(t, errors.Is(err, ErrSimConfig) || errors.Is(err, ErrPlanner), "%s: %v", name, err)
	}
}

func TestSimulateIsDeterministicPerSeed(t *testing.T) {
	t.Parallel()
	cfg := SimConfig{Series: 150, Weeks: 4, Budget: 0.5, Seed: 7, Mix: DefaultMix}
	a, err := Simulate(context.Background(), cfg)
	require.NoError(t, err)
	b, err := Simulate(context.Background(), cfg)
	require.NoError(t, err)
	require.Equal(t, a, b)

	cfg.Seed = 8
	c, err := Simulate(context.Background(), cfg)
	require.NoError(t, err)
	require.NotEqual(t, a.Adaptive.samples, c.Adaptive.samples)
	require.NotEqual(t, a.Releases, c.Releases)
}

func TestSimulateStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Simulate(ctx, SimConfig{Series: 50, Weeks: 4, Budget: 0.5, Mix: DefaultMix})
	require.ErrorIs(t, err, context.Canceled)
}

// TestSimulateAdaptiveBeatsRoundRobin is a property of the algorithm, not
// of the machine: the same counting on the same trace.
func TestSimulateAdaptiveBeatsRoundRobin(t *testing.T) {
	t.Parallel()
	cfg := SimConfig{Series: 400, Weeks: 6, Budget: 0.5, Seed: 3, Mix: DefaultMix}
	res, err := Simulate(context.Background(), cfg)
	require.NoError(t, err)
	a, rr := res.Adaptive, res.RoundRobin
	require.Greater(t, res.Releases, 1000)
	require.Zero(t, a.Undetected)

	require.Less(t, 3*a.Median, rr.Median, "adaptive %v, round-robin %v", a.Median, rr.Median)
	require.Less(t, a.P90, rr.P90)
	require.LessOrEqual(t, a.PerSeriesHour, cfg.Budget)
	require.LessOrEqual(t, a.MaxHour, res.BudgetPerHour)
	require.Equal(t, res.BudgetPerHour, rr.MaxHour)

	// Round-robin at 0.5 an hour sees every release within its 2-hour
	// interval, and its median is near half of it.
	for _, s := range rr.samples {
		require.Less(t, s.latency, 2*time.Hour)
	}
	require.InDelta(t, 60, rr.Median.Minutes(), 15)
	require.InDelta(t, cfg.Budget, rr.PerSeriesHour, 0.001)

	// Releases on schedule are seen within minutes: the windows are where
	// the releases are.
	var onTime []sample
	for _, s := range a.samples {
		if s.tag == onSchedule && s.pattern != Irregular {
			onTime = append(onTime, s)
		}
	}
	med, _ := weightedQuantiles(onTime, -1)
	require.LessOrEqual(t, med, 2*DefaultMinGap)

	// Every poll the adaptive policy made has one of the reasons.
	total := 0
	for reason, n := range a.Reasons {
		require.Contains(t, allowedReasons, reason)
		total += n
	}
	require.Equal(t, a.Polls, total)
}

func TestTrace(t *testing.T) {
	t.Parallel()
	cfg := SimConfig{Series: 3000, Weeks: 8, Budget: 0.5, Seed: 1, Mix: DefaultMix}
	tr := newTrace(cfg)
	var count [numPatterns]int
	ones := 0
	for _, s := range tr.series {
		count[s.pattern]++
		require.GreaterOrEqual(t, s.readers, 1)
		require.LessOrEqual(t, s.readers, maxReaders)
		if s.readers == 1 {
			ones++
		}
		for i := 1; i < len(s.releases); i++ {
			require.False(t, s.releases[i].at.Before(s.releases[i-1].at))
		}
		for _, r := range s.releases {
			require.False(t, r.at.Before(tr.start))
			require.True(t, r.at.Before(tr.end))
		}
		perWeek := float64(len(s.releases)) / 8
		switch s.pattern {
		case Dormant:
			require.Empty(t, s.releases)
		case Daily:
			require.InDelta(t, 7, perWeek, 1.5)
		case Weekly:
			require.InDelta(t, 1, perWeek, 0.6)
		}
	}
	for p, share := range DefaultMix {
		require.InDelta(t, share, float64(count[p])/3000, 0.03, Pattern(p).String())
	}
	// Zipf's law with exponent 2: about 61% of Series have one Reader.
	require.InDelta(t, 0.61, float64(ones)/3000, 0.04)
}
