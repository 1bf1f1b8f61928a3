package store

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
)

// StorageUse is what one kind of file of one organization takes: its
// files and their bytes as uploaded (a blob two files share counts twice).
type StorageUse struct {
	Org   string
	Kind  string // release files, artifact bundles, ..., or unreferenced
	Files int64
	Bytes int64
}

// StorageOwner is what an organization's blobs take, each counted once.
type StorageOwner struct {
	Org   string
	Blobs int64
	Bytes int64
}

// StorageReport is what storage holds: per organization and kind, per
// organization's blobs, and what waits for the collector.
type StorageReport struct {
	Uses   []StorageUse
	Owners []StorageOwner
	// Blobs and Bytes are every blob stored, each once.
	Blobs, Bytes int64
	// UnownedBlobs and UnownedBytes are the blobs no organization owns
	// any more: the collector removes them.
	UnownedBlobs, UnownedBytes int64
	// UnusedOwners are ownerships that no file uses: chunks uploaded and
	// not (yet) assembled, or left by deleted files.
	UnusedOwners int64
	// Tables is the size on disk of each table of the blob model, indexes
	// and TOAST included.
	Tables map[string]int64
}

// Storage reports what storage holds.
func (s *Store) Storage(ctx context.Context) (StorageReport, error) {
	var r StorageReport
	err := s.read(ctx, func(q querier) error {
		var kinds []string
		for _, ref := range fileReferences {
			kinds = append(kinds, `SELECT '`+ref.kind+`' WHERE EXISTS (SELECT 1 FROM `+ref.table+` x WHERE x.file_id = f.id)`)
		}
		var none []string
		for _, ref := range fileReferences {
			none = append(none, `NOT EXISTS (SELECT 1 FROM `+ref.table+` x WHERE x.file_id = f.id)`)
		}
		kinds = append(kinds, `SELECT 'unreferenced' WHERE `+strings.Join(none, " AND "))
		rows, err := q.Query(ctx, `
			SELECT o.slug, k.kind, count(*), COALESCE(sum(f.size), 0)::bigint
			FROM files f JOIN organizations o ON o.id = f.organization_id
			CROSS JOIN LATERAL (`+strings.Join(kinds, " UNION ALL ")+`) AS k (kind)
			GROUP BY o.slug, k.kind ORDER BY o.slug, k.kind`)
		if err != nil {
			return err
		}
		r.Uses, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (StorageUse, error) {
			var u StorageUse
			err := row.Scan(&u.Org, &u.Kind, &u.Files, &u.Bytes)
			return u, err
		})
		if err != nil {
			return err
		}
		rows, err = q.Query(ctx, `
			SELECT o.slug, count(*), COALESCE(sum(b.size), 0)::bigint
			FROM blob_owners bo JOIN blobs b ON b.sha1 = bo.sha1
			JOIN organizations o ON o.id = bo.organization_id
			GROUP BY o.slug ORDER BY o.slug`)
		if err != nil {
			return err
		}
		r.Owners, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (StorageOwner, error) {
			var o StorageOwner
			err := row.Scan(&o.Org, &o.Blobs, &o.Bytes)
			return o, err
		})
		if err != nil {
			return err
		}
		err = q.QueryRow(ctx, `
			SELECT count(*), COALESCE(sum(size), 0)::bigint,
				count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM blob_owners o WHERE o.sha1 = b.sha1)),
				COALESCE(sum(size) FILTER (WHERE NOT EXISTS (SELECT 1 FROM blob_owners o WHERE o.sha1 = b.sha1)), 0)::bigint,
				(SELECT count(*) FROM blob_owners o WHERE NOT EXISTS (SELECT 1 FROM file_blobs fb
					WHERE fb.organization_id = o.organization_id AND fb.sha1 = o.sha1))
			FROM blobs b`).Scan(&r.Blobs, &r.Bytes, &r.UnownedBlobs, &r.UnownedBytes, &r.UnusedOwners)
		if err != nil {
			return err
		}
		r.Tables = map[string]int64{}
		for _, table := range []string{"blob_data", "blobs", "blob_owners", "files", "file_blobs", "release_files",
			"artifact_bundles", "artifact_bundle_files"} {
			var n int64
			if err := q.QueryRow(ctx, `SELECT pg_total_relation_size($1::regclass)`, table).Scan(&n); err != nil {
				return err
			}
			r.Tables[table] = n
		}
		return nil
	})
	return r, err
}
