package server_test

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/api"
	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

func TestMain(m *testing.M) {
	// Tests that pass no logger would print every request line.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	os.Exit(pgtest.Main(m))
}

// testBase is PUBLIC_BASE_URL of the in-process tests: Cover and userscript
// URLs are built on it.
const testBase = "https://lectern.example.net"

// setup is the composed server over a fresh database, queueing jobs and
// running none.
func setup(t *testing.T) *apptest.App {
	t.Helper()
	return apptest.New(t, apptest.Options{PublicBaseURL: testBase})
}

// setupJobs is the composed server with its background jobs running on the
// fake network: four workers and an hour's poll interval.
func setupJobs(t *testing.T) *apptest.App {
	t.Helper()
	return apptest.New(t, apptest.Options{PublicBaseURL: testBase, Workers: 4})
}

// servePage serves a Site fixture at the registry's series URL.
func servePage(b *apptest.App, raw, site, file string) string {
	ref := mustResolve(b.T, raw)
	b.Net.Set(ref.SeriesURL, http.StatusOK, "text/html; charset=utf-8", testenv.SiteFixture(b.T, site, file))
	return ref.SeriesURL
}

func putBody(site, seriesURL, chapter string) map[string]any {
	return map[string]any{"site": site, "series_url": seriesURL, "chapter": chapter,
		// Inert, permanently: a Cover is a fact only the backend writes.
		"cover": "https://evil.example/tracker.png"}
}

func coverBytes(t *testing.T, b *apptest.App, coverURL, token string) (int, string, []byte) {
	t.Helper()
	path := strings.TrimPrefix(coverURL, testBase)
	r := b.Do("GET", path, token, nil)
	return r.Code, r.Header.Get("Content-Type"), r.Body
}

func mustResolve(t testing.TB, raw string) latest.Ref {
	t.Helper()
	ref, err := latest.Default().Resolve(raw)
	require.NoError(t, err)
	return ref
}

// storedFiles counts the regular files under dir (none when it is absent).
func storedFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.SkipAll
		}
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			n++
		}
		return nil
	})
	require.NoError(t, err)
	return n
}

// status is the Owner's status through the API.
func status(t *testing.T, b *apptest.App, token string) api.StatusJSON {
	t.Helper()
	r := b.Do("GET", "/api/admin/status", token, nil)
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	var st api.StatusJSON
	r.JSON(t, &st)
	return st
}

func siteOf(st api.StatusJSON, name string) api.SiteStatusJSON {
	for _, s := range st.Sites {
		if s.Site == name {
			return s
		}
	}
	return api.SiteStatusJSON{}
}

// pollState is the state of the Series' newest poll job, "" when none.
func pollState(t *testing.T, b *apptest.App, key string) string {
	t.Helper()
	var state string
	err := b.Store.Pool.QueryRow(t.Context(),
		`SELECT state::text FROM river_job WHERE kind = 'poll_series' AND args->>'key' = $1 ORDER BY id DESC LIMIT 1`, key).Scan(&state)
	if err != nil {
		return ""
	}
	return state
}
