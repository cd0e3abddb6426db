package api

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/face"
)

func TestListCacheKeepsItsCapLeastRecentlyUsedFirstOut(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 1000)
	per := int64(len(body)) + entryOverhead
	c := NewListCache(3 * per)
	for r := int64(1); r <= 3; r++ {
		c.Put(listKey{Reader: r, Version: 1, Enc: face.Gzip}, body)
	}
	_, ok := c.Get(listKey{Reader: 1, Version: 1, Enc: face.Gzip}) // 1 is now the most recent
	require.True(t, ok)
	c.Put(listKey{Reader: 4, Version: 1, Enc: face.Gzip}, body)
	_, ok = c.Get(listKey{Reader: 2, Version: 1, Enc: face.Gzip})
	require.False(t, ok, "the least recently used list went first")
	for _, r := range []int64{1, 3, 4} {
		_, ok = c.Get(listKey{Reader: r, Version: 1, Enc: face.Gzip})
		require.True(t, ok, "reader %d", r)
	}
	size, maxBytes, entries, hits, misses := c.Stats()
	require.Equal(t, 3*per, size)
	require.Equal(t, 3*per, maxBytes)
	require.Equal(t, 3, entries)
	require.EqualValues(t, 4, hits)
	require.EqualValues(t, 1, misses)

	c.Put(listKey{Reader: 5, Version: 1}, bytes.Repeat([]byte("y"), int(3*per)))
	_, ok = c.Get(listKey{Reader: 5, Version: 1})
	require.False(t, ok, "a body over the cap is not kept")
	_, _, entries, _, _ = c.Stats()
	require.Equal(t, 3, entries, "nor does it push the others out")
}

func TestListCacheDropsOlderVersions(t *testing.T) {
	c := NewListCache(1 << 20)
	old := listKey{Reader: 1, Kind: "manga", Version: 7, Enc: face.Zstd}
	c.Put(old, []byte("v7 zstd"))
	c.Put(listKey{Reader: 1, Kind: "manga", Version: 7, Enc: face.Gzip}, []byte("v7 gzip"))
	other := listKey{Reader: 1, Kind: "novel", Version: 7, Enc: face.Zstd}
	c.Put(other, []byte("novels v7"))

	c.Put(listKey{Reader: 1, Kind: "manga", Version: 8, Enc: face.Zstd}, []byte("v8 zstd"))
	_, ok := c.Get(old)
	require.False(t, ok, "a newer version replaces every coding of the older")
	_, ok = c.Get(listKey{Reader: 1, Kind: "manga", Version: 7, Enc: face.Gzip})
	require.False(t, ok)
	got, ok := c.Get(other)
	require.True(t, ok, "the other Library keeps its list")
	require.Equal(t, "novels v7", string(got))

	// A slow replica's read of an older version does not come back.
	c.Put(old, []byte("v7 again"))
	_, ok = c.Get(old)
	require.False(t, ok)
	_, _, entries, _, _ := c.Stats()
	require.Equal(t, 2, entries)
}

func TestNilListCacheKeepsNothing(t *testing.T) {
	var c *ListCache
	c.Put(listKey{Reader: 1}, []byte("x"))
	_, ok := c.Get(listKey{Reader: 1})
	require.False(t, ok)
	c = NewListCache(0)
	c.Put(listKey{Reader: 1}, []byte("x"))
	_, ok = c.Get(listKey{Reader: 1})
	require.False(t, ok, "LIST_CACHE_BYTES=0 keeps none")
}
