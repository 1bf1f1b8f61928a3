package store

import "context"

// MemberAccess is what decides a member's access to its organization.
type MemberAccess struct {
	Role string
	// SecondFactorMissing says that the organization requires two-factor
	// authentication (require2FA) and the member has no TOTP: it is
	// refused the organization's routes until it enrols.
	SecondFactorMissing bool
}

// MemberRole returns the role of userID in the organization orgSlug and,
// in the same statement, whether the organization's require2FA refuses it;
// a user who is not its member (or an organization that does not exist) is
// ErrNotFound.
func (s *Store) MemberRole(ctx context.Context, userID int64, orgSlug string) (MemberAccess, error) {
	var a MemberAccess
	err := s.pool.QueryRow(ctx, `
		SELECT m.role, o.require_2fa AND NOT EXISTS (SELECT 1 FROM totp_authenticators t WHERE t.user_id = m.user_id)
		FROM memberships m JOIN organizations o ON o.id = m.organization_id
		WHERE m.user_id = $1 AND o.slug = $2`, userID, orgSlug).Scan(&a.Role, &a.SecondFactorMissing)
	return a, wrap(err)
}

// UserRoles returns the distinct roles userID holds over its
// organizations, none when it belongs to none.
func (s *Store) UserRoles(ctx context.Context, userID int64) ([]string, error) {
	var roles []string
	err := s.pool.QueryRow(ctx, `
		SELECT coalesce(array_agg(DISTINCT role ORDER BY role), '{}') FROM memberships
		WHERE user_id = $1`, userID).Scan(&roles)
	return roles, wrap(err)
}
