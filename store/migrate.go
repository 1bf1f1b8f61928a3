package store

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// This file is everything `errata migrate` does to the database, and the
// rule that lets any number of processes run it at once, on a database
// that other processes serve (a rolling start of replicas): every
// statement that takes a lock runs under the migration lock, and the
// migration takes the locks of the tables it changes first, all at once,
// in one order (docs/reliability.md).
//
//   - Migrate holds the migration lock (migrationLockKey) for its
//     transaction, so migrations run one after the other. It then locks
//     every table of errata's that exists, in the order schema.sql creates
//     them, before its first statement: the statements of schema.sql and
//     migrateLegacyFiles never wait for a lock after that, so they cannot
//     be part of a deadlock. It waits for those locks, all together, at
//     most migrationLockTimeout (twice as long at each new try, never more
//     than half of PostgreSQL's deadlock_timeout): when a server's
//     transaction holds a table the migration has yet to lock and waits
//     for one the migration holds, the migration gives way (it rolls back
//     and starts again a moment later) before PostgreSQL's deadlock check
//     would end either of them.
//   - BackfillSymbolMetadata holds the migration lock for its whole run, on
//     a connection of its own, so that it runs after a migration and
//     before the next, and backfills run one after the other (the ones
//     after the first find nothing to do). Each statement it runs takes at
//     most one row's lock.

// Migrate applies schema, then moves the content of schema version 1 into
// blobs (migrateLegacyFiles), in one transaction under the migration lock,
// with the tables that the schema names locked first. It starts again when
// those locks are not granted in time (or PostgreSQL reports a deadlock
// all the same), allowing them twice as long each time up to half of
// deadlock_timeout, until ctx ends.
func (s *Store) Migrate(ctx context.Context, schema string) error {
	wait, timeout := 10*time.Millisecond, migrationLockTimeout
	for {
		err := s.migrate(ctx, schema, timeout)
		if !lockNotGranted(err) {
			return err
		}
		// Another process held a table the migration needs: let it
		// finish, then take them all again.
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait + rand.N(wait)):
		}
		wait, timeout = min(2*wait, 250*time.Millisecond), 2*timeout
	}
}

// migrationLockTimeout is how long Migrate first waits for the locks of
// the tables before it gives way and starts again.
const migrationLockTimeout = 100 * time.Millisecond

// migrationLockKey is the advisory lock that serializes migrations: held
// by Migrate for its transaction, and by BackfillSymbolMetadata for its
// run. The key is arbitrary but fixed: "errata" in ASCII.
const migrationLockKey = 111542219666529

// migrate is one attempt of Migrate, which waits for the locks of the
// tables at most timeout.
func (s *Store) migrate(ctx context.Context, schema string, timeout time.Duration) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		// The migration lock is waited for as long as it takes: the
		// migrations before this one may take longer together than
		// one statement may.
		var statementTimeout string
		if err := tx.QueryRow(ctx, `SELECT current_setting('statement_timeout')`).Scan(&statementTimeout); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT set_config('statement_timeout', '0', true)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey); err != nil {
			return err
		}
		if err := lockSchemaTables(ctx, tx, schema, timeout); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT set_config('statement_timeout', $1, true)`, statementTimeout); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, schema); err != nil {
			return err
		}
		return migrateLegacyFiles(ctx, tx)
	})
}

// lockSchemaTables locks, in ACCESS EXCLUSIVE mode, the tables of the
// current schema that schema names: all that Migrate's statements lock,
// at once, so that no statement after it waits for a lock. It locks them
// in the order schema creates them, parents before the tables that refer
// to them, which is the order in which most transactions of a server take
// them too: fewer of those stand in its way. It waits for them at most
// timeout, or half of deadlock_timeout when that is shorter, and then
// fails with errTablesBusy; for the rest of tx, a lock is waited for as
// long at most (lock_timeout).
func lockSchemaTables(ctx context.Context, tx pgx.Tx, schema string, timeout time.Duration) error {
	var ms int64
	if err := tx.QueryRow(ctx, `
		SELECT least($1, extract(epoch FROM current_setting('deadlock_timeout')::interval) * 500)::bigint`,
		timeout.Milliseconds()).Scan(&ms); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema()`)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	order := map[string]int{}
	for i, m := range createTable.FindAllStringSubmatch(schema, -1) {
		order[strings.ToLower(m[1])] = i
	}
	tables = slices.DeleteFunc(tables, func(t string) bool {
		_, ok := order[t]
		return !ok
	})
	if len(tables) == 0 {
		return nil // an empty database: nothing to lock yet
	}
	slices.SortFunc(tables, func(a, b string) int { return order[a] - order[b] })
	ident := make([]string, len(tables))
	for i, t := range tables {
		ident[i] = pgx.Identifier{t}.Sanitize()
	}
	// lock_timeout bounds the wait for the locks alone: a statement
	// timeout that short would also cancel the statements around the
	// lock, which a busy machine may take longer than it to run
	// (SQLSTATE 57014 on a set_config, not a lock, failed a migrate).
	if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, strconv.FormatInt(ms, 10)); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `LOCK TABLE `+strings.Join(ident, ", ")+` IN ACCESS EXCLUSIVE MODE`)
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "57014" { // query_canceled
		return fmt.Errorf("%w: %w", errTablesBusy, err)
	}
	return err
}

