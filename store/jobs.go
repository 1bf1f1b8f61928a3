package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Job is a claimed background job.
type Job struct {
	ID          int64
	Kind        string
	Payload     json.RawMessage
	Attempts    int // including the current one
	MaxAttempts int
}

// jobLeaseKey is the context key of the lease a job's function runs under.
type jobLeaseKey struct{}

type jobLease struct {
	id     int64
	worker string
}

// WithJobLease returns ctx for running job id under worker's lease: a
// store method that writes to the running job (RecordDifAssembly) then
// writes only while the job is still worker's, so a worker whose lease ran
// out cannot overwrite what the job's new holder records.
func WithJobLease(ctx context.Context, id int64, worker string) context.Context {
	return context.WithValue(ctx, jobLeaseKey{}, jobLease{id, worker})
}

// JobStatus is what a job's enqueuer can see of it.
type JobStatus struct {
	ID        int64
	State     string // queued, running, done or error
	LastError *string
}

// enqueueJob inserts a job of organization orgID (0: none, errata's own
// work) in q's transaction. With a uniqueKey already enqueued it inserts
// nothing and returns the existing job's id. It reports whether it
// inserted: the caller checks the organization's limit (checkJobLimit)
// once it has enqueued what it enqueues.
func enqueueJob(ctx context.Context, q querier, orgID int64, kind, uniqueKey string, payload any, maxAttempts int) (int64, bool, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return 0, false, err
	}
	var key *string
	if uniqueKey != "" {
		key = &uniqueKey
	}
	var id int64
	err = q.QueryRow(ctx, `
		INSERT INTO jobs (organization_id, kind, unique_key, payload, max_attempts)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (unique_key) DO NOTHING
		RETURNING id`, orgOrNull(orgID), kind, key, body, max(maxAttempts, 1)).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		err = q.QueryRow(ctx, `SELECT id FROM jobs WHERE unique_key = $1`, key).Scan(&id)
		return id, false, wrap(err)
	}
	return id, err == nil, wrap(err)
}

// orgOrNull is orgID as a column value: 0 is NULL, no organization.
func orgOrNull(orgID int64) *int64 {
	if orgID == 0 {
		return nil
	}
	return &orgID
}

// EnqueueJob inserts a job of no organization (errata's own work, like
// collection) on its own. Work done for an organization is enqueued by the
// store methods that enqueue it in the transaction of the data it acts on,
// within the organization's limit.
func (s *Store) EnqueueJob(ctx context.Context, kind, uniqueKey string, payload any, maxAttempts int) (int64, error) {
	id, _, err := enqueueJob(ctx, s.pool, 0, kind, uniqueKey, payload, maxAttempts)
	return id, err
}

// DefaultOrgJobLimit is the most jobs one organization may have queued or
// running when Config.OrgJobLimit is 0.
const DefaultOrgJobLimit = 1000

// ErrJobLimit is the error of a request that would take its organization
// over its limit of queued or running jobs. It is a *JobLimitError.
var ErrJobLimit = errors.New("store: the organization's job limit is reached")

// JobLimitError is ErrJobLimit with the limit.
type JobLimitError struct{ Limit int }

func (e *JobLimitError) Error() string {
	return fmt.Sprintf("store: the organization has %d jobs queued or running, its limit", e.Limit)
}

// Is makes a JobLimitError ErrJobLimit.
func (e *JobLimitError) Is(target error) bool { return target == ErrJobLimit }

// ErrTurnTimeout is the error of a request that waited too long for its
// turn among its organization's requests (see orgTurns).
var ErrTurnTimeout = errors.New("store: the organization's requests take turns, and this one waited too long")

// turnWait is how long a request waits for its organization's turn before
// it is ErrTurnTimeout.
const turnWait = 10 * time.Second

// orgTurns makes the requests of one organization that write its jobs
// take turns in this process before they take a connection: a flood of
// them waits without holding the pool that other organizations need
// (across processes, the advisory lock of the transaction orders them).
// The zero value is ready.
type orgTurns struct {
	mu    sync.Mutex
	slots map[int64]*turnSlot
}

// turnSlot is one organization's turn and how many requests want it.
type turnSlot struct {
	ch    chan struct{}
	users int
}

