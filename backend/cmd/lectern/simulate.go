package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/schedule"
)

const simulateUsage = `Usage: lectern simulate [flags]

Replays a synthetic release trace through the adaptive poll scheduler with a
fake clock and no network, and through round-robin at the same budget. The
first half of the weeks is history (as a round-robin poller at the budget saw
it); the second half is measured. Readers per Series follow Zipf's law.

Printed for each policy: the Reader-weighted median and 90th percentile of
detection latency (from a release to the poll that first sees it), requests
per Series-hour, and the busiest hour's requests against the budget. The same
seed always gives the same figures.

Flags:
`

func init() {
	commands["simulate"] = command{
		summary: "measure the adaptive poll scheduler against round-robin on a synthetic trace",
		run:     runSimulate,
	}
}

func runSimulate(ctx context.Context, env *cmdEnv, args []string) int {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	series := fs.Int("series", 5000, "number of Series `N`")
	weeks := fs.Int("weeks", 8, "weeks `W` to simulate; the first half is history")
	budget := fs.Float64("budget", 0.5, "requests per Series-hour (`REQ`) the Site allows")
	seed := fs.Uint64("seed", 1, "random seed `S` of the trace")
	mix := fs.String("mix", schedule.DefaultMix.String(), "share of Series per release pattern, as `name=share,...` over weekly, twice, daily, irregular, dormant, summing to 1")
	printUsage := func(w io.Writer) {
		fmt.Fprint(w, simulateUsage)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(env.stdout)
			return 0
		}
		fmt.Fprintf(env.stderr, "lectern simulate: %v\n\n", err)
		printUsage(env.stderr)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.stderr, "lectern simulate: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	m, err := schedule.ParseMix(*mix)
	if err != nil {
		fmt.Fprintf(env.stderr, "lectern simulate: --mix: %v\n", err)
		return 2
	}
	cfg := schedule.SimConfig{Series: *series, Weeks: *weeks, Budget: *budget, Seed: *seed, Mix: m}
	began := time.Now()
	res, err := schedule.Simulate(ctx, cfg)
	if errors.Is(err, schedule.ErrSimConfig) {
		fmt.Fprintf(env.stderr, "lectern simulate: %v\n", err)
		return 2
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "lectern simulate: %v\n", err)
		return 1
	}
	printSimulation(env.stdout, res)
	// Wall time goes to stderr so stdout is a function of the flags alone.
	fmt.Fprintf(env.stderr, "simulated in %s\n", time.Since(began).Round(time.Millisecond))
	return 0
}

func printSimulation(w io.Writer, res schedule.SimResult) {
	cfg := res.Config
	patterns := []schedule.Pattern{schedule.Weekly, schedule.Twice, schedule.Daily, schedule.Irregular, schedule.Dormant}
	counts := make([]string, 0, len(patterns))
	for _, p := range patterns {
		counts = append(counts, fmt.Sprintf("%s %d", p, res.Series[p]))
	}
	fmt.Fprintf(w, "%d Series (%s), %d weeks (%g history, %g measured), seed %d\n",
		cfg.Series, strings.Join(counts, ", "), cfg.Weeks, float64(cfg.Weeks)/2, float64(cfg.Weeks)/2, cfg.Seed)
	fmt.Fprintf(w, "budget %g requests per Series-hour: %d per hour for the Site; %d releases measured\n\n",
		cfg.Budget, res.BudgetPerHour, res.Releases)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "policy\tmedian\tp90\treq/Series-hour\tbusiest hour\tunseen")
	for _, row := range []struct {
		name string
		r    schedule.PolicyResult
	}{{"adaptive", res.Adaptive}, {"round-robin", res.RoundRobin}} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%d\t%d\n", row.name, minutes(row.r.Median), minutes(row.r.P90), row.r.PerSeriesHour, row.r.MaxHour, row.r.Undetected)
	}
	tw.Flush()

	fmt.Fprintln(w, "\nby pattern (adaptive / round-robin):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "pattern\treleases\tmedian\tp90\treq/Series-hour")
	for _, p := range patterns {
		a, r := res.Adaptive.ByPattern[p], res.RoundRobin.ByPattern[p]
		if res.Series[p] == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s / %s\t%s / %s\t%.3f / %.3f\n", p, a.Releases,
			minutes(a.Median), minutes(r.Median), minutes(a.P90), minutes(r.P90), a.PerSeriesHour, r.PerSeriesHour)
	}
	tw.Flush()

	reasons := make([]string, 0, len(res.Adaptive.Reasons))
	for k := range res.Adaptive.Reasons {
		reasons = append(reasons, k)
	}
	slices.Sort(reasons)
	parts := make([]string, 0, len(reasons))
	for _, k := range reasons {
		parts = append(parts, fmt.Sprintf("%s %d", k, res.Adaptive.Reasons[k]))
	}
	fmt.Fprintf(w, "\nadaptive polls by reason: %s\n", strings.Join(parts, ", "))
}

func minutes(d time.Duration) string {
	return fmt.Sprintf("%.1f min", d.Minutes())
}
