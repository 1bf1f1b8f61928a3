package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// PasswordHash returns the id and password hash (a PHC string, "" when the
// user has no password) of the active user whose address is email, ignoring
// case. Another address, or an inactive user, is ErrNotFound.
func (s *Store) PasswordHash(ctx context.Context, email string) (userID int64, hash string, err error) {
	err = s.pool.QueryRow(ctx, `
		SELECT id, coalesce(password_hash, '') FROM users
		WHERE lower(email) = lower($1) AND is_active`, email).Scan(&userID, &hash)
	return userID, hash, wrap(err)
}

// SetPassword sets the password hash of the active user userID and, in
// the same transaction, ends every session of the user but keepSessionID
// (0 keeps none: an administrator's reset) and queues the security notice
// of the change. An unknown or inactive user is ErrNotFound.
func (s *Store) SetPassword(ctx context.Context, userID int64, hash string, keepSessionID int64) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			UPDATE users SET password_hash = $2 WHERE id = $1 AND is_active`, userID, hash)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		if _, err := tx.Exec(ctx, `
			DELETE FROM sessions WHERE user_id = $1 AND id <> $2`, userID, keepSessionID); err != nil {
			return err
		}
		return queueSecurityMail(ctx, tx, userID, "Your errata password was changed",
			"The password of your errata account was changed, and the account was signed out everywhere else.\n\n"+
				"If you did not change it, reset your password at once and tell your administrator.")
	})
}

// RehashPassword replaces the user's password hash with hash, made with
// the current parameters at a sign-in that verified oldHash, unless the
// password changed meanwhile (then it does nothing). It ends no session
// and sends no notice: the password is the same.
func (s *Store) RehashPassword(ctx context.Context, userID int64, oldHash, hash string) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE users SET password_hash = $3 WHERE id = $1 AND password_hash = $2`, userID, oldHash, hash)
	return wrap(err)
}
