package archive

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// A page image host's status decides the chapter job's fate: a refusal
// backs the Site off, a 5xx is retried, anything else will not change.
func TestJudgeReadsAnImageHostsStatus(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status int
		want   verdict
	}{
		{http.StatusForbidden, backOff},
		{http.StatusUnauthorized, backOff},
		{http.StatusTooManyRequests, backOff},
		{http.StatusBadGateway, retryLater},
		{http.StatusNotFound, giveUp},
	} {
		err := fmt.Errorf("page 3: fetch image https://cdn.test/3.jpg: %w", &gate.StatusError{Status: c.status})
		v, code, _ := judge(err)
		require.Equal(t, c.want, v, "status %d", c.status)
		require.Equal(t, fmt.Sprintf("http_%d", c.status), code)
	}
	v, code, _ := judge(fmt.Errorf("fetch image: %w", gate.ErrStatus))
	require.Equal(t, retryLater, v, "a status error without a status is not read as one")
	require.Equal(t, ProblemFetchFailed, code)
}

// An Owner's pause met in the middle of a chapter (the Policy refused a
// page) makes it wait, spending no attempt, as a back-off does.
func TestJudgeWaitsOutAnOwnersPause(t *testing.T) {
	t.Parallel()
	v, _, _ := judge(fmt.Errorf("page 2 of 4: request to cdn.test: %w (demonic)", fetch.ErrPaused))
	require.Equal(t, wait, v)
}

// A Site's own not-found page ends a chapter at once, as an HTTP 404 does:
// a browser Site's read has no status, only the page, so the page's words
// decide, on every Site alike. A page that merely did not look like itself
// is retried.
func TestJudgeGivesUpOnASitesNotFoundPage(t *testing.T) {
	t.Parallel()
	notFound := latest.Diagnose([]byte(`<html><head><title>Page Not Found - NovelFull</title></head><body>Sorry</body></html>`),
		latest.ProblemNotChapterPage, "no chapter text")
	v, code, _ := judge(fmt.Errorf("browser read: %w", notFound))
	require.Equal(t, giveUp, v)
	require.Equal(t, latest.ProblemNotFound, code)

	other := latest.Diagnose([]byte(`<html><head><title>Chapter 12</title></head><body>loading</body></html>`),
		latest.ProblemNotChapterPage, "no chapter text")
	v, code, _ = judge(fmt.Errorf("browser read: %w", other))
	require.Equal(t, retryLater, v)
	require.Equal(t, latest.ProblemNotChapterPage, code)
}
