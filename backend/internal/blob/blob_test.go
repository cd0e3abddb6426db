package blob_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/imagetype/imagetest"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
	"github.com/stretchr/testify/require"
)

func TestPutStoresBytesAtTheirContentAddress(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := &blob.FS{Dir: dir}
	b := imagetest.JPEG(t, 30_000)

	addr, err := s.Put(context.Background(), b, imagetype.TypeJPEG)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	require.Equal(t, hex.EncodeToString(sum[:]), addr)

	p := filepath.Join(dir, addr[:2], addr[2:4], addr)
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.True(t, bytes.Equal(b, got))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o644), fi.Mode().Perm())
	require.Equal(t, []string{filepath.Join(addr[:2], addr[2:4], addr)}, testenv.FilesUnder(t, dir), "no temporary file is left behind")

	f, err := s.Open(context.Background(), addr)
	require.NoError(t, err)
	defer f.Close()
	read, err := io.ReadAll(f)
	require.NoError(t, err)
	require.True(t, bytes.Equal(b, read))
}

func TestPutCreatesTheStoreDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "covers")
	s := &blob.FS{Dir: dir}
	addr, err := s.Put(context.Background(), imagetest.PNG(t, 500), imagetype.TypePNG)
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(dir, addr[:2], addr[2:4], addr))
}

func TestIdenticalBytesAreStoredOnceAndNotRewritten(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := &blob.FS{Dir: dir}
	b := imagetest.GIF(t, 5000)
	addr, err := s.Put(context.Background(), b, imagetype.TypeGIF)
	require.NoError(t, err)

	p := filepath.Join(dir, addr[:2], addr[2:4], addr)
	past := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	require.NoError(t, os.Chtimes(p, past, past))
	before, err := os.Stat(p)
	require.NoError(t, err)

	again, err := s.Put(context.Background(), bytes.Clone(b), imagetype.TypeGIF)
	require.NoError(t, err)
	require.Equal(t, addr, again)
	after, err := os.Stat(p)
	require.NoError(t, err)
	require.True(t, os.SameFile(before, after), "the same inode: not replaced")
	require.Equal(t, past, after.ModTime(), "not rewritten")
	require.Len(t, testenv.FilesUnder(t, dir), 1)

	other, err := s.Put(context.Background(), imagetest.GIF(t, 5000), imagetype.TypeGIF)
	require.NoError(t, err)
	require.NotEqual(t, addr, other, "different bytes, different address")
	require.Len(t, testenv.FilesUnder(t, dir), 2)
}

func TestPutRefusesWhatIsNotAConfirmedImage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := &blob.FS{Dir: dir}
	cases := []struct {
		name string
		b    []byte
		typ  string
	}{
		{"html declared png", []byte("<!doctype html><p>hi</p>"), imagetype.TypePNG},
		{"empty", nil, imagetype.TypeJPEG},
		{"jpeg declared png", imagetest.JPEG(t, 100), imagetype.TypePNG},
		{"jpeg declared nothing", imagetest.JPEG(t, 100), ""},
		{"svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), "image/svg+xml"},
	}
	for _, tc := range cases {
		addr, err := s.Put(context.Background(), tc.b, tc.typ)
		require.ErrorIs(t, err, imagetype.ErrNotImage, tc.name)
		require.Empty(t, addr, tc.name)
	}
	require.Empty(t, testenv.FilesUnder(t, dir))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Put(ctx, imagetest.JPEG(t, 100), imagetype.TypeJPEG)
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, testenv.FilesUnder(t, dir))
}

func TestOpenValidatesTheAddress(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := &blob.FS{Dir: dir}
	addr, err := s.Put(context.Background(), imagetest.JPEG(t, 100), imagetype.TypeJPEG)
	require.NoError(t, err)

	for _, bad := range []string{
		"", "abc", strings.ToUpper(addr), addr + ".jpg", addr[:63], addr + "0",
		"../" + addr[3:], addr[:62] + "/.", addr[:60] + "%2e%2", strings.Repeat(".", 64),
		addr[:63] + "g",
	} {
		_, err := s.Open(context.Background(), bad)
		require.ErrorIs(t, err, blob.ErrBadAddress, bad)
	}

	never := strings.Repeat("ab", 32)
	_, err = s.Open(context.Background(), never)
	require.ErrorIs(t, err, blob.ErrNotFound)

	// A directory squatting at an address is not a Cover.
	squat := strings.Repeat("cd", 32)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "cd", "cd", squat), 0o755))
	_, err = s.Open(context.Background(), squat)
	require.ErrorIs(t, err, blob.ErrNotFound)
}

