package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/lectern-reader/lectern/backend/internal/addedsites"
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
	commands["site"] = command{summary: "control a Site at run time: site pause|resume|set|add|remove NAME, site list", run: cmdSite}
}

// siteCommand is one `lectern site` subcommand: its usage after "site",
// what it does, the flags it takes, and its run with NAME and the Owner's
// controls. noName marks the one that takes no NAME (list); added marks
// those whose change reaches the replicas at their next SITES_REFRESH
// rather than their settings' TTL.
type siteCommand struct {
	usage, about  string
	flags         func(fs *flag.FlagSet) (check func() (siteArgs, error))
	run           func(ctx context.Context, c siteCtl, name string, args siteArgs) (done string, err error)
	noName, added bool
}

// siteArgs are what a subcommand's flags say.
type siteArgs struct {
	change poll.SiteChange
	def    addedsites.Def
}

// siteCtl is what the subcommands run against: the Owner's controls, the
// added Sites, and standard output for list.
type siteCtl struct {
	q     *poll.Queue
	sites *addedsites.Service
	out   io.Writer
}

// repeated is a flag given any number of times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

var siteCommands = map[string]siteCommand{
	"pause": {
		usage: "pause NAME",
		about: "Pauses a Site: no request of any kind reaches its hosts (polls, Covers,\n" +
			"archive jobs, the browser), and its queued work waits, keeping its attempts,\n" +
			"until `lectern site resume NAME`.",
		run: func(ctx context.Context, c siteCtl, name string, _ siteArgs) (string, error) {
			return "paused " + name, c.q.PauseSite(ctx, name)
		},
	},
	"resume": {
		usage: "resume NAME",
		about: "Resumes a Site the Owner paused, and ends its back-off: its waiting polls,\nCovers and archive jobs run now.",
		run: func(ctx context.Context, c siteCtl, name string, _ siteArgs) (string, error) {
			return "resumed " + name, c.q.ResumeSite(ctx, name)
		},
	},
	"set": {
		usage: "set NAME [--pace DURATION] [--budget N]",
		about: "Changes a Site's pace (the least time between two requests to its hosts,\n" +
			"e.g. 2s or 800ms) and its budget (scheduled polls per hour). \"default\" puts\n" +
			"either back to SITE_PACE or SITE_BUDGET (or the Site's own).",
		flags: func(fs *flag.FlagSet) func() (siteArgs, error) {
			pace := fs.String("pace", "", "least time between two requests to the Site's hosts (e.g. 2s, 800ms), or default")
			budget := fs.String("budget", "", "scheduled polls per hour (e.g. 600), or default")
			return func() (siteArgs, error) {
				c, err := poll.ParseSiteChange(*pace, *budget)
				return siteArgs{change: c}, err
			}
		},
		run: func(ctx context.Context, c siteCtl, name string, a siteArgs) (string, error) {
			return "changed " + name, c.q.ChangeSite(ctx, name, a.change)
		},
	},
	"add": {
		usage: "add NAME --family F --host H [--host H2] --kind manga|novel [--option k=v]",
		about: "Adds a Site of a known family (" + strings.Join(familyNames(), ", ") + ") on the given hosts, without a\n" +
			"release: every replica polls its Series within SITES_REFRESH, paced at 2s until\n" +
			"`lectern site set NAME --pace`. NAME is lower-case letters, digits and hyphens.\n" +
			"Adding back a removed Site with the same name and family resumes its Bookmarks.\n" +
			"The options are the family's closed set (docs/adding-a-site.md): series_path=PREFIX\n" +
			"for series under /PREFIX/<slug>/ (default any of /manga/, /series/, /comic/, /novel/,\n" +
			"/webtoon/), and for madara chapters=auto|page|ajax|admin-ajax.",
		added: true,
		flags: func(fs *flag.FlagSet) func() (siteArgs, error) {
			family := fs.String("family", "", "the family: "+strings.Join(familyNames(), ", "))
			kind := fs.String("kind", "", "the Library: manga or novel (default: the family's usual one)")
			var hosts, options repeated
			fs.Var(&hosts, "host", "a host name of the Site, e.g. example.com (repeat for more)")
			fs.Var(&options, "option", "a family option as key=value (repeat for more)")
			return func() (siteArgs, error) {
				d := addedsites.Def{Family: *family, Kind: *kind, Hosts: hosts, Options: map[string]string{}}
				if d.Family == "" || len(d.Hosts) == 0 {
					return siteArgs{}, errs.New(errs.Invalid, "--family and at least one --host are required")
				}
				for _, o := range options {
					k, v, ok := strings.Cut(o, "=")
					if !ok || k == "" {
						return siteArgs{}, errs.New(errs.Invalid, fmt.Sprintf("--option %q must be key=value", o))
					}
					d.Options[k] = v
				}
				return siteArgs{def: d}, nil
			}
		},
		run: func(ctx context.Context, c siteCtl, name string, a siteArgs) (string, error) {
			a.def.Site = name
			site, resumed, err := c.sites.Add(ctx, a.def)
			if err != nil {
				return "", err
			}
			done := fmt.Sprintf("added %s (%s %s on %s)", site.Name, site.Family, site.Kind, strings.Join(site.Hosts, ", "))
			if resumed {
				done += ", its Bookmarks resumed"
			}
			return done, nil
		},
	},
	"list": {
		usage:  "list",
		about:  "Lists every Site: built-in or added (with its family, hosts and options).",
		noName: true,
		run: func(_ context.Context, c siteCtl, _ string, _ siteArgs) (string, error) {
			for _, s := range c.sites.Registry.Sites() {
				how := "built-in"
				if s.Family != "" {
					how = "family " + s.Family
					keys := make([]string, 0, len(s.Options))
					for k := range s.Options {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					for _, k := range keys {
						how += " " + k + "=" + s.Options[k]
					}
				}
				fmt.Fprintf(c.out, "%-16s %-6s %-40s %s\n", s.Name, s.Kind, strings.Join(s.Hosts, ","), how)
			}
			return "", nil
		},
	},
	"remove": {
		usage: "remove NAME",
		about: "Removes an added Site: its polling stops, its Bookmarks stay, and its Series are\n" +
			"gone (\"site removed\") until the Site is added again with the same family.",
		added: true,
		run: func(ctx context.Context, c siteCtl, name string, _ siteArgs) (string, error) {
			return "removed " + name, c.sites.Remove(ctx, name)
		},
	},
}

func familyNames() []string {
	var out []string
	for _, f := range latest.Families() {
		out = append(out, f.Name)
	}
	return out
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
	var check func() (siteArgs, error)
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
	if len(rest) != 1 && !sub.noName || len(rest) != 0 && sub.noName {
		fs.Usage()
		return 2
	}
	name := ""
	if !sub.noName {
		name = rest[0]
	}
	var given siteArgs
	if check != nil {
		var err error
		if given, err = check(); err != nil {
			fmt.Fprintln(env.stderr, "lectern:", err)
			return 2
		}
	}
	c, closeQueue, code := siteQueue(ctx, env)
	if c.q == nil {
		return code
	}
	defer closeQueue()
	done, err := sub.run(ctx, c, name, given)
	switch {
	case errs.CodeOf(err) == errs.NotFound:
		fmt.Fprintf(env.stderr, "lectern: %v (the Sites: %v)\n", err, c.q.Registry.Names())
		return 1
	case errs.CodeOf(err) == errs.Invalid, errs.CodeOf(err) == errs.Conflict:
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 2
	case err != nil:
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 1
	}
	switch {
	case done == "":
	case sub.added:
		fmt.Fprintf(env.stdout, "%s; running replicas apply it within SITES_REFRESH (%s by default)\n", done, addedsites.DefaultRefresh)
	default:
		fmt.Fprintf(env.stdout, "%s; running replicas apply it within %s\n", done, fetch.DefaultSettingsTTL)
	}
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
func siteQueue(ctx context.Context, env *cmdEnv) (siteCtl, func(), int) {
	st, code := openStore(ctx, env)
	if st == nil {
		return siteCtl{}, nil, code
	}
	rc, err := river.NewClient(riverpgxv5.New(st.Pool), &river.Config{})
	if err != nil {
		st.Close()
		fmt.Fprintln(env.stderr, "lectern: river client:", err)
		return siteCtl{}, nil, 1
	}
	// The registry as the replicas have it: the built-in Sites and the
	// added ones, so every command names an added Site too.
	reg := latest.Default()
	sites := &addedsites.Service{Store: st, Registry: reg, Logger: slog.New(slog.DiscardHandler)}
	if err := sites.Refresh(ctx); err != nil {
		st.Close()
		fmt.Fprintln(env.stderr, "lectern:", err)
		return siteCtl{}, nil, 1
	}
	return siteCtl{q: &poll.Queue{Client: rc, Store: st, Registry: reg}, sites: sites, out: env.stdout}, st.Close, 0
}
