package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Teams group an organization's members and projects (docs/members.md,
// Teams). They decide no access: every member of an organization sees all
// its projects (Sentry's open membership). Every statement joins the
// caller's membership, m (m.user_id = $1), so that another organization's
// team is not found.

// ErrOtherMember is a change of another member's teams asked by a caller
// who may change only its own.
var ErrOtherMember = errors.New("store: only the member itself may do this")

// Team is a team as a member of its organization sees it.
type Team struct {
	ID          int64
	Slug        string
	Name        string
	DateCreated time.Time
	// MemberCount counts the members on the team who have joined the
	// organization (not pending invitations).
	MemberCount int
	// IsMember says whether the caller is on the team; TeamRole is then
	// its team role (teamRole), else nil.
	IsMember bool
	TeamRole *string
	// Organization is the team's organization; only Team reads it.
	Organization Organization
}

// TeamRef names a team: what a project's teams list.
type TeamRef struct {
	ID   int64
	Slug string
	Name string
}

// teamRole is the team role Sentry answers of the membership mm on the
// team link tm (NULL without one): the stored role, contributor by
// default, and at least admin for an organization admin, manager or
// owner.
const teamRole = `CASE WHEN tm.membership_id IS NULL THEN NULL
	WHEN tm.role = 'admin' OR mm.role <> 'member' THEN 'admin' ELSE 'contributor' END`

// teamCols are the columns of a Team t for the caller's membership m,
// with tm its link to the team (teamFrom).
const teamCols = `t.id, t.slug, t.name, t.date_created,
	(SELECT count(*) FROM team_members x JOIN memberships xm ON xm.id = x.membership_id
		WHERE x.team_id = t.id AND xm.user_id IS NOT NULL),
	tm.membership_id IS NOT NULL, ` + `(SELECT ` + teamRole + ` FROM memberships mm WHERE mm.id = m.id)`

// teamFrom joins a team t of the organization o to the caller's
// membership m and its link tm to the team; $1 is the caller, $2 the
// organization's slug.
const teamFrom = `FROM teams t JOIN organizations o ON o.id = t.organization_id
	JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
	LEFT JOIN team_members tm ON tm.team_id = t.id AND tm.membership_id = m.id
	WHERE o.slug = $2`

// teamNamed is the condition that t is the team $3, by slug or id.
const teamNamed = ` AND (t.slug = $3 OR t.id::text = $3)`

func scanTeam(row pgx.Row, more ...any) (Team, error) {
	var t Team
	err := row.Scan(append([]any{&t.ID, &t.Slug, &t.Name, &t.DateCreated, &t.MemberCount, &t.IsMember, &t.TeamRole}, more...)...)
	return t, err
}

// TeamFilter narrows a list of teams, as Sentry's ?query= does: the zero
// value lists them all.
type TeamFilter struct {
	Text  []string // words each in the name or the slug (any case)
	IDs   []int64  // when not empty, only these ids
	Slugs []string // when not empty, only these slugs
}

// Teams lists a page of the teams of the organization orgSlug that userID
// belongs to, newest first, that match f; another organization is
// ErrNotFound.
func (s *Store) Teams(ctx context.Context, userID int64, orgSlug string, f TeamFilter, page Page) ([]Team, PageInfo, error) {
	where, args := textFilter(teamFrom, []any{userID, orgSlug}, f.Text, "t.name", "t.slug")
	if len(f.IDs) > 0 {
		args = append(args, f.IDs)
		where += fmt.Sprintf(" AND t.id = ANY($%d)", len(args))
	}
	if len(f.Slugs) > 0 {
		args = append(args, f.Slugs)
		where += fmt.Sprintf(" AND t.slug = ANY($%d)", len(args))
	}
	return list(ctx, s.pool, listQuery{
		cols: teamCols, from: where, args: args,
		createdCol: "t.date_created", idCol: "t.id",
		scope:   memberOrgScope,
		missing: orgNotFound(orgSlug),
	}, page, scanTeamRow)
}

