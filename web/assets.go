package web

import "embed"

// FS holds the web UI: templates/*.html (parsed and checked at start by
// backend/internal/web) and static/* (served at checksummed URLs).
// Importers alias this package webassets.
//
//go:embed templates static
var FS embed.FS
