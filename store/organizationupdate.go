package store

import "context"

// OrganizationUpdate is a change of an organization: each field that is
// not nil is assigned.
type OrganizationUpdate struct {
	Name *string
	Slug *string
}

// UpdateOrganization changes the organization slug, of which userID must
// be a member, and returns it as stored. An organization the caller cannot
// see is ErrNotFound; a new slug that another organization has is
// ErrConflict.
func (s *Store) UpdateOrganization(ctx context.Context, userID int64, slug string, u OrganizationUpdate) (Organization, error) {
	defer s.lookups.forget()
	var o Organization
	err := s.pool.QueryRow(ctx, `
		UPDATE organizations o SET name = coalesce($3, o.name), slug = coalesce($4, o.slug)
		FROM memberships m
		WHERE m.organization_id = o.id AND m.user_id = $1 AND o.slug = $2
		RETURNING o.id, o.slug, o.name, o.date_created`,
		userID, slug, u.Name, u.Slug).Scan(&o.ID, &o.Slug, &o.Name, &o.DateCreated)
	return o, wrap(err)
}