// memberOrgScope returns a row when $1 is a member of the organization $2:
// the scope of the lists of an organization's teams.
const memberOrgScope = `SELECT 1 FROM organizations o
	JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1 WHERE o.slug = $2`

func scanTeamRow(rows pgx.Rows) (Team, Key, error) {
	t, err := scanTeam(rows)
	return t, Key{Created: t.DateCreated, ID: t.ID}, err
}

// UserTeams lists the teams of the organization orgSlug that userID is
// on, by slug; an organization it does not belong to is ErrNotFound.
func (s *Store) UserTeams(ctx context.Context, userID int64, orgSlug string) ([]Team, error) {
	if _, err := orgIDForMember(ctx, s.pool, userID, orgSlug); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+teamCols+` `+teamFrom+` AND tm.membership_id IS NOT NULL
		ORDER BY t.slug`, userID, orgSlug)
	if err != nil {
		return nil, wrap(err)
	}
	teams, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Team, error) { return scanTeam(row) })
	return teams, wrap(err)
}

// Team returns the team teamRef (a slug or an id) of the organization
// orgSlug that userID belongs to, with its organization.
func (s *Store) Team(ctx context.Context, userID int64, orgSlug, teamRef string) (Team, error) {
	return team(ctx, s.pool, userID, orgSlug, teamRef)
}

func team(ctx context.Context, q querier, userID int64, orgSlug, teamRef string) (Team, error) {
	var o Organization
	t, err := scanTeam(q.QueryRow(ctx, `SELECT `+teamCols+`, o.id, o.slug, o.name, o.date_created `+teamFrom+teamNamed,
		userID, orgSlug, teamRef), &o.ID, &o.Slug, &o.Name, &o.DateCreated)
	t.Organization = o
	if err != nil {
		return t, fmt.Errorf("team %q/%q: %w", orgSlug, teamRef, wrap(err))
	}
	return t, nil
}

// CreateTeam creates the team slug, called name, in the organization
// orgSlug that userID belongs to, with userID on it as its admin (as
// Sentry adds a team's creator), and returns it. A slug the organization
// has already is ErrConflict.
func (s *Store) CreateTeam(ctx context.Context, userID int64, orgSlug, slug, name string) (Team, error) {
	var t Team
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			WITH new AS (
				INSERT INTO teams (organization_id, slug, name)
				SELECT o.id, $3, $4 FROM organizations o
				JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
				WHERE o.slug = $2
				RETURNING id, organization_id)
			INSERT INTO team_members (team_id, membership_id, role)
			SELECT new.id, m.id, 'admin' FROM new
			JOIN memberships m ON m.organization_id = new.organization_id AND m.user_id = $1`,
			userID, orgSlug, slug, name)
		if err != nil {
			return fmt.Errorf("team %q: %w", slug, wrap(err))
		}
		t, err = team(ctx, tx, userID, orgSlug, slug)
		return err
	})
	return t, err
}

// TeamUpdate is a change of a team: each field that is not nil is
// assigned.
type TeamUpdate struct {
	Slug *string
	Name *string
}

// UpdateTeam changes the team teamRef of the organization orgSlug that
// userID belongs to and returns it. A new slug that another team of the
// organization has is ErrConflict.
func (s *Store) UpdateTeam(ctx context.Context, userID int64, orgSlug, teamRef string, u TeamUpdate) (Team, error) {
	var t Team
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var slug string
		err := tx.QueryRow(ctx, `
			UPDATE teams t SET slug = coalesce($4, t.slug), name = coalesce($5, t.name)
			FROM organizations o, memberships m
			WHERE o.id = t.organization_id AND m.organization_id = o.id AND m.user_id = $1
			  AND o.slug = $2`+teamNamed+`
			RETURNING t.slug`, userID, orgSlug, teamRef, u.Slug, u.Name).Scan(&slug)
		if err != nil {
			return fmt.Errorf("team %q/%q: %w", orgSlug, teamRef, wrap(err))
		}
		t, err = team(ctx, tx, userID, orgSlug, slug)
		return err
	})
	return t, err
}

// DeleteTeam removes the team teamRef of the organization orgSlug that
// userID belongs to, with its links to members and projects; the
// projects stay. Nothing removed is ErrNotFound.
func (s *Store) DeleteTeam(ctx context.Context, userID int64, orgSlug, teamRef string) error {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM teams t USING organizations o, memberships m
		WHERE o.id = t.organization_id AND m.organization_id = o.id AND m.user_id = $1
		  AND o.slug = $2`+teamNamed, userID, orgSlug, teamRef)
	if err != nil {
		return wrap(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("team %q/%q: %w", orgSlug, teamRef, ErrNotFound)
	}
	return nil
}

