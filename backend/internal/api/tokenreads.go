package api

import (
	"context"
	"sync"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/store"
)

// tokenReads shares token reads between concurrent requests: a request
// waits for the next read of the tokens, which begins only after it
// arrived, and many requests (of one Reader or several) are answered by
// that one read (store.ReadersByTokens). Each answer is therefore as exact
// as a read of its own: a list version committed before the request
// arrived is seen, and a token revoked before it arrived fails at once
// (docs/adr/0017). A panel refresh's 304 is this read and nothing more, so
// under load sharing it is most of the 304's cost saved.
type tokenReads struct {
	mu      sync.Mutex
	pending map[string][]chan tokenRead // by token hash, waiting for the next read
	running bool                        // a goroutine is reading
}

type tokenRead struct {
	reader store.Reader
	err    error
}

// tokenReadTimeout bounds one shared read, which no single request's
// context may cancel.
const tokenReadTimeout = 10 * time.Second

// read returns the Reader holding the live token with this hash, or
// store.ErrNotFound.
func (t *tokenReads) read(ctx context.Context, st *store.Store, hash []byte) (store.Reader, error) {
	ch := make(chan tokenRead, 1)
	t.mu.Lock()
	if t.pending == nil {
		t.pending = map[string][]chan tokenRead{}
	}
	t.pending[string(hash)] = append(t.pending[string(hash)], ch)
	if !t.running {
		t.running = true
		go t.loop(st)
	}
	t.mu.Unlock()
	select {
	case r := <-ch:
		return r.reader, r.err
	case <-ctx.Done():
		return store.Reader{}, ctx.Err()
	}
}

// loop reads the waiting tokens, one read at a time, until none wait.
func (t *tokenReads) loop(st *store.Store) {
	for {
		t.mu.Lock()
		batch := t.pending
		if len(batch) == 0 {
			t.running = false
			t.mu.Unlock()
			return
		}
		t.pending = make(map[string][]chan tokenRead, len(batch))
		t.mu.Unlock()

		hashes := make([][]byte, 0, len(batch))
		for h := range batch {
			hashes = append(hashes, []byte(h))
		}
		ctx, cancel := context.WithTimeout(context.Background(), tokenReadTimeout)
		readers, err := st.ReadersByTokens(ctx, hashes)
		cancel()
		for h, chans := range batch {
			r := tokenRead{err: err}
			if err == nil {
				var ok bool
				if r.reader, ok = readers[h]; !ok {
					r.err = store.ErrNotFound
				}
			}
			for _, ch := range chans {
				ch <- r
			}
		}
	}
}
