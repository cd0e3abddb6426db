// Package migrations embeds the SQL files that describe Lectern's database,
// River's tables included, as one golang-migrate history.
package migrations

import "embed"

// FS holds every NNNN_name.{up,down}.sql file.
//
//go:embed *.sql
var FS embed.FS
