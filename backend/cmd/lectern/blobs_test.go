package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/s3test"
)

// An Owner's move from the volume to a bucket: blobs copy, verify on the
// bucket, a second copy that finds everything there, then serving from the
// bucket is what verify judges. The secret appears in no output.
func TestBlobsCopyMovesAVolumeToABucket(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	srv.Bucket(t, "moved")
	env := map[string]string{"DATA_DIR": t.TempDir()}
	f := newVerifyFixture(t, env)
	for _, kv := range srv.Env("moved", "lectern") {
		k, v, _ := strings.Cut(kv, "=")
		if k != "BLOB_URL" {
			env[k] = v
		}
	}
	to := "s3://moved/lectern"

	code, out, errOut := runCmd(t, env, "", "blobs", "copy", "--to", to)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "Covers: 2 in file://")
	require.Contains(t, out, "2 copied")
	require.Contains(t, out, "archived pages: 1 in")
	require.Contains(t, out, "every address the database names is at "+to)
	require.FileExists(t, filepath.Join(srv.Root, "moved", "lectern", "covers", f.coverA[:2], f.coverA[2:4], f.coverA))
	require.FileExists(t, filepath.Join(srv.Root, "moved", "lectern", "pages", f.page[:2], f.page[2:4], f.page))

	code, out, errOut = runCmd(t, env, "", "blobs", "copy", "--to", to)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "0 copied (0.0 MB), 2 already there", "a second run copies only what is new")

	env["BLOB_URL"] = to
	code, out = f.verify("--hash")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Covers in s3://moved/lectern/covers: 2 named, 2 present")
	// A Cover lost from the bucket is missing there.
	require.NoError(t, os.Remove(filepath.Join(srv.Root, "moved", "lectern", "covers", f.coverB[:2], f.coverB[2:4], f.coverB)))
	code, out = f.verify()
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "missing Cover "+f.coverB+": named by the database, no file at s3://moved/lectern/covers/")

	// A wrong secret: a clear failure naming the bucket, never the secret.
	env["S3_SECRET_ACCESS_KEY"] = "not-" + s3test.SecretKey
	code, out, errOut = runCmd(t, env, "", "blobs", "copy", "--to", "s3://moved/other")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "s3://moved/other")
	require.NotContains(t, out+errOut, s3test.SecretKey)
	code, out, errOut = runCmd(t, env, "", "verify")
	require.Equal(t, 1, code)
	require.NotContains(t, out+errOut, s3test.SecretKey)
}

// backup create and restore as an Owner runs them.
func TestBackupCommands(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATA_DIR": t.TempDir()}
	f := newVerifyFixture(t, env)
	dir := filepath.Join(t.TempDir(), "nightly")
	code, out, errOut := runCmd(t, env, "", "backup", "create", dir)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "3 objects copied")

	code, _, errOut = runCmd(t, env, "", "backup", "restore", dir)
	require.Equal(t, 3, code, "the deployment's own database is not empty")
	require.Contains(t, errOut, "not empty")

	env["DATABASE_URL"] = pgtest.NewEmptyURL(t)
	env["DATA_DIR"] = t.TempDir()
	code, out, errOut = runCmd(t, env, "", "backup", "restore", dir)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "3 objects copied")
	code, out = f.verify()
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "2 named, 2 present")
}
