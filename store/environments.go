package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Environment is an environment of an organization.
type Environment struct {
	ID   int64
	Name string
}

// EnvironmentLink is an environment as one project sees it: the link's id,
// the environment's name and whether the project hides it.
type EnvironmentLink struct {
	ID       int64
	Name     string
	IsHidden bool
}

// Visibility filters environments by whether projects hide them.
type Visibility int

// Visibility filters: VisibleOnly is the API's default.
const (
	VisibleOnly Visibility = iota
	HiddenOnly
	AnyVisibility
)

// orgIDForMember finds the organization orgSlug of which userID is a
// member; any other organization is ErrNotFound.
func orgIDForMember(ctx context.Context, q querier, userID int64, orgSlug string) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, `
		SELECT o.id
		FROM organizations o
		JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
		WHERE o.slug = $2`, userID, orgSlug).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("organization %q: %w", orgSlug, wrap(err))
	}
	return id, nil
}

// projectIDForMember finds the project projectSlug of the organization
// orgSlug of which userID is a member, and returns the ids of both.
func projectIDForMember(ctx context.Context, q querier, userID int64, orgSlug, projectSlug string) (org, project int64, err error) {
	err = q.QueryRow(ctx, `
		SELECT o.id, p.id
		FROM organizations o
		JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
		JOIN projects p ON p.organization_id = o.id
		WHERE o.slug = $2 AND p.slug = $3`, userID, orgSlug, projectSlug).Scan(&org, &project)
	if err != nil {
		return 0, 0, fmt.Errorf("project %q/%q: %w", orgSlug, projectSlug, wrap(err))
	}
	return org, project, nil
}

// Environments lists the environments of the organization orgSlug, of
// which userID must be a member, newest first. VisibleOnly keeps those
// with a link that does not hide them, HiddenOnly those with a link that
// does; each environment appears once however many links match.
func (s *Store) Environments(ctx context.Context, userID int64, orgSlug string, vis Visibility, page Page) ([]Environment, PageInfo, error) {
	var envs []Environment
	var info PageInfo
	err := s.read(ctx, func(q querier) error {
		org, err := orgIDForMember(ctx, q, userID, orgSlug)
		if err != nil {
			return err
		}
		lq := listQuery{
			cols:       `e.id, e.name, e.date_created`,
			from:       `FROM environments e WHERE e.organization_id = $1`,
			args:       []any{org},
			createdCol: "e.date_created",
			idCol:      "e.id",
		}
		switch vis {
		case VisibleOnly:
			lq.from += ` AND EXISTS (SELECT 1 FROM environment_projects ep
				WHERE ep.environment_id = e.id AND NOT ep.is_hidden)`
		case HiddenOnly:
			lq.from += ` AND EXISTS (SELECT 1 FROM environment_projects ep
				WHERE ep.environment_id = e.id AND ep.is_hidden)`
		}
		envs, info, err = list(ctx, q, lq, page, func(rows pgx.Rows) (Environment, Key, error) {
			var e Environment
			var k Key
			err := rows.Scan(&e.ID, &e.Name, &k.Created)
			k.ID = e.ID
			return e, k, err
		})
		return err
	})
	return envs, info, err
}

// ProjectEnvironments lists the environment links of the project
// projectSlug in orgSlug, of which userID must be a member, newest first,
// filtered by vis.
func (s *Store) ProjectEnvironments(ctx context.Context, userID int64, orgSlug, projectSlug string, vis Visibility, page Page) ([]EnvironmentLink, PageInfo, error) {
	var links []EnvironmentLink
	var info PageInfo
	err := s.read(ctx, func(q querier) error {
		_, project, err := projectIDForMember(ctx, q, userID, orgSlug, projectSlug)
		if err != nil {
			return err
		}
		lq := listQuery{
			cols: `ep.id, e.name, ep.is_hidden, ep.date_created`,
			from: `FROM environment_projects ep
				JOIN environments e ON e.id = ep.environment_id
				WHERE ep.project_id = $1`,
			args:       []any{project},
			createdCol: "ep.date_created",
			idCol:      "ep.id",
		}
		switch vis {
		case VisibleOnly:
			lq.from += ` AND NOT ep.is_hidden`
		case HiddenOnly:
			lq.from += ` AND ep.is_hidden`
		}
		links, info, err = list(ctx, q, lq, page, func(rows pgx.Rows) (EnvironmentLink, Key, error) {
			var l EnvironmentLink
			var k Key
			err := rows.Scan(&l.ID, &l.Name, &l.IsHidden, &k.Created)
			k.ID = l.ID
			return l, k, err
		})
		return err
	})
	return links, info, err
}

// UpdateProjectEnvironment sets whether the project projectSlug of orgSlug
// hides the environment name, and returns the link as stored. A link that
// does not exist, or one of an organization userID is not a member of, is
// ErrNotFound.
func (s *Store) UpdateProjectEnvironment(ctx context.Context, userID int64, orgSlug, projectSlug, name string, isHidden bool) (EnvironmentLink, error) {
	var l EnvironmentLink
	err := s.pool.QueryRow(ctx, `
		UPDATE environment_projects ep SET is_hidden = $5
		FROM environments e, projects p, organizations o, memberships m
		WHERE e.id = ep.environment_id AND p.id = ep.project_id
			AND o.id = p.organization_id AND e.organization_id = o.id
			AND m.organization_id = o.id AND m.user_id = $1
			AND o.slug = $2 AND p.slug = $3 AND e.name = $4
		RETURNING ep.id, e.name, ep.is_hidden`,
		userID, orgSlug, projectSlug, name, isHidden).Scan(&l.ID, &l.Name, &l.IsHidden)
	return l, wrap(err)
}

// ProjectEnvironment returns the link of the environment name to the
// project projectSlug of orgSlug, hidden or not. A link that does not
// exist, or one of an organization userID is not a member of, is
// ErrNotFound.
func (s *Store) ProjectEnvironment(ctx context.Context, userID int64, orgSlug, projectSlug, name string) (EnvironmentLink, error) {
	var l EnvironmentLink
	err := s.pool.QueryRow(ctx, `
		SELECT ep.id, e.name, ep.is_hidden
		FROM environment_projects ep
		JOIN environments e ON e.id = ep.environment_id
		JOIN projects p ON p.id = ep.project_id
		JOIN organizations o ON o.id = p.organization_id AND e.organization_id = o.id
		JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
		WHERE o.slug = $2 AND p.slug = $3 AND e.name = $4`,
		userID, orgSlug, projectSlug, name).Scan(&l.ID, &l.Name, &l.IsHidden)
	return l, wrap(err)
}
