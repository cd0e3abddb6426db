package blob

import "os"

// Test seams for the external tests: a store whose write can fail part-way,
// and one that pauses between the synced temporary file and its rename.

func WithWrite(dir string, write func(f *os.File, b []byte) (int, error)) *Store {
	return &Store{Dir: dir, write: write}
}

func WithBeforeRename(dir string, beforeRename func(tmpPath string) error) *Store {
	return &Store{Dir: dir, beforeRename: beforeRename}
}
