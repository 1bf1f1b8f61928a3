package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
)

// This file tests errata under faults: PostgreSQL stopped and started
// under load, the server killed during an assembly, SIGTERM under load,
// slow clients and oversized bodies.

// unavailableBody is the contract's answer while the database is down.
const unavailableBody = `{"detail":"Service Unavailable"}`

// pgCluster is a PostgreSQL cluster of one test's own, in a temporary
// folder with its Unix socket and no TCP port, that the test may stop and
// start. The shared cluster is never touched.
type pgCluster struct {
	bin, dir string
}

// newPGCluster creates and starts a cluster with the programs of
// PG_BINDIR (dev.sh test exports it). As root it runs them as postgres.
func newPGCluster(t *testing.T) *pgCluster {
	t.Helper()
	bin := os.Getenv("PG_BINDIR")
	if bin == "" {
		t.Fatal("PG_BINDIR is not set: run the tests with ./dev.sh test, which exports PostgreSQL's bin folder")
	}
	if _, err := os.Stat(filepath.Join(bin, "pg_ctl")); err != nil {
		t.Fatalf("PG_BINDIR=%s has no pg_ctl: %v", bin, err)
	}
	// Not t.TempDir: the postgres user must reach the folder.
	dir, err := os.MkdirTemp("", "errata-pg-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	c := &pgCluster{bin: bin, dir: dir}
	t.Cleanup(func() {
		c.command("pg_ctl", "-D", c.data(), "-m", "immediate", "-s", "stop").Run() //nolint:errcheck // it may be stopped
		os.RemoveAll(dir)
	})
	c.run(t, "initdb", "-D", c.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	c.start(t)
	return c
}

func (c *pgCluster) data() string { return filepath.Join(c.dir, "data") }

// url is the cluster's postgres database.
func (c *pgCluster) url() string {
	return "postgres://postgres@/postgres?host=" + c.dir + "&sslmode=disable"
}

func (c *pgCluster) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(c.bin, name)
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = c.dir
	return cmd
}

func (c *pgCluster) run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := c.command(name, args...).CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
		t.Fatalf("%s %s: %v\n%s\n%s", name, strings.Join(args, " "), err, out, log)
	}
}

// start starts the cluster and waits until it accepts connections. fsync
// is off (the machine does not crash), but synchronous_commit stays on: an
// immediate stop is a crash of PostgreSQL, and a commit that errata
// acknowledged must survive it.
func (c *pgCluster) start(t *testing.T) {
	t.Helper()
	c.run(t, "pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "postgres.log"), "-w", "-s", "start",
		"-o", "-c listen_addresses='' -k "+c.dir+" -c fsync=off -c full_page_writes=off -c max_connections=50")
}

// stop stops the cluster with mode (smart, fast or immediate) and waits
// until it is down.
func (c *pgCluster) stop(t *testing.T, mode string) {
	t.Helper()
	c.run(t, "pg_ctl", "-D", c.data(), "-m", mode, "-w", "-s", "stop")
}

// result is one request of a load and its answer.
type result struct {
	method, path   string
	sent, answered time.Time
	status         int
	header         http.Header
	body           []byte
	err            error
}

func (r result) latency() time.Duration { return r.answered.Sub(r.sent) }

func (r result) String() string {
	if r.err != nil {
		return fmt.Sprintf("%s %s: %v after %s", r.method, r.path, r.err, r.latency())
	}
	return fmt.Sprintf("%s %s: %d %s after %s", r.method, r.path, r.status, bytes.TrimSpace(r.body), r.latency())
}

