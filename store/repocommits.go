package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// RepositoryCommits lists a page of the commits of the repository repoID
// of the organization orgSlug, of which userID must be a member, newest
// first (by the date they were added, then by id). A repository of
// another organization, or none, is ErrNotFound.
func (s *Store) RepositoryCommits(ctx context.Context, userID int64, orgSlug string, repoID int64, page Page) ([]Commit, PageInfo, error) {
	repo := `SELECT r.id FROM repositories r
		WHERE r.id = $3 AND r.organization_id = (` + memberOrg + `)`
	return list(ctx, s.pool, listQuery{
		from: `FROM commits c WHERE c.repository_id = (` + repo + `)`,
		page: `SELECT ` + commitColumns + `, ` + commitReleases + commitJoins + `
			WHERE c.repository_id = (` + repo + `)`,
		args:       []any{userID, orgSlug, repoID},
		scope:      repo,
		missing:    fmt.Errorf("repository %d: %w", repoID, ErrNotFound),
		createdCol: "c.date_added",
		idCol:      "c.id",
	}, page, func(rows pgx.Rows) (Commit, Key, error) {
		var releases []byte
		c, err := scanCommit(rows, &releases)
		if err == nil {
			err = json.Unmarshal(releases, &c.Releases)
		}
		return c, Key{Created: c.DateAdded, ID: c.ID}, err
	})
}
