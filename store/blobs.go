package store

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// BlobStore keeps the bytes of blobs in an object store, by key (the blob's
// SHA-1 hex under an optional prefix). With none configured the bytes live
// in PostgreSQL (the blob_data table), written in the transaction of their
// blob row. Nothing outside this package knows which one runs.
type BlobStore interface {
	// Put stores size bytes of r under key; storing a key again with the
	// same bytes is harmless.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Get reads length bytes from offset of key (length < 0: to the end).
	// A missing key is ErrNotFound.
	Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Stat returns the size of key, ErrNotFound when missing.
	Stat(ctx context.Context, key string) (int64, error)
	// List calls fn for each key under prefix in key order, after after.
	List(ctx context.Context, prefix, after string, fn func(key string, size int64) error) error
}

// Errors of the blob model.
var (
	// ErrMissingChunks is the error of an assembly whose organization does
	// not own every chunk it names.
	ErrMissingChunks = errors.New("store: missing chunks")
	// ErrChecksumMismatch is the error of an assembly whose chunks do not
	// hash to its checksum.
	ErrChecksumMismatch = errors.New("store: checksum mismatch")
)

// Chunk is a piece of an upload, named by the SHA-1 hex of its bytes.
type Chunk struct {
	SHA1 string
	Data []byte
}

// blobLockKey is the advisory-lock key of blob sha1: its first 60 bits. The
// uploader and the collector of a blob take it, so that a blob's row and
// bytes are never written and removed at once.
func blobLockKey(sha1 string) int64 {
	n, _ := strconv.ParseInt(sha1[:15], 16, 64) // 60 bits always fit
	return n
}

// CheckChunkUpload reports ErrNotFound unless userID belongs to the
// organization orgSlug, which is all that chunk-upload options need.
func (s *Store) CheckChunkUpload(ctx context.Context, userID int64, orgSlug string) error {
	_, err := orgIDForMember(ctx, s.pool, userID, orgSlug)
	return err
}