// TeamMember is a member of an organization on one of its teams, in the
// member's shape of the member routes, with its team role there
// (teamRole). A pending member that an invitation put on the team is one.
type TeamMember struct {
	OrgMember
	TeamRole string // Sentry's answer: contributor or admin
}

// TeamMembers lists a page of the members on the team teamRef of the
// organization orgSlug that userID belongs to, newest membership first,
// pending ones that an invitation put on it included (a team's
// memberCount counts those who joined). A team the caller cannot see is
// ErrNotFound.
func (s *Store) TeamMembers(ctx context.Context, userID int64, orgSlug, teamRef string, page Page) ([]TeamMember, PageInfo, error) {
	var members []TeamMember
	var info PageInfo
	err := s.read(ctx, func(q querier) error {
		var err error
		members, info, err = list(ctx, q, listQuery{
			cols: memberCols + `, (SELECT ` + teamRole + ` FROM memberships mm WHERE mm.id = m.id)`,
			from: `FROM teams t JOIN organizations o ON o.id = t.organization_id
				JOIN memberships c ON c.organization_id = o.id AND c.user_id = $1
				JOIN team_members tm ON tm.team_id = t.id
				JOIN memberships m ON m.id = tm.membership_id
				LEFT JOIN users i ON i.id = m.inviter_id
				WHERE o.slug = $2` + teamNamed,
			args:       []any{userID, orgSlug, teamRef},
			createdCol: "m.date_created", idCol: "m.id",
			scope:   `SELECT 1 ` + teamFrom + teamNamed,
			missing: fmt.Errorf("team %q/%q: %w", orgSlug, teamRef, ErrNotFound),
		}, page, func(rows pgx.Rows) (TeamMember, Key, error) {
			var tm TeamMember
			var err error
			tm.OrgMember, err = scanMember(rowWith{rows, []any{&tm.TeamRole}})
			return tm, Key{Created: tm.DateCreated, ID: tm.ID}, err
		})
		if err != nil {
			return err
		}
		oms := make([]OrgMember, len(members))
		for i, m := range members {
			oms[i] = m.OrgMember
		}
		if err := memberUsers(ctx, q, oms); err != nil {
			return err
		}
		for i := range members {
			members[i].OrgMember = oms[i]
		}
		return nil
	})
	return members, info, err
}

// MemberTeamChange names a link of a member to a team: the membership
// MemberID (0 for the caller's own, Sentry's "me") of the organization
// OrgSlug, and the team TeamRef (a slug or an id). MayManage says that the
// caller may change other members' teams; without it, only its own.
type MemberTeamChange struct {
	OrgSlug   string
	MemberID  int64
	TeamRef   string
	MayManage bool
}

// memberTeamTarget selects, for the caller $1 in the organization $2, the
// team $3 (by slug or id) and the membership $4 (0: the caller's), joined
// or pending (an invitation puts a pending member on teams), with whether
// that membership is the caller's own.
const memberTeamTarget = `SELECT t.id, target.id, target.user_id IS NOT NULL AND target.user_id = $1
	FROM teams t JOIN organizations o ON o.id = t.organization_id
	JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
	JOIN memberships target ON target.organization_id = o.id
		AND CASE WHEN $4::bigint = 0 THEN target.user_id = $1 ELSE target.id = $4 END
	WHERE o.slug = $2` + teamNamed

