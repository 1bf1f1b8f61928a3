package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// OrganizationUpdate is a change of an organization: each field that is
// not nil is assigned.
type OrganizationUpdate struct {
	Name       *string
	Slug       *string
	Require2FA *bool
}

// ErrNoSecondFactor is the refusal to require two-factor authentication
// of an organization's members by a caller who has no TOTP itself
// (Sentry's rule: it would lock itself out).
var ErrNoSecondFactor = errors.New("store: the caller has no second factor")

// ErrCreationNotAllowed is the refusal to create an organization by a
// caller who may not (docs/members.md, "Organizations and roles").
var ErrCreationNotAllowed = errors.New("store: the caller may not create organizations")

// UpdateOrganization changes the organization slug, of which userID must
// be a member, and returns it as stored, with its projects and teams. An
// organization the caller cannot see is ErrNotFound; a new slug that
// another organization has is ErrConflict; requiring two-factor
// authentication when the caller has no TOTP is ErrNoSecondFactor.
func (s *Store) UpdateOrganization(ctx context.Context, userID int64, slug string, u OrganizationUpdate) (OrganizationDetail, error) {
	defer s.lookups.forget()
	var d OrganizationDetail
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var o Organization
		var hasTOTP bool
		err := tx.QueryRow(ctx, `
			UPDATE organizations o SET name = coalesce($3, o.name), slug = coalesce($4, o.slug),
				require_2fa = coalesce($5, o.require_2fa)
			FROM memberships m
			WHERE m.organization_id = o.id AND m.user_id = $1 AND o.slug = $2
			RETURNING o.id, o.slug, o.name, o.date_created, o.require_2fa, m.role,
				EXISTS (SELECT 1 FROM totp_authenticators WHERE user_id = $1)`,
			userID, slug, u.Name, u.Slug, u.Require2FA).Scan(&o.ID, &o.Slug, &o.Name, &o.DateCreated, &o.Require2FA, &o.Role, &hasTOTP)
		if err != nil {
			return wrap(err)
		}
		if u.Require2FA != nil && *u.Require2FA && !hasTOTP {
			return ErrNoSecondFactor // the transaction rolls the update back
		}
		d, err = organizationDetail(ctx, tx, userID, o)
		return err
	})
	return d, err
}

// CreateOrganizationBy creates the organization slug named name for the
// user userID, who becomes its owner, and returns it with its (no)
// projects and teams. Only a superuser may, unless open (ORG_CREATION=open)
// lets every active user: another caller is ErrCreationNotAllowed. A taken
// slug is ErrConflict.
func (s *Store) CreateOrganizationBy(ctx context.Context, userID int64, slug, name string, open bool) (OrganizationDetail, error) {
	var d OrganizationDetail
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var allowed bool
		err := tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM users WHERE id = $1 AND is_active AND ($2 OR is_superuser))`,
			userID, open).Scan(&allowed)
		if err != nil {
			return wrap(err)
		}
		if !allowed {
			return ErrCreationNotAllowed
		}
		o := Organization{Slug: slug, Name: name, Role: "owner"}
		err = tx.QueryRow(ctx, `
			INSERT INTO organizations (slug, name) VALUES ($1, $2) RETURNING id, date_created, require_2fa`,
			slug, name).Scan(&o.ID, &o.DateCreated, &o.Require2FA)
		if err != nil {
			return fmt.Errorf("organization %q: %w", slug, wrap(err))
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO memberships (organization_id, user_id, role) VALUES ($1, $2, 'owner')`, o.ID, userID)
		if err != nil {
			return wrap(err)
		}
		d, err = organizationDetail(ctx, tx, userID, o)
		return err
	})
	return d, err
}
