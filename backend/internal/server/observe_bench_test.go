package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/lectern-reader/lectern/backend/internal/metrics"
	"github.com/lectern-reader/lectern/backend/internal/observe"
)

// The request middleware (request ID into the context, the count and
// histogram by route pattern, one JSON log line) on a trivial route, with
// the same router without it as the reference measured in the same run.
func BenchmarkObserveHTTP(b *testing.B) {
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) }
	router := func(observed bool) http.Handler {
		s := &Server{log: slog.New(observe.LogHandler(slog.NewJSONHandler(io.Discard, nil))), metrics: metrics.New(metrics.Options{})}
		r := chi.NewRouter()
		r.Use(middleware.RequestID)
		if observed {
			r.Use(s.observeHTTP)
		}
		r.Get("/api/bookmarks/{key}", ok)
		return r
	}
	run := func(b *testing.B, h http.Handler) {
		req := httptest.NewRequest(http.MethodGet, "/api/bookmarks/asura:solo-leveling", nil)
		for b.Loop() {
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
	}
	b.Run("reference=bare", func(b *testing.B) { run(b, router(false)) })
	b.Run("observed", func(b *testing.B) { run(b, router(true)) })
}
