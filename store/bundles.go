package store

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

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
		SELECT $1, p.id FROM projects p WHERE p.organization_id = $2 AND (p.slug = ANY($3) OR p.id::text = ANY($3))
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

// ArtifactBundle is a bundle indexed by the debug ids of its files, as a
// project sees it.
type ArtifactBundle struct {
	ID           int64
	BundleID     string
	Release      *string
	Dist         *string
	FileCount    int
	DateCreated  time.Time
	DateModified time.Time
}

// ArtifactBundleFile is a file of an artifact bundle.
type ArtifactBundleFile struct {
	ID       int64
	BundleID string
	Path     string
	URL      string
	Type     string
	DebugID  *string
	Headers  map[string]string
	Size     int64
	SHA1     string
}

// ProjectScope names a project of an organization that UserID belongs to.
type ProjectScope struct {
	UserID      int64
	OrgSlug     string
	ProjectSlug string
}

// artifactBundleFrom selects the artifact bundles of a project scope; its
// placeholders are $1 user, $2 organization slug, $3 project slug.
const artifactBundleFrom = artifactBundleJoins + ` WHERE o.slug = $2`

// artifactBundleJoins is artifactBundleFrom without its WHERE clause, for
// statements that join more tables.
const artifactBundleJoins = `
	FROM artifact_bundles ab
	JOIN organizations o ON o.id = ab.organization_id
	JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
	JOIN projects p ON p.organization_id = o.id AND p.slug = $3
	JOIN artifact_bundle_projects abp ON abp.artifact_bundle_id = ab.id AND abp.project_id = p.id`

const artifactBundleCols = `ab.id, ab.bundle_id, ab.release, ab.dist, ab.file_count, ab.date_created, ab.date_modified`

func scanArtifactBundle(row pgx.Row) (ArtifactBundle, error) {
	var b ArtifactBundle
	err := row.Scan(&b.ID, &b.BundleID, &b.Release, &b.Dist, &b.FileCount, &b.DateCreated, &b.DateModified)
	return b, err
}

// ArtifactBundles lists a page of the artifact bundles of the project sc
// names, newest first. query, when not empty, keeps the bundles whose
// release or dist is query, or, when query is a UUID, whose bundle id or
// one of whose files' debug id is query. A project the caller cannot see
// is ErrNotFound.
func (s *Store) ArtifactBundles(ctx context.Context, sc ProjectScope, query string, page Page) ([]ArtifactBundle, PageInfo, error) {
	if _, _, err := projectIDForMember(ctx, s.pool, sc.UserID, sc.OrgSlug, sc.ProjectSlug); err != nil {
		return nil, PageInfo{}, err
	}
	from := artifactBundleFrom
	args := []any{sc.UserID, sc.OrgSlug, sc.ProjectSlug}
	if query != "" {
		from += ` AND (ab.release = $4 OR ab.dist = $4 OR ab.bundle_id = $4 OR EXISTS (
			SELECT 1 FROM artifact_bundle_files abf
			WHERE abf.artifact_bundle_id = ab.id AND abf.debug_id::text = $4))`
		args = append(args, query)
	}
	return list(ctx, s.pool, listQuery{
		cols: artifactBundleCols, from: from, args: args,
		createdCol: "ab.date_created", idCol: "ab.id",
	}, page, func(rows pgx.Rows) (ArtifactBundle, Key, error) {
		b, err := scanArtifactBundle(rows)
		return b, Key{Created: b.DateCreated, ID: b.ID}, err
	})
}

const artifactBundleFileCols = `abf.id, ab.bundle_id, abf.path, abf.url, abf.file_type, abf.debug_id::text,
	abf.headers, abf.size, abf.sha1`

func scanArtifactBundleFile(row pgx.Row, extra ...any) (ArtifactBundleFile, error) {
	var f ArtifactBundleFile
	var headers []byte
	err := row.Scan(append([]any{&f.ID, &f.BundleID, &f.Path, &f.URL, &f.Type, &f.DebugID, &headers, &f.Size, &f.SHA1}, extra...)...)
	if err != nil {
		return f, err
	}
	f.Headers = map[string]string{}
	if err := json.Unmarshal(headers, &f.Headers); err != nil {
		return f, fmt.Errorf("artifact bundle file %d headers: %w", f.ID, err)
	}
	return f, nil
}

