// Package blob is the content-addressed store of image bytes on a filesystem
// volume: Covers (COVER_DIR) and archived page images (ARCHIVE_DIR) alike.
//
// An object's address is the lowercase hex SHA-256 of its bytes, so a stored
// object never changes: a new image is a new address, which is what makes the
// Cover route's year-long immutable caching correct without any
// invalidation (docs/adr/0007-covers-content-addressed.md).
package blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
)

var (
	// ErrNotFound: nothing is stored at the address.
	ErrNotFound = errs.New(errs.NotFound, "cover not found")
	// ErrBadAddress: the string is not 64 lowercase hex digits.
	ErrBadAddress = errs.New(errs.Malformed, "malformed cover address")
	// ErrVolumeFull: the cover volume ran out of space; nothing was stored.
	ErrVolumeFull = errors.New("cover volume is full")
)

// Store is the content-addressed store rooted at Dir: the Cover whose address
// is abcd… lives at Dir/ab/cd/abcd…. The zero value with Dir set is ready to
// use and safe for concurrent use, including by several processes sharing Dir.
type Store struct {
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
func (s *Store) Put(ctx context.Context, b []byte, contentType string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("store cover: %w", err)
	}
	if got := imagetype.Sniff(b); got == "" || got != contentType {
		return "", fmt.Errorf("store cover: declared %q, bytes are %q: %w", contentType, got, imagetype.ErrNotImage)
	}
	sum := sha256.Sum256(b)
	address := hex.EncodeToString(sum[:])
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
func (s *Store) Open(address string) (*os.File, error) {
	if !ValidAddress(address) {
		return nil, fmt.Errorf("open cover %q: %w", address, ErrBadAddress)
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
	return f, nil
}

// Has reports whether the file of address is stored: a regular file, of
// size bytes unless size is negative. It is the one check of a stored file,
// for `lectern verify`, the archive's checkpoint and its sweep alike. A
// malformed address is an error.
func (s *Store) Has(address string, size int64) (bool, error) {
	path, err := s.Path(address)
	if err != nil {
		return false, err
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

// Path is where address is stored (whether or not it is), for reports; a
// malformed address is ErrBadAddress, never a path.
func (s *Store) Path(address string) (string, error) {
	if !ValidAddress(address) {
		return "", fmt.Errorf("stored file %q: %w", address, ErrBadAddress)
	}
	return s.path(address), nil
}

// ValidAddress reports whether a is a content address: exactly 64 lowercase
// hex digits. Nothing else may ever reach a filesystem path.
func ValidAddress(a string) bool {
	if len(a) != sha256.Size*2 {
		return false
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (s *Store) path(address string) string {
	return filepath.Join(s.Dir, address[0:2], address[2:4], address)
}

// mkdirs creates the store root and the two shard directories above a Cover
// as needed, syncing each parent that gained an entry so that the new
// directories survive a crash along with the file.
func (s *Store) mkdirs(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
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
