package server

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/api"
	"github.com/lectern-reader/lectern/backend/internal/archive"
	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/fetch"
)

// newArchive builds the Archive over the replica's own fetch tree, the
// Poll's: site is the Site fetcher the Poll uses (plain or browser, pinned,
// paced), page images go through the tree's destination gate and are paced
// by their host through the same Postgres pacing gate, and a Site's back-off
// is the one the Poll reads and writes. Page bytes live under
// ARCHIVE_DIR/pages.
func newArchive(d Deps, tree *fetch.Tree, site fetch.Fetcher, client *river.Client[pgx.Tx]) (*archive.Service, error) {
	if d.Blobs == nil { // built by New; a test may call this alone
		var err error
		if d.Blobs, err = blob.Open(d.Config.Blobs()); err != nil {
			return nil, err
		}
	}
	// Made at start on a volume, so one that cannot hold it stops the boot
	// instead of failing every chapter.
	if fsys, ok := d.Blobs.Pages.(*blob.FS); ok {
		if err := os.MkdirAll(fsys.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("archive directory (ARCHIVE_DIR): %w", err)
		}
	}
	svc := &archive.Service{
		Store:    d.Store,
		River:    client,
		Pages:    d.Blobs.Pages,
		Fetch:    site,
		Images:   tree.Gate,
		Pacer:    tree.Pacer,
		Registry: d.Registry,
		Policy:   tree.Policy,
		Logger:   d.Logger,
		BaseURL:  d.Config.PublicBaseURL,
	}
	// A test's shortened rescue reaches the archive's jobs too: River
	// rescues a job only once its own timeout has passed as well.
	if s := d.seams(); s.RescueStuckJobsAfter > 0 {
		svc.JobTimeout = s.RescueStuckJobsAfter
	}
	return svc, nil
}

// addArchiveRoutes adds the Archive's Reader and Owner endpoints to the API;
// the web UI takes the same Service as web.Deps.Archive.
func addArchiveRoutes(a *api.API, svc *archive.Service, log *slog.Logger) {
	ar := &api.Archive{Service: svc, Logger: log}
	a.ReaderRoutes = append(a.ReaderRoutes, ar.ReaderRoutes)
	a.AdminRoutes = append(a.AdminRoutes, ar.AdminRoutes)
}
