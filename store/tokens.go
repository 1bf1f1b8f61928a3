package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Token is an API token together with the user it acts for. The secret
// itself is never stored: only its SHA-256 hash and, for the tokens made
// since schema 6, its last four characters, by which its owner tells
// tokens apart.
type Token struct {
	ID     int64
	UserID int64
	// Name is what the token is for (the column label); "" when unnamed.
	Name           string
	Scopes         []string
	DateCreated    time.Time
	ExpiresAt      *time.Time // nil: the token does not expire
	LastUsed       *time.Time // to the minute (TouchToken)
	LastCharacters string
}

// TokenInput is a token to store: the hash of its secret and what it may
// do.
type TokenInput struct {
	Hash   []byte
	Scopes []string
	Name   string
	// ExpiresAt, when set, is when the token stops authenticating.
	ExpiresAt *time.Time
	// LastCharacters are the secret's last four characters.
	LastCharacters string
}

// tokenCols are the columns that scanToken reads, of api_tokens as t.
const tokenCols = `t.id, t.user_id, t.label, t.scopes, t.date_created, t.expires_at, t.last_used, t.last_characters`

// scanToken reads the tokenCols of a row.
func scanToken(row pgx.Row) (Token, error) {
	var t Token
	err := row.Scan(&t.ID, &t.UserID, &t.Name, &t.Scopes, &t.DateCreated, &t.ExpiresAt, &t.LastUsed, &t.LastCharacters)
	return t, err
}

// CreateToken stores a token by the SHA-256 hash of its secret for the user
// with email: CreateTokenByEmail with a name, no expiry and no last
// characters.
func (s *Store) CreateToken(ctx context.Context, email string, hash []byte, scopes []string, label string) (int64, error) {
	return s.CreateTokenByEmail(ctx, email, TokenInput{Hash: hash, Scopes: scopes, Name: label})
}

// CreateTokenByEmail stores the token in for the user with email (the
// admin CLI's create-token); an unknown email is ErrNotFound.
func (s *Store) CreateTokenByEmail(ctx context.Context, email string, in TokenInput) (int64, error) {
	var id int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		user, err := userIDByEmail(ctx, tx, email)
		if err != nil {
			return err
		}
		t, err := insertToken(ctx, tx, user, in)
		id = t.ID
		return err
	})
	return id, err
}

// CreateUserToken stores the token in that the user userID made for
// itself and, in the same transaction, queues the security notice that
// tells the user a token was created (docs/accounts.md).
func (s *Store) CreateUserToken(ctx context.Context, userID int64, in TokenInput) (Token, error) {
	var t Token
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if t, err = insertToken(ctx, tx, userID, in); err != nil {
			return err
		}
		name := "An unnamed API token"
		if t.Name != "" {
			name = fmt.Sprintf("An API token named %q", t.Name)
		}
		expiry := "It does not expire."
		if t.ExpiresAt != nil {
			expiry = "It expires at " + t.ExpiresAt.UTC().Format(time.RFC3339) + "."
		}
		text := fmt.Sprintf("%s, ending in %s, was created for your errata account at %s. %s\n\n"+
			"If you did not create it, delete it from your API tokens and change your password.",
			name, t.LastCharacters, t.DateCreated.UTC().Format(time.RFC3339), expiry)
		return queueSecurityMail(ctx, tx, userID, "A new API token was created for your account", text)
	})
	return t, err
}

// insertToken stores in for user and returns the stored token.
func insertToken(ctx context.Context, q querier, user int64, in TokenInput) (Token, error) {
	t, err := scanToken(q.QueryRow(ctx, `
		INSERT INTO api_tokens AS t (user_id, token_hash, scopes, label, expires_at, last_characters)
		VALUES ($1, $2, $3, $4, $5, $6)
		RETURNING `+tokenCols,
		user, in.Hash, in.Scopes, in.Name, in.ExpiresAt, in.LastCharacters))
	return t, wrap(err)
}

// TokenByHash finds the token with hash whose user is active and which has
// not expired.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (Token, error) {
	t, err := scanToken(s.pool.QueryRow(ctx, `
		SELECT `+tokenCols+`
		FROM api_tokens t JOIN users u ON u.id = t.user_id
		WHERE t.token_hash = $1 AND u.is_active
		  AND (t.expires_at IS NULL OR t.expires_at > now())`, hash))
	return t, wrap(err)
}

// UserTokens lists the API tokens of the user userID, newest first,
// expired ones included.
func (s *Store) UserTokens(ctx context.Context, userID int64, page Page) ([]Token, PageInfo, error) {
	var ts []Token
	var info PageInfo
	err := s.read(ctx, func(q querier) error {
		lq := listQuery{
			cols:       tokenCols,
			from:       `FROM api_tokens t WHERE t.user_id = $1`,
			args:       []any{userID},
			createdCol: "t.date_created",
			idCol:      "t.id",
		}
		var err error
		ts, info, err = list(ctx, q, lq, page, func(rows pgx.Rows) (Token, Key, error) {
			t, err := scanToken(rows)
			return t, Key{Created: t.DateCreated, ID: t.ID}, err
		})
		return err
	})
	return ts, info, err
}

// DeleteUserToken deletes the token tokenID of the user userID; a token of
// another user, or none, is ErrNotFound.
func (s *Store) DeleteUserToken(ctx context.Context, userID, tokenID int64) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM api_tokens WHERE id = $1 AND user_id = $2`, tokenID, userID)
	if err != nil {
		return wrap(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("token %d: %w", tokenID, ErrNotFound)
	}
	return nil
}

// TouchToken records that the token was used now; it writes at most once a
// minute per token.
func (s *Store) TouchToken(ctx context.Context, id int64) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE api_tokens SET last_used = now()
		WHERE id = $1 AND (last_used IS NULL OR last_used < now() - interval '1 minute')`, id)
	return wrap(err)
}
