package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoValidProject is returned when a release would be linked to no
// project because none of the slugs names a project of the organization.
var ErrNoValidProject = errors.New("store: no valid project")

// Release is a version of an organization's code, with its links and
// deploys summarised.
type Release struct {
	ID           int64
	Version      string
	Ref          *string
	URL          *string
	Data         json.RawMessage // a JSON object
	DateCreated  time.Time
	DateReleased *time.Time
	DateStarted  *time.Time
	Status       string // open or archived
	DeployCount  int
	LastDeploy   *Deploy
	Projects     []ReleaseProject // ordered by slug
	CommitCount  int
	LastCommit   *Commit
	Authors      []CommitAuthor // ordered by email
	Owner        *ReleaseOwner  // nil without one
}

// ReleaseOwner is the user a release was created for (Sentry's owner).
type ReleaseOwner struct {
	ID              int64
	Email           string
	Name            string
	DateJoined      time.Time
	LastLogin       *time.Time
	IsActive        bool
	IsSuperuser     bool
	HasPasswordAuth bool
}

// ReleaseProject is a project a release is linked to.
type ReleaseProject struct {
	ID   int64
	Slug string
	Name string
	// Platform is the project's platform, "" when nobody set one.
	Platform string
}

// ReleaseInput is what a new release starts with. A nil Data is {}.
type ReleaseInput struct {
	Version      string
	Ref          *string
	URL          *string
	Data         json.RawMessage
	DateReleased *time.Time
	DateStarted  *time.Time
	// Status, when not nil, is open or archived; it is assigned to an
	// existing release too (sentry-cli archives and restores that way).
	Status *string
	// Commits, when set, are stored into the release, new or existing.
	Commits ReleaseCommitsInput
	// Owner, when not nil, is the email of a member of the organization
	// (Sentry's username) who owns a new release; another is
	// ErrUnknownOwner.
	Owner *string
}

// ErrUnknownOwner is returned when a release's owner names no member of
// its organization.
var ErrUnknownOwner = errors.New("store: unknown owner")

// ReleaseStatuses are the statuses of a release.
var ReleaseStatuses = []string{"open", "archived"}

// ReleaseUpdate lists the fields an update assigns: each SetX says whether
// X is assigned (nil clears it); fields not set keep their value.
type ReleaseUpdate struct {
	SetRef          bool
	Ref             *string
	SetURL          bool
	URL             *string
	SetData         bool
	Data            json.RawMessage // nil is {}
	SetDateReleased bool
	DateReleased    *time.Time
	SetDateStarted  bool
	DateStarted     *time.Time
	Status          *string // nil keeps it
	Commits         ReleaseCommitsInput
}

