package blob

import (
	"bytes"
	"container/list"
	"context"
	"fmt"
	"io"
	"sync"
)

// Cached keeps the bytes of recently read objects in memory in front of a
// slower Store (a bucket), up to Max bytes, least recently used first out
// (COVER_CACHE_BYTES). Objects never change under an address, so nothing
// cached is ever stale; only reads fill it.
type Cached struct {
	Store
	max int64

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
// page image must not empty the cache of Covers).
func (c *Cached) Open(ctx context.Context, address string) (Object, error) {
	if b, ok := c.get(address); ok {
		return memObject{bytes.NewReader(b)}, nil
	}
	o, err := c.Store.Open(ctx, address)
	if err != nil {
		return nil, err
	}
	if o.Size() > c.max/8 {
		return o, nil
	}
	defer o.Close()
	b := make([]byte, o.Size())
	if _, err := io.ReadFull(o, b); err != nil {
		return nil, fmt.Errorf("read %s: %w: %w", c.Where(address), ErrUnavailable, err)
	}
	c.add(address, b)
	return memObject{bytes.NewReader(b)}, nil
}

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
