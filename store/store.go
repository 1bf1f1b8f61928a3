package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Errors returned by the store. Callers test them with errors.Is.
var (
	ErrNotFound    = errors.New("store: not found")
	ErrConflict    = errors.New("store: conflict")
	ErrUnavailable = errors.New("store: database unavailable")
	ErrNotMigrated = errors.New("store: database is not migrated")
)

// SchemaVersion is the version that schema.sql records in errata_schema.
const SchemaVersion = 7

// Store is errata's PostgreSQL storage.
type Store struct {
	pool *pool
	// objects keeps the bytes of blobs when they live in an object store;
	// nil keeps them in PostgreSQL. objectPrefix comes before their keys.
	objects      BlobStore
	objectPrefix string
	// orgQuota, when positive, bounds the bytes of the blobs one
	// organization owns.
	orgQuota int64
	// orgJobLimit, when positive, bounds the queued or running jobs of
	// one organization; 0 is DefaultOrgJobLimit.
	orgJobLimit int
	// turns orders the job writes of each organization in this process.
	turns orgTurns
	// throttleTurns orders the throttle takes of each bucket in this
	// process, by their lock keys.
	throttleTurns orgTurns
	// touches spares the symbol routes a statement per request.
	touches touchMemo
	// servedFiles keeps files the symbol routes served, on disk; nil keeps none.
	servedFiles *servedFileCache
	// lookups remembers what FindSymbolFile answered, for a second.
	lookups symbolLookups
}

// querier is what both a pool and a transaction can do; unexported helpers
// take it so that exported methods can compose them inside one transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Config tunes the connection pool.
type Config struct {
	URL              string
	MaxConns         int32         // 0: pgxpool's default
	StatementTimeout time.Duration // 0: 30s
	ConnectTimeout   time.Duration // 0: 3s
	// AcquireTimeout bounds how long a statement waits for a free
	// connection before it fails with ErrUnavailable; 0: 5s.
	AcquireTimeout time.Duration
	// IdleInTransactionTimeout is PostgreSQL's
	// idle_in_transaction_session_timeout of every connection: a
	// transaction left open without a statement for that long is ended and
	// its connection closed; 0: 10s.
	IdleInTransactionTimeout time.Duration
	// OnStatement, when not nil, is called with each statement and its
	// arguments before the pool runs it. Benchmarks record with it the
	// statements an endpoint runs, to replay them as its floor.
	OnStatement func(sql string, args []any)
	// Blobs, when not nil, keeps the bytes of uploads in an object store
	// under BlobPrefix; nil keeps them in PostgreSQL.
	Blobs      BlobStore
	BlobPrefix string
	// OrgStorageQuota, when positive, is the most bytes of blobs one
	// organization may own; an upload over it is ErrQuotaExceeded.
	OrgStorageQuota int64
	// OrgJobLimit is the most jobs one organization may have queued or
	// running; a request that would enqueue more is ErrJobLimit. 0 is
	// DefaultOrgJobLimit.
	OrgJobLimit int
	// SymbolCacheSize bounds the bytes of files the symbol routes keep;
	// 0 keeps none. They are kept in a private directory that the store
	// makes under SymbolCacheDir, and removes in Close; in memory when
	// SymbolCacheDir is empty or the directory cannot be made there.
	SymbolCacheSize int64
	SymbolCacheDir  string
}

// statementHook is the pgx tracer that calls Config.OnStatement.
type statementHook func(sql string, args []any)

func (h statementHook) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	h(d.SQL, d.Args)
	return ctx
}

func (h statementHook) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// The statements of a batch are seen one by one, as if run alone.

func (h statementHook) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (h statementHook) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	h(d.SQL, d.Args)
}

func (h statementHook) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// Open creates a pool for cfg.URL. It does not wait for the database; call
// Ping for that.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("store: parse database url: %w", err)
	}
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	if cfg.StatementTimeout == 0 {
		cfg.StatementTimeout = 30 * time.Second
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 3 * time.Second
	}
	pc.ConnConfig.ConnectTimeout = cfg.ConnectTimeout
	if cfg.AcquireTimeout == 0 {
		cfg.AcquireTimeout = 5 * time.Second
	}
	if cfg.IdleInTransactionTimeout == 0 {
		cfg.IdleInTransactionTimeout = 10 * time.Second
	}
	pc.ConnConfig.RuntimeParams["statement_timeout"] = fmt.Sprint(cfg.StatementTimeout.Milliseconds())
	pc.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = fmt.Sprint(cfg.IdleInTransactionTimeout.Milliseconds())
	pc.ConnConfig.RuntimeParams["application_name"] = "errata"
	if cfg.OnStatement != nil {
		pc.ConnConfig.Tracer = statementHook(cfg.OnStatement)
	}
	pgp, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("store: open pool: %w", err)
	}
	return &Store{pool: &pool{Pool: pgp, acquireTimeout: cfg.AcquireTimeout}, objects: cfg.Blobs, objectPrefix: cfg.BlobPrefix, orgQuota: cfg.OrgStorageQuota, orgJobLimit: cfg.OrgJobLimit, servedFiles: newServedFileCache(cfg.SymbolCacheSize, cfg.SymbolCacheDir)}, nil
}