// releaseSelect reads whole releases in one statement: the columns of the
// release r, its projects aggregated as four arrays ordered by slug (ids,
// slugs, names, platforms: read from their binary form by readArray, several times
// cheaper than encoding/json would decode a json_agg), and its deploy count and last deploy joined in (NULL columns without a
// deploy; the environment's name is a subquery on the last deploy alone,
// which the planner would otherwise hash-join once per release), and its
// commit count, with its last commit and authors as one JSON object that
// only releases with commits compute (a join would cost every release of
// a page), and its owner, a JSON object too, for the few that have one. A query appends its joins and WHERE clause; releaseRow reads
// the row (store/rowtext.go). A new field is a column here and a
// destination in newReleaseRow, in the same place; the arrays' places are
// the constants colProjectIDs, colProjectSlugs, colProjectNames and
// colProjectPlatforms, and
// rawArray checks their names.
const releaseSelect = `
	SELECT r.id, r.version, r.ref, r.url, r.data, r.date_created,
		r.date_released, r.date_started, r.status,
		lp.ids, lp.slugs, lp.names, lp.platforms,
		coalesce(ld.deploy_count, 0), ld.id,
		(SELECT e.name FROM environments e WHERE e.id = ld.environment_id), ld.name, ld.url,
		ld.date_started, ld.date_finished, ld.date_created,
		r.commit_count,
		CASE WHEN r.last_commit_id IS NOT NULL THEN (
			SELECT json_build_object('key', c.key, 'message', c.message, 'date', c.date_added,
				'authorName', a.name, 'authorEmail', a.email,
				'repoID', rp.id, 'repoName', rp.name, 'repoURL', rp.url,
				'repoProvider', rp.provider, 'repoCreated', rp.date_created,
				'authors', (SELECT json_agg(json_build_object('name', x.name, 'email', x.email) ORDER BY x.email)
					FROM commit_authors x WHERE x.id = ANY (r.authors)))
			FROM commits c
			JOIN repositories rp ON rp.id = c.repository_id
			LEFT JOIN commit_authors a ON a.id = c.author_id
			WHERE c.id = r.last_commit_id) END,
		CASE WHEN r.owner_id IS NOT NULL THEN (
			SELECT json_build_object('id', u.id, 'email', u.email, 'name', u.name,
				'dateJoined', u.date_joined, 'lastLogin', u.last_login, 'isActive', u.is_active,
				'isSuperuser', u.is_superuser, 'hasPasswordAuth', u.password_hash IS NOT NULL)
			FROM users u WHERE u.id = r.owner_id) END
	FROM releases r
	LEFT JOIN LATERAL (
		SELECT count(*) OVER () AS deploy_count, d.id, d.environment_id, d.name, d.url,
			d.date_started, d.date_finished, d.date_created
		FROM deploys d
		WHERE d.release_id = r.id
		ORDER BY d.date_created DESC, d.id DESC
		LIMIT 1) ld ON true
	CROSS JOIN LATERAL (
		-- One sort for the three arrays: PostgreSQL aggregates the rows
		-- of a sorted subquery in its order (an ORDER BY in each
		-- aggregate sorted them three times: 5-10 % of the page).
		-- A project without a platform is '' (a platform is never empty),
		-- so that the array has no NULL to tell apart.
		SELECT array_agg(s.id) AS ids, array_agg(s.slug) AS slugs, array_agg(s.name) AS names,
			array_agg(coalesce(s.platform, '')) AS platforms
		FROM (SELECT p.id, p.slug, p.name, p.platform
			FROM release_projects rp JOIN projects p ON p.id = rp.project_id
			WHERE rp.release_id = r.id
			ORDER BY p.slug, p.id) s) lp`

// scanRelease reads a row of releaseSelect (see releaseRow).
func scanRelease(row pgx.Row) (Release, error) {
	rr := newReleaseRow(1)
	err := row.Scan(rr)
	return rr.release, err
}

// readLastCommit reads the last commit of a row of releaseSelect, with the
// release's authors: a JSON object, for the few releases that have one,
// so that the many without cost one column rather than a join.
func (r *Release) readLastCommit(data []byte) error {
	var c struct {
		Key          string
		Message      *string
		Date         time.Time
		AuthorName   *string
		AuthorEmail  *string
		RepoID       int64
		RepoName     string
		RepoURL      *string
		RepoProvider *string
		RepoCreated  time.Time
		Authors      []CommitAuthor
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("release %d: last commit: %w", r.ID, err)
	}
	r.LastCommit = &Commit{Key: c.Key, Message: c.Message, DateAdded: c.Date,
		Repository: Repository{ID: c.RepoID, Name: c.RepoName, URL: c.RepoURL, Provider: c.RepoProvider, DateCreated: c.RepoCreated}}
	if c.AuthorEmail != nil {
		r.LastCommit.Author = &CommitAuthor{Name: c.AuthorName, Email: *c.AuthorEmail}
	}
	r.Authors = c.Authors
	return nil
}

// readOwner reads the owner column of a row of releaseSelect.
func (r *Release) readOwner(data []byte) error {
	r.Owner = new(ReleaseOwner)
	if err := json.Unmarshal(data, r.Owner); err != nil {
		return fmt.Errorf("release %d: owner: %w", r.ID, err)
	}
	return nil
}

// objectOrEmpty returns data, or the empty JSON object when data is nil.
func objectOrEmpty(data json.RawMessage) json.RawMessage {
	if data == nil {
		return json.RawMessage(`{}`)
	}
	return data
}

