package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// User is an account.
type User struct {
	ID                 int64
	Email              string
	Name               string
	HasPasswordAuth    bool
	IsActive           bool
	IsSuperuser        bool
	DateJoined         time.Time
	LastLogin          *time.Time
	Options            UserOptions
	SubscribeByDefault bool
}

// UserOptions are a user's display preferences; nil means unset.
type UserOptions struct {
	Timezone        *string
	StacktraceOrder *string
	Language        *string
	Clock24Hours    *bool
	PreferredTheme  *string
}

const userCols = `u.id, u.email, u.name, u.password_hash IS NOT NULL, u.is_active,
	u.is_superuser, u.date_joined, u.last_login, u.opt_timezone,
	u.opt_stacktrace_order, u.opt_language, u.opt_clock_24_hours,
	u.opt_preferred_theme, u.subscribe_by_default`

func scanUser(row pgx.Row) (User, error) {
	var u User
	err := row.Scan(&u.ID, &u.Email, &u.Name, &u.HasPasswordAuth, &u.IsActive,
		&u.IsSuperuser, &u.DateJoined, &u.LastLogin, &u.Options.Timezone,
		&u.Options.StacktraceOrder, &u.Options.Language, &u.Options.Clock24Hours,
		&u.Options.PreferredTheme, &u.SubscribeByDefault)
	return u, err
}

// User returns the active user with id.
func (s *Store) User(ctx context.Context, id int64) (User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `
		SELECT `+userCols+` FROM users u WHERE u.id = $1 AND u.is_active`, id))
	return u, wrap(err)
}

// CreateUser creates an active user whose email is also its verified primary
// address, and returns its id. An email already taken is ErrConflict.
func (s *Store) CreateUser(ctx context.Context, email, name string) (int64, error) {
	var id int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
			INSERT INTO users (email, name) VALUES ($1, $2) RETURNING id`,
			email, name).Scan(&id)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO email_addresses (user_id, email, is_verified, is_primary)
			VALUES ($1, $2, true, true)`, id, email)
		return err
	})
	return id, err
}

// userIDByEmail finds a user by email, ignoring case.
func userIDByEmail(ctx context.Context, q querier, email string) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, `SELECT id FROM users WHERE lower(email) = lower($1)`, email).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("user %q: %w", email, wrap(err))
	}
	return id, nil
}

// ErrOrganizationOwner means a user cannot be deleted because it owns an
// organization.
var ErrOrganizationOwner = errors.New("store: user is an organization owner")

// Identity is a social account linked to a user.
type Identity struct {
	ID         int64
	Provider   string
	UID        string
	Email      *string
	Username   *string
	DateJoined time.Time
	LastLogin  *time.Time
}

// Field is one optional input of an update: it is assigned only when Set,
// and Value nil assigns NULL.
type Field[T any] struct {
	Set   bool
	Value *T
}

// UserUpdate is what PUT on a user assigns; fields not Set keep their value.
type UserUpdate struct {
	Name            Field[string]
	Timezone        Field[string]
	StacktraceOrder Field[string]
	Language        Field[string]
	Clock24Hours    Field[bool]
	PreferredTheme  Field[string]
}

// Users returns the page of the list of users that the user id can see,
// which is only itself.
func (s *Store) Users(ctx context.Context, id int64, page Page) ([]User, PageInfo, error) {
	return list(ctx, s.pool, listQuery{
		cols:       userCols,
		from:       `FROM users u WHERE u.id = $1 AND u.is_active`,
		args:       []any{id},
		createdCol: "u.date_joined",
		idCol:      "u.id",
	}, page, func(rows pgx.Rows) (User, Key, error) {
		u, err := scanUser(rows)
		return u, Key{Created: u.DateJoined, ID: u.ID}, err
	})
}

// UserDetail is a user with its linked social accounts.
type UserDetail struct {
	User
	Identities []Identity
}

// UserDetail returns the active user id with its social accounts, oldest
// first.
func (s *Store) UserDetail(ctx context.Context, id int64) (UserDetail, error) {
	var d UserDetail
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		d.User, err = scanUser(tx.QueryRow(ctx, `
			SELECT `+userCols+` FROM users u WHERE u.id = $1 AND u.is_active`, id))
		if err != nil {
			return err
		}
		d.Identities, err = identities(ctx, tx, id)
		return err
	})
	return d, err
}

// identities returns the social accounts linked to the user id, oldest
// first.
func identities(ctx context.Context, q querier, id int64) ([]Identity, error) {
	rows, err := q.Query(ctx, `
		SELECT id, provider, uid, email, username, date_joined, last_login
		FROM social_accounts WHERE user_id = $1
		ORDER BY date_joined, id`, id)
	if err != nil {
		return nil, wrap(err)
	}
	ids, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Identity, error) {
		var i Identity
		err := row.Scan(&i.ID, &i.Provider, &i.UID, &i.Email, &i.Username, &i.DateJoined, &i.LastLogin)
		return i, err
	})
	return ids, wrap(err)
}

// UpdateUser assigns the Set fields of up to the user id and returns the
// user.
func (s *Store) UpdateUser(ctx context.Context, id int64, up UserUpdate) (User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `
		UPDATE users u SET
			name                 = CASE WHEN $2 THEN $3 ELSE u.name END,
			opt_timezone         = CASE WHEN $4 THEN $5 ELSE u.opt_timezone END,
			opt_stacktrace_order = CASE WHEN $6 THEN $7 ELSE u.opt_stacktrace_order END,
			opt_language         = CASE WHEN $8 THEN $9 ELSE u.opt_language END,
			opt_clock_24_hours   = CASE WHEN $10 THEN $11 ELSE u.opt_clock_24_hours END,
			opt_preferred_theme  = CASE WHEN $12 THEN $13 ELSE u.opt_preferred_theme END
		WHERE u.id = $1 AND u.is_active
		RETURNING `+userCols, id,
		up.Name.Set, up.Name.Value,
		up.Timezone.Set, up.Timezone.Value,
		up.StacktraceOrder.Set, up.StacktraceOrder.Value,
		up.Language.Set, up.Language.Value,
		up.Clock24Hours.Set, up.Clock24Hours.Value,
		up.PreferredTheme.Set, up.PreferredTheme.Value))
	return u, wrap(err)
}

// UpdateNotifications assigns subscribeByDefault to the user id when it is
// not nil and returns the setting.
func (s *Store) UpdateNotifications(ctx context.Context, id int64, subscribeByDefault *bool) (bool, error) {
	var v bool
	err := s.pool.QueryRow(ctx, `
		UPDATE users SET subscribe_by_default = coalesce($2, subscribe_by_default)
		WHERE id = $1 AND is_active
		RETURNING subscribe_by_default`, id, subscribeByDefault).Scan(&v)
	return v, wrap(err)
}

// DeleteUser deletes the user id with everything that is its own: tokens,
// email addresses, memberships, social accounts and recovery codes (the
// foreign keys cascade). A user who owns an organization is
// ErrOrganizationOwner; a missing one ErrNotFound.
func (s *Store) DeleteUser(ctx context.Context, id int64) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		// Lock the user first, so that no membership is added meanwhile.
		var owner bool
		err := tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM memberships m WHERE m.user_id = u.id AND m.role = 'owner')
			FROM users u WHERE u.id = $1 AND u.is_active
			FOR UPDATE`, id).Scan(&owner)
		if err != nil {
			return err
		}
		if owner {
			return ErrOrganizationOwner
		}
		_, err = tx.Exec(ctx, `DELETE FROM users WHERE id = $1`, id)
		return err
	})
}
