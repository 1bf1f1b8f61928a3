package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Token is an API token together with the user it acts for.
type Token struct {
	ID       int64
	UserID   int64
	Scopes   []string
	LastUsed *time.Time
}

// CreateToken stores a token by the SHA-256 hash of its secret.
func (s *Store) CreateToken(ctx context.Context, email string, hash []byte, scopes []string, label string) (int64, error) {
	var id int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		user, err := userIDByEmail(ctx, tx, email)
		if err != nil {
			return err
		}
		return tx.QueryRow(ctx, `
			INSERT INTO api_tokens (user_id, token_hash, scopes, label)
			VALUES ($1, $2, $3, $4) RETURNING id`,
			user, hash, scopes, label).Scan(&id)
	})
	return id, err
}

// TokenByHash finds the token with hash whose user is active.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (Token, error) {
	var t Token
	err := s.pool.QueryRow(ctx, `
		SELECT t.id, t.user_id, t.scopes, t.last_used
		FROM api_tokens t JOIN users u ON u.id = t.user_id
		WHERE t.token_hash = $1 AND u.is_active`, hash).
		Scan(&t.ID, &t.UserID, &t.Scopes, &t.LastUsed)
	return t, wrap(err)
}

// TouchToken records that the token was used now; it writes at most once a
// minute per token.
func (s *Store) TouchToken(ctx context.Context, id int64) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE api_tokens SET last_used = now()
		WHERE id = $1 AND (last_used IS NULL OR last_used < now() - interval '1 minute')`, id)
	return wrap(err)
}