// CreateRelease creates the release in.Version in the organization orgSlug,
// of which userID must be a member, and links it to the projects among
// projectSlugs; slugs that name no project of the organization are
// ignored, and when none is left it returns ErrNoValidProject. A release
// of that version that already exists keeps its fields and gains the
// links; created reports which happened. With no slug at all, an existing
// release is returned as it is (created false); a new one is
// ErrNoValidProject.
func (s *Store) CreateRelease(ctx context.Context, userID int64, orgSlug string, in ReleaseInput, projectSlugs []string) (rel Release, created bool, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		org, err := orgIDForMember(ctx, tx, userID, orgSlug)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			SELECT id FROM projects WHERE organization_id = $1 AND (slug = ANY($2) OR id::text = ANY($2))`,
			org, projectSlugs)
		if err != nil {
			return err
		}
		projects, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if len(projectSlugs) == 0 {
			// No project named at all: sentry-cli does this for a release
			// that exists (archive, restore, uploads without a project).
			// It is answered with the release, which keeps its links; a
			// release that does not exist still needs a project.
			var id int64
			err := tx.QueryRow(ctx, `
				UPDATE releases SET status = COALESCE($3, status) WHERE organization_id = $1 AND version = $2
				RETURNING id`,
				org, in.Version, in.Status).Scan(&id)
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrNoValidProject
			}
			if err != nil {
				return err
			}
			if err := in.Commits.apply(ctx, tx, org, id); err != nil {
				return err
			}
			rel, err = releaseByID(ctx, tx, id)
			return err
		}
		if len(projects) == 0 {
			return ErrNoValidProject
		}
		var id int64
		id, created, err = insertRelease(ctx, tx, org, in)
		if err != nil {
			return err
		}
		if err := linkRelease(ctx, tx, id, projects); err != nil {
			return err
		}
		if err := in.Commits.apply(ctx, tx, org, id); err != nil {
			return err
		}
		rel, err = releaseByID(ctx, tx, id)
		return err
	})
	return rel, created, err
}

// CreateProjectRelease creates the release in.Version in the organization
// orgSlug unless it exists (an existing one is left unchanged), and links
// it to the project projectSlug. userID must be a member of the
// organization.
func (s *Store) CreateProjectRelease(ctx context.Context, userID int64, orgSlug, projectSlug string, in ReleaseInput) (Release, error) {
	var rel Release
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		org, project, err := projectIDForMember(ctx, tx, userID, orgSlug, projectSlug)
		if err != nil {
			return err
		}
		id, _, err := insertRelease(ctx, tx, org, in)
		if err != nil {
			return err
		}
		if err := linkRelease(ctx, tx, id, []int64{project}); err != nil {
			return err
		}
		if err := in.Commits.apply(ctx, tx, org, id); err != nil {
			return err
		}
		rel, err = releaseByID(ctx, tx, id)
		return err
	})
	return rel, err
}

// insertRelease creates the release in.Version of org unless it exists,
// and returns its id and whether it was created. An existing release keeps
// its fields (its owner too), as Sentry's get_or_create does.
func insertRelease(ctx context.Context, tx pgx.Tx, org int64, in ReleaseInput) (id int64, created bool, err error) {
	status := "open"
	if in.Status != nil {
		status = *in.Status
	}
	var owner *int64
	if in.Owner != nil {
		// A member of the organization, by email (errata's username).
		owner = new(int64)
		err := tx.QueryRow(ctx, `
			SELECT u.id FROM users u JOIN memberships m ON m.user_id = u.id AND m.organization_id = $1
			WHERE lower(u.email) = lower($2)`, org, *in.Owner).Scan(owner)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, false, ErrUnknownOwner
		}
		if err != nil {
			return 0, false, err
		}
	}
	err = tx.QueryRow(ctx, `
		INSERT INTO releases (organization_id, version, ref, url, data, date_released, date_started, status, owner_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (organization_id, version) DO NOTHING
		RETURNING id`,
		org, in.Version, in.Ref, in.URL, objectOrEmpty(in.Data), in.DateReleased, in.DateStarted, status, owner).Scan(&id)
	if err == nil {
		return id, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return 0, false, err
	}
	err = tx.QueryRow(ctx, `
		UPDATE releases SET status = COALESCE($3, status) WHERE organization_id = $1 AND version = $2
		RETURNING id`,
		org, in.Version, in.Status).Scan(&id)
	return id, false, err
}

// linkRelease links the release to projects; existing links stay.
func linkRelease(ctx context.Context, tx pgx.Tx, release int64, projects []int64) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO release_projects (release_id, project_id)
		SELECT $1, unnest($2::bigint[])
		ON CONFLICT DO NOTHING`, release, projects)
	return err
}

