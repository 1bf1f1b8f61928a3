package handlers

import (
	"errors"
	"net/http"
	"slices"
	"strconv"

	"errata/store"
)

// Teams, the links of members to teams and of projects to teams
// (docs/members.md, Teams). Teams group an organization's members and
// projects and decide no access: every member sees every project of its
// organization (Sentry's open membership).

// Sentry's limits of a team's slug and name.
const (
	maxTeamSlug = 50
	maxTeamName = 64
)

// manageMemberTeams are the scopes that let a caller change another
// member's teams, or raise a team role: Sentry's team:write and team:admin
// of team admins, and the organization's write scopes. Without one, a
// caller joins and leaves teams itself (open membership) and may step
// down to contributor.
var manageMemberTeams = []string{"team:write", "team:admin", "org:write", "org:admin", "member:write", "member:admin"}

// teamRefJSON names a team in a project's teams.
type teamRefJSON struct {
	ID   string `json:"id"`
	Slug string `json:"slug"`
	Name string `json:"name"`
}

func newTeamRefsJSON(teams []store.TeamRef) []teamRefJSON {
	out := make([]teamRefJSON, 0, len(teams))
	for _, t := range teams {
		out = append(out, teamRefJSON{ID: strconv.FormatInt(t.ID, 10), Slug: t.Slug, Name: t.Name})
	}
	return out
}

// teamJSON is a team as Sentry's API writes it. isMember and teamRole are
// the caller's; access is the caller's scopes in the organization, which
// are its scopes on every team; every member has access (open
// membership), nothing is pending (errata has no access requests), no
// team is provisioned by an identity provider, and the avatar is Sentry's
// letter avatar.
type teamJSON struct {
	ID          string             `json:"id"`
	Slug        string             `json:"slug"`
	Name        string             `json:"name"`
	DateCreated jsonTime           `json:"dateCreated"`
	IsMember    bool               `json:"isMember"`
	TeamRole    *string            `json:"teamRole"`
	Flags       map[string]bool    `json:"flags"`
	Access      []string           `json:"access"`
	HasAccess   bool               `json:"hasAccess"`
	IsPending   bool               `json:"isPending"`
	MemberCount int                `json:"memberCount"`
	Avatar      organizationAvatar `json:"avatar"`
}

func newTeamJSON(r *http.Request, t store.Team) teamJSON {
	return newTeamJSONWith(t, caller(r).Scopes)
}

// newTeamJSONWith converts t for a caller whose scopes in its organization
// are access: organization-wide, as every team is open to every member.
func newTeamJSONWith(t store.Team, access []string) teamJSON {
	access = slices.Clip(access)
	if access == nil {
		access = []string{}
	}
	return teamJSON{
		ID: strconv.FormatInt(t.ID, 10), Slug: t.Slug, Name: t.Name, DateCreated: jsonTime(t.DateCreated),
		IsMember: t.IsMember, TeamRole: t.TeamRole, Flags: map[string]bool{"idp:provisioned": false},
		Access: access, HasAccess: true, MemberCount: t.MemberCount,
		Avatar: organizationAvatar{AvatarType: "letter_avatar"},
	}
}

func newTeamsJSON(r *http.Request, teams []store.Team) []teamJSON {
	out := make([]teamJSON, 0, len(teams))
	for _, t := range teams {
		out = append(out, newTeamJSON(r, t))
	}
	return out
}

// teamDetailJSON is a team with its organization, as getTeam answers it
// unless ?collapse=organization.
type teamDetailJSON struct {
	teamJSON
	Organization *organizationJSON `json:"organization,omitempty"`
}

// orgTeamSlugs reads the path values of a team route.
func orgTeamSlugs(r *http.Request) (org, team string, err error) {
	if org, err = pathSlug(r, "organization_slug"); err != nil {
		return "", "", err
	}
	team, err = pathSlug(r, "team_slug")
	return org, team, err
}

// errTeamSlugTaken is Sentry's answer to a slug the organization's teams
// have.
func errTeamSlugTaken(cause error) error {
	return &apiError{status: http.StatusConflict, detail: "A team with this slug already exists.", cause: cause}
}

// teamFilter reads ?query= of the team list: words that the name or the
// slug contains, and the keys id and slug.
func teamFilter(r *http.Request) (store.TeamFilter, error) {
	var f store.TeamFilter
	q := r.URL.Query()
	if q.Has("detailed") && q.Get("detailed") != "0" {
		return f, invalid(valueErr, "errata answers teams without their projects: detailed=0", "query", "detailed")
	}
	terms, err := queryTerms(q.Get("query"), "id", "slug")
	if err != nil {
		return f, err
	}
	f.Text, f.Slugs = terms[""], terms["slug"]
	for _, id := range terms["id"] {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			return f, invalid(valueErr, "id: should be an integer", "query", "query")
		}
		f.IDs = append(f.IDs, n)
	}
	return f, nil
}

