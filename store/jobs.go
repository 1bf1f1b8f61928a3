package store

import (
	"context"
	"encoding/json"
	"errors"
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

// JobStatus is what a job's enqueuer can see of it.
type JobStatus struct {
	ID        int64
	State     string // queued, running, done or error
	LastError *string
}

// enqueueJob inserts a job in q's transaction. With a uniqueKey already
// enqueued it inserts nothing and returns the existing job's id.
func enqueueJob(ctx context.Context, q querier, kind, uniqueKey string, payload any, maxAttempts int) (int64, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return 0, err
	}
	var key *string
	if uniqueKey != "" {
		key = &uniqueKey
	}
	var id int64
	err = q.QueryRow(ctx, `
		INSERT INTO jobs (kind, unique_key, payload, max_attempts)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (unique_key) DO NOTHING
		RETURNING id`, kind, key, body, max(maxAttempts, 1)).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		err = q.QueryRow(ctx, `SELECT id FROM jobs WHERE unique_key = $1`, key).Scan(&id)
	}
	return id, wrap(err)
}

// EnqueueJob inserts a job on its own. Prefer the store methods that enqueue
// a job in the transaction of the data it acts on.
func (s *Store) EnqueueJob(ctx context.Context, kind, uniqueKey string, payload any, maxAttempts int) (int64, error) {
	return enqueueJob(ctx, s.pool, kind, uniqueKey, payload, maxAttempts)
}

// ClaimJob takes the oldest job of one of kinds that is due, or whose
// worker's lease ran out, and leases it to worker for lease. Two workers
// never claim the same job: the row is locked with SKIP LOCKED. No job is
// ErrNotFound.
func (s *Store) ClaimJob(ctx context.Context, worker string, kinds []string, lease time.Duration) (Job, error) {
	// A job whose lease ran out in its last attempt ended its worker every
	// time (a crash, or the OOM killer on a hostile upload): it is given up
	// rather than run again forever.
	if _, err := s.pool.Exec(ctx, `
		UPDATE jobs SET state = 'error', locked_by = NULL, locked_until = NULL, date_updated = now(),
			last_error = 'The job stopped its worker in each of its ' || attempts || ' attempts; it is given up'
		WHERE kind = ANY($1) AND state = 'running' AND locked_until < now() AND attempts >= max_attempts`,
		kinds); err != nil {
		return Job{}, wrap(err)
	}
	var j Job
	err := s.pool.QueryRow(ctx, `
		UPDATE jobs SET state = 'running', attempts = attempts + 1, locked_by = $1,
			locked_until = now() + make_interval(secs => $2), date_updated = now()
		WHERE id = (
			SELECT id FROM jobs
			WHERE kind = ANY($3)
			  AND ((state = 'queued' AND run_at <= now())
			    OR (state = 'running' AND locked_until < now() AND attempts < max_attempts))
			ORDER BY run_at, id
			LIMIT 1
			FOR UPDATE SKIP LOCKED)
		RETURNING id, kind, payload, attempts, max_attempts`,
		worker, lease.Seconds(), kinds).
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
