package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/store/storetest"
)

// e2eServer is errata started through run() on a database of the test's
// own.
type e2eServer struct {
	url   string
	env   map[string]string
	token string // every scope sentry-cli and the checks need
}

func (s *e2eServer) getenv(key string) string { return s.env[key] }

// startServer migrates a fresh database with `errata migrate`, serves it
// with `errata serve` on a free port until the test ends, and creates the
// user owner@e2e.io with a token through the admin commands.
func startServer(t *testing.T) *e2eServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &e2eServer{
		url: "http://" + addr,
		env: map[string]string{
			"DATABASE_URL": storetest.NewDatabase(t),
			"ADDR":         addr,
			"SECRET_KEY":   "e2e-secret",
			"LOG_LEVEL":    "warn",
		},
	}
	s.run(t, "migrate")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	logs := &lockedBuffer{}
	go func() { done <- run(ctx, []string{"serve"}, s.getenv, io.Discard, logs) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := http.Get(s.url + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-done:
			t.Fatalf("serve stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("errata did not become ready on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.run(t, "admin", "create-user", "--email", "owner@e2e.io", "--name", "Owner")
	s.token = s.run(t, "admin", "create-token", "--email", "owner@e2e.io",
		"--scopes", "project:releases,project:read,org:read")
	return s
}

// lockedBuffer is a buffer that the server's goroutines write to.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// run runs an errata command and returns its trimmed output.
func (s *e2eServer) run(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), args, s.getenv, &stdout, &stderr); err != nil {
		t.Fatalf("errata %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// getJSON sends an authenticated GET to the API and decodes the answer.
func (s *e2eServer) getJSON(t *testing.T, path string) (int, any) {
	t.Helper()
	req, err := http.NewRequest("GET", s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v any
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return res.StatusCode, v
}

// sentryCLI is one sentry-cli binary pointed at the server.
type sentryCLI struct {
	bin, org string
	srv      *e2eServer
	home     string
}

// cliResult is what a sentry-cli run printed and how it exited.
type cliResult struct {
	stdout, stderr string
	code           int
}

func (c sentryCLI) run(t *testing.T, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Dir = c.home
	cmd.Env = []string{
		"HOME=" + c.home,
		"PATH=" + os.Getenv("PATH"),
		"SENTRY_URL=" + c.srv.url,
		"SENTRY_AUTH_TOKEN=" + c.srv.token,
		"SENTRY_ORG=" + c.org,
		"SENTRY_PROJECT=web",
		"SENTRY_DISABLE_UPDATE_CHECK=1",
		"SENTRY_LOG_LEVEL=warn",
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := cliResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("sentry-cli %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// expect checks the exit code and that stdout has each of want.
func (r cliResult) expect(t *testing.T, code int, want ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("stdout does not have %q:\n%s\nstderr:\n%s", w, r.stdout, r.stderr)
		}
	}
}

// line returns the line of stdout that has s.
func (r cliResult) line(t *testing.T, s string) string {
	t.Helper()
	for l := range strings.SplitSeq(r.stdout, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	t.Fatalf("no line has %q:\n%s", s, r.stdout)
	return ""
}

// TestSentryCLI drives sentry-cli 2.x and 3.x against the real program:
// releases, deploys and the environments a deploy brings into being.
func TestSentryCLI(t *testing.T) {
	bins := []struct{ env, name string }{{"SENTRY_CLI_2", "2.58.6"}, {"SENTRY_CLI_3", "3.8.0"}}
	for _, b := range bins {
		if os.Getenv(b.env) == "" {
			t.Fatalf("%s is not set: run the tests with ./dev.sh test, which installs sentry-cli %s and sets it", b.env, b.name)
		}
	}
	srv := startServer(t)
	for i, b := range bins {
		bin := os.Getenv(b.env)
		t.Run(b.name, func(t *testing.T) {
			c := sentryCLI{bin: bin, org: fmt.Sprintf("cli%d", i+2), srv: srv, home: t.TempDir()}
			if out := c.run(t, "--version"); !strings.Contains(out.stdout, b.name) {
				t.Fatalf("%s is not sentry-cli %s: %q", bin, b.name, out.stdout)
			}
			srv.run(t, "admin", "create-org", "--slug", c.org, "--owner", "owner@e2e.io")
			srv.run(t, "admin", "create-project", "--org", c.org, "--slug", "web", "--name", "Web")
			for _, path := range []string{
				"/api/0/organizations/" + c.org + "/environments/?visibility=all",
				"/api/0/projects/" + c.org + "/web/environments/?visibility=all",
			} {
				if status, envs := srv.getJSON(t, path); status != http.StatusOK || len(envs.([]any)) != 0 {
					t.Fatalf("GET %s before any deploy: %d %v, want []", path, status, envs)
				}
			}
			for _, version := range []string{"1.0." + fmt.Sprint(i), "my.app@1.2.3+build." + fmt.Sprint(i)} {
				t.Run(version, func(t *testing.T) { driveRelease(t, c, version) })
			}
		})
	}
}

// driveRelease runs one release through its life with sentry-cli.
func driveRelease(t *testing.T, c sentryCLI, version string) {
	encoded := strings.ReplaceAll(version, "+", "%2B")
	releasePath := "/api/0/organizations/" + c.org + "/releases/" + encoded + "/"

	c.run(t, "releases", "new", version).expect(t, 0, "Created release "+version)
	c.run(t, "releases", "new", version).expect(t, 0, "Created release "+version)
	status, rel := c.srv.getJSON(t, releasePath)
	if status != http.StatusOK {
		t.Fatalf("GET release: %d %v", status, rel)
	}
	got := rel.(map[string]any)
	if got["version"] != version || got["dateReleased"] != nil {
		t.Errorf("after new: version %v, dateReleased %v", got["version"], got["dateReleased"])
	}
	if diff := cmp.Diff([]any{map[string]any{"id": got["projects"].([]any)[0].(map[string]any)["id"], "slug": "web", "name": "Web"}}, got["projects"]); diff != "" {
		t.Errorf("projects (-want +got):\n%s", diff)
	}

	list := c.run(t, "releases", "list")
	list.expect(t, 0, "Released", "Version")
	if l := list.line(t, version); !strings.Contains(l, "(unreleased)") {
		t.Errorf("list before finalize: %q, want (unreleased)", l)
	}
	c.run(t, "releases", "info", version).expect(t, 0, version, "Date created")

	c.run(t, "releases", "finalize", version).expect(t, 0, "Finalized release "+version)
	if _, rel := c.srv.getJSON(t, releasePath); rel.(map[string]any)["dateReleased"] == nil {
		t.Errorf("dateReleased is null after finalize: %v", rel)
	}
	if l := c.run(t, "releases", "list").line(t, version); strings.Contains(l, "(unreleased)") {
		t.Errorf("list after finalize: %q", l)
	}

	c.run(t, "deploys", "new", "-r", version, "-e", "production").
		expect(t, 0, "Created new deploy unnamed for 'production'")
	deploys := c.run(t, "deploys", "list", "-r", version)
	deploys.expect(t, 0, "Environment")
	if l := deploys.line(t, "production"); !strings.Contains(l, "unnamed") {
		t.Errorf("deploys list: %q", l)
	}
	if _, rel := c.srv.getJSON(t, releasePath); rel.(map[string]any)["deployCount"] != float64(1) {
		t.Errorf("deployCount after deploy: %v", rel)
	}
	for _, path := range []string{
		"/api/0/organizations/" + c.org + "/environments/",
		"/api/0/projects/" + c.org + "/web/environments/",
	} {
		status, envs := c.srv.getJSON(t, path)
		list, _ := envs.([]any)
		if status != http.StatusOK || len(list) != 1 || list[0].(map[string]any)["name"] != "production" {
			t.Errorf("GET %s after deploy: %d %v, want production once", path, status, envs)
		}
	}

	c.run(t, "releases", "delete", version).expect(t, 0, "Deleted release "+version+"!")
	// sentry-cli treats a 404 on delete as success with a notice.
	c.run(t, "releases", "delete", version).
		expect(t, 0, "Did nothing. Release with this version ("+version+") does not exist.")
	if status, _ := c.srv.getJSON(t, releasePath); status != http.StatusNotFound {
		t.Errorf("GET deleted release: %d", status)
	}
	if res := c.run(t, "releases", "info", version); res.code == 0 {
		t.Errorf("releases info of a deleted release exited 0:\n%s", res.stdout)
	}
}