// releaseByID loads one release with its projects and deploys.
func releaseByID(ctx context.Context, q querier, id int64) (Release, error) {
	return scanRelease(q.QueryRow(ctx, releaseSelect+` WHERE r.id = $1`, id))
}

// releaseWhere selects the release $3 of the organization $2 of which the
// user $1 is a member, and, when $4 is not empty, that is linked to the
// project of that slug.
const releaseWhere = `
	JOIN organizations o ON o.id = r.organization_id
	JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
	WHERE o.slug = $2 AND r.version = $3
		AND ($4::text = '' OR EXISTS (
			SELECT 1 FROM release_projects rp JOIN projects p ON p.id = rp.project_id
			WHERE rp.release_id = r.id AND p.slug = $4))`

// Release returns the release version of the organization orgSlug, of
// which userID must be a member. When projectSlug is not empty the release
// must also be linked to that project. It runs one statement.
func (s *Store) Release(ctx context.Context, userID int64, orgSlug, projectSlug, version string) (Release, error) {
	var rel Release
	err := s.read(ctx, func(q querier) error {
		var err error
		rel, err = scanRelease(q.QueryRow(ctx, releaseSelect+releaseWhere,
			userID, orgSlug, version, projectSlug))
		if err != nil {
			return fmt.Errorf("release %q: %w", version, wrap(err))
		}
		return nil
	})
	return rel, err
}

// memberOrg is the id of the organization $2 of which the user $1 is a
// member; memberProject that of the project $3 in it.
const (
	memberOrg = `SELECT o.id FROM organizations o
		JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
		WHERE o.slug = $2`
	memberProject = `SELECT p.id FROM organizations o
		JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
		JOIN projects p ON p.organization_id = o.id
		WHERE o.slug = $2 AND p.slug = $3`
)

// ReleaseFilter narrows a list of releases as Sentry's list filters do;
// the zero value lists every release.
type ReleaseFilter struct {
	// Status keeps the releases of that status ("" for any).
	Status string
	// Query keeps the releases whose version contains it, in any case.
	Query string
	// Environments, when not empty, keeps the releases deployed to an
	// environment of one of these names (errata's record of a release
	// seen in an environment is its deploys).
	Environments []string
	// Projects, when not empty, keeps the releases linked to one of these
	// projects of the organization, each named by slug or id.
	Projects []string
}

