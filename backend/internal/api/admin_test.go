package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
)

func TestOwnerEndpointsAreRefusedToReaders(t *testing.T) {
	t.Parallel()
	b := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	reader := b.Token("ann", false)
	owner := b.Token("olive", true)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/api/admin/status"},
		{"POST", "/api/admin/sites/asura/resume"},
		{"POST", "/api/admin/series/asura:solo-leveling/poll"},
		{"POST", "/api/admin/series/asura:solo-leveling/cover/refetch"},
	} {
		r := b.Do(tc.method, tc.path, reader, nil)
		require.Equal(t, http.StatusForbidden, r.Code, "%s %s", tc.method, tc.path)
		require.Contains(t, r.ErrorMsg(t), "Owner")
		require.Equal(t, http.StatusUnauthorized, b.Do(tc.method, tc.path, "", nil).Code, "%s %s", tc.method, tc.path)
		require.NotEqual(t, http.StatusForbidden, b.Do(tc.method, tc.path, owner, nil).Code, "%s %s", tc.method, tc.path)
	}
	var n int
	require.NoError(t, b.Store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'poll_series'`).Scan(&n))
	require.Zero(t, n, "a refused request queued no poll, and the Owner's about an unknown Series neither")
}
