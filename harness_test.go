package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"errata/store/storetest"
)

// This file is the one harness of the end-to-end tests of package main. They
// run the real program on a database of the test's own: through run() in
// this process (serve), or as a child process (spawn) when a test must kill
// or signal it. The child is this test binary: TestMain runs main() instead
// of the tests when childEnv is set.
//
// Each top-level test is a group of its own, with its own database, server,
// ports and temporary folders, that builds its fixtures once; most run in
// parallel (t.Parallel). Those that do not run first, one at a time: the
// ones that time answers against a contract (TestPostgresOutage,
// TestObjectStoreOutage, TestSMTPDelivery) or a server's timeouts
// (TestSlowClientsAreCutOff, the SIGTERM tests), and
// TestKilledDuringAssemblyCompletesAfterRestart, which counts a job's
// attempts under a lease of 2 s.

const childEnv = "ERRATA_TEST_RUN_MAIN"

// parallelGroups is how many groups run at once unless -parallel says: the
// groups wait on child processes, peers and timers more than they compute
// (the audit's charges wait up to two minutes for their server to return
// what their uploads used), so that three times the CPU count keeps a
// small machine busy, not swamped; at most 8, whose servers' pools stay
// well within dev.sh's PostgreSQL max_connections.
func parallelGroups() int { return min(8, max(6, 3*runtime.GOMAXPROCS(0))) }

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		os.Exit(0)
	}
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		flag.Set("test.parallel", strconv.Itoa(parallelGroups()))
	}
	code := m.Run()
	if shipped.dir != "" {
		os.RemoveAll(shipped.dir)
	}
	os.Exit(code)
}

// shipped is the server binary as shipped, built once for the tests that
// need it when ERRATA_BIN does not name one.
var shipped struct {
	once      sync.Once
	dir, path string
	err       error
}

// shippedBinary returns the server binary as shipped: ERRATA_BIN, which
// ./dev.sh test builds as the Dockerfile does (static, -trimpath, without
// the race detector). Without it, a CI run fails (dev.sh was bypassed);
// elsewhere the binary is built once, as dev.sh builds it, into a
// temporary folder that TestMain removes.
func shippedBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("ERRATA_BIN"); bin != "" {
		return bin
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("ERRATA_BIN is not set: run the tests with ./dev.sh test, which builds the static binary")
	}
	shipped.once.Do(func() {
		if shipped.dir, shipped.err = os.MkdirTemp("", "errata-bin-"); shipped.err != nil {
			return
		}
		shipped.path = filepath.Join(shipped.dir, "errata")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", shipped.path, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			shipped.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if shipped.err != nil {
		t.Fatalf("build the server binary as shipped: %v", shipped.err)
	}
	return shipped.path
}

// errataServer is errata serving one database on a loopback port.
type errataServer struct {
	url   string
	env   map[string]string // the program's whole environment
	logs  *lockedBuffer     // what the server wrote to stdout and stderr
	token string            // sent by api and getJSON

	cancel context.CancelFunc // ends an in-process server
	proc   *exec.Cmd          // a child server
	done   chan error         // the server's exit, once
	conn   *pgx.Conn
}

// newErrata prepares a server on a free port: a fresh database migrated with
// `errata migrate`, unless env names a DATABASE_URL of its own. env adds to
// or replaces the defaults. Nothing serves until serve or spawn.
func newErrata(t *testing.T, env map[string]string) *errataServer {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	s := &errataServer{
		url:  "http://" + addr,
		logs: &lockedBuffer{},
		env: map[string]string{
			"ADDR":       addr,
			"PUBLIC_URL": "http://" + addr,
			"SECRET_KEY": testSecretKey,
			"LOG_LEVEL":  "info",
		},
	}
	for k, v := range env {
		s.env[k] = v
	}
	if s.env["DATABASE_URL"] == "" {
		s.env["DATABASE_URL"] = storetest.NewDatabase(t)
	}
	s.cli(t, "migrate")
	t.Cleanup(func() {
		if s.done != nil {
			if err := s.stop(); err != nil {
				t.Errorf("errata serve: %v", err)
			}
		}
		if s.conn != nil {
			s.conn.Close(context.Background())
		}
		if t.Failed() {
			t.Logf("server log:\n%s", s.logs.String())
		}
	})
	return s
}

// startErrata is newErrata then serve.
func startErrata(t *testing.T, env map[string]string) *errataServer {
	t.Helper()
	s := newErrata(t, env)
	s.serve(t)
	return s
}

func (s *errataServer) getenv(key string) string { return s.env[key] }

// serve runs `errata serve` in this process until stop or the test's end,
// and waits until it is ready.
func (s *errataServer) serve(t *testing.T) {
	t.Helper()
	// The runtime's memory limit is the process's: a server in the test's
	// process would set it for every test (MEMORY_LIMIT=auto). A spawned
	// server keeps the default.
	if _, ok := s.env["MEMORY_LIMIT"]; !ok {
		s.env["MEMORY_LIMIT"] = "off"
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan error, 1)
	go func() { s.done <- run(ctx, []string{"serve"}, s.getenv, s.logs, s.logs) }()
	s.waitReady(t)
}

// spawn runs `errata serve` as a child process until stop, kill or the
// test's end, and waits until it is ready. The child is this test binary,
// built with the race detector when the tests are.
func (s *errataServer) spawn(t *testing.T) {
	t.Helper()
	s.startChild(t, exec.Command(os.Args[0], "serve"), childEnv+"=1")
}

