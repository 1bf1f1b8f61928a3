package handlers

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"errata/authn"
	"errata/store"
)

// The members of organizations (docs/members.md, "Members"): Sentry's
// member shapes, its roles, and who may assign which (authn.CanAssign).

// memberUserOut is the user of an accepted member: the user of the user
// routes (userOut), with what Sentry's member adds to it; errata has no
// avatars, suspensions, managed accounts, staff or experiments, and
// writes for them Sentry's empty values. emails lists the primary
// address alone: the member list shows no address the member did not
// choose to be known by.
type memberUserOut struct {
	userOut
	AvatarURL   string           `json:"avatarUrl"`
	IsSuspended bool             `json:"isSuspended"`
	IsManaged   bool             `json:"isManaged"`
	Has2fa      bool             `json:"has2fa"`
	LastActive  *jsonTime        `json:"lastActive"`
	IsStaff     bool             `json:"isStaff"`
	Experiments struct{}         `json:"experiments"`
	Emails      []memberEmailOut `json:"emails"`
}

// memberEmailOut is an address of a member's user.
type memberEmailOut struct {
	ID         string `json:"id"`
	Email      string `json:"email"`
	IsVerified bool   `json:"is_verified"`
}

// memberFlagsOut are Sentry's flags of a member, all about single sign-on,
// SCIM and plans that errata has none of.
type memberFlagsOut struct {
	IDPProvisioned        bool `json:"idp:provisioned"`
	IDPRoleRestricted     bool `json:"idp:role-restricted"`
	SSOLinked             bool `json:"sso:linked"`
	SSOInvalid            bool `json:"sso:invalid"`
	MemberLimitRestricted bool `json:"member-limit:restricted"`
	PartnershipRestricted bool `json:"partnership:restricted"`
}

// memberOut is a member as lists show it.
type memberOut struct {
	ID           string         `json:"id"`
	Email        string         `json:"email"`
	Name         string         `json:"name"`
	User         *memberUserOut `json:"user"`
	OrgRole      string         `json:"orgRole"`
	Role         string         `json:"role"`
	RoleName     string         `json:"roleName"`
	Pending      bool           `json:"pending"`
	Expired      bool           `json:"expired"`
	Flags        memberFlagsOut `json:"flags"`
	DateCreated  jsonTime       `json:"dateCreated"`
	InviteStatus string         `json:"inviteStatus"`
	InviterName  *string        `json:"inviterName"`
}

func newMemberOut(m store.OrgMember, now time.Time) memberOut {
	out := memberOut{
		ID: strconv.FormatInt(m.ID, 10), Email: m.Email, Name: m.Email,
		OrgRole: m.Role, Role: m.Role, RoleName: orgRoleDescriptions[m.Role][0],
		Pending:     m.Pending(),
		Expired:     m.Pending() && (m.InviteExpiresAt == nil || !now.Before(*m.InviteExpiresAt)),
		DateCreated: jsonTime(m.DateCreated),
		// Every invitation errata makes is approved: nobody asks to join.
		InviteStatus: "approved",
		InviterName:  m.InviterName,
	}
	if u := m.User; u != nil {
		if u.Name != "" {
			out.Name = u.Name
		}
		mu := &memberUserOut{userOut: newUserOut(u.User), Has2fa: u.Has2FA, LastActive: timeOrNil(u.LastActive),
			Emails: []memberEmailOut{}}
		if p := u.Primary; p != nil {
			mu.Emails = append(mu.Emails, memberEmailOut{ID: strconv.FormatInt(p.ID, 10), Email: p.Email, IsVerified: p.Verified})
		}
		out.User = mu
	}
	return out
}

// memberTeamRoleOut is a member's role in a team, as Sentry answers it:
// contributor or admin (docs/members.md, Teams).
type memberTeamRoleOut struct {
	TeamSlug string `json:"teamSlug"`
	Role     string `json:"role"`
}

// memberDetailOut is a member as its detail shows it. InviteLink is the
// link of a pending member's invitation, for owners and managers only.
type memberDetailOut struct {
	memberOut
	Teams        []string            `json:"teams"`
	TeamRoles    []memberTeamRoleOut `json:"teamRoles"`
	InviteLink   *string             `json:"invite_link"`
	IsOnlyOwner  bool                `json:"isOnlyOwner"`
	OrgRoleList  []orgRoleJSON       `json:"orgRoleList"`
	TeamRoleList []teamRoleJSON      `json:"teamRoleList"`
}

// memberID reads {member_id}: a membership's id, or "me" for the
// caller's own (0). Anything else is 422.
func memberID(r *http.Request) (int64, error) {
	v := r.PathValue("member_id")
	if v == "me" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if !isDecimal(v) || err != nil || n <= 0 {
		return 0, invalid(typeError, `Input should be "me" or a member id`, "path", "member_id")
	}
	return n, nil
}