// send sends one request with the server's token and records it.
func send(client *http.Client, s *errataServer, method, path, contentType string, body io.Reader) result {
	r := result{method: method, path: path, sent: time.Now()}
	req, err := http.NewRequest(method, s.url+path, body)
	if err != nil {
		r.err = err
		return r
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := client.Do(req)
	if err == nil {
		r.status, r.header = res.StatusCode, res.Header
		r.body, err = io.ReadAll(res.Body)
		res.Body.Close()
	}
	r.err, r.answered = err, time.Now()
	return r
}

// sendJSON sends v as a JSON body.
func sendJSON(client *http.Client, s *errataServer, method, path string, v any) result {
	b, _ := json.Marshal(v) // the tests' values always encode
	return send(client, s, method, path, "application/json", bytes.NewReader(b))
}

// load sends requests from several goroutines until finish and keeps
// every result.
type load struct {
	mu      sync.Mutex
	results []result
	stop    chan struct{}
	wg      sync.WaitGroup
}

// startLoad starts n goroutines; goroutine g sends its i-th request with
// next(g, i). After a transport error a goroutine pauses briefly, so that
// a refusing server is not spun against.
func startLoad(n int, next func(g, i int) result) *load {
	l := &load{stop: make(chan struct{})}
	for g := range n {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				r := next(g, i)
				l.mu.Lock()
				l.results = append(l.results, r)
				l.mu.Unlock()
				if r.err != nil {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	return l
}

// count returns how many results so far match cond.
func (l *load) count(cond func(result) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.results {
		if cond(r) {
			n++
		}
	}
	return n
}

// finish stops the load, waits for its requests and returns all results.
func (l *load) finish() []result {
	close(l.stop)
	l.wg.Wait()
	return l.results
}

func succeeded(r result) bool { return r.err == nil && r.status >= 200 && r.status < 300 }

// releaseLoad creates releases and lists them from 8 goroutines; the
// versions begin with prefix.
func releaseLoad(client *http.Client, s *errataServer, prefix string) *load {
	return startLoad(8, func(g, i int) result {
		if i%2 == 0 {
			return send(client, s, "GET", "/api/0/organizations/acme/releases/?limit=5", "", nil)
		}
		return sendJSON(client, s, "POST", "/api/0/organizations/acme/releases/",
			map[string]any{"version": fmt.Sprintf("%s-%d-%d", prefix, g, i), "projects": []string{"web"}})
	})
}

// maxOutageLatency bounds every answer while the database is down: the
// contract's "within a few seconds".
const maxOutageLatency = 5 * time.Second

// checkReleaseLoad checks the results of a releaseLoad through a fault:
// every answer is a 200, a 201 or a fast 503 with the contract's body
// (never a 500, never a hang), every acknowledged release is stored, and
// no release is half-written. It returns the largest latency.
func checkReleaseLoad(t *testing.T, s *errataServer, results []result) time.Duration {
	t.Helper()
	var bad []result
	var slowest time.Duration
	for _, r := range results {
		slowest = max(slowest, r.latency())
		switch {
		case r.err != nil, r.latency() > maxOutageLatency:
			bad = append(bad, r)
		case r.status == http.StatusServiceUnavailable:
			if string(bytes.TrimSpace(r.body)) != unavailableBody {
				bad = append(bad, r)
			}
		case r.status != http.StatusOK && r.status != http.StatusCreated:
			bad = append(bad, r)
		}
	}
	for _, r := range bad[:min(len(bad), 10)] {
		t.Errorf("unexpected answer: %s", r)
	}
	if len(bad) > 0 {
		t.Fatalf("%d of %d answers were not 200/201 or a 503 %s within %s", len(bad), len(results), unavailableBody, maxOutageLatency)
	}
	for _, r := range results {
		if r.method == "POST" && r.status == http.StatusCreated {
			var rel struct{ Version string }
			json.Unmarshal(r.body, &rel)
			if n := s.count(t, `SELECT count(*) FROM releases WHERE version = $1`, rel.Version); n != 1 {
				t.Errorf("acknowledged release %q is stored %d times", rel.Version, n)
			}
		}
	}
	if n := s.count(t, `SELECT count(*) FROM releases r WHERE NOT EXISTS (
		SELECT 1 FROM release_projects rp WHERE rp.release_id = r.id)`); n != 0 {
		t.Errorf("%d releases have no project: a write was half done", n)
	}
	return slowest
}

func TestPostgresOutage(t *testing.T) {
	pg := newPGCluster(t)
	s := newErrata(t, map[string]string{"DATABASE_URL": pg.url(), "LOG_LEVEL": "error"})
	s.serve(t)
	setupAcme(t, s)
	client := &http.Client{Timeout: 30 * time.Second}
	// forgetConn drops the test's own connection, which died with the
	// cluster.
	forgetConn := func() {
		if s.conn != nil {
			s.conn.Close(context.Background())
			s.conn = nil
		}
	}

	for _, mode := range []string{"fast", "immediate"} {
		t.Run("stopped with -m "+mode+" every request is a fast 503 and the server recovers by itself", func(t *testing.T) {
			defer forgetConn()
			l := releaseLoad(client, s, mode)
			waitFor(t, 20*time.Second, "successful requests before the outage", func() bool { return l.count(succeeded) >= 40 })

			pg.stop(t, mode)
			down := time.Now()
			waitFor(t, 20*time.Second, "503 answers during the outage", func() bool {
				return l.count(func(r result) bool { return r.sent.After(down) && r.status == http.StatusServiceUnavailable }) >= 40
			})
			ready := send(client, s, "GET", "/readyz", "", nil)
			if ready.status != http.StatusServiceUnavailable || string(bytes.TrimSpace(ready.body)) != unavailableBody {
				t.Errorf("/readyz during the outage: %s, want 503 %s", ready, unavailableBody)
			}
			restart := time.Now()
			pg.start(t)
			started := time.Now()
			waitFor(t, 20*time.Second, "successful requests after the restart", func() bool {
				return l.count(func(r result) bool { return r.sent.After(started) && succeeded(r) }) >= 40
			})
			results := l.finish()
			slowest := checkReleaseLoad(t, s, results)

			var outage []result
			var slowestDuring time.Duration
			var recovered time.Time
			for _, r := range results {
				if r.sent.After(down) && r.answered.Before(restart) {
					outage = append(outage, r)
					slowestDuring = max(slowestDuring, r.latency())
					if r.status != http.StatusServiceUnavailable {
						t.Errorf("during the outage: %s, want 503", r)
					}
				}
				if r.sent.After(started) && succeeded(r) && (recovered.IsZero() || r.answered.Before(recovered)) {
					recovered = r.answered
				}
			}
			// Once a request succeeds again, the pool holds no dead
			// connection: every later request succeeds.
			for _, r := range results {
				if r.sent.After(recovered) && !succeeded(r) {
					t.Errorf("after recovery: %s", r)
				}
			}
			if r := send(client, s, "GET", "/readyz", "", nil); r.status != http.StatusOK {
				t.Errorf("/readyz after recovery: %s", r)
			}
			t.Logf("-m %s: %d requests, %d during the outage, all 503; max latency %s during the outage, %s overall; first success %s after pg_ctl start returned (%s after it began)",
				mode, len(results), len(outage), slowestDuring.Round(time.Millisecond), slowest.Round(time.Millisecond),
				recovered.Sub(started).Round(time.Millisecond), recovered.Sub(restart).Round(time.Millisecond))
		})
	}

	t.Run("a backend killed mid-query is a fast 503 and the server recovers by itself", func(t *testing.T) {
		// PostgreSQL answers the crash of a backend by ending every other
		// one and restarting; the killed one's client reads end of file.
		defer forgetConn()
		l := releaseLoad(client, s, "killed")
		waitFor(t, 20*time.Second, "successful requests before the kill", func() bool { return l.count(succeeded) >= 40 })
		var killed time.Time
		waitFor(t, 20*time.Second, "a busy backend of errata to kill", func() bool {
			db, err := pgx.Connect(context.Background(), pg.url())
			if err != nil {
				return false
			}
			defer db.Close(context.Background())
			var pid int
			err = db.QueryRow(context.Background(), `SELECT pid FROM pg_stat_activity
				WHERE application_name = 'errata' AND state = 'active' LIMIT 1`).Scan(&pid)
			if err != nil || kill(pid) != nil {
				return false
			}
			killed = time.Now()
			return true
		})
		waitFor(t, 20*time.Second, "successful requests after the restart", func() bool {
			return l.count(func(r result) bool { return r.sent.After(killed) && succeeded(r) }) >= 40
		})
		results := l.finish()
		// Those successes may come before PostgreSQL has noticed the
		// crash: the checks of the rows wait until it is out of recovery.
		waitFor(t, 20*time.Second, "the cluster to accept connections after its recovery", func() bool {
			db, err := pgx.Connect(context.Background(), pg.url())
			if err != nil {
				return false
			}
			db.Close(context.Background())
			return true
		})
		slowest := checkReleaseLoad(t, s, results)
		failed := 0
		var lastFailure time.Time
		for _, r := range results {
			if r.status == http.StatusServiceUnavailable {
				failed++
				if r.answered.After(lastFailure) {
					lastFailure = r.answered
				}
			}
		}
		if failed == 0 {
			t.Errorf("no request failed: the kill did not hit a running query")
		}
		t.Logf("backend killed: %d requests, %d answered 503; max latency %s; last 503 %s after the kill",
			len(results), failed, slowest.Round(time.Millisecond), lastFailure.Sub(killed).Round(time.Millisecond))
	})
}

// bundle is an artifact bundle: a zip with manifest.json and files.
type bundle struct {
	data  []byte
	files map[string][]byte // url -> content
}

// newBundle builds a bundle of release version of acme with n files of
// size random bytes each (stored, not compressed).
func newBundle(t *testing.T, version string, n, size int) bundle {
	t.Helper()
	rnd := rand.New(rand.NewPCG(1, 2))
	b := bundle{files: map[string][]byte{}}
	entries := map[string]any{}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range n {
		member, url := fmt.Sprintf("files/_/_/f%d.js", i), fmt.Sprintf("~/f%d.js", i)
		content := make([]byte, size)
		for j := range content {
			content[j] = byte(rnd.Uint32())
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: member, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(content)
		b.files[url] = content
		entries[member] = map[string]any{"url": url, "type": "minified_source", "headers": map[string]string{}}
	}
	m, _ := json.Marshal(map[string]any{"org": "acme", "release": version, "files": entries})
	w, err := zw.Create("manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(m)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	b.data = buf.Bytes()
	return b
}

// sha1Hex is the SHA-1 of b in hex.
func sha1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// uploadChunks uploads data to acme's chunk upload in chunks of size and
// returns the chunks' names.
func uploadChunks(t *testing.T, s *errataServer, data []byte, size int) []string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	var names []string
	for rest := data; len(rest) > 0; {
		c := rest[:min(size, len(rest))]
		rest = rest[len(c):]
		names = append(names, sha1Hex(c))
		w, err := mw.CreateFormFile("file", sha1Hex(c))
		if err != nil {
			t.Fatal(err)
		}
		w.Write(c)
	}
	mw.Close()
	r := send(http.DefaultClient, s, "POST", "/api/0/organizations/acme/chunk-upload/", mw.FormDataContentType(), &body)
	if r.err != nil || r.status != http.StatusOK {
		t.Fatalf("chunk upload: %s", r)
	}
	return names
}

func TestKilledDuringAssemblyCompletesAfterRestart(t *testing.T) {
	// A short lease, so that the restarted server reclaims the job of the
	// killed one within seconds.
	s := newErrata(t, map[string]string{"JOB_LEASE": "2s", "LOG_LEVEL": "warn"})
	s.spawn(t)
	setupAcme(t, s)
	b := newBundle(t, "1.0.0", 8, 512<<10)
	chunks := uploadChunks(t, s, b.data, 1<<20)
	assemble := map[string]any{"checksum": sha1Hex(b.data), "chunks": chunks, "projects": []string{"web"}, "version": "1.0.0"}

	// Hold the assembly in its transaction: with release_files locked, it
	// blocks at its first file, after it claimed the job, stored the bundle's
	// index and created the release.
	ctx := context.Background()
	lock, err := pgx.Connect(ctx, s.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(ctx)
	tx, err := lock.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	if _, err := tx.Exec(ctx, `LOCK TABLE release_files IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}

	var state struct{ State string }
	status, body := s.api(t, "POST", "/api/0/organizations/acme/artifactbundle/assemble/", assemble)
	if json.Unmarshal(body, &state); status != http.StatusOK || state.State != "created" {
		t.Fatalf("assemble: %d %s, want 200 state created", status, body)
	}
	waitFor(t, 20*time.Second, "the assembly to run and wait for its lock", func() bool {
		return s.count(t, `SELECT count(*) FROM jobs WHERE kind = 'assemble' AND state = 'running'`) == 1 &&
			s.count(t, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND application_name = 'errata' AND wait_event_type = 'Lock'`) == 1
	})
	s.kill(t)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := s.count(t, `SELECT count(*) FROM jobs WHERE kind = 'assemble' AND state = 'running' AND attempts = 1`); n != 1 {
		t.Fatalf("after the kill %d running jobs in their first attempt, want the killed one", n)
	}

	s.spawn(t)
	start := time.Now()
	waitFor(t, 30*time.Second, "the assembly to finish after the restart", func() bool {
		return s.count(t, `SELECT count(*) FROM jobs WHERE kind = 'assemble' AND state = 'done'`) == 1
	})
	t.Logf("the restarted server finished the job %s after it was ready", time.Since(start).Round(time.Millisecond))
	if n := s.count(t, `SELECT attempts FROM jobs WHERE kind = 'assemble'`); n != 2 {
		t.Errorf("the job took %d attempts, want 2 (the killed one and the one after the restart)", n)
	}
	status, body = s.api(t, "POST", "/api/0/organizations/acme/artifactbundle/assemble/", assemble)
	if json.Unmarshal(body, &state); status != http.StatusOK || state.State != "ok" {
		t.Errorf("assemble again: %d %s, want state ok", status, body)
	}

	// Each file is there exactly once, with its content; the killed
	// attempt left nothing behind.
	var files []struct{ Name, SHA1 string }
	if status := s.getJSON(t, "/api/0/organizations/acme/releases/1.0.0/files/?limit=100", &files); status != http.StatusOK {
		t.Fatalf("list files: %d", status)
	}
	got := map[string]string{}
	for _, f := range files {
		if _, dup := got[f.Name]; dup {
			t.Errorf("file %s is listed twice", f.Name)
		}
		got[f.Name] = f.SHA1
	}
	want := map[string]string{}
	for url, content := range b.files {
		want[url] = sha1Hex(content)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("release files (-want +got):\n%s", diff)
	}
	for table, n := range map[string]int{"releases": 1, "release_projects": 1, "release_files": len(b.files), "files": 1, "file_blobs": len(chunks)} {
		if got := s.count(t, `SELECT count(*) FROM `+table); got != n {
			t.Errorf("%s has %d rows, want %d", table, got, n)
		}
	}
}

// slowUpload is a release-file upload whose body is sent in two halves:
// the first at once, the second when release is closed.
type slowUpload struct {
	started chan struct{} // closed once the first half is sent
	release chan struct{}
	done    chan result
}

func startSlowUpload(client *http.Client, s *errataServer, version, name string, content []byte) *slowUpload {
	u := &slowUpload{started: make(chan struct{}), release: make(chan struct{}), done: make(chan result, 1)}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		mw.WriteField("name", name)
		w, _ := mw.CreateFormFile("file", "upload.js")
		half := len(content) / 2
		_, err := w.Write(content[:half])
		close(u.started)
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		<-u.release
		w.Write(content[half:])
		pw.CloseWithError(mw.Close())
	}()
	go func() {
		u.done <- send(client, s, "POST", "/api/0/organizations/acme/releases/"+version+"/files/", mw.FormDataContentType(), pr)
	}()
	return u
}

// refused reports whether a new connection to s is refused.
func refused(s *errataServer) bool {
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(s.url, "http://"), time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

func TestSIGTERMDrainsInFlightRequests(t *testing.T) {
	const drain = 10 * time.Second
	s := newErrata(t, map[string]string{"SHUTDOWN_TIMEOUT": drain.String(), "LOG_LEVEL": "warn"})
	s.spawn(t)
	setupAcme(t, s)
	if status, body := s.api(t, "POST", "/api/0/organizations/acme/releases/", map[string]any{"version": "1.0.0", "projects": []string{"web"}}); status != http.StatusCreated {
		t.Fatalf("create release: %d %s", status, body)
	}
	client := &http.Client{Timeout: 30 * time.Second}

	// Uploads in flight: their handlers wait for the rest of the body.
	content := bytes.Repeat([]byte("console.log('drain');\n"), 20_000)
	var uploads []*slowUpload
	for i := range 4 {
		u := startSlowUpload(client, s, "1.0.0", fmt.Sprintf("~/in-flight-%d.js", i), content)
		<-u.started
		uploads = append(uploads, u)
	}
	// Many short requests on top.
	l := startLoad(8, func(g, i int) result {
		return send(client, s, "GET", "/api/0/organizations/acme/releases/", "", nil)
	})
	waitFor(t, 20*time.Second, "requests under load", func() bool { return l.count(succeeded) >= 40 })

	sigterm := time.Now()
	if err := s.proc.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The listener closes at once, while the uploads are still running.
	waitFor(t, 5*time.Second, "new connections to be refused", func() bool { return refused(s) })
	refusedAfter := time.Since(sigterm)
	for _, u := range uploads {
		close(u.release)
	}
	for i, u := range uploads {
		if r := <-u.done; r.err != nil || r.status != http.StatusCreated {
			t.Errorf("in-flight upload %d: %s, want 201", i, r)
		}
	}
	results := l.finish()
	err := s.wait()
	exited := time.Since(sigterm)
	if err != nil {
		t.Errorf("errata exited with %v after SIGTERM, want exit code 0", err)
	}
	// Every request ended before the drain's deadline, SHUTDOWN_TIMEOUT:
	// past it errata cuts them off, says so and exits with code 1.
	if logs := s.logs.String(); strings.Contains(logs, "cut off") {
		t.Errorf("errata cut off requests after SIGTERM (it exited after %s, SHUTDOWN_TIMEOUT %s):\n%s", exited, drain, logs)
	}

	// Short requests either completed normally or, still pending at
	// SIGTERM, could not connect once the listener was closed; none failed
	// on the server's side.
	completed, cut := 0, 0
	for _, r := range results {
		switch {
		case r.err == nil && r.status == http.StatusOK:
			completed++
		case r.err != nil && r.answered.After(sigterm):
			cut++
		default:
			t.Errorf("during shutdown: %s", r)
		}
	}
	if n := s.count(t, `SELECT count(*) FROM release_files`); n != len(uploads) {
		t.Errorf("%d release files stored, want the %d in-flight uploads", n, len(uploads))
	}
	t.Logf("SIGTERM: listener refused connections after %s, in-flight uploads finished 201, exit 0 after %s; %d short requests completed, %d refused after SIGTERM",
		refusedAfter.Round(time.Millisecond), exited.Round(time.Millisecond), completed, cut)
}

func TestSIGTERMCutsOffRequestsAtTheDrainTimeout(t *testing.T) {
	const drain = 2 * time.Second
	s := newErrata(t, map[string]string{"SHUTDOWN_TIMEOUT": drain.String(), "LOG_LEVEL": "warn"})
	s.spawn(t)
	setupAcme(t, s)
	if status, body := s.api(t, "POST", "/api/0/organizations/acme/releases/", map[string]any{"version": "1.0.0", "projects": []string{"web"}}); status != http.StatusCreated {
		t.Fatalf("create release: %d %s", status, body)
	}
	client := &http.Client{Timeout: 30 * time.Second}

	// Two requests that never finish: an upload whose body stops halfway,
	// and a list whose query waits for a lock that the test holds.
	upload := startSlowUpload(client, s, "1.0.0", "~/stuck.js", bytes.Repeat([]byte("x"), 1<<20))
	<-upload.started
	ctx := context.Background()
	lock, err := pgx.Connect(ctx, s.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(ctx)
	tx, err := lock.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // rolled back below
	if _, err := tx.Exec(ctx, `LOCK TABLE releases IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	list := make(chan result, 1)
	go func() { list <- send(client, s, "GET", "/api/0/organizations/acme/releases/", "", nil) }()
	waitFor(t, 20*time.Second, "the list to wait for the lock", func() bool {
		return s.count(t, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = 'errata' AND wait_event_type = 'Lock'`) == 1
	})

	sigterm := time.Now()
	if err := s.proc.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exit := make(chan error, 1)
	go func() { exit <- s.wait() }()
	select {
	case err = <-exit:
	case <-time.After(drain + 10*time.Second):
		tx.Rollback(ctx) //nolint:errcheck // lets the server go
		<-exit
		t.Fatalf("errata did not exit within %s of SIGTERM with SHUTDOWN_TIMEOUT %s", drain+10*time.Second, drain)
	}
	exited := time.Since(sigterm)
	tx.Rollback(ctx) //nolint:errcheck // the server is gone
	if exitErr, ok := errors.AsType[*exec.ExitError](err); !ok || exitErr.ExitCode() != 1 {
		t.Errorf("errata exited with %v, want exit code 1 for requests cut off", err)
	}
	// Not before the drain's deadline; past it, the select above bounds
	// how long errata may take on a busy machine.
	if exited < drain {
		t.Errorf("errata exited %s after SIGTERM, before SHUTDOWN_TIMEOUT %s", exited, drain)
	}
	close(upload.release) // the client notices the cut once it writes again
	for name, r := range map[string]result{"upload": <-upload.done, "list": <-list} {
		if r.err == nil && r.status < 500 {
			t.Errorf("the stuck %s: %s, want its connection cut", name, r)
		}
	}
	if !strings.Contains(s.logs.String(), "cut off") {
		t.Errorf("the log does not say that requests were cut off:\n%s", s.logs.String())
	}
	if n := s.count(t, `SELECT count(*) FROM release_files`); n != 0 {
		t.Errorf("%d release files stored from the cut-off upload", n)
	}
	t.Logf("SIGTERM with stuck requests: exit code 1 after %s (SHUTDOWN_TIMEOUT %s)", exited.Round(time.Millisecond), drain)
}

// rawRequest writes head (the request line and headers, CRLF-separated,
// without the blank line) and body on a new connection and returns the
// response, or nil when the server closed the connection without one.
func rawRequest(t *testing.T, s *errataServer, head string, body []byte) (*http.Response, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, head+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	c.Write(body) //nolint:errcheck // the server may stop reading
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

func TestSlowClientsAreCutOff(t *testing.T) {
	const headerTimeout, readTimeout = time.Second, 3 * time.Second
	s := startErrata(t, map[string]string{
		"READ_HEADER_TIMEOUT": headerTimeout.String(), "READ_TIMEOUT": readTimeout.String(), "LOG_LEVEL": "warn",
	})
	setupAcme(t, s)
	addr := strings.TrimPrefix(s.url, "http://")

	t.Run("headers dribbled in are cut off at the header timeout", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: errata\r\n")
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if _, err := fmt.Fprintf(c, "X-Slow-%d: 1\r\n", i); err != nil {
					return
				}
			}
		}()
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		got, err := io.ReadAll(c)
		elapsed := time.Since(start)
		if err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("the connection was not closed by the server: %v after %s", err, elapsed)
		}
		// The server, not the client's deadline, closed it, and not
		// before the header timeout.
		if elapsed < headerTimeout-500*time.Millisecond {
			t.Errorf("the server closed the connection after %s, before READ_HEADER_TIMEOUT %s", elapsed, headerTimeout)
		}
		if bytes.HasPrefix(got, []byte("HTTP/1.1 2")) {
			t.Errorf("the slow request was answered: %q", got)
		}
		t.Logf("dribbled headers: connection closed after %s (READ_HEADER_TIMEOUT %s)", elapsed.Round(time.Millisecond), headerTimeout)
	})

	t.Run("a body that never comes is cut off at the read timeout with 408", func(t *testing.T) {
		start := time.Now()
		res, body := rawRequest(t, s, "POST /api/0/organizations/acme/releases/ HTTP/1.1\r\nHost: errata\r\n"+
			"Authorization: Bearer "+s.token+"\r\nContent-Type: application/json\r\nContent-Length: 100", nil)
		elapsed := time.Since(start)
		if res == nil {
			t.Fatalf("no answer after %s", elapsed)
		}
		if res.StatusCode != http.StatusRequestTimeout || string(bytes.TrimSpace(body)) != `{"detail":"Request Timeout"}` {
			t.Errorf("answer %d %s, want 408 {\"detail\":\"Request Timeout\"}", res.StatusCode, body)
		}
		if !res.Close {
			t.Errorf("the answer keeps the connection open")
		}
		// Answered by the server before rawRequest's deadline, and not
		// before the read timeout.
		if elapsed < readTimeout-500*time.Millisecond {
			t.Errorf("answered after %s, before READ_TIMEOUT %s", elapsed, readTimeout)
		}
		if n := s.count(t, `SELECT count(*) FROM releases`); n != 0 {
			t.Errorf("%d releases stored", n)
		}
		t.Logf("missing body: 408 after %s (READ_TIMEOUT %s)", elapsed.Round(time.Millisecond), readTimeout)
	})
}