// Releases lists the releases of the organization orgSlug, of which
// userID must be a member, newest first, that match f. When projectSlug is
// not empty it lists only the releases linked to that project, which must
// exist. It runs two statements in one round trip: the page, and the
// count, which also says whether the organization (or project) is the
// caller's. Each filter is a condition on the release's own row or an
// EXISTS on an index that starts with the release's id.
func (s *Store) Releases(ctx context.Context, userID int64, orgSlug, projectSlug string, f ReleaseFilter, page Page) ([]Release, PageInfo, error) {
	lq := listQuery{
		createdCol: "r.date_created",
		idCol:      "r.id",
	}
	var where string
	if projectSlug == "" {
		where = `WHERE r.organization_id = (` + memberOrg + `)`
		lq.scope = memberOrg
		lq.args = []any{userID, orgSlug}
		lq.missing = fmt.Errorf("organization %q: %w", orgSlug, ErrNotFound)
	} else {
		where = `WHERE EXISTS (
			SELECT 1 FROM release_projects rp
			WHERE rp.release_id = r.id AND rp.project_id = (` + memberProject + `))`
		lq.scope = memberProject
		lq.args = []any{userID, orgSlug, projectSlug}
		lq.missing = fmt.Errorf("project %q/%q: %w", orgSlug, projectSlug, ErrNotFound)
	}
	arg := func(v any) string {
		lq.args = append(lq.args, v)
		return fmt.Sprintf("$%d", len(lq.args))
	}
	// Only releases of the status asked for ("" for any), as Sentry's
	// lists do.
	if f.Status != "" {
		where += ` AND r.status = ` + arg(f.Status)
	}
	if f.Query != "" {
		where += ` AND r.version ILIKE ` + arg("%"+likeEscaper.Replace(f.Query)+"%")
	}
	if len(f.Environments) > 0 {
		where += ` AND EXISTS (
			SELECT 1 FROM deploys d JOIN environments e ON e.id = d.environment_id
			WHERE d.release_id = r.id AND e.name = ANY (` + arg(f.Environments) + `))`
	}
	if len(f.Projects) > 0 {
		where += ` AND EXISTS (
			SELECT 1 FROM release_projects rp JOIN projects p ON p.id = rp.project_id
			WHERE rp.release_id = r.id AND (p.slug = ANY (` + arg(f.Projects) + `) OR p.id::text = ANY (` + arg(f.Projects) + `)))`
	}
	lq.from = `FROM releases r ` + where
	lq.page = releaseSelect + ` ` + where
	var rels []Release
	var info PageInfo
	err := s.read(ctx, func(q querier) error {
		var err error
		row := newReleaseRow(page.Limit + 1)
		dest := []any{row} // built once: a variadic call would build it per row
		rels, info, err = list(ctx, q, lq, page, func(rows pgx.Rows) (Release, Key, error) {
			err := rows.Scan(dest...)
			r := row.release
			return r, Key{Created: r.DateCreated, ID: r.ID}, err
		})
		return err
	})
	return rels, info, err
}

// UpdateRelease assigns the fields of upd that are set to the release
// version of orgSlug (linked to projectSlug when it is not empty) and
// returns the release as stored.
func (s *Store) UpdateRelease(ctx context.Context, userID int64, orgSlug, projectSlug, version string, upd ReleaseUpdate) (Release, error) {
	var rel Release
	data := upd.Data
	if upd.SetData {
		data = objectOrEmpty(data)
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var id, org int64
		err := tx.QueryRow(ctx, `
			UPDATE releases r SET
				ref = CASE WHEN $5 THEN $6 ELSE r.ref END,
				url = CASE WHEN $7 THEN $8 ELSE r.url END,
				data = CASE WHEN $9 THEN $10::jsonb ELSE r.data END,
				date_released = CASE WHEN $11 THEN $12::timestamptz ELSE r.date_released END,
				date_started = CASE WHEN $13 THEN $14::timestamptz ELSE r.date_started END,
				status = COALESCE($15, r.status)
			WHERE r.id = (SELECT r.id FROM releases r`+releaseWhere+`)
			RETURNING r.id, r.organization_id`,
			userID, orgSlug, version, projectSlug,
			upd.SetRef, upd.Ref, upd.SetURL, upd.URL, upd.SetData, data,
			upd.SetDateReleased, upd.DateReleased, upd.SetDateStarted, upd.DateStarted, upd.Status).Scan(&id, &org)
		if err != nil {
			return fmt.Errorf("release %q: %w", version, wrap(err))
		}
		if err := upd.Commits.apply(ctx, tx, org, id); err != nil {
			return err
		}
		rel, err = releaseByID(ctx, tx, id)
		return err
	})
	return rel, err
}

// DeleteRelease removes the release version of orgSlug (when projectSlug
// is not empty, only if it is linked to that project), with its links,
// files and deploys. Nothing removed is ErrNotFound.
func (s *Store) DeleteRelease(ctx context.Context, userID int64, orgSlug, projectSlug, version string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var releaseID int64
		err := tx.QueryRow(ctx, `SELECT r.id FROM releases r`+releaseWhere+` FOR UPDATE OF r`,
			userID, orgSlug, version, projectSlug).Scan(&releaseID)
		if err != nil {
			return fmt.Errorf("release %q: %w", version, wrap(err))
		}
		// The release's files go with it (ON DELETE CASCADE); their
		// content goes with the collector, once nothing else uses it.
		_, err = tx.Exec(ctx, `DELETE FROM releases WHERE id = $1`, releaseID)
		return err
	})
}