// handleTeams serves GET organizations/{org}/teams/: the organization's
// teams, newest first, filtered by ?query=.
func handleTeams(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		page, err := readPage(r)
		if err != nil {
			return err
		}
		f, err := teamFilter(r)
		if err != nil {
			return err
		}
		teams, info, err := d.Store.Teams(r.Context(), caller(r).UserID, org, f, page)
		if err != nil {
			return err
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, newTeamsJSON(r, teams))
		return nil
	}
}

// handleUserTeams serves GET organizations/{org}/user-teams/: the teams of
// the organization the caller is on.
func handleUserTeams(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		teams, err := d.Store.UserTeams(r.Context(), caller(r).UserID, org)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, newTeamsJSON(r, teams))
		return nil
	}
}

// teamIn is the body of a team create or update: Sentry's slug and name.
type teamIn struct {
	Slug opt[string] `json:"slug"`
	Name opt[string] `json:"name"`
}

// readSlug validates an optional slug: nil when not sent (or null or ""
// where allowed).
func (in teamIn) readSlug(required bool) (*string, error) {
	switch {
	case !in.Slug.Set && required:
		return nil, invalid(missing, "Field required", "body", "slug")
	case !in.Slug.Set:
		return nil, nil
	case in.Slug.Null && required:
		return nil, invalid(typeError, "Input should be a valid string", "body", "slug")
	case in.Slug.Null || in.Slug.V == "":
		return nil, nil
	}
	if err := checkNewSlug(in.Slug.V, maxTeamSlug, "body", "slug"); err != nil {
		return nil, err
	}
	return &in.Slug.V, nil
}

// readName validates an optional name: nil when not sent, null or "".
func (in teamIn) readName() (*string, error) {
	if !in.Name.Set || in.Name.Null || in.Name.V == "" {
		return nil, nil
	}
	if err := checkDisplayName(in.Name.V, maxTeamName, "body", "name"); err != nil {
		return nil, err
	}
	return &in.Name.V, nil
}

// handleTeamCreate serves POST organizations/{org}/teams/: a new team
// named by its slug, its name or both (each made from the other when
// missing, as Sentry does), with the caller on it as its admin; 201 with
// the team, 409 when the slug is taken.
func handleTeamCreate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, err := pathSlug(r, "organization_slug")
		if err != nil {
			return err
		}
		var in teamIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		slug, err := in.readSlug(false)
		if err != nil {
			return err
		}
		name, err := in.readName()
		if err != nil {
			return err
		}
		switch {
		case slug == nil && name == nil:
			return invalid(missing, "Name or slug is required", "body", "slug")
		case slug == nil:
			s := projectSlugFromName(*name)
			if len(s) > maxTeamSlug {
				s = s[:maxTeamSlug]
			}
			if err := checkNewSlug(s, maxTeamSlug, "body", "name"); err != nil {
				return err
			}
			slug = &s
		case name == nil:
			name = slug
		}
		t, err := d.Store.CreateTeam(r.Context(), caller(r).UserID, org, *slug, *name)
		if errors.Is(err, store.ErrConflict) {
			return errTeamSlugTaken(err)
		}
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusCreated, newTeamJSON(r, t))
		return nil
	}
}

// handleTeam serves GET teams/{org}/{team}/: the team with its
// organization, which ?collapse=organization leaves out. errata expands
// nothing more (?expand= is refused).
func handleTeam(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, team, err := orgTeamSlugs(r)
		if err != nil {
			return err
		}
		q := r.URL.Query()
		if q.Has("expand") {
			return invalid(valueErr, "errata expands no team field", "query", "expand")
		}
		withOrg := true
		for _, c := range q["collapse"] {
			if c != "organization" {
				return invalid(valueErr, "only organization may be collapsed", "query", "collapse")
			}
			withOrg = false
		}
		t, err := d.Store.Team(r.Context(), caller(r).UserID, org, team)
		if err != nil {
			return err
		}
		out := teamDetailJSON{teamJSON: newTeamJSON(r, t)}
		if withOrg {
			o := newOrganizationJSON(t.Organization, publicBase(r, d.PublicURL))
			out.Organization = &o
		}
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// handleTeamUpdate serves PUT teams/{org}/{team}/: a new slug (required,
// as Sentry's document says) and name; 409 when the slug is taken.
func handleTeamUpdate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, team, err := orgTeamSlugs(r)
		if err != nil {
			return err
		}
		var in teamIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		var u store.TeamUpdate
		if u.Slug, err = in.readSlug(true); err != nil {
			return err
		}
		if u.Name, err = in.readName(); err != nil {
			return err
		}
		t, err := d.Store.UpdateTeam(r.Context(), caller(r).UserID, org, team, u)
		if errors.Is(err, store.ErrConflict) {
			return errTeamSlugTaken(err)
		}
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, newTeamJSON(r, t))
		return nil
	}
}

