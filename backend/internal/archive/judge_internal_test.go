package archive

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
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
