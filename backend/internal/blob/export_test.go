package blob

import "os"

// Test seams for the external tests: a store whose write can fail part-way,
// and one that pauses between the synced temporary file and its rename.

func WithWrite(dir string, write func(f *os.File, b []byte) (int, error)) *FS {
	return &FS{Dir: dir, write: write}
}

func WithBeforeRename(dir string, beforeRename func(tmpPath string) error) *FS {
	return &FS{Dir: dir, beforeRename: beforeRename}
}
