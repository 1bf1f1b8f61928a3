package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file is the members of organizations and their invitations
// (docs/members.md): a membership is a person's (user_id) or, while its
// invitation waits, an address's (user_id NULL). Who may do what is
// authn's (CanAssign), given to the statements here as a function; the
// store decides it under the lock of the organization's member changes, so
// that the rule and the last owner hold whatever runs at once.

// Errors of member changes.
var (
	// ErrLastOwner means the change would leave the organization without
	// an owner.
	ErrLastOwner = errors.New("store: the organization's last owner")
	// ErrRoleNotAllowed means the caller's role may not give the role,
	// or act on a member who has it.
	ErrRoleNotAllowed = errors.New("store: the caller's role may not assign that role")
	// ErrAlreadyMember means the address or the person is a member
	// already (or, for a re-invitation, has accepted).
	ErrAlreadyMember = errors.New("store: already a member")
	// ErrNoSuchTeam means a team role names no team of the organization.
	ErrNoSuchTeam = errors.New("store: no team of that slug in the organization")
)

// OrgMember is a membership as the API shows it. User is nil while the
// invitation waits; Email is then the invited address, else the user's.
type OrgMember struct {
	ID              int64
	Email           string
	Role            string
	DateCreated     time.Time
	User            *MemberUser
	InviterName     *string
	InviteExpiresAt *time.Time // of a pending member
	userID          *int64     // of an accepted member, which memberUsers fills
}

// Pending reports whether the member's invitation waits.
func (m OrgMember) Pending() bool { return m.User == nil }

// MemberUser is the person of a member, with what Sentry's member shows of
// it beyond the user: whether it has a second factor, when it was last
// active (its sessions' last use) and its primary address.
type MemberUser struct {
	User
	Has2FA     bool
	LastActive *time.Time
	Primary    *UserEmail
}

// UserEmail is an address of a user.
type UserEmail struct {
	ID       int64
	Email    string
	Verified bool
}

// MemberDetail is a member with its teams and its team roles there
// (teamRole), whether it is the organization's only owner, and the role of
// the caller who reads it.
type MemberDetail struct {
	OrgMember
	Teams       []MemberTeamRole
	IsOnlyOwner bool
	CallerRole  string
	// InviteTokenSealed is a pending member's token, sealed
	// (authn.InviteKeys); nil for a member who joined.
	InviteTokenSealed []byte
}

// MemberTeam is a team to put a member on and the team role to store for
// it there (nil: the default, which teamRole answers).
type MemberTeam struct {
	Slug string
	Role *string
}

// memberCols are the columns of a membership m, its inviter i joined.
const memberCols = `m.id, m.user_id, coalesce(m.email, ''), m.role, m.date_created, m.invite_expires_at,
	nullif(coalesce(nullif(i.name, ''), i.email), '')`

// scanMember scans memberCols; the user of an accepted member is filled by
// memberUsers.
func scanMember(row pgx.Row) (OrgMember, error) {
	var m OrgMember
	err := row.Scan(&m.ID, &m.userID, &m.Email, &m.Role, &m.DateCreated, &m.InviteExpiresAt, &m.InviterName)
	return m, err
}

// rowWith scans a row into a scanner's columns followed by extra ones.
type rowWith struct {
	row   pgx.Row
	extra []any
}

func (r rowWith) Scan(dest ...any) error { return r.row.Scan(append(dest, r.extra...)...) }

