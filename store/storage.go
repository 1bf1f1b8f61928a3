package store

import (
	"context"
	"fmt"
	"slices"
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

// fileKinds is a query of the kinds of file f, by the tables that refer
// to it (fileReferences), or 'unreferenced': a file of a bundle and a
// release both counts once in each.
func fileKinds() string {
	kinds := make([]string, 0, len(fileReferences)+1)
	none := make([]string, 0, len(fileReferences))
	for _, ref := range fileReferences {
		kinds = append(kinds, `SELECT '`+ref.kind+`' WHERE EXISTS (SELECT 1 FROM `+ref.table+` x WHERE x.file_id = f.id)`)
		none = append(none, `NOT EXISTS (SELECT 1 FROM `+ref.table+` x WHERE x.file_id = f.id)`)
	}
	kinds = append(kinds, `SELECT 'unreferenced' WHERE `+strings.Join(none, " AND "))
	return strings.Join(kinds, " UNION ALL ")
}

// Storage reports what storage holds.
func (s *Store) Storage(ctx context.Context) (StorageReport, error) {
	var r StorageReport
	err := s.read(ctx, func(q querier) error {
		rows, err := q.Query(ctx, `
			SELECT o.slug, k.kind, count(*), COALESCE(sum(f.size), 0)::bigint
			FROM files f JOIN organizations o ON o.id = f.organization_id
			CROSS JOIN LATERAL (`+fileKinds()+`) AS k (kind)
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

// OrganizationStorage is what one organization stores: its files per kind
// as uploaded (as in StorageUse), its blobs each counted once (what the
// quota bounds), and the quota, 0 when there is none.
type OrganizationStorage struct {
	Uses         []StorageUse
	Blobs, Bytes int64
	Quota        int64
}

// OrganizationStorage reports what the organization orgSlug that userID
// belongs to stores, in one statement; another organization is
// ErrNotFound.
func (s *Store) OrganizationStorage(ctx context.Context, userID int64, orgSlug string) (OrganizationStorage, error) {
	// The first row, of kind NULL, is the organization's blobs; there is
	// none when the user is not a member.
	rows, err := s.pool.Query(ctx, `
		WITH org AS (`+memberOrg+`)
		SELECT NULL::text, count(b.sha1), COALESCE(sum(b.size), 0)::bigint
		FROM org LEFT JOIN blob_owners bo ON bo.organization_id = org.id
		LEFT JOIN blobs b ON b.sha1 = bo.sha1
		GROUP BY org.id
		UNION ALL
		(SELECT k.kind, count(*), COALESCE(sum(f.size), 0)::bigint
		 FROM org JOIN files f ON f.organization_id = org.id
		 CROSS JOIN LATERAL (`+fileKinds()+`) AS k (kind)
		 GROUP BY k.kind)`, userID, orgSlug)
	if err != nil {
		return OrganizationStorage{}, wrap(err)
	}
	r := OrganizationStorage{Quota: max(s.orgQuota, 0)}
	found := false
	var kind *string
	var files, bytes int64
	_, err = pgx.ForEachRow(rows, []any{&kind, &files, &bytes}, func() error {
		if kind == nil {
			found, r.Blobs, r.Bytes = true, files, bytes
		} else {
			r.Uses = append(r.Uses, StorageUse{Org: orgSlug, Kind: *kind, Files: files, Bytes: bytes})
		}
		return nil
	})
	if err == nil && !found {
		err = fmt.Errorf("organization %q: %w", orgSlug, ErrNotFound)
	}
	slices.SortFunc(r.Uses, func(a, b StorageUse) int { return strings.Compare(a.Kind, b.Kind) })
	return r, wrap(err)
}