// errTablesBusy is the error of a migration that could not lock the
// tables in time.
var errTablesBusy = errors.New("store: the tables to migrate are in use")

// createTable is a statement of schema.sql that creates a table.
var createTable = regexp.MustCompile(`(?i)CREATE TABLE IF NOT EXISTS ([a-z_][a-z0-9_]*)`)

// lockNotGranted reports whether err is errTablesBusy, PostgreSQL's
// lock_not_available (the lock timeout passed) or deadlock_detected.
func lockNotGranted(err error) bool {
	if errors.Is(err, errTablesBusy) {
		return true
	}
	pgErr, ok := errors.AsType[*pgconn.PgError](err)
	return ok && (pgErr.Code == "55P03" || pgErr.Code == "40P01")
}

// migrateLegacyFiles moves the content of schema version 1 into blobs, in
// the migration's transaction tx: each chunk waiting in file_chunks becomes
// a blob owned by its organization, and each part of a stored file in
// file_parts a blob of the file's organization and a row of the file's blob
// index. Both old tables end empty, so a second run does nothing.
func migrateLegacyFiles(ctx context.Context, tx pgx.Tx) error {
	for {
		var org int64
		var data []byte
		err := tx.QueryRow(ctx, `
			DELETE FROM file_chunks WHERE ctid = (SELECT ctid FROM file_chunks LIMIT 1)
			RETURNING organization_id, data`).Scan(&org, &data)
		if err == pgx.ErrNoRows {
			break
		}
		if err != nil {
			return err
		}
		if _, err := migrateBlob(ctx, tx, org, data); err != nil {
			return err
		}
	}
	for {
		var fileID, org int64
		var position int
		var data []byte
		err := tx.QueryRow(ctx, `
			DELETE FROM file_parts WHERE (file_id, position) = (
				SELECT file_id, position FROM file_parts ORDER BY file_id, position LIMIT 1)
			RETURNING file_id, position, data,
				(SELECT organization_id FROM files WHERE id = file_id)`).Scan(&fileID, &position, &data, &org)
		if err == pgx.ErrNoRows {
			return nil
		}
		if err != nil {
			return err
		}
		sum, err := migrateBlob(ctx, tx, org, data)
		if err != nil {
			return err
		}
		// The parts of a file go in order: this one starts where the
		// blobs indexed so far end.
		if _, err := tx.Exec(ctx, `
			INSERT INTO file_blobs (file_id, position, organization_id, sha1, start)
			SELECT $1, $2, $3, $4, COALESCE(sum(b.size), 0)
			FROM file_blobs fb JOIN blobs b ON b.sha1 = fb.sha1 WHERE fb.file_id = $1`,
			fileID, position, org, sum); err != nil {
			return err
		}
	}
}

// migrateBlob stores data as a blob owned by organization org, in tx, and
// returns its SHA-1 hex.
func migrateBlob(ctx context.Context, tx pgx.Tx, org int64, data []byte) (string, error) {
	s := sha1.Sum(data)
	sum := hex.EncodeToString(s[:])
	_, err := tx.Exec(ctx, `
		WITH d AS (INSERT INTO blob_data (key, data) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING),
		     b AS (INSERT INTO blobs (sha1, size) VALUES ($1, $3) ON CONFLICT (sha1) DO NOTHING)
		INSERT INTO blob_owners (organization_id, sha1) VALUES ($4, $1) ON CONFLICT DO NOTHING`,
		sum, data, len(data), org)
	return sum, err
}