// TestCrashBetweenWriteAndRenameLeavesNothingVisible stops a Put after its
// temporary file is complete and synced but before the rename: nothing is at
// the final path, the route answers 404, and a restarted store over the same
// volume (with the orphaned temporary file still there) stores and serves the
// Cover normally.
func TestCrashBetweenWriteAndRenameLeavesNothingVisible(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := imagetest.WebP(t, 40_000)
	sum := sha256.Sum256(b)
	addr := hex.EncodeToString(sum[:])
	final := filepath.Join(dir, addr[:2], addr[2:4], addr)

	var orphan []byte
	var orphanName string
	crashed := errors.New("simulated crash")
	s := blob.WithBeforeRename(dir, func(tmp string) error {
		var err error
		orphan, err = os.ReadFile(tmp)
		require.NoError(t, err)
		orphanName = filepath.Base(tmp)
		require.NoFileExists(t, final)
		_, err = s0(dir).Open(context.Background(), addr)
		require.ErrorIs(t, err, blob.ErrNotFound)
		rec := httptest.NewRecorder()
		cover.NewHandler(s0(dir)).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/covers/"+addr, nil))
		require.Equal(t, http.StatusNotFound, rec.Code)
		return crashed
	})
	_, err := s.Put(context.Background(), b, imagetype.TypeWebP)
	require.ErrorIs(t, err, crashed)
	require.True(t, bytes.Equal(b, orphan), "the temporary file was complete before the rename")
	require.NoFileExists(t, final)

	// A real crash would not have removed the temporary file: put it back,
	// as the process would have left it, and restart.
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(final), orphanName), orphan[:len(orphan)/2], 0o600))
	restarted := s0(dir)
	srv := httptest.NewServer(cover.NewHandler(restarted))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/covers/" + addr)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, err = http.Get(srv.URL + "/covers/" + orphanName)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "a temporary name is never an address")

	got, err := restarted.Put(context.Background(), b, imagetype.TypeWebP)
	require.NoError(t, err)
	require.Equal(t, addr, got)
	resp, err = http.Get(srv.URL + "/covers/" + addr + ".webp")
	require.NoError(t, err)
	served, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, bytes.Equal(b, served))
}

func s0(dir string) *blob.FS { return &blob.FS{Dir: dir} }

// TestDiskFullLeavesNoPartialFile fails the write half-way with ENOSPC, as a
// full volume does.
func TestDiskFullLeavesNoPartialFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := imagetest.PNG(t, 50_000)
	s := blob.WithWrite(dir, func(f *os.File, p []byte) (int, error) {
		n, err := f.Write(p[:len(p)/2])
		if err != nil {
			return n, err
		}
		return n, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	})
	addr, err := s.Put(context.Background(), b, imagetype.TypePNG)
	requireVolumeFull(t, err)
	require.Empty(t, addr)
	require.Empty(t, testenv.FilesUnder(t, dir), "neither the partial temporary file nor a final file remains")
}

// TestDiskFullOnARealVolume does the same on a real 64 KiB tmpfs. Mounting
// needs root; elsewhere the test is skipped and the one above still runs.
func TestDiskFullOnARealVolume(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=64k"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v)", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	s := &blob.FS{Dir: dir}

	small, err := s.Put(context.Background(), imagetest.JPEG(t, 20_000), imagetype.TypeJPEG)
	require.NoError(t, err)

	addr, err := s.Put(context.Background(), imagetest.JPEG(t, 200_000), imagetype.TypeJPEG)
	requireVolumeFull(t, err)
	require.Empty(t, addr)
	require.Equal(t, []string{filepath.Join(small[:2], small[2:4], small)}, testenv.FilesUnder(t, dir),
		"only the Cover that fitted is there, whole")

	f, err := s.Open(context.Background(), small)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.EqualValues(t, 20_000, f.Size())
}

func requireVolumeFull(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, blob.ErrVolumeFull)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.Contains(t, err.Error(), "cover volume is full")
}

func TestConcurrentPutsOfTheSameBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	same := imagetest.AVIF(t, 60_000)
	distinct := make([][]byte, 8)
	for i := range distinct {
		distinct[i] = imagetest.JPEG(t, 20_000+i)
	}

	var wg sync.WaitGroup
	addrs := make([]string, 32)
	errs := make([]error, 32)
	for i := range 32 {
		wg.Go(func() {
			// Each goroutine has its own Store value over the same volume,
			// as separate replicas would.
			s := &blob.FS{Dir: dir}
			if i%4 == 3 {
				_, errs[i] = s.Put(context.Background(), distinct[i/4], imagetype.TypeJPEG)
				return
			}
			addrs[i], errs[i] = s.Put(context.Background(), same, imagetype.TypeAVIF)
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	want := addrs[0]
	for i, a := range addrs {
		if i%4 != 3 {
			require.Equal(t, want, a)
		}
	}
	files := testenv.FilesUnder(t, dir)
	require.Len(t, files, 1+len(distinct), "one file per distinct content and no temporary leftovers: %v", files)
	got, err := os.ReadFile(filepath.Join(dir, want[:2], want[2:4], want))
	require.NoError(t, err)
	require.True(t, bytes.Equal(same, got))
}