// Close waits for borrowed connections and closes the pool, and removes
// the symbol routes' cache directory.
func (s *Store) Close() {
	s.pool.Close()
	s.servedFiles.close() //nolint:errcheck // a temporary directory: nothing to do about it
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	c, err := s.pool.acquire(ctx)
	if err != nil {
		return wrap(err)
	}
	defer c.Release()
	return wrap(c.Ping(ctx))
}

// PoolStats is a snapshot of the connection pool's statistics.
type PoolStats struct {
	AcquiredConns        int32 // connections borrowed now
	IdleConns            int32 // connections waiting in the pool
	ConstructingConns    int32 // connections being opened
	TotalConns           int32 // acquired, idle and constructing
	MaxConns             int32 // the pool's size
	AcquireCount         int64 // successful acquires since the pool opened
	EmptyAcquireCount    int64 // acquires that had to wait or open a connection
	CanceledAcquireCount int64 // acquires whose context ended first
	AcquireDuration      time.Duration
}

// PoolStats reports the connection pool's statistics.
func (s *Store) PoolStats() PoolStats {
	st := s.pool.Stat()
	return PoolStats{
		AcquiredConns:        st.AcquiredConns(),
		IdleConns:            st.IdleConns(),
		ConstructingConns:    st.ConstructingConns(),
		TotalConns:           st.TotalConns(),
		MaxConns:             st.MaxConns(),
		AcquireCount:         st.AcquireCount(),
		EmptyAcquireCount:    st.EmptyAcquireCount(),
		CanceledAcquireCount: st.CanceledAcquireCount(),
		AcquireDuration:      st.AcquireDuration(),
	}
}

// CheckMigrated returns ErrNotMigrated unless the schema of this build is
// applied.
func (s *Store) CheckMigrated(ctx context.Context) error {
	var ok bool
	err := s.pool.QueryRow(ctx, `
		SELECT to_regclass('errata_schema') IS NOT NULL`).Scan(&ok)
	if err != nil {
		return wrap(err)
	}
	if !ok {
		return ErrNotMigrated
	}
	err = s.pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM errata_schema WHERE version = $1)`, SchemaVersion).Scan(&ok)
	if err != nil {
		return wrap(err)
	}
	if !ok {
		return ErrNotMigrated
	}
	return nil
}

// inTx runs fn in a transaction and commits when fn returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return wrap(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if err := fn(tx); err != nil {
		return wrap(err)
	}
	return wrap(tx.Commit(ctx))
}

// read runs fn on one pooled connection, outside a transaction. Under READ
// COMMITTED, PostgreSQL's default, a transaction gives each statement its
// own snapshot anyway: reads that need neither atomicity nor one snapshot
// save its BEGIN and COMMIT, two round trips.
func (s *Store) read(ctx context.Context, fn func(q querier) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return wrap(err)
	}
	defer conn.Release()
	return wrap(fn(conn))
}

// wrap turns pgx errors into the store's errors, keeping the cause. Every
// way a database can be out of reach becomes ErrUnavailable: a refused or
// timed-out connection, a connection that the server or the network closed
// (end of file, "conn closed"), and the server's own shutdown and
// connection errors.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) ||
		errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNotMigrated) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		switch {
		case pgErr.Code == "23505": // unique_violation
			return fmt.Errorf("%w: %w", ErrConflict, err)
		case pgErr.Code == "57014", // query_canceled (statement_timeout)
			pgErr.Code == "53300",               // too_many_connections
			pgErr.Code == "57P01",               // admin_shutdown
			pgErr.Code == "57P02",               // crash_shutdown
			pgErr.Code == "57P03",               // cannot_connect_now
			strings.HasPrefix(pgErr.Code, "08"): // connection exceptions
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	if unreachable(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// unreachable reports whether err says that the database could not be
// reached or that the connection broke.
func unreachable(err error) bool {
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return true
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	return pgconn.Timeout(err) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}

// isForeignKeyViolation reports whether err is PostgreSQL's
// foreign_key_violation.
func isForeignKeyViolation(err error) bool {
	pgErr, ok := errors.AsType[*pgconn.PgError](err)
	return ok && pgErr.Code == "23503"
}
