package store

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// sha1Name matches the names of blobs.
var sha1Name = regexp.MustCompile(`^[0-9a-f]{40}$`)

// errPageDone ends a List early, at the end of a page of keys.
var errPageDone = errors.New("page done")

// collectOrphanObjects removes the objects under the store's prefix that
// no blob row names: what an upload left when it stored its object and
// then failed (or crashed) before committing the blob's row. Each is
// checked again under the blob's advisory lock, which an upload holds from
// before its object is stored until its row is committed, so an upload in
// flight never loses its object. Keys that are not a SHA-1 are not the
// store's and stay. It returns how many objects it removed.
func (s *Store) collectOrphanObjects(ctx context.Context) (int64, error) {
	if s.objects == nil {
		return 0, nil
	}
	// Only under a prefix of this deployment's own: another's objects
	// are not in this database and would all look orphaned.
	if err := s.ClaimBlobPrefix(ctx); err != nil {
		return 0, err
	}
	var removed int64
	after := ""
	for {
		var keys []string
		err := s.objects.List(ctx, s.objectPrefix, after, func(key string, _ int64) error {
			after = key
			if name := strings.TrimPrefix(key, s.objectPrefix); sha1Name.MatchString(name) {
				keys = append(keys, name)
			}
			if len(keys) == collectBatch {
				return errPageDone
			}
			return nil
		})
		if err != nil && !errors.Is(err, errPageDone) {
			return removed, err
		}
		last := err == nil
		if len(keys) > 0 {
			rows, err := s.pool.Query(ctx, `
				SELECT k FROM unnest($1::text[]) AS k
				WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.sha1 = k)`, keys)
			if err != nil {
				return removed, wrap(err)
			}
			orphans, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return removed, wrap(err)
			}
			for _, sha1 := range orphans {
				gone := false
				err := s.inTx(ctx, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, blobLockKey(sha1)); err != nil {
						return err
					}
					var exists bool
					if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM blobs WHERE sha1 = $1)`, sha1).Scan(&exists); err != nil {
						return err
					}
					if exists {
						return nil // its upload committed meanwhile
					}
					gone = true
					return s.objects.Delete(ctx, s.objectKey(sha1))
				})
				if err != nil {
					return removed, err
				}
				if gone {
					removed++
				}
			}
		}
		if last {
			return removed, nil
		}
	}
}
