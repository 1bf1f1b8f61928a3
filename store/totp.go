package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// TOTPAuthenticator is a user's TOTP authenticator. The secret stays
// sealed: the store never sees it in clear.
type TOTPAuthenticator struct {
	SecretEncrypted []byte
	// LastStep is the 30 s step of the last code accepted: a code of a
	// step not later than it is refused.
	LastStep    int64
	DateCreated time.Time
	LastUsedAt  *time.Time
}

// TOTPAuthenticator returns the user's TOTP authenticator, or ErrNotFound
// when the user has none.
func (s *Store) TOTPAuthenticator(ctx context.Context, userID int64) (TOTPAuthenticator, error) {
	var a TOTPAuthenticator
	err := s.pool.QueryRow(ctx, `
		SELECT secret_encrypted, last_step, date_created, last_used_at
		FROM totp_authenticators WHERE user_id = $1`,
		userID).Scan(&a.SecretEncrypted, &a.LastStep, &a.DateCreated, &a.LastUsedAt)
	return a, wrap(err)
}

// OfferTOTPSecret keeps secretEncrypted, a TOTP secret offered for
// enrolment, with the session sessionID unless the session holds one
// already, and returns the one it holds: of two offers at once, both get
// the same. A session that does not exist is ErrNotFound.
func (s *Store) OfferTOTPSecret(ctx context.Context, sessionID int64, secretEncrypted []byte) ([]byte, error) {
	var kept []byte
	err := s.pool.QueryRow(ctx, `
		UPDATE sessions SET totp_secret_encrypted = coalesce(totp_secret_encrypted, $2)
		WHERE id = $1 RETURNING totp_secret_encrypted`,
		sessionID, secretEncrypted).Scan(&kept)
	return kept, wrap(err)
}

// OfferedTOTPSecret returns the TOTP secret offered to the session
// sessionID, sealed, or nil when it was offered none.
func (s *Store) OfferedTOTPSecret(ctx context.Context, sessionID int64) ([]byte, error) {
	var sealed []byte
	err := s.pool.QueryRow(ctx, `SELECT totp_secret_encrypted FROM sessions WHERE id = $1`, sessionID).Scan(&sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return sealed, wrap(err)
}

// ActivateTOTP gives the active user userID the TOTP authenticator of
// secretEncrypted, whose confirming code was of step: that step is the last
// accepted one, so the confirming code cannot sign in afterwards. When the
// user has no recovery codes, seedEncrypted becomes their set in the same
// transaction (and recoveryCreated is true). The secrets offered to the
// user's sessions for enrolment are forgotten. The user is mailed a notice.
// A user who has TOTP already is ErrConflict; an unknown or inactive user
// ErrNotFound.
func (s *Store) ActivateTOTP(ctx context.Context, userID int64, secretEncrypted []byte, step int64, seedEncrypted []byte) (recoveryCreated bool, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			INSERT INTO totp_authenticators (user_id, secret_encrypted, last_step)
			SELECT id, $2, $3 FROM users WHERE id = $1 AND is_active`,
			userID, secretEncrypted, step)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("user %d: %w", userID, ErrNotFound)
		}
		tag, err = tx.Exec(ctx, `
			INSERT INTO recovery_codes (user_id, seed_encrypted, used_mask)
			VALUES ($1, $2, 0) ON CONFLICT (user_id) DO NOTHING`,
			userID, seedEncrypted)
		if err != nil {
			return err
		}
		recoveryCreated = tag.RowsAffected() == 1
		if _, err := tx.Exec(ctx, `
			UPDATE sessions SET totp_secret_encrypted = NULL
			WHERE user_id = $1 AND totp_secret_encrypted IS NOT NULL`, userID); err != nil {
			return err
		}
		text := "An authenticator app was added to your errata account: signing in now asks for its code."
		if recoveryCreated {
			text += "\n\nRecovery codes were generated with it. Keep them where you can find them if you lose the app."
		}
		return queueSecurityMail(ctx, tx, userID, "Two-factor authentication was turned on", text+securityMailFooter)
	})
	return recoveryCreated, err
}

// AcceptTOTPStep records step as the user's last accepted TOTP step, and
// reports whether it did: it does only when step is later than the last
// one, in one conditional update, so that of two requests with one code
// exactly one is accepted.
func (s *Store) AcceptTOTPStep(ctx context.Context, userID, step int64) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE totp_authenticators SET last_step = $2, last_used_at = now()
		WHERE user_id = $1 AND last_step < $2`,
		userID, step)
	if err != nil {
		return false, wrap(err)
	}
	return tag.RowsAffected() == 1, nil
}

// DeleteTOTP removes the user's TOTP authenticator and, since it was the
// user's last second factor, their recovery codes, and mails the user a
// notice. A user without TOTP is ErrNotFound.
func (s *Store) DeleteTOTP(ctx context.Context, userID int64) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM totp_authenticators WHERE user_id = $1`, userID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("TOTP of user %d: %w", userID, ErrNotFound)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM recovery_codes WHERE user_id = $1`, userID); err != nil {
			return err
		}
		return queueSecurityMail(ctx, tx, userID, "Two-factor authentication was turned off",
			"The authenticator app of your errata account was removed, and its recovery codes with it: signing in asks for your password alone."+securityMailFooter)
	})
}

// ResetSecondFactors is the administrator's reset of a user who lost their
// second factor: it removes the TOTP authenticator and the recovery codes
// of the user with email, ends all of the user's sessions and mails the
// user a notice, in one transaction. API tokens keep working. An unknown
// email is ErrNotFound.
func (s *Store) ResetSecondFactors(ctx context.Context, email string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		userID, err := userIDByEmail(ctx, tx, email)
		if err != nil {
			return err
		}
		batch := &pgx.Batch{}
		batch.Queue(`DELETE FROM totp_authenticators WHERE user_id = $1`, userID)
		batch.Queue(`DELETE FROM recovery_codes WHERE user_id = $1`, userID)
		batch.Queue(`DELETE FROM sessions WHERE user_id = $1`, userID)
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
		return queueSecurityMail(ctx, tx, userID, "Two-factor authentication was reset",
			"An administrator removed the authenticator app and the recovery codes of your errata account, and signed you out everywhere: signing in asks for your password alone until you turn two-factor authentication on again."+securityMailFooter)
	})
}

// securityMailFooter ends every security notice.
const securityMailFooter = "\n\nIf this was not you, tell your errata administrator at once."
