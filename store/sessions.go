package store

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// States of a session: a sign-in waiting for its second factor, which
// authenticates nothing, or a signed-in person.
const (
	SessionPending       = "mfa"
	SessionAuthenticated = "authenticated"
)

// Session is a row of sessions: a signed-in person (or one waiting for the
// second factor), known by the SHA-256 of its id, never by the id.
type Session struct {
	ID              int64
	UserID          int64
	Client          string // browser or app
	State           string // SessionPending or SessionAuthenticated
	CreatedAt       time.Time
	LastSeenAt      time.Time
	AuthenticatedAt time.Time
	ExpiresAt       time.Time
	UserAgent       string
	IP              string
}

// NewSession is what CreateSession stores.
type NewSession struct {
	UserID    int64
	Client    string
	State     string
	ExpiresAt time.Time
	UserAgent string // cut to 512 bytes
	IP        string // cut to 64 bytes
}

const sessionCols = `s.id, s.user_id, s.client, s.state, s.created_at, s.last_seen_at,
	s.authenticated_at, s.expires_at, s.user_agent, s.ip`

func scanSession(row pgx.Row) (Session, error) {
	var s Session
	err := row.Scan(&s.ID, &s.UserID, &s.Client, &s.State, &s.CreatedAt, &s.LastSeenAt,
		&s.AuthenticatedAt, &s.ExpiresAt, &s.UserAgent, &s.IP)
	return s, err
}

// CreateSession stores a session of an active user under idHash and
// returns it; an inactive or missing user is ErrNotFound. An authenticated
// one is a sign-in: the user's last_login becomes now.
func (s *Store) CreateSession(ctx context.Context, idHash []byte, n NewSession) (Session, error) {
	sess, err := scanSession(s.pool.QueryRow(ctx, `
		WITH login AS (
			UPDATE users SET last_login = now() WHERE id = $2 AND is_active AND $4 = 'authenticated')
		INSERT INTO sessions AS s (id_hash, user_id, client, state, expires_at, user_agent, ip)
		SELECT $1, u.id, $3, $4, $5, $6, $7 FROM users u WHERE u.id = $2 AND u.is_active
		RETURNING `+sessionCols,
		idHash, n.UserID, n.Client, n.State, n.ExpiresAt, cut(n.UserAgent, 512), cut(n.IP, 64)))
	return sess, wrap(err)
}

// cut returns s as text PostgreSQL holds (invalid UTF-8 replaced, NUL
// dropped: a header may carry either) without what follows its first max
// bytes, on a rune boundary.
func cut(s string, max int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

// SessionByHash returns the live session stored under idHash: not past
// expires_at, seen within idle, of an active user. Anything else is
// ErrNotFound. The state is the caller's to judge.
func (s *Store) SessionByHash(ctx context.Context, idHash []byte, idle time.Duration) (Session, error) {
	sess, err := scanSession(s.pool.QueryRow(ctx, `
		SELECT `+sessionCols+`
		FROM sessions s JOIN users u ON u.id = s.user_id
		WHERE s.id_hash = $1 AND s.expires_at > now()
		  AND s.last_seen_at > now() - $2::interval AND u.is_active`,
		idHash, idle))
	return sess, wrap(err)
}

// TouchSession records that the session id was used now; it writes only
// when its last_seen_at is older than every, so a busy session costs a
// write at most that often.
func (s *Store) TouchSession(ctx context.Context, id int64, every time.Duration) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE sessions SET last_seen_at = now()
		WHERE id = $1 AND last_seen_at < now() - $2::interval`, id, every)
	return wrap(err)
}

// Rotation is how RotateSession changes a session besides its id.
type Rotation struct {
	From, To string // the state the session must be in, and its new state
	// Authenticated sets authenticated_at to now: the person just proved
	// who they are.
	Authenticated bool
	// ExpiresAt, when not zero, is the session's new end.
	ExpiresAt time.Time
}

// RotateSession gives the live session stored under oldHash the id of
// newHash, in one conditional statement: the old id stops working at once,
// and of two rotations of one id only one finds it. A session that is
// gone, expired or not in state rot.From is ErrNotFound. A pending sign-in
// that becomes authenticated sets the user's last_login.
func (s *Store) RotateSession(ctx context.Context, oldHash, newHash []byte, rot Rotation) (Session, error) {
	var expires *time.Time
	if !rot.ExpiresAt.IsZero() {
		expires = &rot.ExpiresAt
	}
	sess, err := scanSession(s.pool.QueryRow(ctx, `
		WITH s AS (
			UPDATE sessions s SET id_hash = $2, state = $4, last_seen_at = now(),
				authenticated_at = CASE WHEN $5 THEN now() ELSE s.authenticated_at END,
				expires_at = coalesce($6, s.expires_at)
			WHERE s.id_hash = $1 AND s.state = $3 AND s.expires_at > now()
			RETURNING `+sessionCols+`),
		login AS (
			UPDATE users SET last_login = now()
			WHERE id = (SELECT user_id FROM s) AND $3 = 'mfa' AND $4 = 'authenticated')
		SELECT `+sessionCols+` FROM s`,
		oldHash, newHash, rot.From, rot.To, rot.Authenticated, expires))
	return sess, wrap(err)
}

// DeleteSessionByHash ends the session stored under idHash; a missing one
// is no error.
func (s *Store) DeleteSessionByHash(ctx context.Context, idHash []byte) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE id_hash = $1`, idHash)
	return wrap(err)
}

