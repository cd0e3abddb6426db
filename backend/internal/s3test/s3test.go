// Package s3test runs a real S3-compatible server for tests: Versity's S3
// gateway (versitygw v1.8.0) over a temporary directory on loopback. It is
// not an in-memory fake: requests are signed, checked and answered as a
// bucket would (ETags, Content-MD5, errors, ranges).
//
// The binary is found by Binary: $VERSITYGW, else ~/.cache/lectern/bin,
// where scripts/ensure-versitygw.sh builds it outside Lectern's go.mod.
// A missing binary FAILS the test (with the command to run): CI runs the
// S3 tests, never skips them.
package s3test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/lectern-reader/lectern/backend/internal/blob"
)

// Credentials of every test server. The secret is long and distinctive so a
// test can search errors and logs for it.
const (
	AccessKey = "lectern-test-access"
	SecretKey = "lectern-test-secret-d41d8cd98f00b204e980"
	Region    = "us-east-1"
)

// Binary returns the path of the versitygw binary, or an error that says
// how to get one.
func Binary() (string, error) {
	if p := os.Getenv("VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("VERSITYGW=%s: %w", p, err)
		}
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err == nil {
		p := filepath.Join(home, ".cache", "lectern", "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	return "", errors.New("no S3 server for the tests: versitygw is not in ~/.cache/lectern/bin (nor $VERSITYGW, nor PATH); run scripts/ensure-versitygw.sh (it builds github.com/versity/versitygw/cmd/versitygw@v1.8.0 there)")
}

// Server is one running gateway.
type Server struct {
	// Endpoint is its URL, for S3_ENDPOINT.
	Endpoint string
	// Root is the directory it serves: one subdirectory per bucket.
	Root string
	addr string
	bin  string
	log  string // the gateway's output, shown when it fails to start

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start runs a gateway for the test, stopped at its end.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Root: t.TempDir(), bin: bin, log: filepath.Join(t.TempDir(), "versitygw.log")}
	var last error
	for range 5 {
		// A free port, taken back by the gateway an instant later; another
		// process taking it in between is retried.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s.addr = ln.Addr().String()
		_ = ln.Close()
		if last = s.start(); last == nil {
			break
		}
	}
	if last != nil {
		t.Fatalf("start versitygw: %v", last)
	}
	s.Endpoint = "http://" + s.addr
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start() error {
	cmd := exec.Command(s.bin, "--access", AccessKey, "--secret", SecretKey, "--region", Region,
		"--port", s.addr, "--quiet", "posix", s.Root)
	out, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so Stop reaches it and nothing it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			_ = c.Close()
			break
		}
		select {
		case err := <-exited:
			b, _ := os.ReadFile(s.log)
			return fmt.Errorf("versitygw exited at start: %v\n%s", err, b)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			return errors.New("versitygw did not listen within 30s")
		}
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	go func() {
		<-exited
		s.mu.Lock()
		if s.cmd == cmd {
			s.cmd = nil
		}
		s.mu.Unlock()
	}()
	return nil
}

// Stop kills the gateway (the bucket becomes unreachable); its directory
// stays, so Restart brings the same objects back.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	for range 200 { // until the port is free again
		c, err := net.DialTimeout("tcp", s.addr, 100*time.Millisecond)
		if err != nil {
			return
		}
		_ = c.Close()
		time.Sleep(10 * time.Millisecond)
	}
}

// Restart starts the gateway again on the same address over the same root.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.start(); err != nil {
		t.Fatalf("restart versitygw: %v", err)
	}
}

// Options are blob's options for this server.
func (s *Server) Options() blob.S3Options {
	return blob.S3Options{Endpoint: s.Endpoint, Region: Region, AccessKeyID: AccessKey, SecretAccessKey: SecretKey}
}

// Env is the environment of a `lectern` process storing in bucket/prefix.
func (s *Server) Env(bucket, prefix string) []string {
	return []string{"BLOB_URL=s3://" + bucket + "/" + prefix, "S3_ENDPOINT=" + s.Endpoint, "S3_REGION=" + Region,
		"S3_ACCESS_KEY_ID=" + AccessKey, "S3_SECRET_ACCESS_KEY=" + SecretKey}
}

// Bucket creates a bucket named name (through the S3 API, as an Owner would).
func (s *Server) Bucket(t testing.TB, name string) string {
	t.Helper()
	c, err := minio.New(s.addr, &minio.Options{Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""), Region: Region, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.MakeBucket(ctx, name, minio.MakeBucketOptions{Region: Region}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}

// Files lists the files under the server's root: the objects as the
// gateway lays them out (root/bucket/key).
func (s *Server) Files(t testing.TB) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(s.Root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(s.Root, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