// handleMembers serves GET /api/0/organizations/{organization_slug}/members/:
// a page of the organization's members, pending invitations included; and
// with project, GET /api/0/projects/{organization_slug}/{project_slug}/members/:
// a page of the members who can reach the project, that is every member of
// its organization who has joined (access is organization-wide).
func handleMembers(d Deps, project bool) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		page, err := readPage(r)
		if err != nil {
			return err
		}
		projectSlug := ""
		if project {
			projectSlug = r.PathValue("project_slug")
		}
		ms, info, err := d.Store.Members(r.Context(), caller(r).UserID, r.PathValue("organization_slug"), projectSlug, page)
		if err != nil {
			return err
		}
		now := d.Now()
		out := make([]memberOut, 0, len(ms))
		for _, m := range ms {
			out = append(out, newMemberOut(m, now))
		}
		setPageHeaders(w, r, d.PublicURL, info)
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// handleMember serves GET
// /api/0/organizations/{organization_slug}/members/{member_id}/: the
// member's detail.
func handleMember(d Deps) apiFunc {
	keys := authn.NewInviteKeys(d.SecretKey)
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := memberID(r)
		if err != nil {
			return err
		}
		return writeMemberDetail(d, keys, w, r, id)
	}
}

// writeMemberDetail answers 200 with the detail of the member id (0: the
// caller). The invitation's link of a pending member is shown to owners
// and managers who could send this invitation, who may send it
// themselves where errata has no mail; to others, and once it expired,
// it is null.
func writeMemberDetail(d Deps, keys *authn.InviteKeys, w http.ResponseWriter, r *http.Request, id int64) error {
	m, err := d.Store.MemberDetail(r.Context(), caller(r).UserID, r.PathValue("organization_slug"), id)
	if err != nil {
		return err
	}
	now := d.Now()
	out := memberDetailOut{memberOut: newMemberOut(m.OrgMember, now), Teams: []string{},
		TeamRoles: []memberTeamRoleOut{}, IsOnlyOwner: m.IsOnlyOwner,
		OrgRoleList: orgRoleList(m.CallerRole), TeamRoleList: teamRoleList(m.CallerRole)}
	for _, t := range m.Teams {
		out.Teams = append(out.Teams, t.TeamSlug)
		out.TeamRoles = append(out.TeamRoles, memberTeamRoleOut{TeamSlug: t.TeamSlug, Role: t.Role})
	}
	// The link is as good as the invitation: only a caller who could send
	// this one (a member scope, and a role of authn.CanAssign's, so never
	// a manager an owner's) is shown it.
	if out.Pending && !out.Expired && (m.CallerRole == "owner" || m.CallerRole == "manager") &&
		authn.CanAssign(m.CallerRole, m.Role) && caller(r).HasAny(memberWrite.scopes) {
		// A token sealed under another SECRET_KEY no longer opens: the
		// link is then unknown (null), and a reinvite makes a new one.
		if token, err := keys.Open(m.ID, m.InviteTokenSealed); err == nil {
			link := inviteLink(d, r, m.ID, token)
			out.InviteLink = &link
		}
	}
	writeJSON(w, r, d.Log, http.StatusOK, out)
	return nil
}

// memberIn is the body of POST and PUT on members: Sentry's orgRole and
// teamRoles, with role and teams as their older names.
type memberIn struct {
	Email      opt[string]           `json:"email"`
	OrgRole    opt[string]           `json:"orgRole"`
	Role       opt[string]           `json:"role"`
	TeamRoles  opt[[]map[string]any] `json:"teamRoles"`
	Teams      opt[[]string]         `json:"teams"`
	SendInvite opt[bool]             `json:"sendInvite"`
	Reinvite   opt[bool]             `json:"reinvite"`
}

// role returns the body's role (orgRole, else role), "" when it has none.
func (in memberIn) role() (string, error) {
	o, name := in.OrgRole, "orgRole"
	if !o.Set || o.Null {
		o, name = in.Role, "role"
	}
	if !o.Set || o.Null {
		return "", nil
	}
	if !slices.Contains(store.Roles, o.V) {
		return "", invalid(valueErr, "Input should be 'member', 'admin', 'manager' or 'owner'", "body", name)
	}
	return o.V, nil
}

// maxTeamRoles bounds the team roles of one body.
const maxTeamRoles = 100

