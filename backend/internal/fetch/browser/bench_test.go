package browser

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// BenchmarkReadCleared compares one browser read of a page with no challenge
// against a plain HTTP GET of the same page from the same loopback server, in
// the same run. Both reuse their connections between iterations (the plain
// client keeps its keep-alive connection; the browser its proxy tunnel).
func BenchmarkReadCleared(b *testing.B) {
	e := sharedEnv(b)
	s := newSite(b, e.net, "cleared")
	hosts := []string{s.host}

	b.Run("browser", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.b.Read(deadline(b, 20*time.Second), s.url("/plain"), hosts, htmlRead, realArrived); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("http.Get", func(b *testing.B) {
		c := insecureClient()
		for b.Loop() {
			resp, err := c.Get(s.srv.URL + "/plain")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatal(resp.Status)
			}
		}
	})
}

// BenchmarkReadChallenge is the time for a read through an interstitial that
// clears itself after 1.5 s; every iteration uses a fresh hostname, so no
// clearance cookie is carried over.
func BenchmarkReadChallenge(b *testing.B) {
	e := sharedEnv(b)
	i := 0
	for b.Loop() {
		i++
		s := newSite(b, e.net, fmt.Sprint("c", i))
		if _, err := e.b.Read(deadline(b, 20*time.Second), s.url("/challenge"), []string{s.host}, htmlRead, realArrived); err != nil {
			b.Fatal(err)
		}
	}
}