// take waits for organization key's turn, at most turnWait, and returns
// its release.
func (t *orgTurns) take(ctx context.Context, key int64) (func(), error) {
	t.mu.Lock()
	if t.slots == nil {
		t.slots = map[int64]*turnSlot{}
	}
	ts := t.slots[key]
	if ts == nil {
		ts = &turnSlot{ch: make(chan struct{}, 1)}
		t.slots[key] = ts
	}
	ts.users++
	t.mu.Unlock()
	leave := func() {
		t.mu.Lock()
		if ts.users--; ts.users == 0 {
			delete(t.slots, key)
		}
		t.mu.Unlock()
	}
	timer := time.NewTimer(turnWait)
	defer timer.Stop()
	select {
	case ts.ch <- struct{}{}:
		return func() { <-ts.ch; leave() }, nil
	case <-timer.C:
		leave()
		return nil, ErrTurnTimeout
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}

// inOrgTurn runs fn in a transaction for the organization orgSlug that
// userID belongs to, in that organization's turn (orgTurns): a request that
// may enqueue jobs waits for the turn without a connection, and one that
// may not see the organization never takes, nor waits for, its turn.
func (s *Store) inOrgTurn(ctx context.Context, userID int64, orgSlug string, fn func(tx pgx.Tx, org int64) error) error {
	org, err := orgIDForMember(ctx, s.pool, userID, orgSlug)
	if err != nil {
		return wrap(err)
	}
	release, err := s.turns.take(ctx, org)
	if err != nil {
		return err
	}
	defer release()
	return s.inTx(ctx, func(tx pgx.Tx) error { return fn(tx, org) })
}

// jobsLockClass is the first key of the advisory lock that orders the
// checks of an organization's job limit (the two-key form; commits use 1).
const jobsLockClass = 2

// checkJobLimit fails with a *JobLimitError when organization orgID has
// more queued or running jobs than its limit, counting those tx enqueued;
// the caller then rolls tx back, enqueueing nothing. Call it after the
// transaction enqueued its jobs, and only when it enqueued some: a request
// that only asks about its jobs is never refused. The organization's checks
// take turns under an advisory lock held until tx ends, so that two
// requests never both see room for their jobs: the limit is exact.
func (s *Store) checkJobLimit(ctx context.Context, tx pgx.Tx, orgID int64) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashint8($2))`, jobsLockClass, orgID); err != nil {
		return err
	}
	limit := s.jobLimit()
	var n int
	err := tx.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM (SELECT 1 FROM jobs WHERE organization_id = $1 AND state = 'queued' LIMIT $2) q)
		     + (SELECT count(*) FROM jobs WHERE organization_id = $1 AND state = 'running')`,
		orgID, limit+1).Scan(&n)
	if err != nil {
		return err
	}
	if n > limit {
		return &JobLimitError{Limit: limit}
	}
	return nil
}

// jobLimit is the most queued or running jobs of one organization.
func (s *Store) jobLimit() int {
	if s.orgJobLimit > 0 {
		return s.orgJobLimit
	}
	return DefaultOrgJobLimit
}

// ClaimJob takes a due job of one of kinds, fairly, and leases it to
// worker for lease:
//
//   - first the oldest due job of no organization (mail, collection): the
//     server's own work never waits behind an organization's;
//   - else, among the organizations with a due job, the one with the fewest
//     jobs running (ties: the one a worker served least recently, then the
//     one whose oldest due job is oldest), and that organization's oldest
//     due job. Organizations take turns: an organization's backlog never
//     delays another organization's first job, which runs as soon as a
//     worker is free.
//
// A job whose worker's lease ran out is queued again first (or given up
// when it was its last attempt). Two workers never claim the same job: the
// row is locked with SKIP LOCKED, and a worker that finds an
// organization's oldest job locked takes its next one. No job is
// ErrNotFound.
func (s *Store) ClaimJob(ctx context.Context, worker string, kinds []string, lease time.Duration) (Job, error) {
	return s.claimJob(ctx, worker, kinds, lease, false)
}

// ClaimUnownedJob is ClaimJob for the jobs of no organization alone: a
// worker slot kept for mail and collection.
func (s *Store) ClaimUnownedJob(ctx context.Context, worker string, kinds []string, lease time.Duration) (Job, error) {
	return s.claimJob(ctx, worker, kinds, lease, true)
}

