package store

import (
	"context"
	"fmt"
)

// ResolutionFile is a debug file that a native resolution may read: the debug
// file, its organization and the file holding its content.
type ResolutionFile struct {
	DebugFile
	OrgID  int64
	FileID int64
}

// maxResolutionFiles bounds the candidates one resolution reads from the
// database: newest first, more than any module has.
const maxResolutionFiles = 2000

// ResolutionFiles returns the debug files of the project sc names whose debug
// id is one of debugIDs (Sentry's form) or whose code id is one of codeIDs
// (lowercase), newest first, at most maxResolutionFiles. A project the caller
// cannot see is ErrNotFound.
func (s *Store) ResolutionFiles(ctx context.Context, sc ProjectScope, debugIDs, codeIDs []string) ([]ResolutionFile, error) {
	var out []ResolutionFile
	err := s.read(ctx, func(q querier) error {
		out = out[:0]
		if _, _, err := projectIDForMember(ctx, q, sc.UserID, sc.OrgSlug, sc.ProjectSlug); err != nil {
			return err
		}
		rows, err := q.Query(ctx, `
			SELECT `+debugFileCols+`, o.id, d.file_id`+debugFileFrom+`
			AND (d.debug_id = ANY($4::text[]) OR d.code_id = ANY($5::text[]))
			ORDER BY d.date_created DESC, d.id DESC LIMIT `+fmt.Sprint(maxResolutionFiles),
			sc.UserID, sc.OrgSlug, sc.ProjectSlug, debugIDs, codeIDs)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var f ResolutionFile
			f.DebugFile, err = scanDebugFile(rows, &f.OrgID, &f.FileID)
			if err != nil {
				return err
			}
			out = append(out, f)
		}
		return rows.Err()
	})
	return out, wrap(err)
}

// MarkResolutionFilesUsed counts the debug files ids of the project sc names
// as used now, for retention, as a download or an upload does.
func (s *Store) MarkResolutionFilesUsed(ctx context.Context, sc ProjectScope, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `
		UPDATE files f SET date_used = now()
		FROM debug_files d
		JOIN projects p ON p.id = d.project_id AND p.slug = $3
		JOIN organizations o ON o.id = p.organization_id AND o.slug = $2
		JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
		WHERE d.id = ANY($4::bigint[]) AND f.id = d.file_id AND f.date_used < now() - interval '1 second'`,
		sc.UserID, sc.OrgSlug, sc.ProjectSlug, ids)
	return wrap(err)
}