// SaveChunks stores the chunks that chunks yields as blobs owned by the
// organization orgSlug that userID belongs to. It first takes every chunk
// into a temporary spool file, so that a request with a bad chunk stores
// none and no connection waits on the client; then it stores each chunk in
// a short transaction of its own. A blob already stored is not written
// again: the organization only becomes one of its owners; and a chunk the
// organization owns already writes nothing but the renewal of its
// ownership, at most once a second, which keeps it from the collector.
func (s *Store) SaveChunks(ctx context.Context, userID int64, orgSlug string, chunks iter.Seq2[Chunk, error]) error {
	org, err := orgIDForMember(ctx, s.pool, userID, orgSlug)
	if err != nil {
		return err
	}
	spool, err := os.CreateTemp("", "errata-chunks-*")
	if err != nil {
		return err
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	var list []spooledChunk
	for c, err := range chunks {
		if err != nil {
			return err
		}
		if _, err := spool.Write(c.Data); err != nil {
			return err
		}
		list = append(list, spooledChunk{c.SHA1, len(c.Data)})
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if s.orgQuota > 0 {
		if err := s.checkQuota(ctx, s.pool, org, list); err != nil {
			return err
		}
	}
	// Chunks the organization owns already are only marked as used.
	sha1s := make([]string, len(list))
	for i, c := range list {
		sha1s[i] = c.sha1
	}
	missing, err := missingChunks(ctx, s.pool, org, sha1s)
	if err != nil {
		return wrap(err)
	}
	var buf []byte
	for _, c := range list {
		buf = slices.Grow(buf[:0], c.size)[:c.size]
		if _, err := io.ReadFull(spool, buf); err != nil {
			return err
		}
		if !slices.Contains(missing, c.sha1) {
			continue
		}
		if err := s.saveBlob(ctx, org, Chunk{SHA1: c.sha1, Data: buf}); err != nil {
			return err
		}
	}
	return nil
}

// spooledChunk is a blob to store, by its SHA-1 and size: a chunk waiting
// in SaveChunks' spool file, or a piece of a file CreateFileFromReader
// stores.
type spooledChunk struct {
	sha1 string
	size int
}

// ErrQuotaExceeded is the error of an upload that would take an
// organization's blobs over ORG_STORAGE_QUOTA.
var ErrQuotaExceeded = errors.New("store: storage quota exceeded")

// checkQuota fails with ErrQuotaExceeded when the chunks of list that
// organization org does not own yet would take its blobs over the quota.
// Two uploads at once may together pass it by at most one blob each:
// saveBlob checks every new blob again, in its transaction.
func (s *Store) checkQuota(ctx context.Context, q querier, org int64, list []spooledChunk) error {
	sha1s := make([]string, len(list))
	sizes := make([]int64, len(list))
	for i, c := range list {
		sha1s[i], sizes[i] = c.sha1, int64(c.size)
	}
	// What the organization stores is summed only when the list adds
	// something: a blob it owns already (most chunks of a re-upload)
	// costs no scan of its blobs.
	var used, adding int64
	err := q.QueryRow(ctx, `
		SELECT a.adding, CASE WHEN a.adding > 0 THEN
			(SELECT COALESCE(sum(b.size), 0)::bigint FROM blob_owners o JOIN blobs b ON b.sha1 = o.sha1
			 WHERE o.organization_id = $1) ELSE 0 END
		FROM (SELECT COALESCE(sum(c.size), 0)::bigint AS adding FROM (
				SELECT DISTINCT ON (sha1) sha1, size FROM unnest($2::text[], $3::bigint[]) AS u (sha1, size)) c
			 WHERE NOT EXISTS (SELECT 1 FROM blob_owners o WHERE o.organization_id = $1 AND o.sha1 = c.sha1)) a`,
		org, sha1s, sizes).Scan(&adding, &used)
	if err != nil {
		return wrap(err)
	}
	if adding > 0 && used+adding > s.orgQuota {
		return fmt.Errorf("%w: %d bytes stored, %d more asked, quota %d", ErrQuotaExceeded, used, adding, s.orgQuota)
	}
	return nil
}

// saveBlob stores chunk c for organization org: its bytes and row when the
// blob is new, then the organization's ownership. Every path that stores
// bytes comes here, so this is where the storage quota holds: a blob the
// organization does not own yet must fit in it.
func (s *Store) saveBlob(ctx context.Context, org int64, c Chunk) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, blobLockKey(c.SHA1)); err != nil {
			return err
		}
		if s.orgQuota > 0 {
			if err := s.checkQuota(ctx, tx, org, []spooledChunk{{c.SHA1, len(c.Data)}}); err != nil {
				return err
			}
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM blobs WHERE sha1 = $1)`, c.SHA1).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			// A blob is shared by every organization that uploads the same
			// bytes: its name must be their SHA-1, whatever the caller says.
			if sum := sha1.Sum(c.Data); hex.EncodeToString(sum[:]) != c.SHA1 {
				return fmt.Errorf("chunk %s does not match its SHA-1", c.SHA1)
			}
			if err := s.putBlob(ctx, tx, c); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO blobs (sha1, size) VALUES ($1, $2)`, c.SHA1, len(c.Data)); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO blob_owners AS o (organization_id, sha1) VALUES ($1, $2)
			ON CONFLICT (organization_id, sha1) DO UPDATE SET date_used = now()
			WHERE o.date_used < now() - interval '1 second'`, org, c.SHA1)
		return err
	})
}

// putBlob stores the bytes of c in the blob store, or in blob_data within
// tx when the bytes live in PostgreSQL.
func (s *Store) putBlob(ctx context.Context, tx pgx.Tx, c Chunk) error {
	if s.objects != nil {
		return s.objects.Put(ctx, s.objectKey(c.SHA1), bytes.NewReader(c.Data), int64(len(c.Data)))
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO blob_data (key, data) VALUES ($1, $2)
		ON CONFLICT (key) DO NOTHING`, c.SHA1, c.Data)
	return err
}

// objectKey is the key of blob sha1 in the object store.
func (s *Store) objectKey(sha1 string) string { return s.objectPrefix + sha1 }

