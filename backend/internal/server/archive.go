package server

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/api"
	"github.com/lectern-reader/lectern/backend/internal/archive"
	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// addArchiveJobs builds the Archive over the replica's own fetch parts, the
// Poll's: fetch is the Site fetcher the Poll uses (plain or browser, pinned,
// paced), page images go through the replica's destination gate and are
// paced by their host through the same Postgres pacing gate, and a Site's
// back-off is the one the Poll reads and writes. It registers the
// archive_series and archive_chapter workers with the one River client's
// workers, so newJobs calls it before building the client; once the client
// exists, set the Service's River to it. Page bytes live under
// ARCHIVE_DIR/pages.
func addArchiveJobs(d Deps, f *fetchParts, fetch latest.Fetcher, workers *river.Workers) (*archive.Service, error) {
	pages := filepath.Join(d.Config.ArchiveDir, "pages")
	// Made at start, so a volume that cannot hold it stops the boot instead
	// of failing every chapter.
	if err := os.MkdirAll(pages, 0o755); err != nil {
		return nil, fmt.Errorf("archive directory (ARCHIVE_DIR): %w", err)
	}
	svc := &archive.Service{
		Store:   d.Store,
		Pages:   &blob.Store{Dir: pages},
		Fetch:   fetch,
		Images:  f.dest,
		Pacer:   f.pace,
		Paces:   map[string]time.Duration(f.paces),
		Logger:  d.Logger,
		BaseURL: d.Config.PublicBaseURL,
	}
	if err := svc.AddWorkers(workers); err != nil {
		return nil, err
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
