package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"errata/store"
)

// Func runs one job; it must be idempotent.
type Func func(ctx context.Context, payload json.RawMessage) error

// permanentError marks a failure that retrying cannot fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent wraps err so that the job ends in state error at once.
func Permanent(err error) error { return permanentError{err} }

// Config tunes a Worker; zero values take the defaults.
type Config struct {
	Concurrency  int           // jobs run at once; default 2
	Lease        time.Duration // how long a claim lasts without renewal; default 30s
	PollInterval time.Duration // how often idle workers look for due jobs; default 1s
	BaseBackoff  time.Duration // first retry delay, doubled each attempt; default 1s
	MaxBackoff   time.Duration // default 5m
	// UnownedSlots are loops, besides Concurrency, that run only jobs of
	// no organization (mail, collection), so that they never wait for an
	// organization's job to end; default 1, -1 for none.
	UnownedSlots int
}

// Worker claims and runs jobs of the kinds registered with Handle.
type Worker struct {
	st    *store.Store
	log   *slog.Logger
	cfg   Config
	id    string
	funcs map[string]Func
	kinds []string
	wake  chan struct{}

	outcomes map[string]*outcomeCounters // by kind; fixed before Start

	stop     context.CancelFunc // soft stop: claim no more jobs
	hardStop context.CancelFunc // hard stop: cancel running jobs
	done     sync.WaitGroup
}

// New returns a Worker; register kinds with Handle, then call Start.
func New(st *store.Store, log *slog.Logger, cfg Config) *Worker {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 2
	}
	if cfg.UnownedSlots == 0 {
		cfg.UnownedSlots = 1
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.BaseBackoff <= 0 {
		cfg.BaseBackoff = time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 5 * time.Minute
	}
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return &Worker{
		st: st, log: log, cfg: cfg, outcomes: map[string]*outcomeCounters{},
		id:    fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b)),
		funcs: map[string]Func{},
		wake:  make(chan struct{}, 1),
	}
}

// Handle registers f for jobs of kind. Call it before Start.
func (w *Worker) Handle(kind string, f Func) {
	w.funcs[kind] = f
	w.kinds = append(w.kinds, kind)
	w.outcomes[kind] = &outcomeCounters{}
}

// Outcomes counts how a worker's runs of one kind of job ended, since the
// worker was created. A run counts once its outcome is recorded in the
// database; a run whose lease was lost counts where the job runs again.
type Outcomes struct {
	Kind    string
	Done    uint64 // succeeded
	Retried uint64 // failed and queued again for a later attempt
	Failed  uint64 // failed for good: a permanent error or no attempts left
}

type outcomeCounters struct{ done, retried, failed atomic.Uint64 }

// Outcomes returns the outcome counts of every kind registered with Handle,
// in the order of registration.
func (w *Worker) Outcomes() []Outcomes {
	out := make([]Outcomes, 0, len(w.kinds))
	for _, kind := range w.kinds {
		c := w.outcomes[kind]
		out = append(out, Outcomes{Kind: kind, Done: c.done.Load(), Retried: c.retried.Load(), Failed: c.failed.Load()})
	}
	return out
}

// Notify wakes an idle worker to look for jobs now. It never blocks.
func (w *Worker) Notify() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Start runs the worker's loops until Shutdown.
func (w *Worker) Start() {
	softCtx, stop := context.WithCancel(context.Background())
	hardCtx, hardStop := context.WithCancel(context.Background())
	w.stop, w.hardStop = stop, hardStop
	for i := range w.cfg.Concurrency + max(w.cfg.UnownedSlots, 0) {
		claim := w.st.ClaimJob
		if i >= w.cfg.Concurrency {
			claim = w.st.ClaimUnownedJob
		}
		w.done.Add(1)
		go func() {
			defer w.done.Done()
			w.loop(softCtx, hardCtx, claim)
		}()
	}
}

// Shutdown stops claiming jobs and waits for running ones; when ctx ends
// first, it cancels them (they run again elsewhere once their lease ends)
// and waits for them to return.
func (w *Worker) Shutdown(ctx context.Context) error {
	if w.stop == nil {
		return nil
	}
	w.stop()
	finished := make(chan struct{})
	go func() { w.done.Wait(); close(finished) }()
	select {
	case <-finished:
		w.hardStop()
		return nil
	case <-ctx.Done():
		w.hardStop()
		<-finished
		return ctx.Err()
	}
}

// claimFunc is how a loop claims its jobs: ClaimJob or ClaimUnownedJob.
type claimFunc func(ctx context.Context, worker string, kinds []string, lease time.Duration) (store.Job, error)

func (w *Worker) loop(soft, hard context.Context, claim claimFunc) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-soft.Done():
			return
		case <-w.wake:
		case <-timer.C:
		}
		// Drain due jobs before sleeping again.
		for soft.Err() == nil {
			ran, err := w.runOne(hard, claim)
			if err != nil {
				w.log.Warn("worker: claim failed", "err", err)
				break
			}
			if !ran {
				break
			}
		}
		timer.Reset(w.cfg.PollInterval)
	}
}

// runOne claims one job and runs it. It reports whether there was one.
func (w *Worker) runOne(hard context.Context, claim claimFunc) (bool, error) {
	job, err := claim(hard, w.id, w.kinds, w.cfg.Lease)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	runErr := w.run(hard, job)
	var retryAt *time.Time
	var perm permanentError
	if runErr != nil && !errors.As(runErr, &perm) && job.Attempts < job.MaxAttempts {
		t := time.Now().Add(w.backoff(job.Attempts))
		retryAt = &t
	}
	if runErr != nil {
		w.log.Warn("worker: job failed", "job", job.ID, "kind", job.Kind,
			"attempt", job.Attempts, "retry", retryAt != nil, "err", runErr)
	}
	// Record the outcome even when shutting down.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(hard), 10*time.Second)
	defer cancel()
	if err := w.st.FinishJob(ctx, job.ID, w.id, runErr, retryAt); err != nil {
		w.log.Warn("worker: could not record job outcome", "job", job.ID, "err", err)
		return true, nil
	}
	c := w.outcomes[job.Kind]
	switch {
	case runErr == nil:
		c.done.Add(1)
	case retryAt != nil:
		c.retried.Add(1)
	default:
		c.failed.Add(1)
	}
	return true, nil
}

// run calls the job's function while renewing its lease.
func (w *Worker) run(hard context.Context, job store.Job) (err error) {
	f, ok := w.funcs[job.Kind]
	if !ok {
		return Permanent(fmt.Errorf("no function for job kind %q", job.Kind))
	}
	if job.Attempts > job.MaxAttempts {
		return Permanent(errors.New("gave up: the job's workers stopped before it finished"))
	}
	ctx, cancel := context.WithCancel(store.WithJobLease(hard, job.ID, w.id))
	defer cancel()
	go func() {
		t := time.NewTicker(w.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := w.st.ExtendLease(ctx, job.ID, w.id, w.cfg.Lease); err != nil && ctx.Err() == nil {
					w.log.Warn("worker: lost lease", "job", job.ID, "err", err)
					cancel()
					return
				}
			}
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("job panicked: %v", p)
		}
	}()
	return f(ctx, job.Payload)
}

func (w *Worker) backoff(attempt int) time.Duration {
	d := w.cfg.BaseBackoff << min(attempt-1, 20)
	return min(d, w.cfg.MaxBackoff)
}