// sectionBackfillBatch is how many debug files BackfillSymbolMetadata
// lists at a time.
const sectionBackfillBatch = 50

// BackfillSymbolMetadata reads what the symbol routes need of every
// debug file stored without it (stored before errata read it at
// assembly): the section table of each ELF file, with sections, and the
// source index of each source bundle, with sources; and stores it. What
// cannot be read within the readers' budget is stored as beyond it, so
// that every file is read once. It writes each file's as soon as it is
// read, so that an interrupted run resumes where it stopped. It returns
// how many files it read.
func (s *Store) BackfillSymbolMetadata(ctx context.Context,
	sections func(r io.ReaderAt, size int64) SectionTable,
	sources func(r io.ReaderAt, size int64) SourceIndex) (n int, err error) {
	// Several migrates may start together, and a migration locks the
	// tables this reads and writes: the backfill holds the migration lock
	// for its run, on a connection of its own, so that it waits for a
	// migration in progress and the next one waits for it. The backfills
	// of other migrates wait too, and then find nothing left to read.
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, wrap(err)
	}
	defer conn.Release()
	// Waited for as long as it takes, as Migrate waits for it.
	if _, err := conn.Exec(ctx, `SET statement_timeout = 0`); err != nil {
		return 0, wrap(err)
	}
	_, err = conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLockKey)
	if _, rerr := conn.Exec(ctx, `RESET statement_timeout`); err == nil {
		err = rerr
	}
	if err != nil {
		conn.Conn().Close(context.WithoutCancel(ctx)) // never back to the pool without its statement_timeout
		return 0, wrap(err)
	}
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLockKey); err != nil {
			conn.Conn().Close(context.WithoutCancel(ctx)) // never back to the pool with the lock held
		}
	}()
	defer s.lookups.forget()
	n, err = s.backfill(ctx, "elf", "sections", func(r io.ReaderAt, size int64) any { return sections(r, size) })
	if err != nil {
		return n, err
	}
	m, err := s.backfill(ctx, "sourcebundle", "sources", func(r io.ReaderAt, size int64) any { return sources(r, size) })
	return n + m, err
}

// backfill stores read's answer, as JSON, in column of every debug file of
// format where it is NULL, in batches of sectionBackfillBatch.
func (s *Store) backfill(ctx context.Context, format, column string, read func(r io.ReaderAt, size int64) any) (int, error) {
	total := 0
	after := int64(0)
	for {
		rows, err := s.pool.Query(ctx, `
			SELECT d.id, d.file_id, f.organization_id FROM debug_files d JOIN files f ON f.id = d.file_id
			WHERE d.file_format = $1 AND d.`+column+` IS NULL AND d.id > $2
			ORDER BY d.id LIMIT $3`, format, after, sectionBackfillBatch)
		if err != nil {
			return total, wrap(err)
		}
		type todo struct{ id, file, org int64 }
		var batch []todo
		for rows.Next() {
			var t todo
			if err := rows.Scan(&t.id, &t.file, &t.org); err != nil {
				rows.Close()
				return total, wrap(err)
			}
			batch = append(batch, t)
		}
		if rows.Close(); rows.Err() != nil {
			return total, wrap(rows.Err())
		}
		if len(batch) == 0 {
			return total, nil
		}
		for _, t := range batch {
			after = t.id
			fr, err := s.OpenFile(ctx, t.org, t.file)
			if errors.Is(err, ErrNotFound) {
				continue // collected since the batch was read: nothing to fill, and no reason to stop migrate
			}
			if err != nil {
				return total, wrap(err)
			}
			body, err := json.Marshal(read(fr, fr.Size()))
			if err != nil {
				return total, err
			}
			// One row a statement: the backfill holds one row's lock at
			// a time, so a server changing debug files meanwhile, in
			// whatever order, never waits for it while it waits for them.
			if _, err := s.pool.Exec(ctx, `
				UPDATE debug_files SET `+column+` = $2::jsonb WHERE id = $1 AND `+column+` IS NULL`,
				t.id, string(body)); err != nil {
				return total, wrap(err)
			}
		}
		total += len(batch)
	}
}
