package store

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
)

// FilePartSize is the size of the parts a stored file is split into.
const FilePartSize = 1 << 20

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
	JOIN files f ON f.id = rf.file_id
	JOIN releases r ON r.id = rf.release_id
	JOIN organizations o ON o.id = r.organization_id
	JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
	WHERE o.slug = $2 AND r.version = $3
	  AND ($4 = '' OR EXISTS (
		SELECT 1 FROM release_projects rp JOIN projects p ON p.id = rp.project_id
		WHERE rp.release_id = r.id AND p.slug = $4))`

const releaseFileCols = `rf.id, rf.name, rf.dist, rf.headers, f.size, f.sha1, rf.date_created`

func scanReleaseFile(row pgx.Row) (ReleaseFile, error) {
	var rf ReleaseFile
	var headers []byte
	err := row.Scan(&rf.ID, &rf.Name, &rf.Dist, &headers, &rf.Size, &rf.SHA1, &rf.DateCreated)
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

// ReleaseFiles lists a page of the files of the release sc names, newest
// first. A release the caller cannot see has no files.
func (s *Store) ReleaseFiles(ctx context.Context, sc ReleaseFileScope, page Page) ([]ReleaseFile, PageInfo, error) {
	return list(ctx, s.pool, listQuery{
		cols:       releaseFileCols,
		from:       releaseFileFrom,
		args:       sc.args(),
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
// content to the writer start returned, one part at a time.
func (s *Store) WriteReleaseFile(ctx context.Context, sc ReleaseFileScope, id int64, start func(ReleaseFile) io.Writer) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return wrap(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	var fileID int64
	rf, err := scanReleaseFile(tx.QueryRow(ctx, `
		SELECT `+releaseFileCols+releaseFileFrom+` AND rf.id = $5`,
		append(sc.args(), id)...))
	if err != nil {
		return wrap(err)
	}
	err = tx.QueryRow(ctx, `SELECT file_id FROM release_files WHERE id = $1`, rf.ID).Scan(&fileID)
	if err != nil {
		return wrap(err)
	}
	w := start(rf)
	rows, err := tx.Query(ctx, `
		SELECT data FROM file_parts WHERE file_id = $1 ORDER BY position`, fileID)
	if err != nil {
		return wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		// RawValues is valid until the next row: write it without copying.
		if _, err := w.Write(rows.RawValues()[0]); err != nil {
			return err
		}
	}
	return wrap(rows.Err())
}

// DeleteReleaseFile removes file id of the release sc names, with its
// content. Nothing removed is ErrNotFound.
func (s *Store) DeleteReleaseFile(ctx context.Context, sc ReleaseFileScope, id int64) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var fileID int64
		err := tx.QueryRow(ctx, `
			DELETE FROM release_files WHERE id = (
				SELECT rf.id `+releaseFileFrom+` AND rf.id = $5)
			RETURNING file_id`, append(sc.args(), id)...).Scan(&fileID)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			DELETE FROM files WHERE id = $1
			  AND NOT EXISTS (SELECT 1 FROM release_files WHERE file_id = $1)`, fileID)
		return err
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
// and dist already in the release is ErrConflict.
func (s *Store) CreateReleaseFile(ctx context.Context, sc ReleaseFileScope, nf NewReleaseFile, content io.Reader) (ReleaseFile, error) {
	var rf ReleaseFile
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var releaseID, orgID int64
		err := tx.QueryRow(ctx, `
			SELECT r.id, r.organization_id
			FROM releases r
			JOIN organizations o ON o.id = r.organization_id
			JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
			WHERE o.slug = $2 AND r.version = $3
			  AND ($4 = '' OR EXISTS (
				SELECT 1 FROM release_projects rp JOIN projects p ON p.id = rp.project_id
				WHERE rp.release_id = r.id AND p.slug = $4))`,
			sc.args()...).Scan(&releaseID, &orgID)
		if err != nil {
			return err
		}
		var taken bool
		err = tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM release_files
				WHERE release_id = $1 AND name = $2 AND dist IS NOT DISTINCT FROM $3)`,
			releaseID, nf.Name, nf.Dist).Scan(&taken)
		if err != nil {
			return err
		}
		if taken {
			return ErrConflict
		}
		f, err := insertFile(ctx, tx, orgID, content)
		if err != nil {
			return err
		}
		rf, err = scanReleaseFile(tx.QueryRow(ctx, `
			WITH rf AS (
				INSERT INTO release_files (release_id, file_id, name, dist, headers)
				VALUES ($1, $2, $3, $4, $5)
				RETURNING id, name, dist, headers, date_created, file_id)
			SELECT `+releaseFileCols+` FROM rf JOIN files f ON f.id = rf.file_id`,
			releaseID, f.id, nf.Name, nf.Dist, headersJSON(nf.Headers)))
		return err
	})
	return rf, err
}

// storedFile is a row of files.
type storedFile struct {
	id   int64
	size int64
	sha1 string
}

// insertFile stores content as a new file of organization orgID, split
// into parts of FilePartSize, hashing it as it goes.
func insertFile(ctx context.Context, q querier, orgID int64, content io.Reader) (storedFile, error) {
	var f storedFile
	err := q.QueryRow(ctx, `
		INSERT INTO files (organization_id, size, sha1) VALUES ($1, 0, $2) RETURNING id`,
		orgID, hex.EncodeToString(make([]byte, sha1.Size))).Scan(&f.id)
	if err != nil {
		return f, err
	}
	h := sha1.New()
	buf := make([]byte, FilePartSize)
	for position := 0; ; position++ {
		n, err := io.ReadFull(content, buf)
		if n > 0 {
			h.Write(buf[:n])
			f.size += int64(n)
			if _, err := q.Exec(ctx, `
				INSERT INTO file_parts (file_id, position, data) VALUES ($1, $2, $3)`,
				f.id, position, buf[:n]); err != nil {
				return f, err
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return f, err
		}
	}
	f.sha1 = hex.EncodeToString(h.Sum(nil))
	_, err = q.Exec(ctx, `UPDATE files SET size = $2, sha1 = $3 WHERE id = $1`, f.id, f.size, f.sha1)
	return f, err
}

// headersJSON is headers as stored: always an object.
func headersJSON(headers map[string]string) []byte {
	if headers == nil {
		headers = map[string]string{}
	}
	b, _ := json.Marshal(headers) // a map of strings always encodes
	return b
}