// teams returns the body's team roles: teamRoles ([{teamSlug, role}], the
// role contributor, admin or null for the default), else teams ([slug],
// the default role); none when it has neither.
func (in memberIn) teams() ([]store.MemberTeam, error) {
	var out []store.MemberTeam
	slug := func(v any, loc ...any) (string, error) {
		s, ok := v.(string)
		if !ok || s == "" || utf8.RuneCountInString(s) > 50 || !isText(s) {
			return "", invalid(valueErr, "Input should be a team's slug", loc...)
		}
		return s, nil
	}
	switch {
	case in.TeamRoles.Set && !in.TeamRoles.Null:
		if len(in.TeamRoles.V) > maxTeamRoles {
			return nil, invalid(valueErr, "At most 100 team roles", "body", "teamRoles")
		}
		for i, tr := range in.TeamRoles.V {
			s, err := slug(tr["teamSlug"], "body", "teamRoles", i, "teamSlug")
			if err != nil {
				return nil, err
			}
			t := store.MemberTeam{Slug: s}
			switch role := tr["role"].(type) {
			case nil:
			case string:
				if role != "contributor" && role != "admin" {
					return nil, invalid(valueErr, "Input should be 'contributor', 'admin' or null", "body", "teamRoles", i, "role")
				}
				t.Role = &role
			default:
				return nil, invalid(valueErr, "Input should be 'contributor', 'admin' or null", "body", "teamRoles", i, "role")
			}
			out = append(out, t)
		}
	case in.Teams.Set && !in.Teams.Null:
		if len(in.Teams.V) > maxTeamRoles {
			return nil, invalid(valueErr, "At most 100 teams", "body", "teams")
		}
		for i, v := range in.Teams.V {
			s, err := slug(v, "body", "teams", i)
			if err != nil {
				return nil, err
			}
			out = append(out, store.MemberTeam{Slug: s})
		}
	}
	return out, nil
}

// memberError turns the errors of member changes into answers.
func memberError(err error, loc ...any) error {
	switch {
	case errors.Is(err, store.ErrRoleNotAllowed):
		return &apiError{status: http.StatusForbidden, detail: "You do not have permission to assign that role, or to change a member of that role"}
	case errors.Is(err, store.ErrNoSuchTeam):
		return invalid(valueErr, "The organization has no team of that slug", "body", "teamRoles")
	case errors.Is(err, store.ErrLastOwner):
		return invalid(valueErr, "The organization's last owner can be neither removed nor given another role: make another member an owner first", loc...)
	}
	return err
}

// handleMemberUpdate serves PUT
// /api/0/organizations/{organization_slug}/members/{member_id}/
// {orgRole?, teamRoles?, reinvite?}: a new role (up to the caller's own;
// never leaving the organization without an owner), or for a pending
// member a new invitation, whose new link works and whose old one stops.
// teamRoles (or teams) put the member on teams of the organization, or
// change its role there; it stays on the teams not named. It answers the
// member's detail.
func handleMemberUpdate(d Deps) apiFunc {
	d = invitationDeps(d)
	keys := authn.NewInviteKeys(d.SecretKey)
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := memberID(r)
		if err != nil {
			return err
		}
		var in memberIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		role, err := in.role()
		if err != nil {
			return err
		}
		teams, err := in.teams()
		if err != nil {
			return err
		}
		up := store.MemberUpdate{Role: role, Teams: teams, Reinvite: in.Reinvite.Set && in.Reinvite.V,
			Expires: d.Now().Add(d.InviteTTL)}
		c := caller(r)
		if up.Reinvite {
			if err := throttleInvitation(d, r, c.UserID); err != nil {
				return err
			}
		}
		send := !in.SendInvite.Set || in.SendInvite.Null || in.SendInvite.V
		userID, err := d.Store.UpdateMember(r.Context(), c.UserID, r.PathValue("organization_slug"), id, up,
			authn.CanAssign, invitationKeys(d, r, keys, send))
		if errors.Is(err, store.ErrAlreadyMember) {
			return invalid(valueErr, "The member has joined: there is no invitation to send again", "body", "reinvite")
		}
		if err != nil {
			return memberError(err, "body", "orgRole")
		}
		if userID != 0 {
			d.Auth.ForgetUser(userID)
		}
		if up.Reinvite && send && d.NotifyMail != nil {
			d.NotifyMail()
		}
		return writeMemberDetail(d, keys, w, r, id)
	}
}

// handleMemberDelete serves DELETE
// /api/0/organizations/{organization_slug}/members/{member_id}/: a member
// leaves (any member may, "me" or its own id), or a manager or owner
// removes a member or an invitation of a role up to its own; the last
// owner stays. The removed person's tokens and sessions stop reaching the
// organization at once here, and within the lookup caches' second on
// other replicas.
func handleMemberDelete(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := memberID(r)
		if err != nil {
			return err
		}
		c := caller(r)
		allowed := func(callerRole, role string) bool {
			return c.HasAny(memberWrite.scopes) && authn.CanAssign(callerRole, role)
		}
		userID, err := d.Store.RemoveMember(r.Context(), c.UserID, r.PathValue("organization_slug"), id, allowed)
		if err != nil {
			return memberError(err, "path", "member_id")
		}
		if userID != 0 {
			d.Auth.ForgetUser(userID)
		}
		noContent(w)
		return nil
	}
}
