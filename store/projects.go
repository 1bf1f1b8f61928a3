package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The projects of an organization as the API and the admin CLI change
// them: create, update, delete.

// NewProject is a project to create. Platform is nil for none.
type NewProject struct {
	Slug     string
	Name     string
	Platform *string
}

const projectCols = `p.id, p.slug, p.name, p.platform, p.date_created`

func scanProject(row pgx.Row) (Project, error) {
	var p Project
	err := row.Scan(&p.ID, &p.Slug, &p.Name, &p.Platform, &p.DateCreated)
	return p, err
}

// CreateProject creates the project np in the organization orgSlug, which
// by must reach, and returns it: the one store call of the API's project
// create and of `errata admin create-project`. An organization by cannot
// reach is ErrNotFound, a slug the organization has already ErrConflict.
func (s *Store) CreateProject(ctx context.Context, by Actor, orgSlug string, np NewProject) (Project, error) {
	p, err := scanProject(s.pool.QueryRow(ctx, `
		INSERT INTO projects AS p (organization_id, slug, name, platform)
		SELECT o.id, $4, $5, $6 FROM (`+actorOrg+`) o
		RETURNING `+projectCols,
		append(by.args(orgSlug), np.Slug, np.Name, np.Platform)...))
	switch err = wrap(err); {
	case errors.Is(err, ErrNotFound):
		return p, orgNotFound(orgSlug)
	case err != nil:
		return p, fmt.Errorf("project %q: %w", np.Slug, err)
	}
	return p, nil
}

// ProjectUpdate is a change of a project: each field that is not nil is
// assigned (a nil Platform with SetPlatform clears it).
type ProjectUpdate struct {
	Name        *string
	Slug        *string
	SetPlatform bool
	Platform    *string
}

// UpdateProject changes the project projectSlug of the organization
// orgSlug, of which userID must be a member, and returns it as stored. A
// project the caller cannot see is ErrNotFound; a new slug that another
// project of the organization has is ErrConflict.
func (s *Store) UpdateProject(ctx context.Context, userID int64, orgSlug, projectSlug string, u ProjectUpdate) (Project, error) {
	p, err := scanProject(s.pool.QueryRow(ctx, `
		UPDATE projects p SET name = coalesce($4, p.name), slug = coalesce($5, p.slug),
			platform = CASE WHEN $6 THEN $7 ELSE p.platform END
		FROM organizations o, memberships m
		WHERE o.id = p.organization_id AND m.organization_id = o.id AND m.user_id = $1
		  AND o.slug = $2 AND p.slug = $3
		RETURNING `+projectCols,
		userID, orgSlug, projectSlug, u.Name, u.Slug, u.SetPlatform, u.Platform))
	return p, wrap(err)
}

// DeleteProject removes the project projectSlug of the organization
// orgSlug, of which userID must be a member, in one transaction: its
// links to releases and environments, its debug files and their ProGuard
// releases (the foreign keys cascade), and its links to artifact bundles,
// with the bundles no other project has (as DeleteArtifactBundle does).
// Releases and environments belong to the organization and stay. The
// content of what went is left to the collector. Nothing removed is
// ErrNotFound.
func (s *Store) DeleteProject(ctx context.Context, userID int64, orgSlug, projectSlug string) error {
	defer s.lookups.forget()
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var project int64
		err := tx.QueryRow(ctx, `
			SELECT p.id FROM projects p
			JOIN organizations o ON o.id = p.organization_id
			JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
			WHERE o.slug = $2 AND p.slug = $3
			FOR UPDATE OF p`, userID, orgSlug, projectSlug).Scan(&project)
		if err != nil {
			return fmt.Errorf("project %q/%q: %w", orgSlug, projectSlug, wrap(err))
		}
		_, err = tx.Exec(ctx, `
			WITH unlinked AS (
				DELETE FROM artifact_bundle_projects WHERE project_id = $1
				RETURNING artifact_bundle_id)
			DELETE FROM artifact_bundles ab WHERE ab.id IN (SELECT artifact_bundle_id FROM unlinked)
			  AND NOT EXISTS (SELECT 1 FROM artifact_bundle_projects x
				WHERE x.artifact_bundle_id = ab.id AND x.project_id <> $1)`, project)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM projects WHERE id = $1`, project)
		return err
	})
}
