package archive_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
)

// syncBuffer collects a worker process's log for a failure message.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startWorker runs this test binary as an archive worker process.
func startWorker(t *testing.T, env []string, log *syncBuffer) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

// A worker process killed with SIGKILL in the middle of a chapter leaves
// nothing visible; a new worker process finishes the chapter from its
// checkpoint, fetching none of the pages already stored again, and no row
// is duplicated.
func TestKilledWorkerResumesChapterFromCheckpoint(t *testing.T) {
	ctx := context.Background()
	app := apptest.New(t, apptest.Options{Logger: quietLogger()})
	st, pool, dbURL := app.Store, app.Store.Pool, app.DatabaseURL
	s := newSite(t, app.Net)
	const pages = 12
	s.Pages("181", pages)
	pageKey := func(n int) string {
		return hitKey(imageHost, fmt.Sprintf("/mangas/Solo Max-Level Newbie/181/%02d.jpg", n), "v=3")
	}
	s.Hold(pageKey(7))

	dir := filepath.Join(t.TempDir(), "archive")
	env := append([]string{workerEnv + "=1", workerDBEnv + "=" + dbURL, workerDirEnv + "=" + dir}, app.Net.Env()...)

	// The request is made here, by an insert-only client, as a web replica
	// would; the worker processes do the rest.
	svc, _, err := newService(st, dir, app.Net, rigOptions{}, quietLogger())
	require.NoError(t, err)
	inserter, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	svc.River = inserter
	r := &testBundle{t: t, st: st, pool: pool, site: s, svc: svc, river: inserter, dir: dir, app: app}
	rd, _ := r.reader("gus", false, true)
	key := r.hold(rd, mangaURL, "Solo Max-Level Newbie")
	r.request(rd, key, "chapter 181")
	chURL := mangaChapterURL("181")

	log1 := &syncBuffer{}
	w1 := startWorker(t, env, log1)
	select {
	case k := <-s.held:
		require.Equal(t, pageKey(7), k)
	case <-time.After(2 * time.Minute):
		t.Fatalf("the worker never reached page 7; its log:\n%s\njobs: %s", log1.String(), r.jobsDump())
	}
	ch := r.chapter(chURL)
	r.waitFor("six pages checkpointed", func() bool {
		return r.count(`SELECT count(*) FROM archive_staging WHERE chapter_id = $1`, ch.ID) == 6
	})
	require.NoError(t, w1.Process.Signal(syscall.SIGKILL))
	_ = w1.Wait()

	// Killed mid-chapter: nothing is visible, the checkpoint holds six pages.
	ch = r.chapter(chURL)
	require.Equal(t, "queued", ch.State)
	require.Zero(t, r.count(`SELECT count(*) FROM archive_pages`))
	require.Empty(t, mustArchived(t, r, key))
	require.Equal(t, 6, r.count(`SELECT count(*) FROM archive_staging WHERE chapter_id = $1`, ch.ID))
	for n := 1; n <= 6; n++ {
		require.Equal(t, 1, s.Hits(pageKey(n)), "page %d", n)
	}
	s.Release(pageKey(7))

	log2 := &syncBuffer{}
	w2 := startWorker(t, env, log2)
	deadline := time.Now().Add(3 * time.Minute)
	for r.chapter(chURL).State != "archived" {
		if time.Now().After(deadline) {
			t.Fatalf("the second worker did not finish the chapter; its log:\n%s\njobs: %s", log2.String(), r.jobsDump())
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, w2.Process.Signal(syscall.SIGTERM))
	require.NoError(t, w2.Wait())

	// Finished from the checkpoint: the six stored pages were not fetched
	// again; the one cut by the kill was, once; the rest once.
	for n := 1; n <= pages; n++ {
		want := 1
		if n == 7 {
			want = 2
		}
		require.Equal(t, want, s.Hits(pageKey(n)), "fetches of page %d", n)
	}
	require.Contains(t, log2.String(), "archive resumed from its checkpoint")
	got := mustArchived(t, r, key)
	require.Len(t, got, 1)
	require.Equal(t, pages, got[0].PageCount)
	require.Equal(t, 1, r.count(`SELECT count(*) FROM archive_chapters WHERE url = $1`, chURL))
	require.Equal(t, pages, r.count(`SELECT count(*) FROM archive_pages WHERE chapter_id = $1`, ch.ID))
	require.Equal(t, pages, r.count(`SELECT count(DISTINCT idx) FROM archive_pages WHERE chapter_id = $1`, ch.ID))
	require.Zero(t, r.count(`SELECT count(*) FROM archive_staging`))
	require.Equal(t, 1, r.count(`SELECT count(*) FROM river_job WHERE kind = 'archive_chapter'`), "one job, resumed")
	stored, err := st.ArchivePagesOf(ctx, ch.ID)
	require.NoError(t, err)
	for i, p := range stored {
		f, err := svc.Pages.Open(context.Background(), p.Address)
		require.NoError(t, err)
		var buf bytes.Buffer
		_, err = buf.ReadFrom(f)
		f.Close()
		require.NoError(t, err)
		require.Equal(t, PageImage("181", i+1), buf.Bytes(), "page %d in order, whole", i+1)
	}
}
