package metrics_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/metrics"
	"github.com/lectern-reader/lectern/backend/internal/observe"
)

// The cost of the wrapped handler on a typical line (context attributes
// added, every value checked for secrets), with the bare JSON handler as the
// reference measured in the same run.
func BenchmarkLogLine(b *testing.B) {
	ctx := observe.WithLogAttrs(context.Background(), slog.String("request_id", "vm/abc-000123"),
		slog.String("series", "asura:solo-leveling"), slog.String("site", "asura"))
	line := func(b *testing.B, log *slog.Logger) {
		for b.Loop() {
			log.InfoContext(ctx, "poll: not modified", "ms", 42, "status", "not_modified", "url", "https://asurascans.com/comics/solo-leveling")
		}
	}
	b.Run("reference=json", func(b *testing.B) { line(b, slog.New(slog.NewJSONHandler(io.Discard, nil))) })
	b.Run("wrapped", func(b *testing.B) {
		line(b, slog.New(observe.LogHandler(slog.NewJSONHandler(io.Discard, nil))))
	})
}

// One request observed (counter and histogram), against a bare counter
// increment as the reference.
func BenchmarkObserveRequest(b *testing.B) {
	m := metrics.New(metrics.Options{})
	b.Run("reference=noop", func(b *testing.B) {
		n := 0
		for b.Loop() {
			n++
		}
		_ = n
	})
	b.Run("observe", func(b *testing.B) {
		for b.Loop() {
			m.ObserveRequest("/api/bookmarks/{key}", "PUT", 201, 3*time.Millisecond)
		}
	})
}
