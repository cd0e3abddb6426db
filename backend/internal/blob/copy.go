package blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/lectern-reader/lectern/backend/internal/imagetype"
)

// CopyReport counts what Copy did.
type CopyReport struct {
	Listed, Copied, Present int64
	Bytes                   int64
}

// Copy copies every object of from that to lacks, jobs at once. Each object
// is read whole, hashed (bytes that no longer hash to their address are an
// error, never copied), and stored through to.Put, which verifies what it
// stored. Objects already in to (same size) are left alone, so a second
// run copies only what is new; copying while a server writes is safe,
// because objects never change under an address.
func Copy(ctx context.Context, from, to Store, jobs int) (CopyReport, error) {
	if jobs < 1 {
		jobs = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type item struct {
		address string
		size    int64
	}
	work := make(chan item)
	var rep CopyReport
	var (
		once     sync.Once
		firstErr error
	)
	fail := func(err error) {
		once.Do(func() { firstErr = err; cancel() })
	}
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				copied, err := copyOne(ctx, from, to, it.address, it.size)
				if err != nil {
					fail(err)
					continue
				}
				if copied {
					atomic.AddInt64(&rep.Copied, 1)
					atomic.AddInt64(&rep.Bytes, it.size)
				} else {
					atomic.AddInt64(&rep.Present, 1)
				}
			}
		}()
	}
	err := from.List(ctx, func(address string, size int64) error {
		atomic.AddInt64(&rep.Listed, 1)
		select {
		case work <- item{address, size}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(work)
	wg.Wait()
	if firstErr != nil {
		return rep, firstErr
	}
	if err != nil {
		return rep, err
	}
	return rep, nil
}

func copyOne(ctx context.Context, from, to Store, address string, size int64) (bool, error) {
	has, err := to.Has(ctx, address, size)
	if err != nil {
		return false, err
	}
	if has {
		return false, nil
	}
	o, err := from.Open(ctx, address)
	if err != nil {
		return false, err
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", from.Where(address), err)
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != address {
		return false, fmt.Errorf("copy %s: its bytes do not hash to its address (corrupt; `lectern verify --hash` lists such): %w", from.Where(address), ErrNotVerified)
	}
	if _, err := to.Put(ctx, b, imagetype.Sniff(b)); err != nil {
		return false, fmt.Errorf("copy to %s: %w", to.Where(address), err)
	}
	return true, nil
}
