package store

import (
	"context"
	"fmt"
	"iter"

	"github.com/jackc/pgx/v5"
)

// Chunk is a piece of an upload, named by the SHA-1 hex of its bytes.
type Chunk struct {
	SHA1 string
	Data []byte
}

// memberOrganizationID finds the organization orgSlug when userID belongs
// to it; otherwise ErrNotFound.
func memberOrganizationID(ctx context.Context, q querier, userID int64, orgSlug string) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, `
		SELECT o.id FROM organizations o
		JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
		WHERE o.slug = $2`, userID, orgSlug).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("organization %q: %w", orgSlug, wrap(err))
	}
	return id, nil
}

// CheckChunkUpload reports ErrNotFound unless userID belongs to the
// organization orgSlug, which is all that chunk-upload options need.
func (s *Store) CheckChunkUpload(ctx context.Context, userID int64, orgSlug string) error {
	_, err := memberOrganizationID(ctx, s.pool, userID, orgSlug)
	return err
}

// SaveChunks stores the chunks that chunks yields for the organization
// orgSlug that userID belongs to, one at a time, so that only one chunk is
// in memory. A chunk the organization already has is left as it is. When
// chunks yields an error, nothing is stored and SaveChunks returns it.
func (s *Store) SaveChunks(ctx context.Context, userID int64, orgSlug string, chunks iter.Seq2[Chunk, error]) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		org, err := memberOrganizationID(ctx, tx, userID, orgSlug)
		if err != nil {
			return err
		}
		for c, err := range chunks {
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `
				INSERT INTO file_chunks (organization_id, sha1, size, data)
				VALUES ($1, $2, $3, $4)
				ON CONFLICT (organization_id, sha1) DO NOTHING`,
				org, c.SHA1, len(c.Data), c.Data); err != nil {
				return err
			}
		}
		return nil
	})
}

// missingChunks returns the chunks of sha1s, in order and without repeats,
// that organization orgID lacks.
func missingChunks(ctx context.Context, q querier, orgID int64, sha1s []string) ([]string, error) {
	rows, err := q.Query(ctx, `
		SELECT c.sha1 FROM unnest($2::text[]) WITH ORDINALITY AS c (sha1, n)
		WHERE NOT EXISTS (SELECT 1 FROM file_chunks fc
			WHERE fc.organization_id = $1 AND fc.sha1 = c.sha1)
		GROUP BY c.sha1 ORDER BY min(c.n)`, orgID, sha1s)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ReadChunks calls fn with the bytes of each chunk of sha1s of organization
// orgID, in order, reading one row at a time. A chunk the organization
// lacks is ErrNotFound, before fn sees any byte.
func (s *Store) ReadChunks(ctx context.Context, orgID int64, sha1s []string, fn func([]byte) error) error {
	missing, err := missingChunks(ctx, s.pool, orgID, sha1s)
	if err != nil {
		return wrap(err)
	}
	if len(missing) > 0 {
		return fmt.Errorf("chunk %s: %w", missing[0], ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT fc.data FROM unnest($2::text[]) WITH ORDINALITY AS c (sha1, n)
		JOIN file_chunks fc ON fc.organization_id = $1 AND fc.sha1 = c.sha1
		ORDER BY c.n`, orgID, sha1s)
	if err != nil {
		return wrap(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
		if err := fn(rows.RawValues()[0]); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return wrap(err)
	}
	if n != len(sha1s) {
		return fmt.Errorf("chunks removed while reading: %w", ErrNotFound)
	}
	return nil
}