func (s *Store) claimJob(ctx context.Context, worker string, kinds []string, lease time.Duration, unownedOnly bool) (Job, error) {
	// A job whose lease ran out in its last attempt ended its worker every
	// time (a crash, or the OOM killer on a hostile upload): it is given up
	// rather than run again forever. One with attempts left waits again
	// among its organization's jobs, at its place.
	if _, err := s.pool.Exec(ctx, `
		UPDATE jobs SET state = CASE WHEN attempts >= max_attempts THEN 'error' ELSE 'queued' END,
			last_error = CASE WHEN attempts >= max_attempts
				THEN 'The job stopped its worker in each of its ' || attempts || ' attempts; it is given up'
				ELSE last_error END,
			locked_by = NULL, locked_until = NULL, date_updated = now()
		WHERE kind = ANY($1) AND state = 'running' AND locked_until < now()`,
		kinds); err != nil {
		return Job{}, wrap(err)
	}
	// orgs walks the organizations with queued jobs in jobs_queued_idx, one
	// index probe each; heads is each one's oldest due job with the number
	// of jobs it runs. The first branch of picked (no organization) runs
	// first and, when it finds a job, the second does not run.
	var j Job
	err := s.pool.QueryRow(ctx, `
		WITH RECURSIVE orgs (org) AS (
			(SELECT organization_id FROM jobs WHERE state = 'queued' AND organization_id IS NOT NULL
			 ORDER BY organization_id LIMIT 1)
			UNION ALL
			SELECT (SELECT j.organization_id FROM jobs j
				WHERE j.state = 'queued' AND j.organization_id > orgs.org
				ORDER BY j.organization_id LIMIT 1)
			FROM orgs WHERE orgs.org IS NOT NULL),
		heads AS (
			SELECT o.org, h.run_at, h.id,
				(SELECT count(*) FROM jobs r WHERE r.state = 'running' AND r.organization_id = o.org) AS running,
				(SELECT t.last_claimed FROM job_turns t WHERE t.organization_id = o.org) AS served
			FROM orgs o CROSS JOIN LATERAL (
				SELECT j.run_at, j.id FROM jobs j
				WHERE j.state = 'queued' AND j.organization_id = o.org AND j.run_at <= now() AND j.kind = ANY($3)
				ORDER BY j.run_at, j.id LIMIT 1) h
			WHERE o.org IS NOT NULL),
		picked AS (
			SELECT id FROM (
				SELECT j.id FROM jobs j
				WHERE j.state = 'queued' AND j.organization_id IS NULL AND j.run_at <= now() AND j.kind = ANY($3)
				ORDER BY j.run_at, j.id LIMIT 1
				FOR UPDATE SKIP LOCKED) unowned
			UNION ALL
			SELECT p.id FROM (
				SELECT org, run_at, id, running, served FROM heads WHERE NOT $4
				ORDER BY running, served NULLS FIRST, run_at, id) h
			CROSS JOIN LATERAL (
				SELECT j.id FROM jobs j
				WHERE j.state = 'queued' AND j.organization_id = h.org AND j.run_at <= now() AND j.kind = ANY($3)
				ORDER BY j.run_at, j.id LIMIT 1
				FOR UPDATE SKIP LOCKED) p
			LIMIT 1),
		claimed AS (
			UPDATE jobs SET state = 'running', attempts = attempts + 1, locked_by = $1,
				locked_until = now() + make_interval(secs => $2), date_updated = now()
			WHERE id = (SELECT id FROM picked)
			RETURNING id, kind, payload, attempts, max_attempts, organization_id),
		turn AS (
			INSERT INTO job_turns (organization_id, last_claimed)
			SELECT organization_id, clock_timestamp() FROM claimed WHERE organization_id IS NOT NULL
			ON CONFLICT (organization_id) DO UPDATE SET last_claimed = EXCLUDED.last_claimed)
		SELECT id, kind, payload, attempts, max_attempts FROM claimed`,
		worker, lease.Seconds(), kinds, unownedOnly).
		Scan(&j.ID, &j.Kind, &j.Payload, &j.Attempts, &j.MaxAttempts)
	return j, wrap(err)
}

