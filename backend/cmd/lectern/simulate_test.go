package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSimulateCommand(t *testing.T) {
	t.Parallel()
	args := []string{"simulate", "--series", "60", "--weeks", "2", "--seed", "7"}
	code, out, errOut := runCmd(t, nil, "", args...)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, regexp.MustCompile(`(?i)adaptive`), out)
	require.Regexp(t, regexp.MustCompile(`(?i)round-robin`), out)

	again, out2, _ := runCmd(t, nil, "", args...)
	require.Equal(t, 0, again)
	require.Equal(t, out, out2, "the same seed gives the same report")

	code, _, errOut = runCmd(t, nil, "", "simulate", "--mix", "weekly=2,nonsense=1")
	require.Equal(t, 2, code)
	require.NotEmpty(t, errOut)
}

func TestSimulateTrace(t *testing.T) {
	t.Parallel()
	trace := filepath.Join("testdata", "traces", "bursty.csv")
	code, out, errOut := runCmd(t, nil, "", "simulate", "--trace", trace, "--budget", "0.25", "--listing", "40", "--json")
	require.Equal(t, 0, code, errOut)
	var got map[string]map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Len(t, got, 2)
	for _, policy := range []string{"adaptive", "round_robin"} {
		keys := []string{}
		for k := range got[policy] {
			keys = append(keys, k)
		}
		require.ElementsMatch(t, []string{"median_min", "p90_min", "req_per_series_hour", "busiest_hour", "unseen"}, keys, policy)
	}
	require.Less(t, got["adaptive"]["median_min"].(float64), got["round_robin"]["median_min"].(float64))

	code, out, errOut = runCmd(t, nil, "", "simulate", "--trace", trace, "--history", "240h", "--budget", "0.5")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "3 Sites")
	code, out, errOut = runCmd(t, nil, "", "simulate", "--trace", filepath.Join("testdata", "traces", "sites.csv"), "--budget", "0.25", "--listing", "40")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "10 Sites")

	for _, flag := range [][]string{{"--series", "10"}, {"--weeks", "4"}, {"--seed", "2"}, {"--mix", "weekly=1"}} {
		code, _, errOut = runCmd(t, nil, "", append([]string{"simulate", "--trace", trace}, flag...)...)
		require.Equal(t, 2, code, "%v with --trace is a usage error", flag)
		require.Contains(t, errOut, flag[0])
	}
	code, _, _ = runCmd(t, nil, "", "simulate", "--history", "24h")
	require.Equal(t, 2, code, "--history without --trace")

	bad := filepath.Join(t.TempDir(), "bad.csv")
	require.NoError(t, os.WriteFile(bad, []byte("series,site,readers,released_at\na:1,a,1,2026-01-05T10:00:00Z\na:1,a,1,tuesday\n"), 0o600))
	code, _, errOut = runCmd(t, nil, "", "simulate", "--trace", bad)
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "line 3:")

	code, _, _ = runCmd(t, nil, "", "simulate", "--trace", filepath.Join(t.TempDir(), "missing.csv"))
	require.Equal(t, 1, code)
}
