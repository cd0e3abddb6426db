// Command rivermigrations writes River's schema migrations into migrations/ as
// golang-migrate files, one River version per file, so that one migration
// history describes the whole database (docs/adr/0008-one-queue-river.md).
//
// Usage: go run ./scripts/rivermigrations -first 3 -dir migrations
//
// The SQL is River's own, exactly as `river migrate-get` prints it for the
// default schema; each file also records its version in river_migration, as
// River's migrator would, so River's tooling sees the schema it expects.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

func main() {
	first := flag.Int("first", 3, "golang-migrate version of River's migration 1")
	dir := flag.String("dir", "migrations", "where the files go")
	flag.Parse()

	m, err := rivermigrate.New(riverpgxv5.New(nil), nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, v := range m.AllVersions() {
		name := strings.ReplaceAll(strings.ToLower(v.Name), " ", "_")
		base := fmt.Sprintf("%04d_river_%03d_%s", *first+v.Version-1, v.Version, name)
		up := fmt.Sprintf("-- River main migration %03d [up], from rivermigrate %s.\n%s\n%s\n",
			v.Version, "v0.51.2", template(v.SQLUp), record(v.Version))
		down := fmt.Sprintf("-- River main migration %03d [down], from rivermigrate %s.\n%s\n%s\n",
			v.Version, "v0.51.2", unrecord(v.Version), template(v.SQLDown))
		write(filepath.Join(*dir, base+".up.sql"), up)
		write(filepath.Join(*dir, base+".down.sql"), down)
	}
}

func template(sql string) string {
	return strings.TrimSpace(strings.ReplaceAll(sql, "/* TEMPLATE: schema */", ""))
}

// record mirrors what rivermigrate inserts after applying a version; the
// line column only exists from version 5 on.
func record(v int) string {
	if v < 5 {
		return fmt.Sprintf("INSERT INTO river_migration (version) VALUES (%d);", v)
	}
	return fmt.Sprintf("INSERT INTO river_migration (line, version) VALUES ('main', %d);", v)
}

func unrecord(v int) string {
	if v == 1 {
		return "" // the down drops the table itself
	}
	if v < 5 {
		return fmt.Sprintf("DELETE FROM river_migration WHERE version = %d;", v)
	}
	return fmt.Sprintf("DELETE FROM river_migration WHERE line = 'main' AND version = %d;", v)
}

func write(path, body string) {
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		log.Fatal(err)
	}
}