// ExtendLease renews worker's lease on job id. It reports ErrNotFound when
// the job is no longer worker's.
func (s *Store) ExtendLease(ctx context.Context, id int64, worker string, lease time.Duration) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE jobs SET locked_until = now() + make_interval(secs => $3)
		WHERE id = $1 AND locked_by = $2 AND state = 'running'`, id, worker, lease.Seconds())
	if err == nil && tag.RowsAffected() == 0 {
		err = ErrNotFound
	}
	return wrap(err)
}

// FinishJob records the outcome of worker's run of job id: done when
// runErr is nil; otherwise queued again at retryAt, or error when retryAt is
// nil (no attempts left, or a permanent failure).
func (s *Store) FinishJob(ctx context.Context, id int64, worker string, runErr error, retryAt *time.Time) error {
	var tag interface{ RowsAffected() int64 }
	var err error
	switch {
	case runErr == nil:
		tag, err = s.pool.Exec(ctx, `
			UPDATE jobs SET state = 'done', locked_by = NULL, locked_until = NULL,
				last_error = NULL, date_updated = now()
			WHERE id = $1 AND locked_by = $2 AND state = 'running'`, id, worker)
	case retryAt != nil:
		tag, err = s.pool.Exec(ctx, `
			UPDATE jobs SET state = 'queued', locked_by = NULL, locked_until = NULL,
				last_error = $3, run_at = $4, date_updated = now()
			WHERE id = $1 AND locked_by = $2 AND state = 'running'`, id, worker, runErr.Error(), *retryAt)
	default:
		tag, err = s.pool.Exec(ctx, `
			UPDATE jobs SET state = 'error', locked_by = NULL, locked_until = NULL,
				last_error = $3, date_updated = now()
			WHERE id = $1 AND locked_by = $2 AND state = 'running'`, id, worker, runErr.Error())
	}
	if err == nil && tag.RowsAffected() == 0 {
		err = ErrNotFound
	}
	return wrap(err)
}

// JobStatus returns the state of job id.
func (s *Store) JobStatus(ctx context.Context, id int64) (JobStatus, error) {
	var st JobStatus
	err := s.pool.QueryRow(ctx, `
		SELECT id, state, last_error FROM jobs WHERE id = $1`, id).
		Scan(&st.ID, &st.State, &st.LastError)
	return st, wrap(err)
}

// JobQueue is how many jobs of one kind wait or run.
type JobQueue struct {
	Kind    string
	Queued  int64 // waiting, including retries whose time has not come
	Running int64
	// OldestDue is how long the oldest queued job that is due has waited;
	// 0 when none is due.
	OldestDue time.Duration
}

// JobQueues counts the queued and running jobs of each kind that has any.
// It reads only the rows of the partial index on unfinished jobs, so its
// cost does not grow with the history of done jobs.
func (s *Store) JobQueues(ctx context.Context) ([]JobQueue, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT kind,
			count(*) FILTER (WHERE state = 'queued'),
			count(*) FILTER (WHERE state = 'running'),
			COALESCE(EXTRACT(EPOCH FROM now() - min(run_at)
				FILTER (WHERE state = 'queued' AND run_at <= now())), 0)::float8
		FROM jobs
		WHERE state IN ('queued', 'running')
		GROUP BY kind
		ORDER BY kind`)
	if err != nil {
		return nil, wrap(err)
	}
	queues, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (JobQueue, error) {
		var q JobQueue
		var oldest float64
		err := row.Scan(&q.Kind, &q.Queued, &q.Running, &oldest)
		q.OldestDue = time.Duration(oldest * float64(time.Second))
		return q, err
	})
	return queues, wrap(err)
}

// PruneJobs removes, in batches, the jobs that ended (done or error) more
// than olderThan ago, and returns how many.
func (s *Store) PruneJobs(ctx context.Context, olderThan time.Duration) (int64, error) {
	return s.deleteInBatches(ctx, `
		DELETE FROM jobs WHERE id IN (
			SELECT id FROM jobs WHERE state IN ('done', 'error')
			  AND date_updated < now() - make_interval(secs => $1)
			LIMIT $2)`, olderThan.Seconds(), collectBatch)
}