// ArtifactBundleFiles returns bundle bundleID of the project sc names with
// its files in path order.
func (s *Store) ArtifactBundleFiles(ctx context.Context, sc ProjectScope, bundleID string) (ArtifactBundle, []ArtifactBundleFile, error) {
	var b ArtifactBundle
	var files []ArtifactBundleFile
	err := s.read(ctx, func(q querier) error {
		var err error
		b, err = scanArtifactBundle(q.QueryRow(ctx, `
			SELECT `+artifactBundleCols+artifactBundleFrom+` AND ab.bundle_id = $4`,
			sc.UserID, sc.OrgSlug, sc.ProjectSlug, bundleID))
		if err != nil {
			return err
		}
		rows, err := q.Query(ctx, `
			SELECT `+artifactBundleFileCols+`
			FROM artifact_bundle_files abf JOIN artifact_bundles ab ON ab.id = abf.artifact_bundle_id
			WHERE ab.id = $1 ORDER BY abf.path`, b.ID)
		if err != nil {
			return err
		}
		files, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ArtifactBundleFile, error) {
			return scanArtifactBundleFile(row)
		})
		return err
	})
	return b, files, err
}

// ArtifactLookup returns the files of the project sc names whose debug id
// is debugID, newest bundle first, at most limit. A project the caller
// cannot see is ErrNotFound.
func (s *Store) ArtifactLookup(ctx context.Context, sc ProjectScope, debugID string, limit int) ([]ArtifactBundleFile, error) {
	if _, _, err := projectIDForMember(ctx, s.pool, sc.UserID, sc.OrgSlug, sc.ProjectSlug); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+artifactBundleFileCols+artifactBundleJoins+`
		JOIN artifact_bundle_files abf ON abf.artifact_bundle_id = ab.id
		WHERE o.slug = $2 AND abf.debug_id = $4::uuid
		ORDER BY ab.date_created DESC, abf.id DESC LIMIT $5`,
		sc.UserID, sc.OrgSlug, sc.ProjectSlug, debugID, limit)
	if err != nil {
		return nil, wrap(err)
	}
	files, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ArtifactBundleFile, error) {
		return scanArtifactBundleFile(row)
	})
	return files, wrap(err)
}

// WriteArtifactBundleFile streams file fileID of bundle bundleID of the
// project sc names, like WriteReleaseFile.
func (s *Store) WriteArtifactBundleFile(ctx context.Context, sc ProjectScope, bundleID string, fileID int64, start func(ArtifactBundleFile) io.Writer) error {
	var orgID, bundleFile int64
	var member bundleMember
	f, err := scanArtifactBundleFile(s.pool.QueryRow(ctx, `
		SELECT `+artifactBundleFileCols+`, ab.organization_id, ab.file_id,
			abf.member_start, abf.member_csize, abf.member_method`+artifactBundleJoins+`
		JOIN artifact_bundle_files abf ON abf.artifact_bundle_id = ab.id
		WHERE o.slug = $2 AND ab.bundle_id = $4 AND abf.id = $5`,
		sc.UserID, sc.OrgSlug, sc.ProjectSlug, bundleID, fileID),
		&orgID, &bundleFile, &member.start, &member.csize, &member.method)
	if err != nil {
		return wrap(err)
	}
	return s.writeContent(ctx, orgID, bundleFile, member, f.Size, func() io.Writer { return start(f) })
}

// DeleteArtifactBundle removes bundle bundleID from the project sc names,
// and the bundle itself when no other project has it. Its content goes when
// the collector finds nothing else uses it. Nothing removed is ErrNotFound.
func (s *Store) DeleteArtifactBundle(ctx context.Context, sc ProjectScope, bundleID string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `
			DELETE FROM artifact_bundle_projects x USING artifact_bundles ab, organizations o, memberships m, projects p
			WHERE x.artifact_bundle_id = ab.id AND x.project_id = p.id
			  AND o.id = ab.organization_id AND m.organization_id = o.id AND m.user_id = $1
			  AND p.organization_id = o.id AND p.slug = $3 AND o.slug = $2 AND ab.bundle_id = $4
			RETURNING ab.id`, sc.UserID, sc.OrgSlug, sc.ProjectSlug, bundleID).Scan(&id)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			DELETE FROM artifact_bundles ab WHERE ab.id = $1
			  AND NOT EXISTS (SELECT 1 FROM artifact_bundle_projects x WHERE x.artifact_bundle_id = ab.id)`, id)
		return err
	})
}
