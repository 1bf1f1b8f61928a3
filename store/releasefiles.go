package store

import (
	"bufio"
	"compress/flate"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReleaseFile is a file attached to a release.
type ReleaseFile struct {
	ID          int64
	Name        string
	Dist        *string
	Headers     map[string]string
	Size        int64
	SHA1        string
	DateCreated time.Time
}

// ReleaseFileScope says which release's files a caller asks for: the
// release version in the organization OrgSlug that UserID belongs to, and
// on project routes (ProjectSlug not empty) only when the release is linked
// to that project.
type ReleaseFileScope struct {
	UserID      int64
	OrgSlug     string
	ProjectSlug string
	Version     string
}

// releaseFileFrom selects the release files a scope may see; its
// placeholders are $1 user, $2 organization slug, $3 version and $4 project
// slug (” on organization routes).
const releaseFileFrom = `
	FROM release_files rf
	JOIN releases r ON r.id = rf.release_id
	JOIN organizations o ON o.id = r.organization_id
	JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
	WHERE o.slug = $2 AND r.version = $3
	  AND ($4 = '' OR EXISTS (
		SELECT 1 FROM release_projects rp JOIN projects p ON p.id = rp.project_id
		WHERE rp.release_id = r.id AND p.slug = $4))`

const releaseFileCols = `rf.id, rf.name, rf.dist, rf.headers, rf.size, rf.sha1, rf.date_created`

// scanReleaseFile scans the columns releaseFileCols, then into extra.
func scanReleaseFile(row pgx.Row, extra ...any) (ReleaseFile, error) {
	var rf ReleaseFile
	var headers []byte
	err := row.Scan(append([]any{&rf.ID, &rf.Name, &rf.Dist, &headers, &rf.Size, &rf.SHA1, &rf.DateCreated}, extra...)...)
	if err != nil {
		return rf, err
	}
	rf.Headers = map[string]string{}
	if err := json.Unmarshal(headers, &rf.Headers); err != nil {
		return rf, fmt.Errorf("release file %d headers: %w", rf.ID, err)
	}
	return rf, nil
}

func (sc ReleaseFileScope) args() []any {
	return []any{sc.UserID, sc.OrgSlug, sc.Version, sc.ProjectSlug}
}

// ReleaseFileFilter narrows a list of release files as Sentry's
// ?query= and ?checksum= do; the zero value lists them all.
type ReleaseFileFilter struct {
	Names     []string // when not empty, names that contain one of them (any case)
	Checksums []string // when not empty, files with one of these SHA-1s
}

// ReleaseFiles lists a page of the files of the release sc names, newest
// first, that match f. A release the caller cannot see has no files.
func (s *Store) ReleaseFiles(ctx context.Context, sc ReleaseFileScope, f ReleaseFileFilter, page Page) ([]ReleaseFile, PageInfo, error) {
	from, args := releaseFileFrom, sc.args()
	if len(f.Names) > 0 {
		patterns := make([]string, len(f.Names))
		for i, n := range f.Names {
			patterns[i] = "%" + likeEscaper.Replace(n) + "%"
		}
		args = append(args, patterns)
		from += fmt.Sprintf(" AND rf.name ILIKE ANY ($%d)", len(args))
	}
	if len(f.Checksums) > 0 {
		args = append(args, f.Checksums)
		from += fmt.Sprintf(" AND rf.sha1 = ANY ($%d)", len(args))
	}
	return list(ctx, s.pool, listQuery{
		cols:       releaseFileCols,
		from:       from,
		args:       args,
		createdCol: "rf.date_created",
		idCol:      "rf.id",
	}, page, func(rows pgx.Rows) (ReleaseFile, Key, error) {
		rf, err := scanReleaseFile(rows)
		return rf, Key{Created: rf.DateCreated, ID: rf.ID}, err
	})
}

// ReleaseFile returns the file id of the release sc names.
func (s *Store) ReleaseFile(ctx context.Context, sc ReleaseFileScope, id int64) (ReleaseFile, error) {
	rf, err := scanReleaseFile(s.pool.QueryRow(ctx, `
		SELECT `+releaseFileCols+releaseFileFrom+` AND rf.id = $5`,
		append(sc.args(), id)...))
	return rf, wrap(err)
}

// WriteReleaseFile streams the content of file id of the release sc names.
// It calls start with the file's record once it is found, then writes the
// content to the writer start returned: the whole stored file, or the
// member of a bundle, inflated when it is compressed. No transaction and no
// connection is held while the client reads: the file is read in bounded
// windows, one short query each.
func (s *Store) WriteReleaseFile(ctx context.Context, sc ReleaseFileScope, id int64, start func(ReleaseFile) io.Writer) error {
	var orgID, fileID int64
	var member bundleMember
	row := s.pool.QueryRow(ctx, `
		SELECT `+releaseFileCols+`, r.organization_id, rf.file_id,
			rf.member_start, rf.member_csize, rf.member_method`+releaseFileFrom+` AND rf.id = $5`,
		append(sc.args(), id)...)
	rf, err := scanReleaseFile(row, &orgID, &fileID, &member.start, &member.csize, &member.method)
	if err != nil {
		return wrap(err)
	}
	return s.writeContent(ctx, orgID, fileID, member, rf.Size, func() io.Writer { return start(rf) })
}

// writeContent streams size bytes of the content of file fileID of
// organization orgID (the whole file, or its member m, inflated) to the
// writer start returns. The first bytes are read before start is called: a
// blob store that cannot be reached is then an error the handler can still
// answer (503), not a response cut short.
func (s *Store) writeContent(ctx context.Context, orgID, fileID int64, m bundleMember, size int64, start func() io.Writer) error {
	fr, err := s.OpenFile(ctx, orgID, fileID)
	if err != nil {
		return err
	}
	s.touchFile(ctx, fileID)
	content, err := m.open(fr, size)
	if err != nil {
		return err
	}
	br := bufio.NewReaderSize(content, 256<<10)
	if size > 0 {
		if _, err := br.Peek(1); err != nil {
			return wrap(err)
		}
	}
	n, err := br.WriteTo(start())
	if err == nil && n != size {
		err = fmt.Errorf("file %d: %d bytes, not %d: %w", fileID, n, size, io.ErrUnexpectedEOF)
	}
	return wrap(err)
}

// bundleMember is where a release file lies in a bundle; all nil for a
// release file that is a whole file.
type bundleMember struct {
	start, csize *int64
	method       *int16
}

// open returns the content of the member in fr, size bytes once inflated.
func (m bundleMember) open(fr *FileReader, size int64) (io.Reader, error) {
	if m.start == nil || m.csize == nil || m.method == nil {
		return fr, nil
	}
	section := io.NewSectionReader(fr, *m.start, *m.csize)
	switch *m.method {
	case 0:
		return section, nil
	case 8:
		return io.LimitReader(flate.NewReader(bufio.NewReaderSize(section, 64<<10)), size), nil
	}
	return nil, fmt.Errorf("bundle member: unknown method %d", *m.method)
}

// touchFile records that file id was used now, at most once an hour, for
// FILE_RETENTION_DAYS. A failure only costs the record.
func (s *Store) touchFile(ctx context.Context, id int64) {
	s.pool.Exec(ctx, `
		UPDATE files SET date_used = now() WHERE id = $1 AND date_used < now() - interval '1 hour'`, id) //nolint:errcheck // best effort
}

// DeleteReleaseFile removes file id of the release sc names. Its content
// goes when the collector finds nothing else uses it. Nothing removed is
// ErrNotFound.
func (s *Store) DeleteReleaseFile(ctx context.Context, sc ReleaseFileScope, id int64) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var fileID int64
		return tx.QueryRow(ctx, `
			DELETE FROM release_files WHERE id = (
				SELECT rf.id `+releaseFileFrom+` AND rf.id = $5)
			RETURNING file_id`, append(sc.args(), id)...).Scan(&fileID)
	})
}

