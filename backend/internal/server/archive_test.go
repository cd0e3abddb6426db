package server

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/api"
	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/fakenet"
	"github.com/lectern-reader/lectern/backend/internal/imagetype/imagetest"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

// The Archive on a replica's own parts: the fetchers buildFetch makes for
// the Poll (pinned, paced through the Postgres gate, dialling through the
// destination gate), its workers on a River client configured as newJobs
// configures it, and its routes on the API. A request through the API
// archives a chapter whose pages are paced by their own host, and the CBZ
// comes back through the API.
func TestArchiveJobsRunOnTheReplicasParts(t *testing.T) {
	t.Parallel()
	n := fakenet.New(t)
	seams := &Seams{Resolver: n, Dial: n.DialContext, RootCAs: n.RootCAs()}
	ctx := context.Background()
	st := store.New(pgtest.New(t))
	dir := t.TempDir()
	d := Deps{
		Config: config.Config{PublicBaseURL: testBase, DataDir: dir, ArchiveDir: filepath.Join(dir, "archive"),
			UserAgent: "LecternTest/1", SitePace: "asura=20ms"},
		Store: st, Logger: quiet(), Seams: seams,
	}
	const series = "https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b"
	n.Set(series, http.StatusOK, "text/html; charset=utf-8", testenv.SiteFixture(t, "asura", "series.html"))
	n.Set(series+"/chapter/250", http.StatusOK, "text/html; charset=utf-8", testenv.SiteFixture(t, "asura", "chapter.html"))
	pages := [][]byte{imagetest.RealPNG(t, 1), imagetest.RealPNG(t, 2), imagetest.RealPNG(t, 3)}
	for i, b := range pages {
		// asura labels every image image/jpeg; the bytes decide.
		n.Set("https://cdn.asurascans.com/asura-images/chapters/omniscient-readers-viewpoint/250/0"+string(rune('1'+i))+".webp",
			http.StatusOK, "image/jpeg", b)
	}

	d.Registry = latest.Default()
	tree, err := buildFetch(d.Config, st, d.Registry, d.Logger, nil, seams)
	require.NoError(t, err)
	workers := river.NewWorkers()
	svc, err := newArchive(d, tree, tree.Sites, nil)
	require.NoError(t, err)
	require.NoError(t, svc.AddWorkers(workers))
	client, err := river.NewClient(riverpgxv5.New(st.Pool), &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}},
		Workers:           workers,
		FetchPollInterval: 100 * time.Millisecond,
		Logger:            quiet(),
	})
	require.NoError(t, err)
	svc.River = client
	require.NoError(t, client.Start(ctx))
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = client.Stop(stop)
	})

	lib := &bookmark.Service{Store: st, Registry: d.Registry, BaseURL: testBase}
	a := &api.API{Store: st, Library: lib, Logger: quiet(), Version: "test"}
	addArchiveRoutes(a, svc, quiet())
	h := a.Routes()

	hash, err := credential.HashPassword("correct horse battery")
	require.NoError(t, err)
	owner, err := st.CreateReader(ctx, "owner", hash, true)
	require.NoError(t, err)
	token, th, err := credential.NewToken()
	require.NoError(t, err)
	_, err = st.CreateToken(ctx, owner.ID, "test", th)
	require.NoError(t, err)
	key := "asura:omniscient-readers-viewpoint"
	_, err = st.PutBookmarkKeepProgress(ctx, owner.ID, store.NewSeries{Key: key, Site: "asura", Kind: "manga", SeriesURL: series}, "")
	require.NoError(t, err)

	call := func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	rec := call(http.MethodPost, "/series/"+key+"/archive", `{"scope":"chapter","chapter":250}`)
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err := st.ArchivedChapters(ctx, key)
		require.NoError(t, err)
		if len(got) == 1 {
			break
		}
		if time.Now().After(deadline) {
			var dump string
			_ = st.Pool.QueryRow(ctx, `SELECT coalesce(string_agg(kind || ' ' || state::text || ' ' || coalesce(errors::text, ''), E'\n'), '') FROM river_job`).Scan(&dump)
			var chapters string
			_ = st.Pool.QueryRow(ctx, `SELECT coalesce(string_agg(url || ' ' || state || ' ' || problem || ' ' || detail, E'\n'), '') FROM archive_chapters`).Scan(&chapters)
			t.Fatalf("the chapter was not archived; jobs:\n%s\nchapters:\n%s", dump, chapters)
		}
		time.Sleep(50 * time.Millisecond)
	}

	for i := range pages {
		require.Equal(t, 1, n.Hits("https://cdn.asurascans.com/asura-images/chapters/omniscient-readers-viewpoint/250/0"+string(rune('1'+i))+".webp"))
	}
	var hosts []string
	rows, err := st.Pool.Query(ctx, `SELECT host FROM pacing_hosts ORDER BY host`)
	require.NoError(t, err)
	for rows.Next() {
		var h string
		require.NoError(t, rows.Scan(&h))
		hosts = append(hosts, h)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"asurascans.com", "cdn.asurascans.com"}, hosts, "the Site's pages and its images each paced by their host, through the one gate")

	rec = call(http.MethodGet, "/series/"+key+"/archive.cbz", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	zr, err := zip.NewReader(bytes.NewReader(rec.Body.Bytes()), int64(rec.Body.Len()))
	require.NoError(t, err)
	require.Len(t, zr.File, 4)
	for i, want := range pages {
		require.Equal(t, "000"+string(rune('1'+i))+".png", zr.File[i].Name)
		rc, err := zr.File[i].Open()
		require.NoError(t, err)
		got, err := io.ReadAll(rc)
		rc.Close()
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	require.Equal(t, "ComicInfo.xml", zr.File[3].Name)
}
