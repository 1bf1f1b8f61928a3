package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Deploy records that a release went out to an environment.
type Deploy struct {
	ID           int64
	Environment  string
	Name         *string
	URL          *string
	DateStarted  *time.Time
	DateFinished time.Time
	DateCreated  time.Time
}

// DeployInput is a new deploy. A nil DateFinished is now; Projects, when
// not empty, names the projects the environment is linked to instead of
// the release's.
type DeployInput struct {
	Environment  string
	Name         *string
	URL          *string
	DateStarted  *time.Time
	DateFinished *time.Time
	Projects     []string
}

const deployCols = `d.id, e.name, d.name, d.url, d.date_started, d.date_finished, d.date_created`

func scanDeploy(row pgx.Row) (Deploy, error) {
	var d Deploy
	err := row.Scan(&d.ID, &d.Environment, &d.Name, &d.URL, &d.DateStarted,
		&d.DateFinished, &d.DateCreated)
	return d, err
}

// releaseIDForMember finds the release version of the organization
// orgSlug of which userID is a member.
func releaseIDForMember(ctx context.Context, q querier, userID int64, orgSlug, version string) (org, release int64, err error) {
	err = q.QueryRow(ctx, `
		SELECT o.id, r.id
		FROM releases r
		JOIN organizations o ON o.id = r.organization_id
		JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
		WHERE o.slug = $2 AND r.version = $3`, userID, orgSlug, version).Scan(&org, &release)
	if err != nil {
		return 0, 0, fmt.Errorf("release %q: %w", version, wrap(err))
	}
	return org, release, nil
}

// CreateDeploy records a deploy of the release version of orgSlug, of
// which userID must be a member. It creates the environment when the
// organization does not have it yet and links it to the projects of
// in.Projects that belong to the organization, or to the release's
// projects when in.Projects is empty; existing links keep their
// visibility.
func (s *Store) CreateDeploy(ctx context.Context, userID int64, orgSlug, version string, in DeployInput) (Deploy, error) {
	var d Deploy
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		org, release, err := releaseIDForMember(ctx, tx, userID, orgSlug, version)
		if err != nil {
			return err
		}
		var env int64
		err = tx.QueryRow(ctx, `
			INSERT INTO environments (organization_id, name) VALUES ($1, $2)
			ON CONFLICT (organization_id, name) DO UPDATE SET name = EXCLUDED.name
			RETURNING id`, org, in.Environment).Scan(&env)
		if err != nil {
			return err
		}
		if len(in.Projects) > 0 {
			_, err = tx.Exec(ctx, `
				INSERT INTO environment_projects (environment_id, project_id)
				SELECT $1, p.id FROM projects p WHERE p.organization_id = $2 AND (p.slug = ANY($3) OR p.id::text = ANY($3))
				ORDER BY p.id
				ON CONFLICT (project_id, environment_id) DO NOTHING`, env, org, in.Projects)
		} else {
			_, err = tx.Exec(ctx, `
				INSERT INTO environment_projects (environment_id, project_id)
				SELECT $1, rp.project_id FROM release_projects rp WHERE rp.release_id = $2
				ORDER BY rp.project_id
				ON CONFLICT (project_id, environment_id) DO NOTHING`, env, release)
		}
		if err != nil {
			return err
		}
		d, err = scanDeploy(tx.QueryRow(ctx, `
			WITH d AS (
				INSERT INTO deploys (release_id, environment_id, name, url, date_started, date_finished)
				VALUES ($1, $2, $3, $4, $5, COALESCE($6, now()))
				RETURNING id, environment_id, name, url, date_started, date_finished, date_created)
			SELECT `+deployCols+` FROM d JOIN environments e ON e.id = d.environment_id`,
			release, env, in.Name, in.URL, in.DateStarted, in.DateFinished))
		return err
	})
	return d, err
}

// Deploys lists the deploys of the release version of orgSlug, of which
// userID must be a member, newest first.
func (s *Store) Deploys(ctx context.Context, userID int64, orgSlug, version string, page Page) ([]Deploy, PageInfo, error) {
	var deploys []Deploy
	var info PageInfo
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		_, release, err := releaseIDForMember(ctx, tx, userID, orgSlug, version)
		if err != nil {
			return err
		}
		deploys, info, err = list(ctx, tx, listQuery{
			cols: deployCols,
			from: `FROM deploys d JOIN environments e ON e.id = d.environment_id
				WHERE d.release_id = $1`,
			args:       []any{release},
			createdCol: "d.date_created",
			idCol:      "d.id",
		}, page, func(rows pgx.Rows) (Deploy, Key, error) {
			d, err := scanDeploy(rows)
			return d, Key{Created: d.DateCreated, ID: d.ID}, err
		})
		return err
	})
	return deploys, info, err
}