// spawnShipped is spawn with the server binary as shipped (shippedBinary),
// for the tests that measure the server's memory: the race detector
// multiplies a program's memory by 5 to 10, so a bound measured under it
// says little about the server that runs in production.
func (s *errataServer) spawnShipped(t *testing.T) {
	t.Helper()
	s.startChild(t, exec.Command(shippedBinary(t), "serve"))
}

// startChild starts cmd with the server's environment and env, and waits until
// it is ready.
func (s *errataServer) startChild(t *testing.T, cmd *exec.Cmd, env ...string) {
	t.Helper()
	cmd.Env = append(env, "PATH="+os.Getenv("PATH"), "TMPDIR="+os.TempDir())
	for k, v := range s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.proc, s.done = cmd, make(chan error, 1)
	go func() { s.done <- cmd.Wait() }()
	s.waitReady(t)
}

// waitReady polls /readyz until it answers 200.
func (s *errataServer) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get(s.url + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case err := <-s.done:
			s.done = nil
			t.Fatalf("errata serve stopped before it was ready: %v\n%s", err, s.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("errata did not become ready on %s: %v", s.url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the server as SIGTERM does (a child gets the signal) and
// returns how it exited.
func (s *errataServer) stop() error {
	if s.proc != nil {
		s.proc.Process.Signal(syscall.SIGTERM)
	} else {
		s.cancel()
	}
	return s.wait()
}

// kill ends a child server at once, as a crash or the OOM killer does.
func (s *errataServer) kill(t *testing.T) {
	t.Helper()
	if s.proc == nil {
		t.Fatal("kill needs a spawned server")
	}
	s.proc.Process.Kill()
	s.wait()
}

// wait waits for the server's exit and returns its error.
func (s *errataServer) wait() error {
	err := <-s.done
	s.done, s.proc, s.cancel = nil, nil, nil
	return err
}

// cli runs an errata command (migrate, admin ...) on the server's database
// and returns its trimmed standard output.
func (s *errataServer) cli(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), args, s.getenv, &stdout, &stderr); err != nil {
		t.Fatalf("errata %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// user creates a user with the admin commands and returns a new token of
// theirs with scopes (comma-separated).
func (s *errataServer) user(t *testing.T, email, scopes string) string {
	t.Helper()
	s.cli(t, "admin", "create-user", "--email", email, "--name", "E2E user")
	return s.cli(t, "admin", "create-token", "--email", email, "--scopes", scopes)
}

// api sends a JSON request with s.token and returns the status and body.
func (s *errataServer) api(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return res.StatusCode, b
}

// getJSON sends an authenticated GET, decodes a 200 answer into v and
// returns the status.
func (s *errataServer) getJSON(t *testing.T, path string, v any) int {
	t.Helper()
	status, body := s.api(t, "GET", path, nil)
	if status == http.StatusOK {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, body)
		}
	}
	return status
}

// db returns a connection to the server's database for checks of its rows.
func (s *errataServer) db(t *testing.T) *pgx.Conn {
	t.Helper()
	if s.conn == nil {
		c, err := pgx.Connect(context.Background(), s.env["DATABASE_URL"])
		if err != nil {
			t.Fatal(err)
		}
		s.conn = c
	}
	return s.conn
}

// count returns the single number a query answers.
func (s *errataServer) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.db(t).QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// setupAcme gives s a token of a user who owns organization acme with
// project web.
func setupAcme(t *testing.T, s *errataServer) {
	t.Helper()
	s.token = s.user(t, "ops@example.com", "project:releases,project:read,project:write,org:read")
	s.cli(t, "admin", "create-org", "--slug", "acme", "--owner", "ops@example.com")
	s.cli(t, "admin", "create-project", "--org", "acme", "--slug", "web")
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
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

// sentryCLI is one sentry-cli binary pointed at a server, an organization
// and its project "web".
type sentryCLI struct {
	bin, url, token, org string
	home                 string // HOME and working folder
	project              string // SENTRY_PROJECT; "" sets none
}

// newSentryCLI returns the sentry-cli that the environment variable env
// names (dev.sh test installs them); the test fails without it.
func newSentryCLI(t *testing.T, env string, s *errataServer, org string) sentryCLI {
	t.Helper()
	bin := os.Getenv(env)
	if bin == "" {
		t.Fatalf("%s is not set: run the tests with ./dev.sh test, which installs sentry-cli", env)
	}
	return sentryCLI{bin: bin, url: s.url, token: s.token, org: org, home: t.TempDir(), project: "web"}
}

// withoutProject returns c with no project set: sentry-cli then uploads
// through the release, as clients that predate artifact bundles do.
func (c sentryCLI) withoutProject() sentryCLI {
	c.project = ""
	return c
}

// in returns c working in dir, also its HOME.
func (c sentryCLI) in(dir string) sentryCLI {
	c.home = dir
	return c
}

// cliResult is what a sentry-cli run printed and how it exited.
type cliResult struct {
	stdout, stderr string
	code           int
}

func (c sentryCLI) run(t *testing.T, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Dir = c.home
	cmd.Env = []string{
		"HOME=" + c.home,
		"PATH=" + os.Getenv("PATH"),
		"SENTRY_URL=" + c.url,
		"SENTRY_AUTH_TOKEN=" + c.token,
		"SENTRY_ORG=" + c.org,
		"SENTRY_DISABLE_UPDATE_CHECK=1",
		"SENTRY_LOG_LEVEL=warn",
	}
	if c.project != "" {
		cmd.Env = append(cmd.Env, "SENTRY_PROJECT="+c.project)
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
