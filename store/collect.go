package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// CollectJobKind is the kind of the jobs that collect unused files and
// blobs (and expire old ones when FILE_RETENTION_DAYS is set).
const CollectJobKind = "collect"

// fileReferences are the tables whose file_id column keeps a file alive
// (the referencing tables), with the kind of file each stores, for the
// storage report. A table that refers to files must be listed here, or the
// collector removes its files.
var fileReferences = []struct{ table, kind string }{
	{"release_files", "release files"},
	{"artifact_bundles", "artifact bundles"},
	{"debug_files", "debug files"},
}

// CollectStats is what one collection removed.
type CollectStats struct {
	Expired int64 // release files, bundles and debug files past the retention
	Files   int64 // files nothing referred to
	Owners  int64 // ownerships of blobs that no file of the owner used
	Blobs   int64 // blobs nobody owned, with their bytes
	Bytes   int64 // the bytes of those blobs
	// Orphans are objects of the blob store that no blob row named (an
	// upload that failed between its object and its row).
	Orphans int64
}

// collectBatch bounds the rows one statement of the collector removes.
const collectBatch = 1000

// Collect removes, in batches, what nothing uses and was not used for
// grace: files that no referencing table names, then the ownership of
// blobs that no file of their organization uses, then blobs that no
// organization owns, bytes first. With retention > 0, release files,
// artifact bundles and debug files whose file nobody read or wrote for retention go first.
//
// A file used while it is being expired is kept: each expiry locks the
// files it expires, skipping those an upload or a read is marking used
// right now, and reads their date_used again once locked, so that a use
// committed after the statement began counts (without the lock, a
// statement that began before an upload of the same file answered 201
// removed it all the same).
//
// What an upload or an assembly in flight needs is never removed: a file
// is stored in the transaction of its first reference, a chunk's ownership
// is renewed by its upload and by every assembly request that names it,
// the foreign keys make a used file or ownership impossible to delete, and
// a blob is removed under the same advisory lock as its upload takes.
func (s *Store) Collect(ctx context.Context, grace, retention time.Duration) (CollectStats, error) {
	defer s.lookups.forget()
	var st CollectStats
	if retention > 0 {
		for _, q := range []string{
			`DELETE FROM release_files WHERE id IN (
				SELECT rf.id FROM release_files rf JOIN files f ON f.id = rf.file_id
				WHERE f.date_used < now() - make_interval(secs => $1) LIMIT $2 FOR UPDATE OF f SKIP LOCKED)`,
			`DELETE FROM artifact_bundles WHERE id IN (
				SELECT ab.id FROM artifact_bundles ab JOIN files f ON f.id = ab.file_id
				WHERE f.date_used < now() - make_interval(secs => $1) LIMIT $2 FOR UPDATE OF f SKIP LOCKED)`,
			`WITH gone AS (
				SELECT d.id, d.project_id, d.debug_id FROM debug_files d JOIN files f ON f.id = d.file_id
				WHERE f.date_used < now() - make_interval(secs => $1) LIMIT $2 FOR UPDATE OF f SKIP LOCKED),
			` + unmappedProguardReleases + `
			DELETE FROM debug_files WHERE id IN (SELECT id FROM gone)`,
		} {
			n, err := s.deleteInBatches(ctx, q, retention.Seconds(), collectBatch)
			st.Expired += n
			if err != nil {
				return st, err
			}
		}
	}
	var unreferenced []string
	for _, ref := range fileReferences {
		unreferenced = append(unreferenced, `NOT EXISTS (SELECT 1 FROM `+ref.table+` x WHERE x.file_id = f.id)`)
	}
	var err error
	st.Files, err = s.deleteInBatches(ctx, `
		DELETE FROM files WHERE id IN (
			SELECT f.id FROM files f
			WHERE f.date_used < now() - make_interval(secs => $1)
			  AND `+strings.Join(unreferenced, " AND ")+`
			LIMIT $2 FOR UPDATE SKIP LOCKED)`, grace.Seconds(), collectBatch)
	if err != nil {
		return st, err
	}
	st.Owners, err = s.deleteInBatches(ctx, `
		DELETE FROM blob_owners WHERE (organization_id, sha1) IN (
			SELECT o.organization_id, o.sha1 FROM blob_owners o
			WHERE o.date_used < now() - make_interval(secs => $1)
			  AND NOT EXISTS (SELECT 1 FROM file_blobs fb
				WHERE fb.organization_id = o.organization_id AND fb.sha1 = o.sha1)
			LIMIT $2 FOR UPDATE SKIP LOCKED)`, grace.Seconds(), collectBatch)
	if err != nil {
		return st, err
	}
	for {
		rows, err := s.pool.Query(ctx, `
			SELECT b.sha1 FROM blobs b
			WHERE b.date_created < now() - make_interval(secs => $1)
			  AND NOT EXISTS (SELECT 1 FROM blob_owners o WHERE o.sha1 = b.sha1)
			LIMIT $2`, grace.Seconds(), collectBatch)
		if err != nil {
			return st, wrap(err)
		}
		sha1s, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return st, wrap(err)
		}
		for _, sha1 := range sha1s {
			size, err := s.collectBlob(ctx, sha1)
			if err != nil {
				return st, err
			}
			if size >= 0 {
				st.Blobs++
				st.Bytes += size
			}
		}
		if len(sha1s) < collectBatch {
			st.Orphans, err = s.collectOrphanObjects(ctx)
			return st, err
		}
	}
}

// deleteInBatches runs the DELETE q, whose $1 is arg and $2 a batch size,
// until it removes less than a batch, and returns how many rows it removed.
// A foreign-key violation (a row got used while it was being removed) ends
// the collection of that kind for this run, not the run.
func (s *Store) deleteInBatches(ctx context.Context, q string, arg any, batch int) (int64, error) {
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, q, arg, batch)
		if isForeignKeyViolation(err) {
			return total, nil
		}
		if err != nil {
			return total, wrap(err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(batch) {
			return total, nil
		}
	}
}

// collectBlob removes blob sha1, bytes first, when no organization owns
// it; it returns the blob's size, or -1 when it was kept.
func (s *Store) collectBlob(ctx context.Context, sha1 string) (int64, error) {
	size := int64(-1)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, blobLockKey(sha1)); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `
			SELECT size FROM blobs b WHERE sha1 = $1
			  AND NOT EXISTS (SELECT 1 FROM blob_owners o WHERE o.sha1 = b.sha1)
			FOR UPDATE`, sha1).Scan(&size)
		if errors.Is(err, pgx.ErrNoRows) {
			size = -1
			return nil // owned again, or gone
		}
		if err != nil {
			return err
		}
		if err := s.deleteBlobBytes(ctx, tx, sha1); err != nil {
			return fmt.Errorf("blob %s: %w", sha1, err)
		}
		_, err = tx.Exec(ctx, `DELETE FROM blobs WHERE sha1 = $1`, sha1)
		return err
	})
	return size, err
}
