package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/poll"
)

// `lectern site SUBCOMMAND`: the Owner's control of the Sites from a shell,
// through the same controls (poll.Queue) as the API and the web console.
// Running replicas apply a change within fetch.DefaultSettingsTTL. A
// subcommand is one row of siteCommands.

func init() {
	commands["site"] = command{summary: "control a Site at run time: site pause|resume|set NAME", run: cmdSite}
}

// siteCommand is one `lectern site` subcommand: its usage after "site",
// what it does, the flags it takes, and its run with NAME and the Owner's
// controls.
type siteCommand struct {
	usage, about string
	flags        func(fs *flag.FlagSet) (check func() (poll.SiteChange, error))
	run          func(ctx context.Context, q *poll.Queue, name string, change poll.SiteChange) (done string, err error)
}

var siteCommands = map[string]siteCommand{
	"pause": {
		usage: "pause NAME",
		about: "Pauses a Site: no request of any kind reaches its hosts (polls, Covers,\n" +
			"archive jobs, the browser), and its queued work waits, keeping its attempts,\n" +
			"until `lectern site resume NAME`.",
		run: func(ctx context.Context, q *poll.Queue, name string, _ poll.SiteChange) (string, error) {
			return "paused " + name, q.PauseSite(ctx, name)
		},
	},
	"resume": {
		usage: "resume NAME",
		about: "Resumes a Site the Owner paused, and ends its back-off: its waiting polls,\nCovers and archive jobs run now.",
		run: func(ctx context.Context, q *poll.Queue, name string, _ poll.SiteChange) (string, error) {
			return "resumed " + name, q.ResumeSite(ctx, name)
		},
	},
	"set": {
		usage: "set NAME [--pace DURATION] [--budget N]",
		about: "Changes a Site's pace (the least time between two requests to its hosts,\n" +
			"e.g. 2s or 800ms) and its budget (scheduled polls per hour). \"default\" puts\n" +
			"either back to SITE_PACE or SITE_BUDGET (or the Site's own).",
		flags: func(fs *flag.FlagSet) func() (poll.SiteChange, error) {
			pace := fs.String("pace", "", "least time between two requests to the Site's hosts (e.g. 2s, 800ms), or default")
			budget := fs.String("budget", "", "scheduled polls per hour (e.g. 600), or default")
			return func() (poll.SiteChange, error) { return poll.ParseSiteChange(*pace, *budget) }
		},
		run: func(ctx context.Context, q *poll.Queue, name string, c poll.SiteChange) (string, error) {
			return "changed " + name, q.ChangeSite(ctx, name, c)
		},
	},
}

func cmdSite(ctx context.Context, env *cmdEnv, args []string) int {
	if len(args) == 0 {
		siteUsage(env.stderr)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		siteUsage(env.stdout)
		return 0
	}
	sub, ok := siteCommands[args[0]]
	if !ok {
		fmt.Fprintf(env.stderr, "lectern: unknown site command %q\n\n", args[0])
		siteUsage(env.stderr)
		return 2
	}
	fs := newFlags("site "+sub.usage, env, sub.about)
	var check func() (poll.SiteChange, error)
	if sub.flags != nil {
		check = sub.flags(fs)
	}
	// NAME may come before or after the flags.
	if code, done := parse(fs, args[1:]); done {
		return code
	}
	rest := fs.Args()
	if len(rest) > 1 {
		if code, done := parse(fs, rest[1:]); done {
			return code
		}
		rest = append(rest[:1], fs.Args()...)
	}
	if len(rest) != 1 {
		fs.Usage()
		return 2
	}
	var change poll.SiteChange
	if check != nil {
		var err error
		if change, err = check(); err != nil {
			fmt.Fprintln(env.stderr, "lectern:", err)
			return 2
		}
	}
	q, closeQueue, code := siteQueue(ctx, env)
	if q == nil {
		return code
	}
	defer closeQueue()
	done, err := sub.run(ctx, q, rest[0], change)
	switch {
	case errs.CodeOf(err) == errs.NotFound:
		fmt.Fprintf(env.stderr, "lectern: %v (the Sites: %v)\n", err, q.Registry.Names())
		return 1
	case errs.CodeOf(err) == errs.Invalid:
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 2
	case err != nil:
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 1
	}
	fmt.Fprintf(env.stdout, "%s; running replicas apply it within %s\n", done, fetch.DefaultSettingsTTL)
	return 0
}

func siteUsage(w io.Writer) {
	fmt.Fprint(w, "Usage: lectern site COMMAND NAME [flags]\n\n"+
		"Controls one Site of this deployment at run time; running replicas apply a\n"+
		"change within a minute, and it survives restarts.\n\nCommands:\n")
	names := make([]string, 0, len(siteCommands))
	for n := range siteCommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  site %s\n", siteCommands[n].usage)
	}
	fmt.Fprintln(w, "\nRun 'lectern site COMMAND -h' for a command's flags.")
}

// siteQueue opens the deployment's database and returns the Owner's
// controls over it; its River client only inserts and wakes jobs, which the
// replicas run.
func siteQueue(ctx context.Context, env *cmdEnv) (*poll.Queue, func(), int) {
	st, code := openStore(ctx, env)
	if st == nil {
		return nil, nil, code
	}
	rc, err := river.NewClient(riverpgxv5.New(st.Pool), &river.Config{})
	if err != nil {
		st.Close()
		fmt.Fprintln(env.stderr, "lectern: river client:", err)
		return nil, nil, 1
	}
	return &poll.Queue{Client: rc, Store: st, Registry: latest.Default()}, st.Close, 0
}
