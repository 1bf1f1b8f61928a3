package store

import "context"

// EndSessionsByEmail ends every session of the user whose address is email
// (ignoring case), on every replica at once since sessions live here, and
// returns how many it ended. API tokens are not sessions: they keep
// working. An unknown email is ErrNotFound.
func (s *Store) EndSessionsByEmail(ctx context.Context, email string) (int64, error) {
	userID, err := userIDByEmail(ctx, s.pool, email)
	if err != nil {
		return 0, err
	}
	return endSessions(ctx, s.pool, userID, 0)
}
