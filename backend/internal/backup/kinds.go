package backup

import "github.com/lectern-reader/lectern/backend/internal/blob"

// Kind is one kind of stored object the database names by content address.
// A new kind (a new table holding addresses) is one more row in Kinds, which
// `lectern verify`, the backup's manifest and the restore's check all read.
type Kind struct {
	Name string
	// Tables must all exist for the kind to be read: a database older than
	// the feature has none of its rows.
	Tables []string
	// Store is where the kind's objects live.
	Store func(*blob.Stores) blob.Store
	// Query returns every address the database names, one per row.
	Query string
}

// Kinds are every kind of stored object.
var Kinds = []Kind{
	{
		Name: "Cover", Tables: []string{"series"},
		Store: func(s *blob.Stores) blob.Store { return s.Covers },
		Query: `SELECT DISTINCT cover_address FROM series WHERE cover_address <> ''`,
	},
	{
		// Staged pages are stored objects of a chapter still being archived.
		Name: "archived page", Tables: []string{"archive_pages", "archive_staging"},
		Store: func(s *blob.Stores) blob.Store { return s.Pages },
		Query: `SELECT address FROM archive_pages UNION SELECT address FROM archive_staging`,
	},
}
