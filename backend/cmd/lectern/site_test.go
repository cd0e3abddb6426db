package main

import (
	"context"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/poll"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// `lectern site pause|resume|set` change the settings every replica reads
// from the database, through the same controls as the API; resume wakes
// the Site's waiting work; a mistake is named, with a usage error's status.
func TestSiteCommands(t *testing.T) {
	t.Parallel()
	db := pgtest.NewURL(t)
	env := map[string]string{"DATABASE_URL": db}
	ctx := context.Background()
	st, err := store.Open(ctx, db)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	settings := func() store.OwnerSettings {
		t.Helper()
		s, err := st.OwnerSettings(ctx)
		require.NoError(t, err)
		return s
	}

	code, out, errOut := runCmd(t, env, "", "site", "pause", "asura")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "paused asura; running replicas apply it within")
	require.True(t, settings().Sites["asura"].Paused)

	// A poll of asura snoozed through the pause is woken by the resume.
	rc, err := river.NewClient(riverpgxv5.New(st.Pool), &river.Config{})
	require.NoError(t, err)
	res, err := rc.Insert(ctx, poll.PollArgs{Key: "asura:solo-leveling"}, nil)
	require.NoError(t, err)
	_, err = st.Pool.Exec(ctx, `UPDATE river_job SET state = 'scheduled', scheduled_at = now() + interval '10 minutes' WHERE id = $1`, res.Job.ID)
	require.NoError(t, err)
	code, out, errOut = runCmd(t, env, "", "site", "resume", "asura")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "resumed asura")
	require.False(t, settings().Sites["asura"].Paused)
	var state string
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT state::text FROM river_job WHERE id = $1`, res.Job.ID).Scan(&state))
	require.Equal(t, "available", state, "the waiting poll runs now")

	code, out, errOut = runCmd(t, env, "", "site", "set", "demonic", "--pace", "1.5s", "--budget", "900")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "changed demonic")
	d := settings().Sites["demonic"]
	require.Equal(t, "1.5s", d.Pace.String())
	require.Equal(t, 900, *d.Budget)
	code, _, errOut = runCmd(t, env, "", "site", "set", "--budget", "default", "demonic")
	require.Equal(t, 0, code, errOut)
	d = settings().Sites["demonic"]
	require.Nil(t, d.Budget, "back to the default")
	require.Equal(t, "1.5s", d.Pace.String(), "the pace left as it was")

	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"site", "set", "demonic", "--pace", "soon"}, 2, `the pace "soon" is not a duration`},
		{[]string{"site", "set", "demonic", "--budget", "0"}, 2, "the budget must be from 1 to 3600000"},
		{[]string{"site", "set", "demonic"}, 2, "nothing to change"},
		{[]string{"site", "pause", "tapas"}, 1, `unknown site "tapas"`},
		{[]string{"site", "pause"}, 2, "Usage: lectern site pause NAME"},
		{[]string{"site", "frobnicate", "asura"}, 2, `unknown site command "frobnicate"`},
		{[]string{"site"}, 2, "site set NAME [--pace DURATION] [--budget N]"},
	} {
		code, _, errOut := runCmd(t, env, "", tc.args...)
		require.Equal(t, tc.code, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.msg, tc.args)
	}
	require.Equal(t, "1.5s", settings().Sites["demonic"].Pace.String(), "nothing refused was stored")
}

// `lectern site add|list|remove` store the Owner's added Sites through the
// same service as the API; the running replicas load them from there.
func TestSiteAddListRemove(t *testing.T) {
	t.Parallel()
	db := pgtest.NewURL(t)
	env := map[string]string{"DATABASE_URL": db}
	ctx := context.Background()
	st, err := store.Open(ctx, db)
	require.NoError(t, err)
	t.Cleanup(st.Close)

	code, out, errOut := runCmd(t, env, "", "site", "add", "toonhaven", "--family", "madara", "--host", "toonhaven.test",
		"--host", "toonhaven.example", "--kind", "manga", "--option", "chapters=ajax")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "added toonhaven (madara manga on toonhaven.test, toonhaven.example); running replicas apply it within SITES_REFRESH")
	rows, err := st.AddedSites(ctx)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, []string{"toonhaven.test", "toonhaven.example"}, rows[0].Hosts)
	require.Equal(t, map[string]string{"chapters": "ajax"}, rows[0].Options)

	code, out, errOut = runCmd(t, env, "", "site", "list")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^toonhaven +manga +toonhaven\.test,toonhaven\.example +family madara chapters=ajax$`, out)
	require.Regexp(t, `(?m)^asura +manga .* built-in$`, out)

	// The other commands know an added Site.
	code, _, errOut = runCmd(t, env, "", "site", "set", "toonhaven", "--pace", "500ms")
	require.Equal(t, 0, code, errOut)

	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"site", "add", "toonhaven", "--family", "madara", "--host", "other.test"}, 2, "exists"},
		{[]string{"site", "add", "inkstone", "--family", "madara", "--host", "toonhaven.test"}, 2, "already a host of the Site toonhaven"},
		{[]string{"site", "add", "inkstone", "--family", "mangathemesia", "--host", "inkstone.test", "--kind", "novel"}, 2, "serves manga"},
		{[]string{"site", "add", "inkstone", "--host", "inkstone.test"}, 2, "--family and at least one --host are required"},
		{[]string{"site", "add", "inkstone", "--family", "madara", "--host", "inkstone.test", "--option", "chapters"}, 2, "must be key=value"},
		{[]string{"site", "remove", "asura"}, 2, "built-in"},
		{[]string{"site", "remove", "nosuch"}, 1, "no added Site nosuch"},
		{[]string{"site", "list", "extra"}, 2, "Usage: lectern site list"},
	} {
		code, _, errOut := runCmd(t, env, "", tc.args...)
		require.Equal(t, tc.code, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.says, "%v", tc.args)
	}

	code, out, errOut = runCmd(t, env, "", "site", "remove", "toonhaven")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "removed toonhaven")
	code, out, _ = runCmd(t, env, "", "site", "list")
	require.Equal(t, 0, code)
	require.NotContains(t, out, "toonhaven")
}
