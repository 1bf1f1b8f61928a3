package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// BundleFile is a file of an assembled bundle: a member of its zip, with
// where its data lies in the bundle.
type BundleFile struct {
	Path    string // the member's name in the zip
	URL     string
	Type    string // the manifest's type: minified_source, source_map, ...
	DebugID *string
	Headers map[string]string
	Start   int64 // where the member's stored data starts in the bundle
	CSize   int64 // its stored size
	Method  int16 // 0 stored, 8 deflated
	Size    int64 // its size once inflated
	SHA1    string
}

// Bundle is an assembled and checked artifact bundle to index.
type Bundle struct {
	OrganizationID int64
	File           PendingFile
	// BundleID names the bundle: the manifest's debug_id, else its checksum.
	BundleID string
	// Version is the release the bundle's files belong to; nil for a
	// bundle indexed only by debug ids.
	Version  *string
	Dist     *string
	Projects []string // slugs of the organization's projects
	Files    []BundleFile
}

// SaveBundle stores the file of b and indexes b in one transaction,
// writing no byte of its content: with a version, the release (created when missing and linked to the
// projects) gets one release file per bundle file, pointing into the
// bundle, which replaces a release file of the same name and dist unless
// it has the same content and headers; when any file carries a debug id,
// the bundle is indexed by them for its projects.
func (s *Store) SaveBundle(ctx context.Context, b Bundle) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		f, err := storeFile(ctx, tx, b.File)
		if err != nil {
			return err
		}
		b.File.File = f
		if b.Version != nil {
			releaseID, err := ensureRelease(ctx, tx, b.OrganizationID, *b.Version, b.Projects)
			if err != nil {
				return err
			}
			if err := saveReleaseMembers(ctx, tx, releaseID, b); err != nil {
				return err
			}
		}
		for _, f := range b.Files {
			if f.DebugID != nil {
				return saveDebugIDBundle(ctx, tx, b)
			}
		}
		return nil
	})
}

// saveReleaseMembers writes the release files of bundle b in release
// releaseID, in one statement. Of two files with the same URL the last (in
// path order) wins, as if they were stored one after the other.
func saveReleaseMembers(ctx context.Context, tx pgx.Tx, releaseID int64, b Bundle) error {
	byURL := make(map[string]int, len(b.Files))
	var rows []BundleFile
	for _, f := range b.Files {
		if i, ok := byURL[f.URL]; ok {
			rows[i] = f
			continue
		}
		byURL[f.URL] = len(rows)
		rows = append(rows, f)
	}
	var (
		names, headers, sha1s []string
		starts, csizes, sizes []int64
		methods               []int16
	)
	for _, f := range rows {
		names = append(names, f.URL)
		headers = append(headers, string(headersJSON(f.Headers)))
		sha1s = append(sha1s, f.SHA1)
		starts = append(starts, f.Start)
		csizes = append(csizes, f.CSize)
		sizes = append(sizes, f.Size)
		methods = append(methods, f.Method)
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO release_files AS rf (release_id, file_id, name, dist, headers,
			member_start, member_csize, member_method, size, sha1)
		SELECT $1, $2, m.name, $3, m.headers::jsonb, m.start, m.csize, m.method, m.size, m.sha1
		FROM unnest($4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::smallint[], $9::bigint[], $10::text[])
			AS m (name, headers, start, csize, method, size, sha1)
		ON CONFLICT (release_id, name, dist) DO UPDATE SET
			file_id = EXCLUDED.file_id, headers = EXCLUDED.headers,
			member_start = EXCLUDED.member_start, member_csize = EXCLUDED.member_csize,
			member_method = EXCLUDED.member_method, size = EXCLUDED.size, sha1 = EXCLUDED.sha1
		WHERE (rf.sha1, rf.headers) IS DISTINCT FROM (EXCLUDED.sha1, EXCLUDED.headers)`,
		releaseID, b.File.ID, b.Dist, names, headers, starts, csizes, methods, sizes, sha1s)
	return err
}

// saveDebugIDBundle indexes bundle b by the debug ids of its files, for its
// projects. The same bundle again replaces its index.
func saveDebugIDBundle(ctx context.Context, tx pgx.Tx, b Bundle) error {
	var id int64
	err := tx.QueryRow(ctx, `
		INSERT INTO artifact_bundles (organization_id, bundle_id, file_id, release, dist, file_count)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (organization_id, bundle_id) DO UPDATE SET
			file_id = EXCLUDED.file_id, release = COALESCE(EXCLUDED.release, artifact_bundles.release),
			dist = COALESCE(EXCLUDED.dist, artifact_bundles.dist),
			file_count = EXCLUDED.file_count, date_modified = now()
		RETURNING id`,
		b.OrganizationID, b.BundleID, b.File.ID, b.Version, b.Dist, len(b.Files)).Scan(&id)
	if err != nil {
		return fmt.Errorf("artifact bundle: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO artifact_bundle_projects (artifact_bundle_id, project_id)
		SELECT $1, p.id FROM projects p WHERE p.organization_id = $2 AND p.slug = ANY($3)
		ON CONFLICT DO NOTHING`, id, b.OrganizationID, b.Projects); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM artifact_bundle_files WHERE artifact_bundle_id = $1`, id); err != nil {
		return err
	}
	var (
		paths, urls, types, headers, sha1s []string
		debugIDs                           []*string
		starts, csizes, sizes              []int64
		methods                            []int16
	)
	for _, f := range b.Files {
		paths = append(paths, f.Path)
		urls = append(urls, f.URL)
		types = append(types, f.Type)
		debugIDs = append(debugIDs, f.DebugID)
		headers = append(headers, string(headersJSON(f.Headers)))
		starts = append(starts, f.Start)
		csizes = append(csizes, f.CSize)
		methods = append(methods, f.Method)
		sizes = append(sizes, f.Size)
		sha1s = append(sha1s, f.SHA1)
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO artifact_bundle_files (artifact_bundle_id, path, url, file_type, debug_id, headers,
			member_start, member_csize, member_method, size, sha1)
		SELECT $1, m.path, m.url, m.type, m.debug_id::uuid, m.headers::jsonb,
			m.start, m.csize, m.method, m.size, m.sha1
		FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
			$7::bigint[], $8::bigint[], $9::smallint[], $10::bigint[], $11::text[])
			AS m (path, url, type, debug_id, headers, start, csize, method, size, sha1)`,
		id, paths, urls, types, debugIDs, headers, starts, csizes, methods, sizes, sha1s)
	return err
}