// memberUsers fills the users of the accepted members of members, in one
// statement.
func memberUsers(ctx context.Context, q querier, members []OrgMember) error {
	var ids []int64
	for _, m := range members {
		if m.userID != nil {
			ids = append(ids, *m.userID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := q.Query(ctx, `
		SELECT `+userCols+`,
			EXISTS (SELECT 1 FROM totp_authenticators t WHERE t.user_id = u.id),
			(SELECT max(s.last_seen_at) FROM sessions s WHERE s.user_id = u.id),
			e.id, e.email, e.is_verified
		FROM users u LEFT JOIN email_addresses e ON e.user_id = u.id AND e.is_primary
		WHERE u.id = ANY($1)`, ids)
	if err != nil {
		return err
	}
	users := map[int64]*MemberUser{}
	defer rows.Close()
	for rows.Next() {
		mu := &MemberUser{}
		var emailID *int64
		var email *string
		var verified *bool
		u, err := scanUser(rowWith{rows, []any{&mu.Has2FA, &mu.LastActive, &emailID, &email, &verified}})
		if err != nil {
			return err
		}
		mu.User = u
		if emailID != nil {
			mu.Primary = &UserEmail{ID: *emailID, Email: *email, Verified: *verified}
		}
		users[u.ID] = mu
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for i, m := range members {
		if m.userID == nil {
			continue
		}
		u, ok := users[*m.userID]
		if !ok {
			return fmt.Errorf("member %d: user %d: %w", m.ID, *m.userID, ErrNotFound)
		}
		members[i].User = u
		members[i].Email = u.Email
	}
	return nil
}

// Members lists a page of the members of the organization orgSlug, of
// which userID must be a member, pending ones included, newest first; or,
// with projectSlug, those who can reach that project of it: every member
// who has joined (access is organization-wide).
func (s *Store) Members(ctx context.Context, userID int64, orgSlug, projectSlug string, page Page) ([]OrgMember, PageInfo, error) {
	var members []OrgMember
	var info PageInfo
	err := s.read(ctx, func(q querier) error {
		var org int64
		var err error
		where := ""
		if projectSlug == "" {
			org, err = orgIDForMember(ctx, q, userID, orgSlug)
		} else {
			org, _, err = projectIDForMember(ctx, q, userID, orgSlug, projectSlug)
			where = " AND m.user_id IS NOT NULL"
		}
		if err != nil {
			return err
		}
		members, info, err = list(ctx, q, listQuery{
			cols:       memberCols,
			from:       `FROM memberships m LEFT JOIN users i ON i.id = m.inviter_id WHERE m.organization_id = $1` + where,
			args:       []any{org},
			createdCol: "m.date_created",
			idCol:      "m.id",
		}, page, func(rows pgx.Rows) (OrgMember, Key, error) {
			m, err := scanMember(rows)
			return m, Key{Created: m.DateCreated, ID: m.ID}, err
		})
		if err != nil {
			return err
		}
		return memberUsers(ctx, q, members)
	})
	return members, info, err
}

// MemberDetail returns the member memberID of the organization orgSlug, of
// which userID must be a member, or with memberID 0 userID's own
// membership, with its teams.
func (s *Store) MemberDetail(ctx context.Context, userID int64, orgSlug string, memberID int64) (MemberDetail, error) {
	var d MemberDetail
	err := s.read(ctx, func(q querier) error {
		org, err := orgIDForMember(ctx, q, userID, orgSlug)
		if err != nil {
			return err
		}
		d.OrgMember, err = scanMember(q.QueryRow(ctx, `
			SELECT `+memberCols+`
			FROM memberships m LEFT JOIN users i ON i.id = m.inviter_id
			WHERE m.organization_id = $1 AND (m.id = $2 OR $2 = 0 AND m.user_id = $3)`, org, memberID, userID))
		if err != nil {
			return fmt.Errorf("member %d: %w", memberID, wrap(err))
		}
		members := []OrgMember{d.OrgMember}
		if err := memberUsers(ctx, q, members); err != nil {
			return err
		}
		d.OrgMember = members[0]
		var owners int
		err = q.QueryRow(ctx, `
			SELECT (SELECT role FROM memberships WHERE organization_id = $1 AND user_id = $2),
				(SELECT count(*) FROM memberships WHERE organization_id = $1 AND role = 'owner' AND user_id IS NOT NULL)`,
			org, userID).Scan(&d.CallerRole, &owners)
		if err != nil {
			return err
		}
		d.IsOnlyOwner = d.Role == "owner" && !d.Pending() && owners == 1
		if err := q.QueryRow(ctx, `SELECT invite_token_sealed FROM memberships WHERE id = $1`, d.ID).Scan(&d.InviteTokenSealed); err != nil {
			return err
		}
		roles, err := teamRolesOf(ctx, q, userID, orgSlug, []int64{d.ID})
		d.Teams = roles[d.ID]
		return err
	})
	return d, err
}

// lockMembers locks the member changes of the organization orgSlug, of
// which callerID must be a member, until tx ends (its row FOR NO KEY
// UPDATE: changes of one organization's members run one after the other,
// and each reads what the one before committed), and returns its id and
// the caller's role, read after the lock.
func lockMembers(ctx context.Context, tx pgx.Tx, callerID int64, orgSlug string) (org int64, callerRole string, err error) {
	err = tx.QueryRow(ctx, `
		SELECT o.id FROM organizations o
		WHERE o.slug = $2 AND EXISTS (
			SELECT 1 FROM memberships m WHERE m.organization_id = o.id AND m.user_id = $1)
		FOR NO KEY UPDATE`, callerID, orgSlug).Scan(&org)
	if err != nil {
		return 0, "", fmt.Errorf("organization %q: %w", orgSlug, wrap(err))
	}
	err = tx.QueryRow(ctx, `
		SELECT role FROM memberships WHERE organization_id = $1 AND user_id = $2`, org, callerID).Scan(&callerRole)
	if err != nil {
		return 0, "", fmt.Errorf("organization %q: %w", orgSlug, wrap(err))
	}
	return org, callerRole, nil
}

// target is a membership that a change acts on.
type target struct {
	id     int64
	userID *int64
	role   string
}

// lockTarget is lockMembers, and then reads the member memberID (0:
// callerID's own) of the organization.
func lockTarget(ctx context.Context, tx pgx.Tx, callerID int64, orgSlug string, memberID int64) (org int64, callerRole string, t target, err error) {
	org, callerRole, err = lockMembers(ctx, tx, callerID, orgSlug)
	if err != nil {
		return 0, "", t, err
	}
	err = tx.QueryRow(ctx, `
		SELECT id, user_id, role FROM memberships
		WHERE organization_id = $1 AND (id = $2 OR $2 = 0 AND user_id = $3)`,
		org, memberID, callerID).Scan(&t.id, &t.userID, &t.role)
	if err != nil {
		return 0, "", t, fmt.Errorf("member %d: %w", memberID, wrap(err))
	}
	return org, callerRole, t, nil
}

// keepOwner is ErrLastOwner when t is the only owner of org who has
// joined: it may be neither removed nor given another role.
func keepOwner(ctx context.Context, tx pgx.Tx, org int64, t target) error {
	if t.role != "owner" || t.userID == nil {
		return nil
	}
	var owners int
	err := tx.QueryRow(ctx, `
		SELECT count(*) FROM memberships WHERE organization_id = $1 AND role = 'owner' AND user_id IS NOT NULL`,
		org).Scan(&owners)
	if err == nil && owners <= 1 {
		err = ErrLastOwner
	}
	return err
}

// InviteKeys gives an invitation its token: the SHA-256 of the token of
// the member memberID's invitation that expires at expires, and, when the
// invitation is to be mailed, the mail that carries its link.
type InviteKeys func(memberID int64, expires time.Time) (tokenHash, tokenSealed []byte, mail *Mail, err error)

// Invitation is an invitation to make: an address, the role it offers,
// until when its link works, and whether an address invited already is
// invited again (a new token: the old one stops working) or is
// ErrAlreadyMember.
type Invitation struct {
	Email    string
	Role     string
	Expires  time.Time
	Reinvite bool
	// Teams puts the pending member on these teams with these team roles.
	Teams []MemberTeam
}

// InviteMember makes a pending member of the organization orgSlug, of
// which callerID must be a member, for inv, with the token and mail of
// keys (the mail queued in the same transaction). allowed is the rule of
// roles (authn.CanAssign): the caller gives inv.Role, and for an address
// invited already acts on its role too; a refusal is ErrRoleNotAllowed.
// An address of a member who has joined (its account's address or one it
// verified) is ErrAlreadyMember.
func (s *Store) InviteMember(ctx context.Context, callerID int64, orgSlug string, inv Invitation,
	allowed func(callerRole, role string) bool, keys InviteKeys) (OrgMember, error) {
	var m OrgMember
	expires := inv.Expires.Truncate(time.Microsecond)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		org, callerRole, err := lockMembers(ctx, tx, callerID, orgSlug)
		if err != nil {
			return err
		}
		if !allowed(callerRole, inv.Role) {
			return ErrRoleNotAllowed
		}
		var joined bool
		err = tx.QueryRow(ctx, `
			SELECT EXISTS (
				SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id
				WHERE m.organization_id = $1 AND (lower(u.email) = lower($2) OR EXISTS (
					SELECT 1 FROM email_addresses e
					WHERE e.user_id = u.id AND e.is_verified AND lower(e.email) = lower($2))))`,
			org, inv.Email).Scan(&joined)
		if err != nil {
			return err
		}
		if joined {
			return ErrAlreadyMember
		}
		var id int64
		var oldRole string
		err = tx.QueryRow(ctx, `
			SELECT id, role FROM memberships
			WHERE organization_id = $1 AND user_id IS NULL AND lower(email) = lower($2)`,
			org, inv.Email).Scan(&id, &oldRole)
		switch {
		case err == nil && !inv.Reinvite:
			return ErrAlreadyMember
		case err == nil:
			if !allowed(callerRole, oldRole) {
				return ErrRoleNotAllowed
			}
			_, err = tx.Exec(ctx, `
				UPDATE memberships SET role = $2, inviter_id = $3 WHERE id = $1`, id, inv.Role, callerID)
		case errors.Is(err, pgx.ErrNoRows):
			err = tx.QueryRow(ctx, `
				INSERT INTO memberships (organization_id, user_id, role, email, inviter_id)
				VALUES ($1, NULL, $2, $3, $4) RETURNING id`, org, inv.Role, inv.Email, callerID).Scan(&id)
		}
		if err != nil {
			return err
		}
		if err := setTeamRoles(ctx, tx, org, id, inv.Teams); err != nil {
			return err
		}
		if err := invite(ctx, tx, id, expires, keys); err != nil {
			return err
		}
		m, err = scanMember(tx.QueryRow(ctx, `
			SELECT `+memberCols+`
			FROM memberships m LEFT JOIN users i ON i.id = m.inviter_id WHERE m.id = $1`, id))
		return err
	})
	return m, err
}

// invite gives the pending member id a new token that expires at
// expires, and queues its mail to the invited address when keys makes one.
func invite(ctx context.Context, tx pgx.Tx, id int64, expires time.Time, keys InviteKeys) error {
	hash, sealed, mail, err := keys(id, expires)
	if err != nil {
		return err
	}
	var email string
	err = tx.QueryRow(ctx, `
		UPDATE memberships SET invite_token_hash = $2, invite_token_sealed = $4, invite_expires_at = $3
		WHERE id = $1 AND user_id IS NULL RETURNING email`, id, hash, expires, sealed).Scan(&email)
	if err != nil || mail == nil {
		return err
	}
	mail.To = email
	return queueMail(ctx, tx, 0, *mail)
}

// setTeamRoles puts the member membershipID on each team of teams, a team
// of org, with its role there (nil: the default), or changes its role on
// a team it is on. A slug of no team of org is ErrNoSuchTeam.
func setTeamRoles(ctx context.Context, tx pgx.Tx, org, membershipID int64, teams []MemberTeam) error {
	for _, t := range teams {
		tag, err := tx.Exec(ctx, `
			INSERT INTO team_members (team_id, membership_id, role)
			SELECT t.id, $2, $4 FROM teams t WHERE t.organization_id = $1 AND t.slug = $3
			ON CONFLICT (team_id, membership_id) DO UPDATE SET role = EXCLUDED.role`,
			org, membershipID, t.Slug, t.Role)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("team %q: %w", t.Slug, ErrNoSuchTeam)
		}
	}
	return nil
}

// MemberUpdate is a change of a member: its role ("" keeps it), its
// roles in teams (Teams: each team put on, or its role there changed;
// other teams are kept), and for a pending member a new invitation until
// Expires (Reinvite).
type MemberUpdate struct {
	Role     string
	Teams    []MemberTeam
	Reinvite bool
	Expires  time.Time
}

// UpdateMember changes the member memberID (0: callerID's own) of the
// organization orgSlug, of which callerID must be a member, and returns
// the member's user id (0 while pending). allowed is the rule of roles:
// the caller acts on the member's role and gives the new one
// (ErrRoleNotAllowed). Making the last owner another role is
// ErrLastOwner; re-inviting a member who joined is ErrAlreadyMember.
func (s *Store) UpdateMember(ctx context.Context, callerID int64, orgSlug string, memberID int64, up MemberUpdate,
	allowed func(callerRole, role string) bool, keys InviteKeys) (int64, error) {
	var userID int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		org, callerRole, t, err := lockTarget(ctx, tx, callerID, orgSlug, memberID)
		if err != nil {
			return err
		}
		if t.userID != nil {
			userID = *t.userID
		}
		if up.Role != "" && up.Role != t.role {
			if !allowed(callerRole, t.role) || !allowed(callerRole, up.Role) {
				return ErrRoleNotAllowed
			}
			if err := keepOwner(ctx, tx, org, t); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE memberships SET role = $2 WHERE id = $1`, t.id, up.Role); err != nil {
				return err
			}
		}
		if len(up.Teams) > 0 {
			if !allowed(callerRole, t.role) {
				return ErrRoleNotAllowed
			}
			if err := setTeamRoles(ctx, tx, org, t.id, up.Teams); err != nil {
				return err
			}
		}
		if !up.Reinvite {
			return nil
		}
		if t.userID != nil {
			return ErrAlreadyMember
		}
		if !allowed(callerRole, t.role) {
			return ErrRoleNotAllowed
		}
		return invite(ctx, tx, t.id, up.Expires.Truncate(time.Microsecond), keys)
	})
	return userID, err
}

// RemoveMember removes the member memberID (0: callerID's own) of the
// organization orgSlug, of which callerID must be a member, or cancels its
// invitation, and returns its user id (0 while pending). A member may
// always leave; removing another takes allowed(callerRole, its role)
// (ErrRoleNotAllowed). Removing the last owner is ErrLastOwner.
func (s *Store) RemoveMember(ctx context.Context, callerID int64, orgSlug string, memberID int64,
	allowed func(callerRole, role string) bool) (int64, error) {
	var userID int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		org, callerRole, t, err := lockTarget(ctx, tx, callerID, orgSlug, memberID)
		if err != nil {
			return err
		}
		self := t.userID != nil && *t.userID == callerID
		if !self && !allowed(callerRole, t.role) {
			return ErrRoleNotAllowed
		}
		if err := keepOwner(ctx, tx, org, t); err != nil {
			return err
		}
		if t.userID != nil {
			userID = *t.userID
		}
		_, err = tx.Exec(ctx, `DELETE FROM memberships WHERE id = $1`, t.id)
		return err
	})
	return userID, err
}

// InvitationInfo is what an invitation's link shows: the organization, the
// invited address and role, whether an account has the address already,
// and whether the organization asks for a second factor that the
// address's account does not have.
type InvitationInfo struct {
	OrgSlug, OrgName string
	Email, Role      string
	HasAccount       bool
	Needs2FA         bool
}

// invitationWhere selects the waiting, unexpired invitation $1 of the
// organization $2 whose token's hash is $3: the token is the proof.
const invitationWhere = `m.id = $1 AND o.slug = $2 AND m.user_id IS NULL
	AND m.invite_token_hash = $3 AND m.invite_expires_at > now()`

// Invitation returns the invitation memberID of the organization orgSlug
// whose token hashes to tokenHash; a wrong, used or expired token is
// ErrNotFound.
func (s *Store) Invitation(ctx context.Context, orgSlug string, memberID int64, tokenHash []byte) (InvitationInfo, error) {
	var in InvitationInfo
	var require2FA, hasTOTP bool
	err := s.pool.QueryRow(ctx, `
		SELECT o.slug, o.name, m.email, m.role, o.require_2fa,
			EXISTS (SELECT 1 FROM users u WHERE lower(u.email) = lower(m.email))
				OR EXISTS (SELECT 1 FROM email_addresses e WHERE lower(e.email) = lower(m.email) AND e.is_verified),
			EXISTS (SELECT 1 FROM users u JOIN totp_authenticators t ON t.user_id = u.id
				WHERE lower(u.email) = lower(m.email))
		FROM memberships m JOIN organizations o ON o.id = m.organization_id
		WHERE `+invitationWhere, memberID, orgSlug, tokenHash).
		Scan(&in.OrgSlug, &in.OrgName, &in.Email, &in.Role, &require2FA, &in.HasAccount, &hasTOTP)
	in.Needs2FA = require2FA && !hasTOTP
	return in, wrap(err)
}

// AcceptInvitation makes userID the member of the invitation memberID of
// the organization orgSlug whose token hashes to tokenHash, and spends the
// token, in one conditional statement: of two accepts at once one wins. A
// wrong, used or expired token is ErrNotFound; a user who is a member
// already is ErrAlreadyMember.
func (s *Store) AcceptInvitation(ctx context.Context, orgSlug string, memberID int64, tokenHash []byte, userID int64) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		return accept(ctx, tx, orgSlug, memberID, tokenHash, userID)
	})
}

// accept is AcceptInvitation in tx.
func accept(ctx context.Context, tx pgx.Tx, orgSlug string, memberID int64, tokenHash []byte, userID int64) error {
	var member bool
	err := tx.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM memberships m JOIN organizations o ON o.id = m.organization_id
			WHERE o.slug = $1 AND m.user_id = $2)`, orgSlug, userID).Scan(&member)
	if err != nil {
		return err
	}
	if member {
		return ErrAlreadyMember
	}
	tag, err := tx.Exec(ctx, `
		UPDATE memberships m SET user_id = $4, email = NULL, invite_token_hash = NULL, invite_token_sealed = NULL, invite_expires_at = NULL
		FROM organizations o
		WHERE o.id = m.organization_id AND `+invitationWhere, memberID, orgSlug, tokenHash, userID)
	if errors.Is(wrap(err), ErrConflict) {
		return ErrAlreadyMember // joined meanwhile
	}
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("invitation %d: %w", memberID, ErrNotFound)
	}
	return nil
}

// AcceptInvitationAsNewUser creates an active user with the invited
// address as its verified primary address, name and the password hash
// passwordHash, and makes it the member of the invitation as
// AcceptInvitation does, in one transaction; it returns the user's id. An
// address that an account has already is ErrEmailTaken.
func (s *Store) AcceptInvitationAsNewUser(ctx context.Context, orgSlug string, memberID int64, tokenHash []byte,
	name, passwordHash string) (int64, error) {
	var id int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var email string
		err := tx.QueryRow(ctx, `
			SELECT m.email FROM memberships m JOIN organizations o ON o.id = m.organization_id
			WHERE `+invitationWhere+` FOR UPDATE OF m`, memberID, orgSlug, tokenHash).Scan(&email)
		if err != nil {
			return fmt.Errorf("invitation %d: %w", memberID, wrap(err))
		}
		id, err = createPasswordUser(ctx, tx, email, name, passwordHash, true)
		if err != nil {
			return err
		}
		return accept(ctx, tx, orgSlug, memberID, tokenHash, id)
	})
	return id, err
}