// NewReleaseFile is a release file to store, without its content.
type NewReleaseFile struct {
	Name    string
	Dist    *string
	Headers map[string]string
}

// CreateReleaseFile stores content as a new file of the release sc names.
// A release the caller cannot see is ErrNotFound; a file with the same name
// and dist already in the release is ErrConflict. The content is stored as
// blobs before the release file is written: a failure in between leaves
// blobs that the collector removes.
func (s *Store) CreateReleaseFile(ctx context.Context, sc ReleaseFileScope, nf NewReleaseFile, content io.ReadSeeker) (ReleaseFile, error) {
	var releaseID, orgID int64
	var taken bool
	err := s.pool.QueryRow(ctx, `
		SELECT r.id, r.organization_id, EXISTS (SELECT 1 FROM release_files
			WHERE release_id = r.id AND name = $5 AND dist IS NOT DISTINCT FROM $6)
		FROM releases r
		JOIN organizations o ON o.id = r.organization_id
		JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
		WHERE o.slug = $2 AND r.version = $3
		  AND ($4 = '' OR EXISTS (
			SELECT 1 FROM release_projects rp JOIN projects p ON p.id = rp.project_id
			WHERE rp.release_id = r.id AND p.slug = $4))`,
		append(sc.args(), nf.Name, nf.Dist)...).Scan(&releaseID, &orgID, &taken)
	if err != nil {
		return ReleaseFile{}, wrap(err)
	}
	if taken {
		return ReleaseFile{}, ErrConflict
	}
	f, err := s.CreateFileFromReader(ctx, orgID, content)
	if err != nil {
		return ReleaseFile{}, err
	}
	rf, err := scanReleaseFile(s.pool.QueryRow(ctx, `
		INSERT INTO release_files AS rf (release_id, file_id, name, dist, headers, size, sha1)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		RETURNING `+releaseFileCols,
		releaseID, f.ID, nf.Name, nf.Dist, headersJSON(nf.Headers), f.Size, f.SHA1))
	return rf, wrap(err)
}

// headersJSON is headers as stored: always an object.
func headersJSON(headers map[string]string) []byte {
	if headers == nil {
		headers = map[string]string{}
	}
	b, _ := json.Marshal(headers) // a map of strings always encodes
	return b
}

// DeleteReleaseFiles removes every file of the release version of the
// organization orgSlug that userID belongs to, linked to the project
// projectSlug when it is not empty, and returns how many it removed. A release the caller cannot
// see is ErrNotFound. The content goes with the collector.
func (s *Store) DeleteReleaseFiles(ctx context.Context, userID int64, orgSlug, projectSlug, version string) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var releaseID int64
		err := tx.QueryRow(ctx, `
			SELECT r.id FROM releases r
			JOIN organizations o ON o.id = r.organization_id
			JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
			WHERE o.slug = $2 AND r.version = $4 AND ($3 = '' OR EXISTS (
				SELECT 1 FROM release_projects rp JOIN projects p ON p.id = rp.project_id
				WHERE rp.release_id = r.id AND p.slug = $3))
			FOR UPDATE OF r`, userID, orgSlug, projectSlug, version).Scan(&releaseID)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM release_files WHERE release_id = $1`, releaseID)
		n = tag.RowsAffected()
		return err
	})
	return n, err
}