// lockMemberTeam finds the team and the membership of c for userID, and
// refuses another member's link when the caller may not manage it.
func lockMemberTeam(ctx context.Context, tx pgx.Tx, userID int64, c MemberTeamChange) (teamID, membershipID int64, err error) {
	var own bool
	err = tx.QueryRow(ctx, memberTeamTarget+` FOR UPDATE OF t`, userID, c.OrgSlug, c.TeamRef, c.MemberID).
		Scan(&teamID, &membershipID, &own)
	switch {
	case err != nil:
		return 0, 0, fmt.Errorf("member %d on team %q/%q: %w", c.MemberID, c.OrgSlug, c.TeamRef, wrap(err))
	case !own && !c.MayManage:
		return 0, 0, ErrOtherMember
	}
	return teamID, membershipID, nil
}

// AddTeamMember puts the member of c on its team, for the caller userID,
// and returns the team as the caller sees it, and whether the member was
// added (false: it was on the team already).
func (s *Store) AddTeamMember(ctx context.Context, userID int64, c MemberTeamChange) (Team, bool, error) {
	var t Team
	var added bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		teamID, membershipID, err := lockMemberTeam(ctx, tx, userID, c)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO team_members (team_id, membership_id) VALUES ($1, $2)
			ON CONFLICT DO NOTHING`, teamID, membershipID)
		if err != nil {
			return wrap(err)
		}
		added = tag.RowsAffected() == 1
		t, err = team(ctx, tx, userID, c.OrgSlug, c.TeamRef)
		return err
	})
	return t, added, err
}

// RemoveTeamMember takes the member of c off its team, for the caller
// userID, and returns the team as the caller sees it; a member who was not
// on it is no error.
func (s *Store) RemoveTeamMember(ctx context.Context, userID int64, c MemberTeamChange) (Team, error) {
	var t Team
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		teamID, membershipID, err := lockMemberTeam(ctx, tx, userID, c)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM team_members WHERE team_id = $1 AND membership_id = $2`,
			teamID, membershipID); err != nil {
			return wrap(err)
		}
		t, err = team(ctx, tx, userID, c.OrgSlug, c.TeamRef)
		return err
	})
	return t, err
}

// SetTeamRole gives the member of c, who must be on its team, the team
// role role (contributor or admin), for the caller userID, and returns
// the role Sentry then answers (an organization admin, manager or owner is
// at least a team admin). A member not on the team is ErrNotFound.
func (s *Store) SetTeamRole(ctx context.Context, userID int64, c MemberTeamChange, role string) (string, error) {
	var answered string
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		teamID, membershipID, err := lockMemberTeam(ctx, tx, userID, c)
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `
			UPDATE team_members tm SET role = $3 FROM memberships mm
			WHERE tm.team_id = $1 AND tm.membership_id = $2 AND mm.id = tm.membership_id
			RETURNING `+teamRole, teamID, membershipID, role).Scan(&answered)
		if err != nil {
			return fmt.Errorf("member %d on team %q/%q: %w", c.MemberID, c.OrgSlug, c.TeamRef, wrap(err))
		}
		return nil
	})
	return answered, err
}

// MemberTeamRole is a team of a member and the member's team role there
// as Sentry answers it (teamRole): Sentry's teamRoles entry.
type MemberTeamRole struct {
	TeamSlug string
	Role     string
}

// TeamRolesOf returns, by membership id, the teams and team roles of the
// memberships membershipIDs of the organization orgSlug that userID
// belongs to, by team slug; a membership of another organization, or on
// no team, has no entry.
func (s *Store) TeamRolesOf(ctx context.Context, userID int64, orgSlug string, membershipIDs []int64) (map[int64][]MemberTeamRole, error) {
	return teamRolesOf(ctx, s.pool, userID, orgSlug, membershipIDs)
}

