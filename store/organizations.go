package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Roles a member can have in an organization, from least to most: each
// holds the scopes of those before it (authn.CanAssign reads the order).
var Roles = []string{"member", "admin", "manager", "owner"}

// CreateOrganization creates an organization owned by the user with
// ownerEmail and returns its id. A taken slug is ErrConflict, an unknown
// owner ErrNotFound.
func (s *Store) CreateOrganization(ctx context.Context, slug, name, ownerEmail string) (int64, error) {
	var id int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		owner, err := userIDByEmail(ctx, tx, ownerEmail)
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `
			INSERT INTO organizations (slug, name) VALUES ($1, $2) RETURNING id`,
			slug, name).Scan(&id)
		if err != nil {
			return fmt.Errorf("organization %q: %w", slug, wrap(err))
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO memberships (organization_id, user_id, role) VALUES ($1, $2, 'owner')`,
			id, owner)
		return err
	})
	return id, err
}

// organizationID finds an organization by slug.
func organizationID(ctx context.Context, q querier, slug string) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, `SELECT id FROM organizations WHERE slug = $1`, slug).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("organization %q: %w", slug, wrap(err))
	}
	return id, nil
}

// AddMember makes the user with email a member of orgSlug with role, or
// changes the role of an existing member.
func (s *Store) AddMember(ctx context.Context, orgSlug, email, role string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		org, err := organizationID(ctx, tx, orgSlug)
		if err != nil {
			return err
		}
		user, err := userIDByEmail(ctx, tx, email)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO memberships (organization_id, user_id, role) VALUES ($1, $2, $3)
			ON CONFLICT (organization_id, user_id) DO UPDATE SET role = EXCLUDED.role`,
			org, user, role)
		return err
	})
}

