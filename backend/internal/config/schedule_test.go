package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// POLL_POLICY and SITE_BUDGET: the adaptive policy by default, budgets as
// requests per hour per Site, and a malformed value named.
func TestPollPolicyAndSiteBudget(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://u@db/l", "PUBLIC_BASE_URL": "https://lectern.example.net", "DATA_DIR": "/d"}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for bk, bv := range base {
			m[bk] = bv
		}
		return m
	}
	c, err := Load(env(base), "serve")
	require.NoError(t, err)
	require.Equal(t, PolicyAdaptive, c.PollPolicy)
	b, err := c.Budgets()
	require.NoError(t, err)
	require.Empty(t, b, "no SITE_BUDGET: every Site's budget follows its pace")

	c, err = Load(env(with("SITE_BUDGET", "asura=1800, demonic=600")), "serve")
	require.NoError(t, err)
	b, err = c.Budgets()
	require.NoError(t, err)
	require.Equal(t, map[string]int{"asura": 1800, "demonic": 600}, b)
	c, err = Load(env(with("POLL_POLICY", "interval")), "serve")
	require.NoError(t, err)
	require.Equal(t, PolicyInterval, c.PollPolicy)

	for _, tc := range []struct{ k, v, want string }{
		{"POLL_POLICY", "smart", `POLL_POLICY is malformed: "smart" is neither adaptive nor interval`},
		{"SITE_BUDGET", "asura", `SITE_BUDGET is malformed: "asura"`},
		{"SITE_BUDGET", "asura=0", `SITE_BUDGET is malformed: "asura=0"`},
		{"SITE_BUDGET", "asura=3600001", `SITE_BUDGET is malformed: "asura=3600001"`},
		{"SITE_BUDGET", "asura=lots", `SITE_BUDGET is malformed: "asura=lots"`},
		{"SITE_BUDGET", "=5", `SITE_BUDGET is malformed: "=5"`},
		{"SITE_BUDGET", "asura=5,asura=6", "SITE_BUDGET is malformed: asura is given twice"},
	} {
		_, err := Load(env(with(tc.k, tc.v)), "serve")
		require.ErrorContains(t, err, tc.want, "%s=%s", tc.k, tc.v)
	}
}