// chunked hides the length of a body, so that it is sent chunked.
type chunked struct{ io.Reader }

func TestOversizedBodiesAreCutAtTheLimit(t *testing.T) {
	t.Parallel()
	const bundleLimit = 2 << 20
	s := startErrata(t, map[string]string{"MAX_BUNDLE_SIZE": strconv.Itoa(bundleLimit), "LOG_LEVEL": "warn"})
	setupAcme(t, s)
	if status, body := s.api(t, "POST", "/api/0/organizations/acme/releases/", map[string]any{"version": "1.0.0", "projects": []string{"web"}}); status != http.StatusCreated {
		t.Fatalf("create release: %d %s", status, body)
	}
	client := &http.Client{Timeout: time.Minute}
	const tooLarge = `{"detail":"Request body too large"}`

	// releaseJSON is a release creation of exactly size bytes.
	releaseJSON := func(version string, size int) []byte {
		b := fmt.Appendf(nil, `{"version":%q,"projects":["web"],"data":{"pad":""}}`, version)
		return slices.Insert(b, len(b)-3, bytes.Repeat([]byte("x"), size-len(b))...)
	}
	// chunksBody is a chunk upload of n valid chunks of size bytes.
	chunksBody := func(n, size int) ([]byte, string) {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		for i := range n {
			c := bytes.Repeat([]byte{byte('a' + i)}, size)
			w, _ := mw.CreateFormFile("file", sha1Hex(c))
			w.Write(c)
		}
		mw.Close()
		return body.Bytes(), mw.FormDataContentType()
	}
	// fileBody is a release-file upload of a file of size bytes.
	fileBody := func(name string, size int) ([]byte, string) {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		mw.WriteField("name", name)
		w, _ := mw.CreateFormFile("file", "big.js")
		w.Write(bytes.Repeat([]byte("y"), size))
		mw.Close()
		return body.Bytes(), mw.FormDataContentType()
	}

	t.Run("bodies over the limit are 413 and store nothing", func(t *testing.T) {
		chunks, chunksType := chunksBody(5, 8<<20) // 40 MiB, over maxRequestSize
		file, fileType := fileBody("~/big.js", bundleLimit+(1<<20))
		tests := []struct {
			name, method, path, contentType string
			body                            []byte
			chunked                         bool
		}{
			{"JSON over 1 MiB", "POST", "/api/0/organizations/acme/releases/", "application/json", releaseJSON("big", 1<<20+1), false},
			{"JSON over 1 MiB sent chunked", "POST", "/api/0/organizations/acme/releases/", "application/json", releaseJSON("big", 3<<20), true},
			{"JSON over 1 MiB on an update", "PUT", "/api/0/organizations/acme/releases/1.0.0/", "application/json", releaseJSON("big", 2<<20), false},
			{"chunk upload over maxRequestSize", "POST", "/api/0/organizations/acme/chunk-upload/", chunksType, chunks, false},
			{"chunk upload over maxRequestSize sent chunked", "POST", "/api/0/organizations/acme/chunk-upload/", chunksType, chunks, true},
			{"release file over the bundle limit", "POST", "/api/0/organizations/acme/releases/1.0.0/files/", fileType, file, false},
			{"release file over the bundle limit sent chunked", "POST", "/api/0/organizations/acme/releases/1.0.0/files/", fileType, file, true},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var body io.Reader = bytes.NewReader(tc.body)
				if tc.chunked {
					body = chunked{body}
				}
				r := send(client, s, tc.method, tc.path, tc.contentType, body)
				if r.err != nil || r.status != http.StatusRequestEntityTooLarge || string(bytes.TrimSpace(r.body)) != tooLarge {
					t.Errorf("%s of %d bytes: %s, want 413 %s", tc.name, len(tc.body), r, tooLarge)
				}
			})
		}
	})

	t.Run("a declared length over the limit is 413 before any byte of the body", func(t *testing.T) {
		tests := []struct{ name, head string }{
			{"JSON", "POST /api/0/organizations/acme/releases/ HTTP/1.1\r\nContent-Type: application/json"},
			{"chunk upload", "POST /api/0/organizations/acme/chunk-upload/ HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=x"},
			{"release file", "POST /api/0/organizations/acme/releases/1.0.0/files/ HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=x"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				// A gigabyte announced, nothing sent: the answer cannot
				// wait for the body.
				res, body := rawRequest(t, s, tc.head+"\r\nHost: errata\r\nAuthorization: Bearer "+s.token+"\r\nContent-Length: 1073741824", nil)
				if res == nil {
					t.Fatalf("no answer, want 413 %s", tooLarge)
				}
				if res.StatusCode != http.StatusRequestEntityTooLarge || string(bytes.TrimSpace(body)) != tooLarge {
					t.Errorf("answer %d %s, want 413 %s", res.StatusCode, body, tooLarge)
				}
			})
		}
	})

	t.Run("chunks over the chunk size or count are 400", func(t *testing.T) {
		big, bigType := chunksBody(1, 8<<20+1)
		many, manyType := chunksBody(65, 1)
		for _, tc := range []struct {
			name, contentType string
			body              []byte
			want              string
		}{
			{"a chunk over chunkSize", bigType, big, `{"detail":"A chunk is larger than the chunk size"}`},
			{"more than chunksPerRequest chunks", manyType, many, `{"detail":"Too many chunks in one request"}`},
		} {
			r := send(client, s, "POST", "/api/0/organizations/acme/chunk-upload/", tc.contentType, bytes.NewReader(tc.body))
			if r.err != nil || r.status != http.StatusBadRequest || string(bytes.TrimSpace(r.body)) != tc.want {
				t.Errorf("%s: %s, want 400 %s", tc.name, r, tc.want)
			}
		}
	})

	t.Run("bodies at the limit are accepted", func(t *testing.T) {
		if r := send(client, s, "POST", "/api/0/organizations/acme/releases/", "application/json", bytes.NewReader(releaseJSON("at-limit", 1<<20))); r.status != http.StatusCreated {
			t.Errorf("JSON of exactly 1 MiB: %s, want 201", r)
		}
		file, fileType := fileBody("~/at-limit.js", bundleLimit)
		if r := send(client, s, "POST", "/api/0/organizations/acme/releases/1.0.0/files/", fileType, bytes.NewReader(file)); r.status != http.StatusCreated {
			t.Errorf("release file at the bundle limit: %s, want 201", r)
		}
	})

	for table, n := range map[string]int{"releases": 2, "release_files": 1, "files": 1, "blob_owners": 1} {
		if got := s.count(t, `SELECT count(*) FROM `+table); got != n {
			t.Errorf("%s has %d rows, want %d: an oversized body was stored", table, got, n)
		}
	}
	var data string
	if err := s.db(t).QueryRow(context.Background(), `SELECT data::text FROM releases WHERE version = '1.0.0'`).Scan(&data); err != nil || data != "{}" {
		t.Errorf("release 1.0.0 data = %.40q (%v), want {} untouched by the oversized update", data, err)
	}
}

// kill ends the process pid at once (SIGKILL on Unix), through os so that
// the file builds on every system Go does.
func kill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