// teamRolesOf is TeamRolesOf in q.
func teamRolesOf(ctx context.Context, q querier, userID int64, orgSlug string, membershipIDs []int64) (map[int64][]MemberTeamRole, error) {
	rows, err := q.Query(ctx, `
		SELECT tm.membership_id, t.slug, `+teamRole+`
		FROM teams t JOIN organizations o ON o.id = t.organization_id
		JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
		JOIN team_members tm ON tm.team_id = t.id
		JOIN memberships mm ON mm.id = tm.membership_id
		WHERE o.slug = $2 AND tm.membership_id = ANY($3)
		ORDER BY tm.membership_id, t.slug`, userID, orgSlug, membershipIDs)
	if err != nil {
		return nil, wrap(err)
	}
	roles := map[int64][]MemberTeamRole{}
	var id int64
	var r MemberTeamRole
	_, err = pgx.ForEachRow(rows, []any{&id, &r.TeamSlug, &r.Role}, func() error {
		roles[id] = append(roles[id], r)
		return nil
	})
	return roles, wrap(err)
}

// projectTeamsCol is the column of the teams of a project p, by slug, as
// JSON that scans into []TeamRef.
const projectTeamsCol = `(SELECT coalesce(json_agg(json_build_object('id', t.id, 'slug', t.slug, 'name', t.name)
	ORDER BY t.slug), '[]') FROM project_teams pt JOIN teams t ON t.id = pt.team_id WHERE pt.project_id = p.id)`

// TeamProjects lists a page of the projects of the team teamRef of the
// organization orgSlug that userID belongs to, newest first, each with its
// teams; a team the caller cannot see is ErrNotFound.
func (s *Store) TeamProjects(ctx context.Context, userID int64, orgSlug, teamRef string, page Page) ([]Project, PageInfo, error) {
	return list(ctx, s.pool, listQuery{
		cols: "p.id, p.slug, p.name, p.platform, p.date_created, " + projectSummaryCols + ", " + projectTeamsCol,
		from: `FROM teams t JOIN organizations o ON o.id = t.organization_id
			JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
			JOIN project_teams lt ON lt.team_id = t.id
			JOIN projects p ON p.id = lt.project_id
			WHERE o.slug = $2` + teamNamed,
		args:       []any{userID, orgSlug, teamRef},
		createdCol: "p.date_created", idCol: "p.id",
		scope:   `SELECT 1 ` + teamFrom + teamNamed,
		missing: fmt.Errorf("team %q/%q: %w", orgSlug, teamRef, ErrNotFound),
	}, page, func(rows pgx.Rows) (Project, Key, error) {
		var p Project
		err := rows.Scan(&p.ID, &p.Slug, &p.Name, &p.Platform, &p.DateCreated, &p.Environments, &p.LatestRelease, &p.Teams)
		return p, Key{Created: p.DateCreated, ID: p.ID}, err
	})
}

// ProjectTeams lists a page of the teams of the project projectSlug of the
// organization orgSlug that userID belongs to, newest first; a project the
// caller cannot see is ErrNotFound.
func (s *Store) ProjectTeams(ctx context.Context, userID int64, orgSlug, projectSlug string, page Page) ([]Team, PageInfo, error) {
	return list(ctx, s.pool, listQuery{
		cols: teamCols,
		from: teamFrom + ` AND EXISTS (SELECT 1 FROM project_teams pt JOIN projects p ON p.id = pt.project_id
			WHERE pt.team_id = t.id AND p.slug = $3)`,
		args:       []any{userID, orgSlug, projectSlug},
		createdCol: "t.date_created", idCol: "t.id",
		scope: `SELECT 1 FROM projects p JOIN organizations o ON o.id = p.organization_id
			JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
			WHERE o.slug = $2 AND p.slug = $3`,
		missing: fmt.Errorf("project %q/%q: %w", orgSlug, projectSlug, ErrNotFound),
	}, page, scanTeamRow)
}