// DeleteUserSessions ends the sessions of ids that belong to userID (the
// others are left alone) and returns how many it ended.
func (s *Store) DeleteUserSessions(ctx context.Context, userID int64, ids []int64) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM sessions WHERE user_id = $1 AND id = ANY($2)`, userID, ids)
	return tag.RowsAffected(), wrap(err)
}

// EndSessions ends every session of userID but keep (0 keeps none) and
// returns how many it ended.
func (s *Store) EndSessions(ctx context.Context, userID, keep int64) (int64, error) {
	return endSessions(ctx, s.pool, userID, keep)
}

// endSessions is EndSessions in q, for a change that ends sessions in its
// own transaction (a password change).
func endSessions(ctx context.Context, q querier, userID, keep int64) (int64, error) {
	tag, err := q.Exec(ctx, `
		DELETE FROM sessions WHERE user_id = $1 AND id <> $2`, userID, keep)
	return tag.RowsAffected(), wrap(err)
}

// UserSessions lists the live sessions of userID (seen within idle, not
// expired), most recently seen first. A user has few: no page.
func (s *Store) UserSessions(ctx context.Context, userID int64, idle time.Duration) ([]Session, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+sessionCols+`
		FROM sessions s
		WHERE s.user_id = $1 AND s.expires_at > now() AND s.last_seen_at > now() - $2::interval
		ORDER BY s.last_seen_at DESC, s.id DESC`, userID, idle)
	if err != nil {
		return nil, wrap(err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Session, error) {
		return scanSession(row)
	})
	return list, wrap(err)
}

// SweepSessions deletes at most batch sessions past expires_at or idle
// longer than idle, and returns how many it deleted.
func (s *Store) SweepSessions(ctx context.Context, idle time.Duration, batch int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM sessions WHERE id IN (
			SELECT id FROM sessions
			WHERE expires_at <= now() OR last_seen_at <= now() - $1::interval
			LIMIT $2)`, idle, batch)
	return tag.RowsAffected(), wrap(err)
}

// SecondFactors reports whether userID has a TOTP authenticator, which
// every sign-in of the user must pass, and a set of recovery codes.
func (s *Store) SecondFactors(ctx context.Context, userID int64) (totp, recoveryCodes bool, err error) {
	err = s.pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM totp_authenticators WHERE user_id = $1),
		       EXISTS (SELECT 1 FROM recovery_codes WHERE user_id = $1)`, userID).
		Scan(&totp, &recoveryCodes)
	return totp, recoveryCodes, wrap(err)
}
