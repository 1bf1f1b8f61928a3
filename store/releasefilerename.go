package store

import "context"

// RenameReleaseFile gives file id of the release sc names the name name,
// keeping its dist, and returns it as stored. A file the caller cannot
// see is ErrNotFound; a name that another file of the release has with
// the same dist is ErrConflict.
func (s *Store) RenameReleaseFile(ctx context.Context, sc ReleaseFileScope, id int64, name string) (ReleaseFile, error) {
	rf, err := scanReleaseFile(s.pool.QueryRow(ctx, `
		UPDATE release_files AS rf SET name = $6
		WHERE rf.id = (SELECT rf.id `+releaseFileFrom+` AND rf.id = $5)
		RETURNING `+releaseFileCols,
		append(sc.args(), id, name)...))
	return rf, wrap(err)
}
