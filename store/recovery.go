package store

import (
	"context"
	"time"
)

// RecoveryCodes is a user's active set of recovery codes. The seed stays
// encrypted: the store never sees it in clear.
type RecoveryCodes struct {
	SeedEncrypted []byte
	UsedMask      int
	DateCreated   time.Time
}

// ReplaceRecoveryCodes makes seedEncrypted the user's active recovery-code
// seed with no code used, replacing any earlier set.
func (s *Store) ReplaceRecoveryCodes(ctx context.Context, userID int64, seedEncrypted []byte) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO recovery_codes (user_id, seed_encrypted, used_mask)
		SELECT id, $2, 0 FROM users WHERE id = $1 AND is_active
		ON CONFLICT (user_id) DO UPDATE
		SET seed_encrypted = EXCLUDED.seed_encrypted, used_mask = 0, date_created = now()`,
		userID, seedEncrypted)
	return wrap(err)
}

// RecoveryCodes returns the user's active recovery codes.
func (s *Store) RecoveryCodes(ctx context.Context, userID int64) (RecoveryCodes, error) {
	var rc RecoveryCodes
	err := s.pool.QueryRow(ctx, `
		SELECT seed_encrypted, used_mask, date_created FROM recovery_codes WHERE user_id = $1`,
		userID).Scan(&rc.SeedEncrypted, &rc.UsedMask, &rc.DateCreated)
	return rc, wrap(err)
}
