// Command lectern is the Lectern backend: the API and web library server, its
// background workers, and the Owner's maintenance commands.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// command is one subcommand. run returns the process exit status: 0 success,
// 1 failure, 2 usage error (and 3 where a command documents it).
type command struct {
	summary string
	run     func(ctx context.Context, env *cmdEnv, args []string) int
}

// cmdEnv is what a command may touch of the process, so tests can run
// commands in-process with their own streams and environment.
type cmdEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) (string, bool)
}

var commands = map[string]command{}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	env := &cmdEnv{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.LookupEnv}
	code := run(ctx, env, os.Args[1:])
	stop()
	os.Exit(code)
}

func run(ctx context.Context, env *cmdEnv, args []string) int {
	if len(args) == 0 {
		usage(env.stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "--help":
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				return c.run(ctx, env, []string{"-h"})
			}
		}
		usage(env.stdout)
		return 0
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(env.stderr, "lectern: unknown command %q\n\n", name)
		usage(env.stderr)
		return 2
	}
	return c.run(ctx, env, args[1:])
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "lectern %s: a self-hosted companion backend for manga and web-novel readers.\n\nUsage: lectern COMMAND [flags]\n\nCommands:\n", version)
	names := make([]string, 0, len(commands))
	width := 0
	for n := range commands {
		names = append(names, n)
		width = max(width, len(n))
	}
	sort.Strings(names)
	// The column fits the longest name, so adding a command never breaks it.
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'lectern COMMAND -h' for a command's flags, 'lectern config' for the environment it reads.")
}

func init() {
	commands["version"] = command{
		summary: "print the version",
		run: func(_ context.Context, env *cmdEnv, args []string) int {
			if len(args) > 0 {
				fmt.Fprintln(env.stdout, "Usage: lectern version\n\nPrints the version of this binary.")
				return helpOrUsage(args)
			}
			fmt.Fprintln(env.stdout, "lectern", version)
			return 0
		},
	}
}

// helpOrUsage gives 0 for an explicit -h and 2 for anything else unexpected.
func helpOrUsage(args []string) int {
	if len(args) == 1 && strings.TrimLeft(args[0], "-") == "h" || len(args) == 1 && strings.TrimLeft(args[0], "-") == "help" {
		return 0
	}
	return 2
}
