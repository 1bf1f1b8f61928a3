package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// EndSessionsByEmail ends every session of the user whose address is email
// (ignoring case), on every replica at once since sessions live here, and
// returns how many it ended. API tokens are not sessions: they keep
// working. An unknown email is ErrNotFound.
func (s *Store) EndSessionsByEmail(ctx context.Context, email string) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		userID, err := userIDByEmail(ctx, tx, email)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM sessions WHERE user_id = $1`, userID)
		n = tag.RowsAffected()
		return err
	})
	return n, err
}
