package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// SignUp creates an active user with the password hash passwordHash whose
// email is its primary address, not yet verified, and queues the
// confirmation message that mail composes for the new user's id (it must
// not block: it runs inside the transaction), in one transaction; it
// returns the user's id. An address that a user already has or verified (compared without
// case) is ErrEmailTaken.
func (s *Store) SignUp(ctx context.Context, email, passwordHash string, mail func(userID int64) (Mail, error)) (int64, error) {
	var id int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		id, err = createPasswordUser(ctx, tx, email, "", passwordHash, false)
		if err != nil {
			return err
		}
		m, err := mail(id)
		if err != nil {
			return err
		}
		m.To = email
		return queueMail(ctx, tx, id, m)
	})
	return id, err
}

// createPasswordUser creates an active user of the address email, which
// becomes its primary address (verified or not), with name and the
// password hash passwordHash, and returns its id. An address that an
// account has already (addressTaken) is ErrEmailTaken.
func createPasswordUser(ctx context.Context, tx pgx.Tx, email, name, passwordHash string, verified bool) (int64, error) {
	taken, err := addressTaken(ctx, tx, email)
	if err != nil {
		return 0, err
	}
	if taken {
		return 0, ErrEmailTaken
	}
	var id int64
	err = tx.QueryRow(ctx, `
		INSERT INTO users (email, name, password_hash) VALUES ($1, $2, $3) RETURNING id`,
		email, name, passwordHash).Scan(&id)
	if errors.Is(wrap(err), ErrConflict) {
		return 0, ErrEmailTaken
	}
	if err != nil {
		return 0, err
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO email_addresses (user_id, email, is_verified, is_primary)
		VALUES ($1, $2, $3, true)`, id, email, verified)
	if errors.Is(wrap(err), ErrConflict) {
		return 0, ErrEmailTaken
	}
	return id, err
}

// addressTaken reports whether an account has the address email already:
// as its own, or verified (compared without case).
func addressTaken(ctx context.Context, q querier, email string) (bool, error) {
	var taken bool
	err := q.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM users WHERE lower(email) = lower($1))
		    OR EXISTS (SELECT 1 FROM email_addresses WHERE lower(email) = lower($1) AND is_verified)`,
		email).Scan(&taken)
	return taken, err
}

// UserPasswordHash returns the address and the password hash ("" for
// none) of the active user userID: what a password reset key is checked
// against. Another user is ErrNotFound.
func (s *Store) UserPasswordHash(ctx context.Context, userID int64) (email, hash string, err error) {
	err = s.pool.QueryRow(ctx, `
		SELECT email, coalesce(password_hash, '') FROM users WHERE id = $1 AND is_active`,
		userID).Scan(&email, &hash)
	return email, hash, wrap(err)
}

// ResetPassword sets the password hash of the active user userID to
// newHash only while it is still oldHash ("" for none), the one a reset key
// was made for, so that one key resets once, even when used twice at once;
// in the same transaction it ends every session of the user and queues the
// notice. A user whose hash changed meanwhile is ErrNotFound.
func (s *Store) ResetPassword(ctx context.Context, userID int64, oldHash, newHash string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			UPDATE users SET password_hash = $3
			WHERE id = $1 AND is_active AND coalesce(password_hash, '') = $2`, userID, oldHash, newHash)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		if _, err := endSessions(ctx, tx, userID, 0); err != nil {
			return err
		}
		return queueSecurityMail(ctx, tx, userID, "Your errata password was reset",
			"The password of your errata account was reset through a link sent to this address, and the account was signed out everywhere.\n\n"+
				"If you did not reset it, reset it again at once and tell your administrator.")
	})
}
