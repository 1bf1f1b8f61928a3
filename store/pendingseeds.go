package store

import (
	"context"
	"time"
)

// PendingSeedSweepBatch is the most expired pending seeds that one
// PutPendingSeed deletes. Every row was put by one call, so deleting up to
// this many per call keeps the table within the users who asked for codes
// within one lifetime, at a bounded cost per call.
const PendingSeedSweepBatch = 100

// PutPendingSeed holds seedEncrypted as the pending recovery-code seed of
// the active user userID until expires, replacing any earlier one, then
// deletes up to PendingSeedSweepBatch seeds of any user that expired by
// now. A user that does not exist or is inactive is ErrNotFound.
func (s *Store) PutPendingSeed(ctx context.Context, userID int64, seedEncrypted []byte, expires, now time.Time) error {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO pending_recovery_seeds (user_id, seed_encrypted, expires_at)
		SELECT id, $2, $3 FROM users WHERE id = $1 AND is_active
		ON CONFLICT (user_id) DO UPDATE
		SET seed_encrypted = EXCLUDED.seed_encrypted, expires_at = EXCLUDED.expires_at`,
		userID, seedEncrypted, expires)
	if err != nil {
		return wrap(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	_, err = s.SweepPendingSeeds(ctx, now, PendingSeedSweepBatch)
	return err
}

// PendingSeed returns the encrypted pending recovery-code seed of userID
// unless it expired by now; none is ErrNotFound.
func (s *Store) PendingSeed(ctx context.Context, userID int64, now time.Time) ([]byte, error) {
	var sealed []byte
	err := s.pool.QueryRow(ctx, `
		SELECT seed_encrypted FROM pending_recovery_seeds
		WHERE user_id = $1 AND expires_at > $2`, userID, now).Scan(&sealed)
	return sealed, wrap(err)
}

// DeletePendingSeed deletes the pending recovery-code seed of userID when it
// is still seedEncrypted (as PendingSeed returned it) and has not expired by
// now, and reports whether it did. The one statement compares and deletes,
// so of concurrent calls for one seed exactly one reports true, and a seed
// that a later PutPendingSeed replaced stays.
func (s *Store) DeletePendingSeed(ctx context.Context, userID int64, seedEncrypted []byte, now time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM pending_recovery_seeds
		WHERE user_id = $1 AND seed_encrypted = $2 AND expires_at > $3`,
		userID, seedEncrypted, now)
	if err != nil {
		return false, wrap(err)
	}
	return tag.RowsAffected() == 1, nil
}

// SweepPendingSeeds deletes up to limit pending recovery-code seeds that
// expired by now and returns how many it deleted. Rows that another
// transaction holds are skipped, so two replicas sweeping at once never
// wait for each other.
func (s *Store) SweepPendingSeeds(ctx context.Context, now time.Time, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM pending_recovery_seeds
		WHERE user_id IN (
			SELECT user_id FROM pending_recovery_seeds
			WHERE expires_at <= $1
			ORDER BY expires_at
			LIMIT $2
			FOR UPDATE SKIP LOCKED)`, now, limit)
	if err != nil {
		return 0, wrap(err)
	}
	return tag.RowsAffected(), nil
}

// CheckPendingSeeds returns ErrNotMigrated when the database lacks the table
// of pending recovery-code seeds, which a database migrated by an older
// errata does.
func (s *Store) CheckPendingSeeds(ctx context.Context) error {
	var ok bool
	err := s.pool.QueryRow(ctx, `
		SELECT to_regclass('pending_recovery_seeds') IS NOT NULL`).Scan(&ok)
	if err != nil {
		return wrap(err)
	}
	if !ok {
		return ErrNotMigrated
	}
	return nil
}
