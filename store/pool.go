package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pool is the connection pool with a bound on how long a statement waits
// for a connection: past acquireTimeout it fails with ErrUnavailable (503)
// instead of queueing behind a pool that something holds, so an overload
// is answered quickly and every caller gets its turn or its 503.
type pool struct {
	*pgxpool.Pool
	acquireTimeout time.Duration
}

// errPoolExhausted is the cause of an acquire that timed out.
var errPoolExhausted = errors.New("no database connection was free in time")

// acquire takes a connection, waiting at most acquireTimeout.
func (p *pool) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	actx, cancel := context.WithTimeout(ctx, p.acquireTimeout)
	defer cancel()
	c, err := p.Pool.Acquire(actx)
	if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("%w: %w (%s)", ErrUnavailable, errPoolExhausted, p.acquireTimeout)
	}
	return c, err
}

// Acquire is acquire, for callers that hold a connection for several
// statements.
func (p *pool) Acquire(ctx context.Context) (*pgxpool.Conn, error) { return p.acquire(ctx) }

func (p *pool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c, err := p.acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer c.Release()
	return c.Exec(ctx, sql, args...)
}

func (p *pool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := c.Query(ctx, sql, args...)
	if err != nil {
		c.Release()
		return nil, err
	}
	return &releasingRows{Rows: rows, c: c}, nil
}

func (p *pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c, err := p.acquire(ctx)
	if err != nil {
		return errRow{err}
	}
	return &releasingRow{row: c.QueryRow(ctx, sql, args...), c: c}
}

func (p *pool) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	c, err := p.acquire(ctx)
	if err != nil {
		return errBatch{err}
	}
	return &releasingBatch{BatchResults: c.SendBatch(ctx, b), c: c}
}

func (p *pool) Begin(ctx context.Context) (pgx.Tx, error) {
	return p.BeginTx(ctx, pgx.TxOptions{})
}

func (p *pool) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	c, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := c.BeginTx(ctx, opts)
	if err != nil {
		c.Release()
		return nil, err
	}
	return &releasingTx{Tx: tx, c: c}, nil
}

// releasingRows gives its connection back once the rows are done.
type releasingRows struct {
	pgx.Rows
	c    *pgxpool.Conn
	once sync.Once
}

func (r *releasingRows) release() { r.once.Do(r.c.Release) }

func (r *releasingRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.release()
	return false
}

func (r *releasingRows) Close() {
	r.Rows.Close()
	r.release()
}

// releasingRow gives its connection back once it is scanned.
type releasingRow struct {
	row pgx.Row
	c   *pgxpool.Conn
}

func (r *releasingRow) Scan(dest ...any) error {
	defer r.c.Release()
	return r.row.Scan(dest...)
}

// errRow is the row of a statement that got no connection.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// releasingBatch gives its connection back once the batch is closed.
type releasingBatch struct {
	pgx.BatchResults
	c    *pgxpool.Conn
	once sync.Once
}

func (b *releasingBatch) Close() error {
	err := b.BatchResults.Close()
	b.once.Do(b.c.Release)
	return err
}

// errBatch is the batch of statements that got no connection.
type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow(b) }
func (b errBatch) Close() error                     { return b.err }
func (b errBatch) Tx() pgx.Tx                       { return nil }

// releasingTx gives its connection back once the transaction ends.
type releasingTx struct {
	pgx.Tx
	c    *pgxpool.Conn
	once sync.Once
}

func (t *releasingTx) Commit(ctx context.Context) error {
	err := t.Tx.Commit(ctx)
	t.once.Do(t.c.Release)
	return err
}

func (t *releasingTx) Rollback(ctx context.Context) error {
	err := t.Tx.Rollback(ctx)
	t.once.Do(t.c.Release)
	return err
}
