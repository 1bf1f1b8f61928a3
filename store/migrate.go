package store

import (
	"context"
	"crypto/sha1"
	"encoding/hex"

	"github.com/jackc/pgx/v5"
)

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
