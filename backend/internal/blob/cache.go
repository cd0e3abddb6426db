package blob

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"golang.org/x/sync/singleflight"
)

// Cached keeps the bytes of recently read objects in memory in front of a
// slower Store (a bucket), up to Max bytes, least recently used first out
// (COVER_CACHE_BYTES). Objects never change under an address, so nothing
// cached is ever stale; only reads fill it.
type Cached struct {
	Store
	max int64

	group singleflight.Group

	mu      sync.Mutex
	size    int64
	order   *list.List // front: most recently used
	entries map[string]*list.Element
}

type cacheEntry struct {
	address string
	b       []byte
}

// NewCached puts a cache of max bytes in front of s; max ≤ 0 returns s.
func NewCached(s Store, max int64) Store {
	if max <= 0 {
		return s
	}
	return &Cached{Store: s, max: max, order: list.New(), entries: map[string]*list.Element{}}
}

// Open serves a cached object from memory, or reads the whole object from
// the store and keeps it when it fits in an eighth of the cache (one large
// page image must not empty the cache of Covers). Concurrent misses of one
// address share one read of the store (a Bookmark list's Covers are asked
// by many browsers at once after a restart).
func (c *Cached) Open(ctx context.Context, address string) (Object, error) {
	if b, ok := c.get(address); ok {
		return memObject{bytes.NewReader(b)}, nil
	}
	v, err, _ := c.group.Do(address, func() (any, error) {
		if b, ok := c.get(address); ok {
			return b, nil
		}
		o, err := c.Store.Open(ctx, address)
		if err != nil {
			return nil, err
		}
		defer o.Close()
		if o.Size() > c.max/8 {
			return nil, errTooLarge
		}
		b := make([]byte, o.Size())
		if _, err := io.ReadFull(o, b); err != nil {
			return nil, fmt.Errorf("read %s: %w: %w", c.Where(address), ErrUnavailable, err)
		}
		c.add(address, b)
		return b, nil
	})
	if err == nil {
		return memObject{bytes.NewReader(v.([]byte))}, nil
	}
	// Too large to keep, or the shared read ended with the context of
	// the request that started it: this request reads for itself.
	if errors.Is(err, errTooLarge) || (ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))) {
		return c.Store.Open(ctx, address)
	}
	return nil, err
}

var errTooLarge = errors.New("too large for the cache")

// CachedBytes is how many bytes the cache holds, for tests and metrics.
func (c *Cached) CachedBytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

func (c *Cached) get(address string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[address]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cacheEntry).b, true
}

func (c *Cached) add(address string, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[address]; ok {
		return
	}
	c.entries[address] = c.order.PushFront(&cacheEntry{address, b})
	c.size += int64(len(b))
	for c.size > c.max {
		last := c.order.Back()
		ent := last.Value.(*cacheEntry)
		c.order.Remove(last)
		delete(c.entries, ent.address)
		c.size -= int64(len(ent.b))
	}
}

type memObject struct{ *bytes.Reader }

func (memObject) Close() error { return nil }