// projectWithTeams returns the project id with its teams, for userID.
func projectWithTeams(ctx context.Context, q querier, userID, projectID int64) (Project, error) {
	var p Project
	err := q.QueryRow(ctx, `
		SELECT p.id, p.slug, p.name, p.platform, p.date_created, `+projectSummaryCols+`, `+projectTeamsCol+`
		FROM projects p JOIN memberships m ON m.organization_id = p.organization_id AND m.user_id = $1
		WHERE p.id = $2`, userID, projectID).Scan(&p.ID, &p.Slug, &p.Name, &p.Platform, &p.DateCreated,
		&p.Environments, &p.LatestRelease, &p.Teams)
	return p, wrap(err)
}

// projectAndTeam selects, for the caller $1 in the organization $2, the
// project $3 and the team $4 (by slug or id).
const projectAndTeam = `SELECT p.id, t.id
	FROM projects p JOIN organizations o ON o.id = p.organization_id
	JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
	JOIN teams t ON t.organization_id = o.id AND (t.slug = $4 OR t.id::text = $4)
	WHERE o.slug = $2 AND p.slug = $3`

// LinkProjectTeam gives the team teamRef the project projectSlug, both of
// the organization orgSlug that userID belongs to, and returns the
// project with its teams; a link that exists already is no error.
func (s *Store) LinkProjectTeam(ctx context.Context, userID int64, orgSlug, projectSlug, teamRef string) (Project, error) {
	return s.changeProjectTeam(ctx, userID, orgSlug, projectSlug, teamRef,
		`INSERT INTO project_teams (project_id, team_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`)
}

// UnlinkProjectTeam takes the project projectSlug from the team teamRef,
// both of the organization orgSlug that userID belongs to, and returns the
// project with its teams; a link that does not exist is no error.
func (s *Store) UnlinkProjectTeam(ctx context.Context, userID int64, orgSlug, projectSlug, teamRef string) (Project, error) {
	return s.changeProjectTeam(ctx, userID, orgSlug, projectSlug, teamRef,
		`DELETE FROM project_teams WHERE project_id = $1 AND team_id = $2`)
}

// changeProjectTeam runs change on the ids of the project and the team.
func (s *Store) changeProjectTeam(ctx context.Context, userID int64, orgSlug, projectSlug, teamRef, change string) (Project, error) {
	var p Project
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var projectID, teamID int64
		err := tx.QueryRow(ctx, projectAndTeam+` FOR UPDATE OF t`, userID, orgSlug, projectSlug, teamRef).Scan(&projectID, &teamID)
		if err != nil {
			return fmt.Errorf("project %q/%q and team %q: %w", orgSlug, projectSlug, teamRef, wrap(err))
		}
		if _, err := tx.Exec(ctx, change, projectID, teamID); err != nil {
			return wrap(err)
		}
		p, err = projectWithTeams(ctx, tx, userID, projectID)
		return err
	})
	return p, err
}

// CreateTeamProject creates the project np in the organization orgSlug
// that userID belongs to, owned by its team teamRef, and returns it with
// its teams: CreateProject's rules, and a team the caller cannot see is
// ErrNotFound.
func (s *Store) CreateTeamProject(ctx context.Context, userID int64, orgSlug, teamRef string, np NewProject) (Project, error) {
	var p Project
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var teamID, orgID int64
		err := tx.QueryRow(ctx, `SELECT t.id, o.id `+teamFrom+teamNamed+` FOR UPDATE OF t`,
			userID, orgSlug, teamRef).Scan(&teamID, &orgID)
		if err != nil {
			return fmt.Errorf("team %q/%q: %w", orgSlug, teamRef, wrap(err))
		}
		var projectID int64
		err = tx.QueryRow(ctx, `INSERT INTO projects (organization_id, slug, name, platform) VALUES ($1, $2, $3, $4)
			RETURNING id`, orgID, np.Slug, np.Name, np.Platform).Scan(&projectID)
		if err != nil {
			return fmt.Errorf("project %q: %w", np.Slug, wrap(err))
		}
		if _, err := tx.Exec(ctx, `INSERT INTO project_teams (project_id, team_id) VALUES ($1, $2)`, projectID, teamID); err != nil {
			return wrap(err)
		}
		p, err = projectWithTeams(ctx, tx, userID, projectID)
		return err
	})
	return p, err
}