// CreateEnvironment creates the environment name in orgSlug when missing and,
// when projectSlug is not empty, links it to that project with the given
// visibility. It returns the environment's id.
func (s *Store) CreateEnvironment(ctx context.Context, orgSlug, name, projectSlug string, hidden bool) (int64, error) {
	var id int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		org, err := organizationID(ctx, tx, orgSlug)
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `
			INSERT INTO environments (organization_id, name) VALUES ($1, $2)
			ON CONFLICT (organization_id, name) DO UPDATE SET name = EXCLUDED.name
			RETURNING id`, org, name).Scan(&id)
		if err != nil || projectSlug == "" {
			return err
		}
		var project int64
		err = tx.QueryRow(ctx, `
			SELECT id FROM projects WHERE organization_id = $1 AND slug = $2`,
			org, projectSlug).Scan(&project)
		if err != nil {
			return fmt.Errorf("project %q: %w", projectSlug, wrap(err))
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO environment_projects (environment_id, project_id, is_hidden)
			VALUES ($1, $2, $3)
			ON CONFLICT (project_id, environment_id) DO UPDATE SET is_hidden = EXCLUDED.is_hidden`,
			id, project, hidden)
		return err
	})
	return id, err
}

// Organization is an organization as its members see it.
type Organization struct {
	ID          int64
	Slug        string
	Name        string
	DateCreated time.Time
	// Require2FA refuses the organization's routes to its members without
	// TOTP (Sentry's require2FA).
	Require2FA bool
	// Role is the caller's role in it; Organizations, Organization and
	// the detail (OrganizationDetail) read it, Project does not.
	Role string
}

// Project is a project of an organization. Platform is nil when nobody
// named one.
type Project struct {
	ID          int64
	Slug        string
	Name        string
	Platform    *string
	DateCreated time.Time
	// Environments are the names of the environments the project shows
	// (not hidden), in order; only Projects and Project read them.
	Environments []string
	// LatestRelease is the version of the project's latest release, or
	// nil; only Projects and Project read it.
	LatestRelease *string
	// Organization is the project's organization; only Project reads it.
	Organization Organization
	// Teams are the teams the project belongs to, by slug; Projects,
	// Project and the team routes read them (store/teams.go).
	Teams []TeamRef
}

// projectSummaryCols are the columns of a project p that Projects and
// Project read after its own: the names of its environments that are not
// hidden, and its latest release as Sentry picks it (of the 20 releases
// of highest id, the latest released, or created: release_projects'
// index gives the 20 without reading the others).
const projectSummaryCols = `
	ARRAY(SELECT e.name FROM environment_projects ep JOIN environments e ON e.id = ep.environment_id
		WHERE ep.project_id = p.id AND NOT ep.is_hidden ORDER BY e.name),
	(SELECT r.version
		FROM (SELECT rp.release_id FROM release_projects rp WHERE rp.project_id = p.id
			ORDER BY rp.release_id DESC LIMIT 20) lrp
		JOIN releases r ON r.id = lrp.release_id
		ORDER BY COALESCE(r.date_released, r.date_created) DESC, r.id DESC LIMIT 1)`

// OrganizationFilter narrows a list of organizations, as Sentry's
// ?owner= and ?query= do: the zero value lists them all.
type OrganizationFilter struct {
	OwnerOnly bool     // only those where the caller's role is owner
	Text      []string // words each in the name or the slug (any case)
	IDs       []int64  // when not empty, only these ids
	Slugs     []string // when not empty, only these slugs
}

// Organizations lists a page of the organizations userID belongs to, newest
// first, that match f.
func (s *Store) Organizations(ctx context.Context, userID int64, f OrganizationFilter, page Page) ([]Organization, PageInfo, error) {
	where, args := "WHERE true", []any{userID}
	if f.OwnerOnly {
		where += " AND m.role = 'owner'"
	}
	where, args = textFilter(where, args, f.Text, "o.name", "o.slug")
	if len(f.IDs) > 0 {
		args = append(args, f.IDs)
		where += fmt.Sprintf(" AND o.id = ANY($%d)", len(args))
	}
	if len(f.Slugs) > 0 {
		args = append(args, f.Slugs)
		where += fmt.Sprintf(" AND o.slug = ANY($%d)", len(args))
	}
	return list(ctx, s.pool, listQuery{
		cols:       "o.id, o.slug, o.name, o.date_created, o.require_2fa, m.role",
		from:       "FROM organizations o JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1 " + where,
		args:       args,
		createdCol: "o.date_created",
		idCol:      "o.id",
	}, page, func(rows pgx.Rows) (Organization, Key, error) {
		var o Organization
		err := rows.Scan(&o.ID, &o.Slug, &o.Name, &o.DateCreated, &o.Require2FA, &o.Role)
		return o, Key{Created: o.DateCreated, ID: o.ID}, err
	})
}

// textFilter appends to where, for each word, the condition that one of
// cols contains it in any case (ILIKE with the word's wildcards escaped),
// and the words to args.
func textFilter(where string, args []any, words []string, cols ...string) (string, []any) {
	for _, w := range words {
		args = append(args, "%"+likeEscaper.Replace(w)+"%")
		var or []string
		for _, c := range cols {
			or = append(or, fmt.Sprintf("%s ILIKE $%d", c, len(args)))
		}
		where += " AND (" + strings.Join(or, " OR ") + ")"
	}
	return where, args
}

// likeEscaper escapes the wildcards of LIKE patterns (its escape
// character is the backslash).
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// Organization returns the organization slug when userID belongs to it.
func (s *Store) Organization(ctx context.Context, userID int64, slug string) (Organization, error) {
	var o Organization
	err := s.pool.QueryRow(ctx, `
		SELECT o.id, o.slug, o.name, o.date_created, o.require_2fa, m.role
		FROM organizations o JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
		WHERE o.slug = $2`, userID, slug).Scan(&o.ID, &o.Slug, &o.Name, &o.DateCreated, &o.Require2FA, &o.Role)
	return o, wrap(err)
}

// Projects lists a page of the projects of the organization orgSlug that
// userID belongs to, newest first, whose name or slug contains each of
// words (any case); another organization is ErrNotFound.
func (s *Store) Projects(ctx context.Context, userID int64, orgSlug string, words []string, page Page) ([]Project, PageInfo, error) {
	if _, err := orgIDForMember(ctx, s.pool, userID, orgSlug); err != nil {
		return nil, PageInfo{}, err
	}
	where, args := textFilter("WHERE o.slug = $2", []any{userID, orgSlug}, words, "p.name", "p.slug")
	return list(ctx, s.pool, listQuery{
		cols: "p.id, p.slug, p.name, p.platform, p.date_created, " + projectSummaryCols + ", " + projectTeamsCol,
		from: `FROM projects p JOIN organizations o ON o.id = p.organization_id
			JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1 ` + where,
		args:       args,
		createdCol: "p.date_created",
		idCol:      "p.id",
	}, page, func(rows pgx.Rows) (Project, Key, error) {
		var p Project
		err := rows.Scan(&p.ID, &p.Slug, &p.Name, &p.Platform, &p.DateCreated, &p.Environments, &p.LatestRelease, &p.Teams)
		return p, Key{Created: p.DateCreated, ID: p.ID}, err
	})
}

// Project returns the project projectSlug of the organization orgSlug that
// userID belongs to, with its organization.
func (s *Store) Project(ctx context.Context, userID int64, orgSlug, projectSlug string) (Project, error) {
	var p Project
	o := &p.Organization
	err := s.pool.QueryRow(ctx, `
		SELECT p.id, p.slug, p.name, p.platform, p.date_created, `+projectSummaryCols+`, `+projectTeamsCol+`,
			o.id, o.slug, o.name, o.date_created, o.require_2fa
		FROM projects p JOIN organizations o ON o.id = p.organization_id
		JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
		WHERE o.slug = $2 AND p.slug = $3`, userID, orgSlug, projectSlug).Scan(&p.ID, &p.Slug, &p.Name, &p.Platform, &p.DateCreated,
		&p.Environments, &p.LatestRelease, &p.Teams, &o.ID, &o.Slug, &o.Name, &o.DateCreated, &o.Require2FA)
	return p, wrap(err)
}

// ResolveSlugs turns an organization and a project ("" for none) named by
// id, as Sentry accepts wherever it takes a slug, into their slugs, for a
// caller userID who belongs to the organization. A slug is preferred to an
// id of the same text. What names nothing of the caller's is ErrNotFound.
func (s *Store) ResolveSlugs(ctx context.Context, userID int64, org, project string) (string, string, error) {
	var orgSlug string
	var projectSlug *string
	err := s.pool.QueryRow(ctx, `
		SELECT o.slug, p.slug
		FROM organizations o
		JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
		LEFT JOIN projects p ON p.organization_id = o.id AND (p.slug = $3 OR p.id::text = $3)
		WHERE o.slug = $2 OR o.id::text = $2
		ORDER BY o.slug = $2 DESC, p.slug = $3 DESC NULLS LAST
		LIMIT 1`, userID, org, project).Scan(&orgSlug, &projectSlug)
	if err != nil {
		return "", "", wrap(err)
	}
	if project == "" {
		return orgSlug, "", nil
	}
	if projectSlug == nil {
		return "", "", fmt.Errorf("project %q: %w", project, ErrNotFound)
	}
	return orgSlug, *projectSlug, nil
}

// OrganizationDetail is an organization with its projects and teams, as
// Sentry's detailed organization shows them to a member.
type OrganizationDetail struct {
	Organization
	// Projects are all the organization's projects, newest first (with
	// their environments and latest release, as Projects reads them).
	Projects []Project
	// Teams are all the organization's teams, by slug.
	Teams []Team
}

// organizationDetail reads the projects and teams of o for userID, its
// member (the membership is in each statement's WHERE clause).
func organizationDetail(ctx context.Context, q querier, userID int64, o Organization) (OrganizationDetail, error) {
	d := OrganizationDetail{Organization: o}
	rows, err := q.Query(ctx, `
		SELECT p.id, p.slug, p.name, p.platform, p.date_created, `+projectSummaryCols+`, `+projectTeamsCol+`
		FROM projects p JOIN memberships m ON m.organization_id = p.organization_id AND m.user_id = $1
		WHERE p.organization_id = $2
		ORDER BY p.date_created DESC, p.id DESC`, userID, o.ID)
	if err != nil {
		return d, wrap(err)
	}
	d.Projects, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Project, error) {
		var p Project
		err := row.Scan(&p.ID, &p.Slug, &p.Name, &p.Platform, &p.DateCreated, &p.Environments, &p.LatestRelease, &p.Teams)
		return p, err
	})
	if err != nil {
		return d, wrap(err)
	}
	rows, err = q.Query(ctx, `SELECT `+teamCols+` `+teamFrom+` ORDER BY t.slug`, userID, o.Slug)
	if err != nil {
		return d, wrap(err)
	}
	d.Teams, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Team, error) { return scanTeam(row) })
	return d, wrap(err)
}
