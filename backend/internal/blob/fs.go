package blob

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
)

// FS is the content-addressed store on a volume, rooted at Dir: the Cover whose address
// is abcd… lives at Dir/ab/cd/abcd…. The zero value with Dir set is ready to
// use and safe for concurrent use, including by several processes sharing Dir.
type FS struct {
	Dir string

	// Test seams: a write that can fail part-way (a full disk) and a pause
	// between the synced temporary file and its rename (a crash).
	write        func(f *os.File, b []byte) (int, error)
	beforeRename func(tmpPath string) error
}

// Put stores b, declared as contentType, and returns its address. The bytes
// must prove themselves to be an image of exactly that type.
//
// The file is written under a temporary name in its final directory, synced,
// then renamed into place and the directory synced, so a reader sees either
// nothing or the whole file, even across a crash. Storing bytes that are
// already stored is a no-op that returns the same address: the existing file
// is not rewritten.
func (s *FS) Put(ctx context.Context, b []byte, contentType string) (string, error) {
	address, err := admit(ctx, b, contentType)
	if err != nil {
		return "", err
	}
	final := s.path(address)

	if fi, err := os.Lstat(final); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(b)) {
		return address, nil
	}

	dir := filepath.Dir(final)
	if err := s.mkdirs(dir); err != nil {
		return "", storeErr(address, "create directory", err)
	}
	tmp, err := os.CreateTemp(dir, ".put-*")
	if err != nil {
		return "", storeErr(address, "create temporary file", err)
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()

	write := s.write
	if write == nil {
		write = (*os.File).Write
	}
	if _, err := write(tmp, b); err != nil {
		return "", storeErr(address, "write temporary file", err)
	}
	// Readable by a sidecar web server or a backup job running as another user.
	if err := tmp.Chmod(0o644); err != nil {
		return "", storeErr(address, "chmod temporary file", err)
	}
	if err := tmp.Sync(); err != nil {
		return "", storeErr(address, "sync temporary file", err)
	}
	if err := tmp.Close(); err != nil {
		return "", storeErr(address, "close temporary file", err)
	}
	if s.beforeRename != nil {
		if err := s.beforeRename(tmp.Name()); err != nil {
			return "", storeErr(address, "before rename", err)
		}
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", storeErr(address, "rename into place", err)
	}
	done = true
	// Without this the rename itself may not survive a power loss.
	if err := syncDir(dir); err != nil {
		return "", storeErr(address, "sync directory", err)
	}
	return address, nil
}

// Open returns the stored file at address for reading. It validates the
// address before touching the filesystem.
func (s *FS) Open(ctx context.Context, address string) (Object, error) {
	if !ValidAddress(address) {
		return nil, fmt.Errorf("open cover %q: %w", address, ErrBadAddress)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open cover %s: %w", address, err)
	}
	f, err := os.Open(s.path(address))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open cover %s: %w", address, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("open cover %s: %w", address, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("open cover %s: %w", address, err)
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("open cover %s: not a regular file: %w", address, ErrNotFound)
	}
	return fileObject{f, fi.Size()}, nil
}

type fileObject struct {
	*os.File
	size int64
}

func (o fileObject) Size() int64 { return o.size }

// Has reports whether the file of address is stored: a regular file, of
// size bytes unless size is negative. It is the one check of a stored file,
// for `lectern verify`, the archive's checkpoint and its sweep alike. A
// malformed address is an error.
func (s *FS) Has(ctx context.Context, address string, size int64) (bool, error) {
	path, err := s.Path(address)
	if err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("check %s: %w", path, err)
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("check %s: %w", path, err)
	}
	return fi.Mode().IsRegular() && (size < 0 || fi.Size() == size), nil
}

// List calls fn with every stored object, in no particular order; files that
// are not content addresses in their place (an interrupted write's .put-*)
// are left out. A store whose directory does not exist yet is empty.
func (s *FS) List(ctx context.Context, fn func(address string, size int64) error) error {
	err := filepath.WalkDir(s.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == s.Dir {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		name := d.Name()
		if !ValidAddress(name) || s.path(name) != path {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return fn(name, fi.Size())
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", s.Dir, err)
	}
	return nil
}

// Where is the file of address, for reports.
func (s *FS) Where(address string) string {
	if !ValidAddress(address) {
		return "(not a content address)"
	}
	return s.path(address)
}

// URL is the store as a BLOB_URL-style location.
func (s *FS) URL() string { return (&url.URL{Scheme: "file", Path: s.Dir}).String() }

// Path is where address is stored (whether or not it is), for reports; a
// malformed address is ErrBadAddress, never a path.
func (s *FS) Path(address string) (string, error) {
	if !ValidAddress(address) {
		return "", fmt.Errorf("stored file %q: %w", address, ErrBadAddress)
	}
	return s.path(address), nil
}

func (s *FS) path(address string) string {
	return filepath.Join(s.Dir, address[0:2], address[2:4], address)
}

// mkdirs creates the store root and the two shard directories above a Cover
// as needed, syncing each parent that gained an entry so that the new
// directories survive a crash along with the file.
func (s *FS) mkdirs(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	// The root's own parents too (ARCHIVE_DIR/pages on a new volume, a
	// restore's directory): made as needed.
	if _, err := os.Stat(filepath.Dir(s.Dir)); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(s.Dir), 0o755); err != nil {
			return err
		}
	}
	for _, d := range []string{s.Dir, filepath.Dir(dir), dir} {
		err := os.Mkdir(d, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := syncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func storeErr(address, step string, err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("store cover %s: %s: %w: %w", address, step, ErrVolumeFull, err)
	}
	return fmt.Errorf("store cover %s: %s: %w", address, step, err)
}
