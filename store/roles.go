package store

import "context"

// MemberRole returns the role of userID in the organization orgSlug; a
// user who is not its member (or an organization that does not exist) is
// ErrNotFound.
func (s *Store) MemberRole(ctx context.Context, userID int64, orgSlug string) (string, error) {
	var role string
	err := s.pool.QueryRow(ctx, `
		SELECT m.role FROM memberships m JOIN organizations o ON o.id = m.organization_id
		WHERE m.user_id = $1 AND o.slug = $2`, userID, orgSlug).Scan(&role)
	return role, wrap(err)
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
