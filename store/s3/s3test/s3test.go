// Package s3test runs a real S3-compatible server for tests: versitygw,
// which the test command installs (dev.sh's install_test_tools) and names
// in VERSITYGW. A test that wants it fails, not skips, without it.
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"errata/store/s3"
)

// Server is a running versitygw with its own directory and keys.
type Server struct {
	t       testing.TB
	bin     string
	dir     string
	addr    string
	Key     string
	Secret  string
	flags   []string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has exited
	stopped bool
}

// Start starts a versitygw on a free port of 127.0.0.1, serving a fresh
// directory with new keys, and stops it when the test ends. flags are
// more of versitygw's options, as "--virtual-domain", "example.test".
func Start(t testing.TB, flags ...string) *Server {
	t.Helper()
	bin := os.Getenv("VERSITYGW")
	if bin == "" {
		t.Fatal("VERSITYGW is not set: run the tests with ./dev.sh test, which installs versitygw")
	}
	secret := make([]byte, 20)
	rand.Read(secret)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := &Server{t: t, bin: bin, dir: t.TempDir(), addr: addr, Key: "errata-test", Secret: hex.EncodeToString(secret), flags: flags}
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// Endpoint is the server's base URL.
func (s *Server) Endpoint() string { return "http://" + s.addr }

// Config is a path-style configuration of the client for bucket on s,
// with short timeouts and retries fit for tests.
func (s *Server) Config(bucket string) s3.Config {
	return s3.Config{
		Bucket: bucket, Endpoint: s.Endpoint(), Region: "us-east-1",
		AccessKeyID: s.Key, SecretAccessKey: s3.Secret(s.Secret), PathStyle: true,
		Timeout: 10 * time.Second, DialTimeout: 2 * time.Second, Retries: 2,
	}
}

// Client returns a client of a new bucket on s.
func (s *Server) Client(bucket string) *s3.Client {
	s.t.Helper()
	c, err := s3.New(s.Config(bucket))
	if err != nil {
		s.t.Fatal(err)
	}
	if err := c.CreateBucket(context.Background()); err != nil {
		s.t.Fatal(err)
	}
	return c
}

// Stop ends the server (the process this package started) and waits for
// it; its directory stays for Restart.
func (s *Server) Stop() {
	if s.stopped {
		return
	}
	s.stopped = true
	s.cmd.Process.Kill()
	<-s.exited
}

// Restart starts the server again on the same port and directory, and
// waits until it accepts connections; a server that runs is left alone.
func (s *Server) Restart() {
	s.t.Helper()
	if s.cmd != nil && !s.stopped {
		return
	}
	args := append([]string{"-a", s.Key, "-s", s.Secret, "-p", s.addr}, s.flags...)
	cmd := exec.Command(s.bin, append(args, "posix", s.dir)...)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("versitygw: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.cmd, s.exited, s.stopped = cmd, exited, false
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-exited:
			s.stopped = true
			s.t.Fatalf("versitygw exited at start (is %s taken?)", s.addr)
		default:
		}
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			c.Close()
			// The answer must be this process's, not a stale one's.
			select {
			case <-exited:
				s.stopped = true
				s.t.Fatalf("versitygw exited at start (is %s taken?)", s.addr)
			case <-time.After(50 * time.Millisecond):
			}
			return
		}
		if time.Now().After(deadline) {
			s.Stop()
			s.t.Fatalf("versitygw did not listen on %s: %v", s.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
