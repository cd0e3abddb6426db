package api

import (
	"container/list"
	"sync"

	"github.com/lectern-reader/lectern/backend/internal/face"
)

// listKey names one encoded Bookmark list: whose, which Library, at which
// list version, in which coding. The Reader is part of the key, so one
// Reader's list is never another's.
type listKey struct {
	Reader  int64
	Kind    string
	Version int64
	Enc     face.Encoding
}

// entryOverhead is what an entry costs besides its body (key, list
// element, map slot), counted so that many tiny lists cannot exceed the cap.
const entryOverhead = 160

// ListCache keeps encoded Bookmark lists, least recently used first out,
// within a byte cap (LIST_CACHE_BYTES). An entry never goes stale: its key
// holds the list version read from Postgres, and a new version is a new
// key. Entries of older versions are dropped as soon as a newer one is put,
// so the cap holds current lists. Safe for concurrent use.
type ListCache struct {
	max int64

	mu      sync.Mutex
	size    int64
	lru     *list.List // of *listEntry, most recent at the front
	entries map[listKey]*list.Element
	// newest is the newest version put per Reader and Library.
	newest       map[readerKind]int64
	hits, misses uint64
}

type readerKind struct {
	Reader int64
	Kind   string
}

type listEntry struct {
	key  listKey
	body []byte
}

// NewListCache returns a cache of at most maxBytes; 0 or less caches
// nothing.
func NewListCache(maxBytes int64) *ListCache {
	return &ListCache{max: maxBytes, lru: list.New(), entries: map[listKey]*list.Element{}, newest: map[readerKind]int64{}}
}

// Get returns the body cached under k.
func (c *ListCache) Get(k listKey) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[k]
	if !ok {
		c.misses++
		return nil, false
	}
	c.hits++
	c.lru.MoveToFront(el)
	return el.Value.(*listEntry).body, true
}

// Put caches body under k, unless a newer version of the same list is
// already cached or the body alone exceeds the cap.
func (c *ListCache) Put(k listKey, body []byte) {
	if c == nil {
		return
	}
	cost := int64(len(body)) + entryOverhead
	if cost > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	rk := readerKind{k.Reader, k.Kind}
	switch old, ok := c.newest[rk]; {
	case ok && old > k.Version:
		return
	case ok && old < k.Version:
		for _, enc := range []face.Encoding{face.Identity, face.Gzip, face.Zstd} {
			if el, ok := c.entries[listKey{k.Reader, k.Kind, old, enc}]; ok {
				c.remove(el)
			}
		}
	}
	if el, ok := c.entries[k]; ok {
		c.remove(el)
	}
	c.newest[rk] = k.Version
	c.entries[k] = c.lru.PushFront(&listEntry{key: k, body: body})
	c.size += cost
	for c.size > c.max {
		c.remove(c.lru.Back())
	}
}

func (c *ListCache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*listEntry)
	delete(c.entries, e.key)
	c.size -= int64(len(e.body)) + entryOverhead
	if !c.holds(e.key.Reader, e.key.Kind, e.key.Version) {
		// Nothing of this list is left: forget its version too, so the
		// map does not grow with every Reader ever served.
		if c.newest[readerKind{e.key.Reader, e.key.Kind}] == e.key.Version {
			delete(c.newest, readerKind{e.key.Reader, e.key.Kind})
		}
	}
}

func (c *ListCache) holds(reader int64, kind string, version int64) bool {
	for _, enc := range []face.Encoding{face.Identity, face.Gzip, face.Zstd} {
		if _, ok := c.entries[listKey{reader, kind, version, enc}]; ok {
			return true
		}
	}
	return false
}

// Stats reports the cache's size and counts, for the metrics.
func (c *ListCache) Stats() (bytes, maxBytes int64, entries int, hits, misses uint64) {
	if c == nil {
		return 0, 0, 0, 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size, c.max, c.lru.Len(), c.hits, c.misses
}
