package schedule

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"
)

// benchSeries is a Site of n Series as the planner sees them at the start
// of the measured half of a simulation: four weeks of history each.
func benchSeries(n int, cached bool) ([]Series, time.Time) {
	tr := newTrace(SimConfig{Series: n, Weeks: 8, Budget: 0.5, Seed: 1, Mix: DefaultMix})
	series := make([]Series, n)
	for i := range series {
		series[i] = tr.history(i)
		if cached {
			rh := Estimate(series[i].Since, tr.half, series[i].Releases)
			series[i].Rhythm = &rh
		}
	}
	return series, tr.half
}

// BenchmarkPlan is one Plan of 5,000 Series with their rhythms cached (as
// the scheduler should call it), and with every rhythm estimated inside.
// The reference is the fixed-interval scheduling of issue 4 over the same
// Series: the due ones, most Readers first.
func BenchmarkPlan(b *testing.B) {
	const n = 5000
	site := Site{Name: "sim", PerHour: n / 2}
	b.Run("reference-fixed-interval", func(b *testing.B) {
		series, now := benchSeries(n, false)
		due := make([]int, 0, n)
		for b.Loop() {
			due = due[:0]
			for i := range series {
				if !series[i].LastPoll.Add(time.Hour).After(now) {
					due = append(due, i)
				}
			}
			slices.SortFunc(due, func(x, y int) int {
				return cmp.Or(cmp.Compare(series[y].Readers, series[x].Readers), series[x].LastPoll.Compare(series[y].LastPoll))
			})
		}
	})
	b.Run("cached-rhythms", func(b *testing.B) {
		series, now := benchSeries(n, true)
		for b.Loop() {
			if _, err := (Planner{}).Plan(now, site, series); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("estimating-rhythms", func(b *testing.B) {
		series, now := benchSeries(n, false)
		for b.Loop() {
			if _, err := (Planner{}).Plan(now, site, series); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSimulate is the goal run: 5,000 Series over 8 weeks (its
// reference is one Plan above: a simulation is about 14,000 of them).
func BenchmarkSimulate(b *testing.B) {
	for b.Loop() {
		if _, err := Simulate(context.Background(), SimConfig{Series: 5000, Weeks: 8, Budget: 0.5, Seed: 1, Mix: DefaultMix}); err != nil {
			b.Fatal(err)
		}
	}
}
