package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
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

--trace FILE replays a recorded trace instead: CSV with the header
series,site,readers,released_at (RFC 3339; an empty released_at declares a
dormant Series; readers 0 is a Series no Reader holds, which only crowds its
Site's listing). The first half of its span is history unless --history says
otherwise; --budget is then per Site (R × its held Series per hour). With
--trace, --series, --weeks, --seed and --mix are a usage error.
--listing K models each Site's listing as its last K updates (0: none).
--json prints one object with both policies' figures.

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
	traceFile := fs.String("trace", "", "replay the recorded trace in `FILE` (CSV "+schedule.TraceHeader+")")
	history := fs.Duration("history", 0, "with --trace: the history span `D` (default: half the trace)")
	listing := fs.Int("listing", 0, "model each Site's listing as its last `K` updates (0: no listings)")
	asJSON := fs.Bool("json", false, "print one JSON object")
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
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var cfg schedule.SimConfig
	if *traceFile != "" {
		for _, name := range []string{"series", "weeks", "seed", "mix"} {
			if set[name] {
				fmt.Fprintf(env.stderr, "lectern simulate: --%s is the generator's; it cannot be used with --trace\n", name)
				return 2
			}
		}
		tr, err := readTraceFile(*traceFile)
		if err != nil {
			fmt.Fprintf(env.stderr, "lectern simulate: %v\n", err)
			if errors.Is(err, schedule.ErrTrace) {
				return 2
			}
			return 1
		}
		cfg = schedule.SimConfig{Trace: tr, History: *history, Budget: *budget, Listing: *listing}
	} else {
		if set["history"] {
			fmt.Fprintln(env.stderr, "lectern simulate: --history needs --trace (the generator's history is the first half of --weeks)")
			return 2
		}
		m, err := schedule.ParseMix(*mix)
		if err != nil {
			fmt.Fprintf(env.stderr, "lectern simulate: --mix: %v\n", err)
			return 2
		}
		cfg = schedule.SimConfig{Series: *series, Weeks: *weeks, Budget: *budget, Seed: *seed, Mix: m, Listing: *listing}
	}
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
	if *asJSON {
		if err := printSimulationJSON(env.stdout, res); err != nil {
			fmt.Fprintf(env.stderr, "lectern simulate: %v\n", err)
			return 1
		}
	} else {
		printSimulation(env.stdout, res)
	}
	// Wall time goes to stderr so stdout is a function of the flags alone.
	fmt.Fprintf(env.stderr, "simulated in %s\n", time.Since(began).Round(time.Millisecond))
	return 0
}

func readTraceFile(path string) (*schedule.Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	defer f.Close()
	tr, err := schedule.ReadTrace(bufio.NewReaderSize(f, 1<<16))
	if err != nil {
		return nil, fmt.Errorf("--trace %s: %w", path, err)
	}
	return tr, nil
}

// simJSON is one policy's figures in --json: the keys are fixed (issue 22).
type simJSON struct {
	MedianMin        float64 `json:"median_min"`
	P90Min           float64 `json:"p90_min"`
	ReqPerSeriesHour float64 `json:"req_per_series_hour"`
	BusiestHour      int     `json:"busiest_hour"`
	Unseen           int     `json:"unseen"`
}

func toSimJSON(r schedule.PolicyResult) simJSON {
	round := func(f float64, digits int) float64 {
		p := math.Pow(10, float64(digits))
		return math.Round(f*p) / p
	}
	return simJSON{MedianMin: round(r.Median.Minutes(), 3), P90Min: round(r.P90.Minutes(), 3), ReqPerSeriesHour: round(r.PerSeriesHour, 4),
		BusiestHour: r.MaxHour, Unseen: r.Undetected}
}

func printSimulationJSON(w io.Writer, res schedule.SimResult) error {
	return json.NewEncoder(w).Encode(struct {
		Adaptive   simJSON `json:"adaptive"`
		RoundRobin simJSON `json:"round_robin"`
	}{toSimJSON(res.Adaptive), toSimJSON(res.RoundRobin)})
}

func printSimulation(w io.Writer, res schedule.SimResult) {
	cfg := res.Config
	if cfg.Trace != nil {
		fmt.Fprintf(w, "trace: %d Series on %d Sites (%d held), releases %s to %s; listing %d\n",
			len(cfg.Trace.Series), res.Sites, res.Held, cfg.Trace.First.Format(time.RFC3339), cfg.Trace.Last.Format(time.RFC3339), cfg.Listing)
		fmt.Fprintf(w, "budget %g requests per held Series-hour per Site; %d releases measured\n\n", cfg.Budget, res.Releases)
		printPolicies(w, res)
		return
	}
	patterns := []schedule.Pattern{schedule.Weekly, schedule.Twice, schedule.Daily, schedule.Irregular, schedule.Dormant}
	counts := make([]string, 0, len(patterns))
	for _, p := range patterns {
		counts = append(counts, fmt.Sprintf("%s %d", p, res.Series[p]))
	}
	fmt.Fprintf(w, "%d Series (%s), %d weeks (%g history, %g measured), seed %d\n",
		cfg.Series, strings.Join(counts, ", "), cfg.Weeks, float64(cfg.Weeks)/2, float64(cfg.Weeks)/2, cfg.Seed)
	fmt.Fprintf(w, "budget %g requests per Series-hour: %d per hour for the Site; %d releases measured\n\n",
		cfg.Budget, res.BudgetPerHour, res.Releases)

	printPolicies(w, res)

	fmt.Fprintln(w, "\nby pattern (adaptive / round-robin):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
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
}

func printPolicies(w io.Writer, res schedule.SimResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "policy\tmedian\tp90\treq/Series-hour\tbusiest hour\tunseen")
	for _, row := range []struct {
		name string
		r    schedule.PolicyResult
	}{{"adaptive", res.Adaptive}, {"round-robin", res.RoundRobin}} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%d\t%d\n", row.name, minutes(row.r.Median), minutes(row.r.P90), row.r.PerSeriesHour, row.r.MaxHour, row.r.Undetected)
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
	if res.Adaptive.OverBudget > 0 {
		fmt.Fprintf(w, "Sites with an hour over budget: %d\n", res.Adaptive.OverBudget)
	}
}

func minutes(d time.Duration) string {
	return fmt.Sprintf("%.1f min", d.Minutes())
}