// handleTeamDelete serves DELETE teams/{org}/{team}/: the team goes at
// once with its links; its members and projects stay.
func handleTeamDelete(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, team, err := orgTeamSlugs(r)
		if err != nil {
			return err
		}
		if err := d.Store.DeleteTeam(r.Context(), caller(r).UserID, org, team); err != nil {
			return err
		}
		noContent(w)
		return nil
	}
}

// teamMemberOut is a member on a team, as listTeamMembers writes it: the
// member of the member routes (memberOut), with its team role and the
// team's slug.
type teamMemberOut struct {
	memberOut
	TeamRole string `json:"teamRole"`
	TeamSlug string `json:"teamSlug"`
}

// handleTeamMembers serves GET teams/{org}/{team}/members/: the members on
// the team, newest membership first, pending ones an invitation put on it
// included.
func handleTeamMembers(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, team, err := orgTeamSlugs(r)
		if err != nil {
			return err
		}
		page, err := readPage(r)
		if err != nil {
			return err
		}
		t, err := d.Store.Team(r.Context(), caller(r).UserID, org, team)
		if err != nil {
			return err
		}
		members, info, err := d.Store.TeamMembers(r.Context(), caller(r).UserID, org, team, page)
		if err != nil {
			return err
		}
		now := d.Now()
		out := make([]teamMemberOut, 0, len(members))
		for _, m := range members {
			out = append(out, teamMemberOut{memberOut: newMemberOut(m.OrgMember, now), TeamRole: m.TeamRole, TeamSlug: t.Slug})
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// memberTeamChange reads the path values of a member–team route:
// {member_id} as the member routes read it (memberID).
func memberTeamChange(r *http.Request) (store.MemberTeamChange, error) {
	org, team, err := orgTeamSlugs(r)
	if err != nil {
		return store.MemberTeamChange{}, err
	}
	c := store.MemberTeamChange{OrgSlug: org, TeamRef: team, MayManage: caller(r).HasAny(manageMemberTeams)}
	c.MemberID, err = memberID(r)
	return c, err
}

// errOtherMember answers a change of another member's teams by a caller
// who may change only its own.
func errOtherMember(err error) error {
	if errors.Is(err, store.ErrOtherMember) {
		return &apiError{status: http.StatusForbidden, detail: "You do not have permission to change this member's teams", cause: err}
	}
	return err
}

// handleMemberTeamAdd serves POST
// organizations/{org}/members/{member_id}/teams/{team}/: the member joins
// the team, 201 with the team, or 204 when it was on it already. A caller
// adds itself with any scope of the route; another member, with one of
// manageMemberTeams.
func handleMemberTeamAdd(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		c, err := memberTeamChange(r)
		if err != nil {
			return err
		}
		t, added, err := d.Store.AddTeamMember(r.Context(), caller(r).UserID, c)
		if err != nil {
			return errOtherMember(err)
		}
		if !added {
			noContent(w)
			return nil
		}
		writeJSON(w, r, d.Log, http.StatusCreated, newTeamJSON(r, t))
		return nil
	}
}

// handleMemberTeamDelete serves DELETE
// organizations/{org}/members/{member_id}/teams/{team}/: the member leaves
// the team (no error when it was not on it); 200 with the team. A caller
// removes itself with any scope of the route; another member, with one of
// manageMemberTeams.
func handleMemberTeamDelete(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		c, err := memberTeamChange(r)
		if err != nil {
			return err
		}
		t, err := d.Store.RemoveTeamMember(r.Context(), caller(r).UserID, c)
		if err != nil {
			return errOtherMember(err)
		}
		writeJSON(w, r, d.Log, http.StatusOK, newTeamJSON(r, t))
		return nil
	}
}

// memberTeamRoleIn is the body of a team role change.
type memberTeamRoleIn struct {
	TeamRole opt[string] `json:"teamRole"`
}

// memberTeamJSON is Sentry's answer to a team role change.
type memberTeamJSON struct {
	IsActive bool   `json:"isActive"`
	TeamRole string `json:"teamRole"`
}

