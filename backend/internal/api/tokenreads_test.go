package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/credential"
)

// Concurrent refreshes share token reads (api's tokenReads): 200 of them
// over four Readers' tokens are each answered with their own Reader's list,
// and a token revoked is refused by the very next request, even while
// others are in flight.
func TestConcurrentRefreshesAreEachAnsweredForTheirOwnToken(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	names := []string{"ann", "bob", "cyd", "dee"}
	toks := make([]string, len(names))
	want := make([][]string, len(names))
	for i, n := range names {
		toks[i] = b.Token(n, false)
		// Reader i holds i+1 Series of their own: no two lists alike.
		putMany(t, b, toks[i], i*10, i*10+i+1)
		for n := i * 10; n < i*10+i+1; n++ {
			want[i] = append(want[i], seriesKey(n))
		}
	}
	keysOf := func(body []byte) []string {
		var list []struct{ Key string }
		if err := json.Unmarshal(body, &list); err != nil {
			return nil
		}
		var out []string
		for _, b := range list {
			out = append(out, b.Key)
		}
		slices.Sort(out)
		return out
	}

	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			r := b.Do("GET", "/api/bookmarks", toks[i%4], nil)
			if assert.Equal(t, http.StatusOK, r.Code, "request %d", i) {
				assert.Equal(t, want[i%4], keysOf(r.Body), "request %d, %s's token", i, names[i%4])
			}
		})
	}
	wg.Wait()

	// Revoke dee's token while refreshes of the others keep going: the next
	// request with it is refused.
	stop := make(chan struct{})
	for i := range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := b.Do("GET", "/api/bookmarks", toks[i], nil)
				assert.Equal(t, http.StatusOK, r.Code)
			}
		})
	}
	_, err := b.Store.Pool.Exec(context.Background(),
		`UPDATE api_tokens SET revoked_at = now() WHERE token_hash = $1`, credential.HashSecret(toks[3]))
	require.NoError(t, err)
	r := b.Do("GET", "/api/bookmarks", toks[3], nil)
	require.Equal(t, http.StatusUnauthorized, r.Code, "a revoked token fails at once")
	close(stop)
	wg.Wait()
	r = b.Do("GET", "/api/bookmarks", toks[0], nil)
	require.Equal(t, http.StatusOK, r.Code)
	require.Equal(t, want[0], keysOf(r.Body))
}
