package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func init() {
	commands["migrate"] = command{summary: "migrate the database: up, down [N], version", run: cmdMigrate}
}

func cmdMigrate(ctx context.Context, env *cmdEnv, args []string) int {
	fs := newFlags("migrate up|down [N|all]|version", env,
		"up applies every migration not yet applied ('serve' does this at start).\n"+
			"down reverts the last N migrations (default 1; 'all' reverts everything and\n"+
			"deletes every Bookmark: take a backup first).\nversion prints the applied version and the newest this binary knows.")
	if code, done := parse(fs, args); done {
		return code
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return 2
	}
	cfg, err := config.Load(config.Lookup(env.getenv), "migrate")
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 1
	}
	if cfg.DatabaseURL == "" {
		fmt.Fprintln(env.stderr, "lectern: DATABASE_URL is required: the Postgres URL to migrate")
		return 1
	}
	switch rest[0] {
	case "up":
		if len(rest) != 1 {
			fs.Usage()
			return 2
		}
		if err := store.MigrateUp(ctx, cfg.DatabaseURL); err != nil {
			fmt.Fprintln(env.stderr, "lectern:", err)
			return 1
		}
	case "down":
		steps := 1
		if len(rest) == 2 {
			if rest[1] == "all" {
				steps = 0
			} else if steps, err = strconv.Atoi(rest[1]); err != nil || steps < 1 {
				fmt.Fprintf(env.stderr, "lectern: migrate down: %q is neither a positive number nor 'all'\n", rest[1])
				return 2
			}
		} else if len(rest) > 2 {
			fs.Usage()
			return 2
		}
		if err := store.MigrateDown(ctx, cfg.DatabaseURL, steps); err != nil {
			fmt.Fprintln(env.stderr, "lectern:", err)
			return 1
		}
	case "version":
	default:
		fmt.Fprintf(env.stderr, "lectern: migrate: unknown action %q\n", rest[0])
		fs.Usage()
		return 2
	}
	v, dirty, err := store.MigrationVersion(ctx, cfg.DatabaseURL)
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 1
	}
	head, _ := store.LatestMigration()
	state := ""
	if dirty {
		state = " (dirty: a migration failed half-way; fix it by hand, then force the version)"
	}
	fmt.Fprintf(env.stdout, "database at migration %d of %d%s\n", v, head, state)
	return 0
}