// handleMemberTeamUpdate serves PUT
// organizations/{org}/members/{member_id}/teams/{team}/: the team role
// (contributor or admin) of a member on the team. Making anyone an admin,
// or changing another member, takes one of manageMemberTeams; a caller may
// step down to contributor itself. The answer is the role Sentry then
// reports: an organization admin, manager or owner is at least a team
// admin.
func handleMemberTeamUpdate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		c, err := memberTeamChange(r)
		if err != nil {
			return err
		}
		var in memberTeamRoleIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		role := "contributor" // Sentry's default
		if in.TeamRole.Set {
			if in.TeamRole.Null || in.TeamRole.V != "contributor" && in.TeamRole.V != "admin" {
				return invalid(valueErr, "Input should be 'contributor' or 'admin'", "body", "teamRole")
			}
			role = in.TeamRole.V
		}
		if role == "admin" && !c.MayManage {
			return errPermissionDenied
		}
		answered, err := d.Store.SetTeamRole(r.Context(), caller(r).UserID, c, role)
		if err != nil {
			return errOtherMember(err)
		}
		writeJSON(w, r, d.Log, http.StatusOK, memberTeamJSON{IsActive: true, TeamRole: answered})
		return nil
	}
}

// projectTeamsJSON is a project as Sentry answers a change of its teams:
// its fields of lists, no null team, and Sentry's empty values for what
// errata has no concept of (an avatar of its own, a color, internal or
// public projects).
type projectTeamsJSON struct {
	projectJSON
	Team       *teamRefJSON       `json:"team,omitempty"` // hides projectJSON's
	Avatar     organizationAvatar `json:"avatar"`
	Color      string             `json:"color"`
	IsInternal bool               `json:"isInternal"`
	IsPublic   bool               `json:"isPublic"`
}

func newProjectTeamsJSON(r *http.Request, p store.Project) projectTeamsJSON {
	out := projectTeamsJSON{projectJSON: newProjectJSON(p, caller(r).Scopes),
		Avatar: organizationAvatar{AvatarType: "letter_avatar"}}
	out.Team = out.projectJSON.Team
	return out
}

// newTeamProjectJSON is a project of a team's list: a project of the
// organization's list, with the caller's scopes as access.
func newTeamProjectJSON(r *http.Request, p store.Project) projectJSON {
	return newProjectJSON(p, caller(r).Scopes)
}

// handleTeamProjects serves GET teams/{org}/{team}/projects/: the team's
// projects, newest first.
func handleTeamProjects(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, team, err := orgTeamSlugs(r)
		if err != nil {
			return err
		}
		page, err := readPage(r)
		if err != nil {
			return err
		}
		projects, info, err := d.Store.TeamProjects(r.Context(), caller(r).UserID, org, team, page)
		if err != nil {
			return err
		}
		out := make([]projectJSON, 0, len(projects))
		for _, p := range projects {
			out = append(out, newTeamProjectJSON(r, p))
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// handleTeamProjectCreate serves POST teams/{org}/{team}/projects/: a new
// project of the organization, owned by the team, with the body and rules
// of a project created through the organization; 201 with the project.
func handleTeamProjectCreate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, team, err := orgTeamSlugs(r)
		if err != nil {
			return err
		}
		var in projectCreateIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		np, err := in.newProject()
		if err != nil {
			return err
		}
		p, err := d.Store.CreateTeamProject(r.Context(), caller(r).UserID, org, team, np)
		if errors.Is(err, store.ErrConflict) {
			return errProjectSlugTaken(err)
		}
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusCreated, newTeamProjectJSON(r, p))
		return nil
	}
}

// handleProjectTeams serves GET projects/{org}/{project}/teams/: the
// project's teams, newest first.
func handleProjectTeams(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, project, err := orgProjectSlugs(r)
		if err != nil {
			return err
		}
		page, err := readPage(r)
		if err != nil {
			return err
		}
		teams, info, err := d.Store.ProjectTeams(r.Context(), caller(r).UserID, org, project, page)
		if err != nil {
			return err
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, newTeamsJSON(r, teams))
		return nil
	}
}

// handleProjectTeamAdd serves POST projects/{org}/{project}/teams/{team}/:
// the team gets the project (again, if it had it); 201 with the project.
func handleProjectTeamAdd(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, project, err := orgProjectSlugs(r)
		if err != nil {
			return err
		}
		team, err := pathSlug(r, "team_slug")
		if err != nil {
			return err
		}
		p, err := d.Store.LinkProjectTeam(r.Context(), caller(r).UserID, org, project, team)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusCreated, newProjectTeamsJSON(r, p))
		return nil
	}
}

// handleProjectTeamDelete serves DELETE
// projects/{org}/{project}/teams/{team}/: the team no longer has the
// project (no error when it did not); 200 with the project.
func handleProjectTeamDelete(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		org, project, err := orgProjectSlugs(r)
		if err != nil {
			return err
		}
		team, err := pathSlug(r, "team_slug")
		if err != nil {
			return err
		}
		p, err := d.Store.UnlinkProjectTeam(r.Context(), caller(r).UserID, org, project, team)
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, newProjectTeamsJSON(r, p))
		return nil
	}
}
