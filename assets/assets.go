package assets

import "embed"

// FS holds the web UI: templates/*.html (parsed and checked at start by
// backend/internal/web) and static/* (served at checksummed URLs).
//
//go:embed templates static
var FS embed.FS
