package store

import (
	"context"
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
