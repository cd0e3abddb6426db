package face_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/archive"
	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/poll"
	"github.com/lectern-reader/lectern/backend/internal/portability"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/tracker"
)

// Every domain error a face answers, wrapped as it travels, gets the status
// the API and the web UI have always given it: the table in status.go is
// the one place that decides.
func TestDomainErrorsAnswerTheirStatus(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err    error
		status int
	}{
		{store.ErrNotFound, http.StatusNotFound},
		{store.ErrConflict, http.StatusConflict},
		{store.ErrLastOwner, http.StatusConflict},
		{blob.ErrNotFound, http.StatusNotFound},
		{&bookmark.InvalidError{Msg: "site is required"}, http.StatusUnprocessableEntity},
		{archive.ErrNotHeld, http.StatusNotFound},
		{archive.ErrNotAllowed, http.StatusForbidden},
		{archive.ErrCapReached, http.StatusForbidden},
		{archive.ErrNothingArchived, http.StatusNotFound},
		{archive.ErrWrongLibrary, http.StatusBadRequest},
		{archive.ErrNotFound, http.StatusNotFound},
		{archive.ErrNotQueued, http.StatusConflict},
		{archive.ErrBadScope, http.StatusUnprocessableEntity},
		{archive.ErrBadSelection, http.StatusUnprocessableEntity},
		{poll.ErrNoSuchJob, http.StatusNotFound},
		{poll.ErrNoSuchSite, http.StatusNotFound},
		{poll.ErrJobDuplicate, http.StatusConflict},
		{portability.ErrFormat, http.StatusBadRequest},
		{portability.ErrUnreadable, http.StatusBadRequest},
		{portability.ErrTooMany, http.StatusRequestEntityTooLarge},
		{portability.ErrExportFormat, http.StatusBadRequest},
		{tracker.ErrUnknownTracker, http.StatusNotFound},
		{tracker.ErrNotConfigured, http.StatusUnprocessableEntity},
		{tracker.ErrNotLinked, http.StatusConflict},
		{tracker.ErrBadEntryID, http.StatusUnprocessableEntity},
		{tracker.ErrTokenRefused, http.StatusUnprocessableEntity},
		{tracker.ErrBadState, http.StatusUnprocessableEntity},
	} {
		wrapped := fmt.Errorf("handler: %w", fmt.Errorf("service: %w", c.err))
		require.Equal(t, c.status, face.Status(wrapped), "%v", c.err)
		require.True(t, face.Refused(wrapped), "%v", c.err)
	}
	plain := errors.New("disk on fire")
	for _, outage := range []error{tracker.ErrNoSecretKey, tracker.ErrTrackerDown} {
		require.Equal(t, http.StatusServiceUnavailable, face.Status(fmt.Errorf("link: %w", outage)), "%v", outage)
	}
	require.Equal(t, http.StatusInternalServerError, face.Status(plain))
	require.False(t, face.Refused(plain))
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// downStore is a store whose pool has nothing to connect to.
func downStore(t *testing.T) *store.Store {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	pool, err := pgxpool.New(context.Background(), fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=3", port))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return store.New(pool)
}

// A database outage is a 503 with Retry-After in both faces, worded for
// each; any other failure is a 500 that gives nothing away.
func TestServerErrors(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, outage := downStore(t).CountReaders(ctx)
	require.Error(t, outage)
	outage = fmt.Errorf("list bookmarks: %w", outage)
	req := httptest.NewRequest(http.MethodGet, "/api/bookmarks", nil)

	rec := httptest.NewRecorder()
	face.ServerError(rec, req, quiet(), outage)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Equal(t, face.RetryAfterUnavailable, rec.Header().Get("Retry-After"))
	require.Equal(t, "application/json; charset=utf-8", rec.Header().Get("Content-Type"))
	require.Equal(t, `{"error":"the database is unavailable; retry shortly"}`+"\n", rec.Body.String())

	rec = httptest.NewRecorder()
	status, heading, msg := face.FaultPage(rec, outage)
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, face.RetryAfterUnavailable, rec.Header().Get("Retry-After"))
	require.Equal(t, "Lectern is reconnecting", heading)
	require.Contains(t, msg, "database cannot be reached")

	bug := errors.New("nil map write in the planner")
	rec = httptest.NewRecorder()
	face.ServerError(rec, req, quiet(), bug)
	require.Equal(t, http.StatusInternalServerError, rec.Code)
	require.Empty(t, rec.Header().Get("Retry-After"))
	require.Equal(t, `{"error":"internal error; the server log has details"}`+"\n", rec.Body.String())

	rec = httptest.NewRecorder()
	status, heading, _ = face.FaultPage(rec, bug)
	require.Equal(t, http.StatusInternalServerError, status)
	require.Empty(t, rec.Header().Get("Retry-After"))
	require.Equal(t, "Something went wrong", heading)

	// A refusal that reaches the fault path by mistake is still no outage.
	rec = httptest.NewRecorder()
	face.ServerError(rec, req, quiet(), store.ErrNotFound)
	require.Equal(t, http.StatusInternalServerError, rec.Code)
	require.Empty(t, rec.Header().Get("Retry-After"))
}

// A refusal is {"error": "..."} at its code's status, the message as sent:
// JSON with nosniff is never HTML, so nothing is escaped for it.
func TestRefuse(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	face.Refuse(rec, fmt.Errorf("retry job 7: %w", poll.ErrJobDuplicate), "job 7 not retried: <already> & queued")
	require.Equal(t, http.StatusConflict, rec.Code)
	require.Equal(t, `{"error":"job 7 not retried: <already> & queued"}`+"\n", rec.Body.String())
}

func TestReaderInContext(t *testing.T) {
	t.Parallel()
	_, ok := face.ReaderFrom(context.Background())
	require.False(t, ok)
	got, ok := face.ReaderFrom(face.WithReader(context.Background(), store.Reader{ID: 7, Name: "ada", IsOwner: true}))
	require.True(t, ok)
	require.Equal(t, store.Reader{ID: 7, Name: "ada", IsOwner: true}, got)
}
