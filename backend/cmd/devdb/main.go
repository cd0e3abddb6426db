// Command devdb starts and stops the local Postgres cluster that `make run`,
// `make test` and `make demo` use when DATABASE_URL or TEST_DATABASE_URL is
// unset. It is a development aid, not part of a deployment.
//
//	devdb start DIR [DATABASE] [--throwaway]   prints the database URL
//	devdb stop DIR
//	devdb remove DIR
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lectern-reader/lectern/backend/internal/store"
)

func main() {
	fs := flag.NewFlagSet("devdb", flag.ExitOnError)
	throwaway := fs.Bool("throwaway", false, "run without fsync: for test clusters whose data need not survive a crash")
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: devdb start DIR [DATABASE] [--throwaway] | devdb stop DIR | devdb remove DIR")
		os.Exit(2)
	}
	action, dir := os.Args[1], os.Args[2]
	rest := os.Args[3:]
	db := "lectern"
	if len(rest) > 0 && rest[0] != "" && rest[0][0] != '-' {
		db, rest = rest[0], rest[1:]
	}
	_ = fs.Parse(rest)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var err error
	switch action {
	case "start":
		var c *store.LocalCluster
		if c, err = store.StartLocalCluster(ctx, dir, *throwaway); err != nil {
			break
		}
		if err := createDatabase(ctx, c, db); err != nil {
			fmt.Fprintln(os.Stderr, "devdb:", err)
			os.Exit(1)
		}
		fmt.Println(c.URL(db))
	case "stop", "remove":
		var c *store.LocalCluster
		if c, err = store.LocalClusterAt(dir); err != nil {
			break
		}
		if action == "stop" {
			err = c.Stop()
		} else {
			err = c.Remove()
		}
	default:
		fmt.Fprintf(os.Stderr, "devdb: unknown action %q\n", action)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "devdb:", err)
		os.Exit(1)
	}
}

func createDatabase(ctx context.Context, c *store.LocalCluster, name string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}
