package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// MaxEmailAddresses is the most addresses a list of a user's addresses
// returns.
const MaxEmailAddresses = 200

// EmailAddress is one of a user's addresses.
type EmailAddress struct {
	Email      string
	IsPrimary  bool
	IsVerified bool
}

// ErrEmailTaken means the address is verified by some user already, or is
// already one of the user's addresses.
var ErrEmailTaken = errors.New("store: email address already exists")

// EmailAddresses returns at most MaxEmailAddresses addresses of the user id:
// the primary first, then oldest first.
func (s *Store) EmailAddresses(ctx context.Context, userID int64) ([]EmailAddress, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT email, is_primary, is_verified FROM email_addresses
		WHERE user_id = $1
		ORDER BY is_primary DESC, date_created, id
		LIMIT $2`, userID, MaxEmailAddresses)
	if err != nil {
		return nil, wrap(err)
	}
	as, err := pgx.CollectRows(rows, pgx.RowToStructByPos[EmailAddress])
	return as, wrap(err)
}

// AddEmailAddress adds email, unverified, to the user's addresses and queues
// the confirmation message m to it in the same transaction. An address that
// any user verified already, or that the user has already (both compared
// without case), is ErrEmailTaken.
func (s *Store) AddEmailAddress(ctx context.Context, userID int64, email string, m Mail) (EmailAddress, error) {
	a := EmailAddress{Email: email}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var taken bool
		err := tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM email_addresses
				WHERE lower(email) = lower($1) AND (is_verified OR user_id = $2))`,
			email, userID).Scan(&taken)
		if err != nil {
			return err
		}
		if taken {
			return ErrEmailTaken
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO email_addresses (user_id, email) VALUES ($1, $2)`, userID, email)
		if errors.Is(wrap(err), ErrConflict) {
			return ErrEmailTaken
		}
		if err != nil {
			return err
		}
		m.To = email
		return queueMail(ctx, tx, userID, m)
	})
	return a, err
}

// ResendConfirmation queues the confirmation message m to the user's
// unverified address email. An address that is missing, another user's or
// verified is ErrNotFound.
func (s *Store) ResendConfirmation(ctx context.Context, userID int64, email string, m Mail) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
			SELECT email FROM email_addresses
			WHERE user_id = $1 AND lower(email) = lower($2) AND NOT is_verified`,
			userID, email).Scan(&m.To)
		if err != nil {
			return err
		}
		return queueMail(ctx, tx, userID, m)
	})
}

// MakeEmailAddressPrimary makes the user's verified address email its
// primary one and the user's email. An address that is missing, another
// user's or unverified is ErrNotFound.
func (s *Store) MakeEmailAddressPrimary(ctx context.Context, userID int64, email string) (EmailAddress, error) {
	var a EmailAddress
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := lockUser(ctx, tx, userID); err != nil {
			return err
		}
		var id int64
		err := tx.QueryRow(ctx, `
			SELECT id, email FROM email_addresses
			WHERE user_id = $1 AND lower(email) = lower($2) AND is_verified
			FOR UPDATE`, userID, email).Scan(&id, &a.Email)
		if err != nil {
			return err
		}
		return setPrimary(ctx, tx, userID, id, a.Email)
	})
	a.IsPrimary, a.IsVerified = true, true
	return a, err
}

// setPrimary makes the address id the user's only primary one and its
// email the user's.
func setPrimary(ctx context.Context, q querier, userID, id int64, email string) error {
	if err := lockUser(ctx, q, userID); err != nil {
		return err
	}
	_, err := q.Exec(ctx, `
		UPDATE email_addresses SET is_primary = false WHERE user_id = $1 AND is_primary`, userID)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, `UPDATE email_addresses SET is_primary = true WHERE id = $1`, id)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, `UPDATE users SET email = $2 WHERE id = $1`, userID, email)
	if errors.Is(wrap(err), ErrConflict) {
		return ErrEmailTaken
	}
	return err
}

// DeleteEmailAddress removes the user's address email unless it is the
// primary one. Nothing removed is ErrNotFound.
func (s *Store) DeleteEmailAddress(ctx context.Context, userID int64, email string) error {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM email_addresses
		WHERE user_id = $1 AND lower(email) = lower($2) AND NOT is_primary`, userID, email)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return wrap(err)
}

// VerifyEmailAddress marks the user's address email verified and, when the
// user has no primary address yet, makes it the primary one and the user's
// email. An address that no longer exists is ErrNotFound; one that another
// user verified meanwhile is ErrEmailTaken. Verifying a verified address
// again changes nothing.
func (s *Store) VerifyEmailAddress(ctx context.Context, userID int64, email string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := lockUser(ctx, tx, userID); err != nil {
			return err
		}
		var id int64
		var addr string
		var verified, hasPrimary bool
		err := tx.QueryRow(ctx, `
			SELECT a.id, a.email, a.is_verified,
				EXISTS (SELECT 1 FROM email_addresses p WHERE p.user_id = a.user_id AND p.is_primary)
			FROM email_addresses a JOIN users u ON u.id = a.user_id AND u.is_active
			WHERE a.user_id = $1 AND lower(a.email) = lower($2)
			FOR UPDATE OF a`, userID, email).Scan(&id, &addr, &verified, &hasPrimary)
		if err != nil {
			return err
		}
		if verified {
			return nil
		}
		var taken bool
		err = tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM email_addresses
				WHERE lower(email) = lower($1) AND is_verified)`, addr).Scan(&taken)
		if err != nil {
			return err
		}
		if taken {
			return ErrEmailTaken
		}
		_, err = tx.Exec(ctx, `UPDATE email_addresses SET is_verified = true WHERE id = $1`, id)
		if errors.Is(wrap(err), ErrConflict) {
			return ErrEmailTaken
		}
		if err != nil || hasPrimary {
			return err
		}
		return setPrimary(ctx, tx, userID, id, addr)
	})
}

// lockUser locks the user's row for the transaction q: changes of one
// user's primary address run one after the other, the user's row first,
// so that two of them can neither both win nor deadlock.
func lockUser(ctx context.Context, q querier, userID int64) error {
	_, err := q.Exec(ctx, `SELECT 1 FROM users WHERE id = $1 FOR UPDATE`, userID)
	return err
}
