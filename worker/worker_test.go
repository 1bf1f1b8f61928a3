package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"errata/store"
	"errata/store/storetest"
)

// helperDBEnv, when set, makes the test binary a worker process that claims
// one assemble job, says so on stdout, and hangs until it is killed.
const helperDBEnv = "ERRATA_TEST_HANGING_WORKER_DB"

func TestMain(m *testing.M) {
	if url := os.Getenv(helperDBEnv); url != "" {
		hangingWorker(url)
		return
	}
	os.Exit(m.Run())
}

func hangingWorker(url string) {
	st, err := store.Open(context.Background(), store.Config{URL: url})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	w := New(st, slog.New(slog.NewTextHandler(io.Discard, nil)), Config{Concurrency: 1, Lease: time.Second, PollInterval: 20 * time.Millisecond})
	w.Handle(store.AssembleJobKind, func(ctx context.Context, _ json.RawMessage) error {
		fmt.Println("claimed")
		select {} // hang: only SIGKILL ends this process
	})
	w.Start()
	select {}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fastConfig makes workers notice jobs and expired leases quickly.
var fastConfig = Config{Concurrency: 2, Lease: time.Second, PollInterval: 20 * time.Millisecond, BaseBackoff: 10 * time.Millisecond}

// startWorker starts a worker with the real assembler on st and stops it
// when the test ends.
func startWorker(t *testing.T, st *store.Store, cfg Config, wrap func(Func) Func) *Worker {
	t.Helper()
	w := New(st, quietLog(), cfg)
	f := Func((&Assembler{Store: st, Log: quietLog()}).Run)
	if wrap != nil {
		f = wrap(f)
	}
	w.Handle(store.AssembleJobKind, f)
	w.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return w
}

// enqueueBundle uploads a good bundle of release version and asks for its
// assembly as sentry-cli 3.x does; it returns the job's id.
func (e *assembleEnv) enqueueBundle(t *testing.T, version string) int64 {
	t.Helper()
	b := goodBundle()
	b.manifest.(map[string]any)["release"] = version
	sum, chunks := e.upload(t, b.bytes(t), 256)
	st, err := e.st.AssembleArtifactBundle(context.Background(), e.user, "acme", store.AssemblyRequest{
		Checksum: sum, Chunks: chunks, Projects: []string{"web"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Job == nil {
		t.Fatalf("no job enqueued; missing chunks %v", st.MissingChunks)
	}
	return st.Job.ID
}

// waitJob waits until job id is done or in error, and returns its status.
func waitJob(t *testing.T, st *store.Store, id int64, within time.Duration) store.JobStatus {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		js, err := st.JobStatus(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if js.State == "done" || js.State == "error" {
			return js
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d is still %s after %s", id, js.State, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestJobAcceptedWithoutWorkerRunsOnceOneStarts(t *testing.T) {
	e := newAssembleEnv(t)
	id := e.enqueueBundle(t, "1.0")
	time.Sleep(100 * time.Millisecond)
	if js, _ := e.st.JobStatus(context.Background(), id); js.State != "queued" {
		t.Fatalf("state without a worker = %s, want queued", js.State)
	}
	startWorker(t, e.st, fastConfig, nil) // never notified: it must find the job itself
	if js := waitJob(t, e.st, id, 10*time.Second); js.State != "done" {
		t.Fatalf("job ended %s: %v", js.State, js.LastError)
	}
	if n := len(e.files(t)); n != 2 {
		t.Errorf("%d release files, want 2", n)
	}
}

func TestJobOfAKilledWorkerIsCompletedByAnother(t *testing.T) {
	e := newAssembleEnv(t)
	id := e.enqueueBundle(t, "1.0")

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperDBEnv+"="+e.url)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	claimed := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		claimed <- line
	}()
	select {
	case line := <-claimed:
		if line != "claimed\n" {
			t.Fatalf("helper process said %q", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the helper process did not claim the job")
	}
	if js, _ := e.st.JobStatus(context.Background(), id); js.State != "running" {
		t.Fatalf("state while the helper runs it = %s, want running", js.State)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true

	startWorker(t, e.st, fastConfig, nil)
	if js := waitJob(t, e.st, id, 15*time.Second); js.State != "done" {
		t.Fatalf("job ended %s: %v", js.State, js.LastError)
	}
	var attempts int
	e.db.QueryRow(context.Background(), `SELECT attempts FROM jobs WHERE id = $1`, id).Scan(&attempts)
	if attempts != 2 {
		t.Errorf("attempts = %d, want 2 (the killed run and the completed one)", attempts)
	}
	if n := len(e.files(t)); n != 2 {
		t.Errorf("%d release files, want 2", n)
	}
}

func TestTwoWorkersAssembleEachJobExactlyOnce(t *testing.T) {
	e := newAssembleEnv(t)
	const jobs = 12
	ids := make([]int64, jobs)
	for i := range ids {
		ids[i] = e.enqueueBundle(t, fmt.Sprintf("1.%d", i))
	}
	var mu sync.Mutex
	runs := map[string]int{}
	counting := func(f Func) Func {
		return func(ctx context.Context, payload json.RawMessage) error {
			var j store.AssemblyJob
			json.Unmarshal(payload, &j)
			mu.Lock()
			runs[j.Checksum]++
			mu.Unlock()
			return f(ctx, payload)
		}
	}
	// Two processes' worth of workers: separate pools on one database.
	other, err := store.Open(context.Background(), store.Config{URL: e.url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	a := startWorker(t, e.st, Config{Concurrency: 3, Lease: 5 * time.Second, PollInterval: 20 * time.Millisecond}, counting)
	b := startWorker(t, other, Config{Concurrency: 3, Lease: 5 * time.Second, PollInterval: 20 * time.Millisecond}, counting)
	a.Notify()
	b.Notify()
	for _, id := range ids {
		if js := waitJob(t, e.st, id, 30*time.Second); js.State != "done" {
			t.Fatalf("job %d ended %s: %v", id, js.State, js.LastError)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != jobs {
		t.Errorf("%d jobs ran, want %d", len(runs), jobs)
	}
	for sum, n := range runs {
		if n != 1 {
			t.Errorf("job of bundle %s ran %d times", sum, n)
		}
	}
	if n := len(e.files(t)); n != 2*jobs {
		t.Errorf("%d release files, want %d", n, 2*jobs)
	}
}

func TestFailingJobsRetryThenEndInError(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantRuns int
	}{
		{"a failure is retried until max attempts", errors.New("flaky"), 3},
		{"a permanent failure is not retried", Permanent(errors.New("hopeless")), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newAssembleEnv(t)
			id, err := e.st.EnqueueJob(context.Background(), "fail", "", map[string]string{}, 3)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			runs := 0
			w := New(e.st, quietLog(), fastConfig)
			w.Handle("fail", func(context.Context, json.RawMessage) error {
				mu.Lock()
				runs++
				mu.Unlock()
				return tt.err
			})
			w.Start()
			defer w.Shutdown(context.Background())
			js := waitJob(t, e.st, id, 10*time.Second)
			if js.State != "error" || js.LastError == nil || *js.LastError != tt.err.Error() {
				t.Fatalf("job = %s %v, want error %q", js.State, js.LastError, tt.err)
			}
			mu.Lock()
			defer mu.Unlock()
			if runs != tt.wantRuns {
				t.Errorf("runs = %d, want %d", runs, tt.wantRuns)
			}
		})
	}
}

func TestShutdownFinishesTheRunningJob(t *testing.T) {
	e := newAssembleEnv(t)
	id, err := e.st.EnqueueJob(context.Background(), "slow", "", map[string]string{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	w := New(e.st, quietLog(), fastConfig)
	w.Handle("slow", func(ctx context.Context, _ json.RawMessage) error {
		close(started)
		<-release
		return nil
	})
	w.Start()
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- w.Shutdown(context.Background()) }()
	select {
	case err := <-stopped:
		t.Fatalf("Shutdown returned (%v) while the job was running", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if js, _ := e.st.JobStatus(context.Background(), id); js.State != "done" {
		t.Errorf("state = %s, want done", js.State)
	}
}

// TestMailRunsWhileAFloodHoldsEveryWorker: with both workers busy on an
// organization's jobs and thousands more queued, a mail job runs at once,
// on the slot kept for jobs of no organization, before any of the
// organization's jobs ends.
func TestMailRunsWhileAFloodHoldsEveryWorker(t *testing.T) {
	st, db := storetest.NewWithURL(t)
	storetest.Exec(t, db, `INSERT INTO organizations (id, slug, name) VALUES (1, 'flood', 'Flood')`)
	storetest.Exec(t, db, `
		INSERT INTO jobs (organization_id, kind, run_at)
		SELECT 1, 'assemble', now() - interval '1 hour' FROM generate_series(1, 3000)`)
	release := make(chan struct{})
	busy := make(chan struct{}, 3000)
	var mu sync.Mutex
	var events []string
	w := New(st, quietLog(), fastConfig)
	w.Handle(store.AssembleJobKind, func(ctx context.Context, _ json.RawMessage) error {
		busy <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		mu.Lock()
		events = append(events, "assembly ended")
		mu.Unlock()
		return nil
	})
	mailed := make(chan struct{})
	w.Handle(store.MailJobKind, func(context.Context, json.RawMessage) error {
		mu.Lock()
		events = append(events, "mail sent")
		mu.Unlock()
		close(mailed)
		return nil
	})
	w.Start()
	defer func() {
		close(release)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		w.Shutdown(ctx)
	}()
	<-busy
	<-busy // both workers hold an assembly
	if _, err := st.EnqueueJob(context.Background(), store.MailJobKind, "", store.MailJob{OutboxID: 1}, 3); err != nil {
		t.Fatal(err)
	}
	w.Notify()
	select {
	case <-mailed:
	case <-time.After(10 * time.Second):
		t.Fatal("the mail did not run while the flood held both workers")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) == 0 || events[0] != "mail sent" {
		t.Errorf("events %v, want the mail sent before any assembly ended", events)
	}
}
