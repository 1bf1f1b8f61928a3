package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// RecoveryCodes is a user's active set of recovery codes. The seed stays
// encrypted: the store never sees it in clear.
type RecoveryCodes struct {
	SeedEncrypted []byte
	UsedMask      int
	DateCreated   time.Time
	LastUsedAt    *time.Time // when a code of this set last signed in
}

// ReplaceRecoveryCodes makes seedEncrypted the user's active recovery-code
// seed with no code used, replacing any earlier set.
func (s *Store) ReplaceRecoveryCodes(ctx context.Context, userID int64, seedEncrypted []byte) error {
	return wrap(replaceRecoveryCodes(ctx, s.pool, userID, seedEncrypted))
}

// RegenerateRecoveryCodes is ReplaceRecoveryCodes with a notice mailed to
// the user in the same transaction.
func (s *Store) RegenerateRecoveryCodes(ctx context.Context, userID int64, seedEncrypted []byte) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := replaceRecoveryCodes(ctx, tx, userID, seedEncrypted); err != nil {
			return err
		}
		return queueSecurityMail(ctx, tx, userID, "New recovery codes were generated",
			"A new set of recovery codes was generated for your errata account: the codes of the earlier set no longer work."+securityMailFooter)
	})
}

// replaceRecoveryCodes is ReplaceRecoveryCodes on q.
func replaceRecoveryCodes(ctx context.Context, q querier, userID int64, seedEncrypted []byte) error {
	_, err := q.Exec(ctx, `
		INSERT INTO recovery_codes (user_id, seed_encrypted, used_mask)
		SELECT id, $2, 0 FROM users WHERE id = $1 AND is_active
		ON CONFLICT (user_id) DO UPDATE
		SET seed_encrypted = EXCLUDED.seed_encrypted, used_mask = 0, date_created = now(), last_used_at = NULL`,
		userID, seedEncrypted)
	return err
}

// SpendRecoveryCode marks code i of the user's set used, and reports
// whether it did: it does only when that code was unused, in one
// conditional update, so that of two sign-ins with one code exactly one
// passes. The user is mailed a notice in the same transaction.
func (s *Store) SpendRecoveryCode(ctx context.Context, userID int64, i int) (bool, error) {
	if i < 0 || i > 30 {
		return false, fmt.Errorf("store: recovery code index %d out of range", i)
	}
	spent := false
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			UPDATE recovery_codes SET used_mask = used_mask | (1 << $2), last_used_at = now()
			WHERE user_id = $1 AND used_mask & (1 << $2) = 0`,
			userID, i)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		spent = true
		return queueSecurityMail(ctx, tx, userID, "A recovery code was used",
			"One of the recovery codes of your errata account was used to sign in; it cannot be used again."+securityMailFooter)
	})
	return spent && err == nil, err
}

// RecoveryCodes returns the user's active recovery codes.
func (s *Store) RecoveryCodes(ctx context.Context, userID int64) (RecoveryCodes, error) {
	var rc RecoveryCodes
	err := s.pool.QueryRow(ctx, `
		SELECT seed_encrypted, used_mask, date_created, last_used_at FROM recovery_codes WHERE user_id = $1`,
		userID).Scan(&rc.SeedEncrypted, &rc.UsedMask, &rc.DateCreated, &rc.LastUsedAt)
	return rc, wrap(err)
}