// readBlob calls fn with length bytes of blob sha1 from offset (length < 0:
// to its end). The bytes are valid only during fn.
func (s *Store) readBlob(ctx context.Context, sha1 string, offset, length int64, fn func([]byte) error) error {
	if s.objects != nil {
		rc, err := s.objects.Get(ctx, s.objectKey(sha1), offset, length)
		if err != nil {
			return err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			return err
		}
		return fn(b)
	}
	var rows pgx.Rows
	var err error
	if offset == 0 && length < 0 {
		rows, err = s.pool.Query(ctx, `SELECT data FROM blob_data WHERE key = $1`, sha1)
	} else {
		if length < 0 || length > math.MaxInt32 {
			length = math.MaxInt32 // blobs are far smaller
		}
		rows, err = s.pool.Query(ctx, `
			SELECT substring(data FROM $2::int + 1 FOR $3::int) FROM blob_data WHERE key = $1`,
			sha1, offset, length)
	}
	if err != nil {
		return wrap(err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return wrap(err)
		}
		return fmt.Errorf("blob %s: %w", sha1, ErrNotFound)
	}
	// RawValues is valid until the next row: fn sees it without a copy.
	if err := fn(rows.RawValues()[0]); err != nil {
		return err
	}
	rows.Close()
	return wrap(rows.Err())
}

// deleteBlobBytes removes the bytes of blob sha1, within tx when they live
// in PostgreSQL.
func (s *Store) deleteBlobBytes(ctx context.Context, tx pgx.Tx, sha1 string) error {
	if s.objects != nil {
		return s.objects.Delete(ctx, s.objectKey(sha1))
	}
	_, err := tx.Exec(ctx, `DELETE FROM blob_data WHERE key = $1`, sha1)
	return err
}

// MissingChunks returns, in order and without repeats, those of sha1s that
// organization orgID does not own, and marks the others as used now, so
// that the collector keeps them for an assembly that is about to name them.
func (s *Store) MissingChunks(ctx context.Context, orgID int64, sha1s []string) ([]string, error) {
	m, err := missingChunks(ctx, s.pool, orgID, sha1s)
	return m, wrap(err)
}

// missingChunks returns the chunks of sha1s, in order and without repeats,
// that organization orgID lacks, and touches the ones it has.
func missingChunks(ctx context.Context, q querier, orgID int64, sha1s []string) ([]string, error) {
	rows, err := q.Query(ctx, `
		WITH touched AS (
			UPDATE blob_owners SET date_used = now()
			WHERE organization_id = $1 AND sha1 = ANY($2::text[])
			  AND date_used < now() - interval '1 second'
			RETURNING sha1)
		SELECT c.sha1 FROM unnest($2::text[]) WITH ORDINALITY AS c (sha1, n)
		WHERE NOT EXISTS (SELECT 1 FROM blob_owners bo
			WHERE bo.organization_id = $1 AND bo.sha1 = c.sha1)
		GROUP BY c.sha1 ORDER BY min(c.n)`, orgID, sha1s)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ReadChunks calls fn with the bytes of each chunk of sha1s of organization
// orgID, in order, one blob at a time. A chunk the organization lacks is
// ErrNotFound (and ErrMissingChunks), before fn sees any byte.
func (s *Store) ReadChunks(ctx context.Context, orgID int64, sha1s []string, fn func([]byte) error) error {
	missing, err := missingChunks(ctx, s.pool, orgID, sha1s)
	if err != nil {
		return wrap(err)
	}
	if len(missing) > 0 {
		return fmt.Errorf("chunk %s: %w: %w", missing[0], ErrMissingChunks, ErrNotFound)
	}
	for _, sha1 := range sha1s {
		if err := s.readBlob(ctx, sha1, 0, -1, fn); err != nil {
			if errors.Is(err, ErrNotFound) {
				return fmt.Errorf("chunk %s removed while reading: %w: %w", sha1, ErrMissingChunks, ErrNotFound)
			}
			return err
		}
	}
	return nil
}
