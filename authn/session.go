package authn

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"time"

	"errata/store"
)

// Session credentials (docs/accounts.md, "Sessions"): the browser client
// carries the id in a cookie, the app client in a header.
const (
	SessionCookieName       = "errata_session"
	SecureSessionCookieName = "__Host-errata_session" // when PUBLIC_URL is https
	SessionTokenHeader      = "X-Session-Token"
)

// The clients of the sign-in API, and of the sessions they start.
const (
	ClientBrowser = "browser"
	ClientApp     = "app"
)

// Defaults and bounds of sessions.
const (
	DefaultSessionIdleTimeout = 24 * time.Hour
	DefaultSessionLifetime    = 14 * 24 * time.Hour
	// PendingSignInTime is how long a sign-in waits for its second
	// factor.
	PendingSignInTime = 15 * time.Minute
	// RecentAuthentication is how long after a person proved who they
	// are that the sensitive changes are allowed without doing it again.
	RecentAuthentication = 5 * time.Minute
)

// sessionIDBytes is the entropy of a session id: 256 bits.
const sessionIDBytes = 32

// ErrSessionGone means that a session to change (rotate, complete) no
// longer exists, expired, or is not in the state the change needs.
var ErrSessionGone = errors.New("authn: no such session")

// SessionConfig configures sessions; its zero value is the defaults on
// plain http.
type SessionConfig struct {
	IdleTimeout time.Duration // SESSION_IDLE_TIMEOUT; 0 is DefaultSessionIdleTimeout
	Lifetime    time.Duration // SESSION_LIFETIME; 0 is DefaultSessionLifetime
	// PublicURL is the server's PUBLIC_URL: an https one makes the
	// cookies Secure (the session's named __Host-), and its origin is
	// the only one CheckCSRF accepts. "" takes the request's own origin.
	PublicURL string
}

// Idle is the idle timeout: a session unused for that long ends.
func (c SessionConfig) Idle() time.Duration {
	if c.IdleTimeout > 0 {
		return c.IdleTimeout
	}
	return DefaultSessionIdleTimeout
}

// life is the absolute lifetime of a session.
func (c SessionConfig) life() time.Duration {
	if c.Lifetime > 0 {
		return c.Lifetime
	}
	return DefaultSessionLifetime
}

// secure reports whether the server is reached over https.
func (c SessionConfig) secure() bool {
	u, err := url.Parse(c.PublicURL)
	return err == nil && u.Scheme == "https"
}

// CookieName is the name of the session cookie.
func (c SessionConfig) CookieName() string {
	if c.secure() {
		return SecureSessionCookieName
	}
	return SessionCookieName
}

// touchEvery is how stale last_seen_at may grow before a request writes
// it: a minute, or less under a short idle timeout, so that a session in
// use never times out.
func (c SessionConfig) touchEvery() time.Duration {
	return min(time.Minute, c.Idle()/4)
}

// NewSessionID returns a fresh session id (256 random bits, base64url) and
// the hash that PostgreSQL keeps of it.
func NewSessionID() (id string, hash []byte) {
	b := make([]byte, sessionIDBytes)
	rand.Read(b) // never fails: crypto/rand panics rather than return short
	id = base64.RawURLEncoding.EncodeToString(b)
	return id, Hash(id)
}

// ParseSessionID returns the hash of id when id is well formed (what
// NewSessionID makes), so that garbage never reaches the database.
func ParseSessionID(id string) ([]byte, bool) {
	if len(id) != base64.RawURLEncoding.EncodedLen(sessionIDBytes) {
		return nil, false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(id)
	if err != nil || len(b) != sessionIDBytes {
		return nil, false
	}
	return Hash(id), true
}

// SessionIDFrom returns the session id that r carries for client: the
// cookie for ClientBrowser, the X-Session-Token header for ClientApp; ""
// when there is none.
func (a *Authenticator) SessionIDFrom(r *http.Request, client string) string {
	if client == ClientApp {
		return r.Header.Get(SessionTokenHeader)
	}
	if c, err := r.Cookie(a.Sessions.CookieName()); err == nil {
		return c.Value
	}
	return ""
}

// SessionCookie is the cookie that carries the session id to a browser
// until expires; an empty id with a zero expires removes it.
func (a *Authenticator) SessionCookie(id string, expires time.Time) *http.Cookie {
	c := &http.Cookie{
		Name: a.Sessions.CookieName(), Value: id, Path: "/",
		HttpOnly: true, Secure: a.Sessions.secure(), SameSite: http.SameSiteLaxMode,
	}
	if id == "" {
		c.MaxAge = -1
	} else {
		c.Expires = expires
	}
	return c
}

// Session returns the live session of id: well formed, stored, not expired,
// seen within the idle timeout, its user active. Anything else is
// ErrNoCredential. It records the use (at most once a minute). The state
// is the caller's to judge: a pending sign-in authenticates nothing.
func (a *Authenticator) Session(ctx context.Context, id string) (store.Session, error) {
	hash, ok := ParseSessionID(id)
	if !ok {
		return store.Session{}, ErrNoCredential
	}
	s, err := a.Store.SessionByHash(ctx, hash, a.Sessions.Idle())
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, ErrNoCredential
	}
	if err != nil {
		return store.Session{}, err
	}
	every := a.Sessions.touchEvery()
	if time.Since(s.LastSeenAt) > every {
		if err := a.Store.TouchSession(ctx, s.ID, every); err != nil {
			return store.Session{}, err
		}
	}
	return s, nil
}

// NewSession is who a session starts for and from where.
type NewSession struct {
	UserID    int64
	Client    string // ClientBrowser or ClientApp
	Pending   bool   // a sign-in waiting for its second factor
	UserAgent string
	IP        string
}

// StartSession stores a new session and returns its id, shown to the
// client alone. A pending one ends after PendingSignInTime; another after
// the lifetime.
func (a *Authenticator) StartSession(ctx context.Context, n NewSession) (string, store.Session, error) {
	id, hash := NewSessionID()
	state, life := store.SessionAuthenticated, a.Sessions.life()
	if n.Pending {
		state, life = store.SessionPending, PendingSignInTime
	}
	s, err := a.Store.CreateSession(ctx, hash, store.NewSession{
		UserID: n.UserID, Client: n.Client, State: state,
		ExpiresAt: time.Now().Add(life), UserAgent: n.UserAgent, IP: n.IP,
	})
	if err != nil {
		return "", store.Session{}, err
	}
	a.sweepSessions(ctx)
	return id, s, nil
}

// Sweeping of dead sessions: every sweepSessionsEvery-th new session of a
// process deletes a batch of sessionSweepBatch dead ones, best effort.
const (
	sweepSessionsEvery = 64
	sessionSweepBatch  = 1000
)

// sweepSessions deletes a batch of expired and idle sessions on every
// sweepSessionsEvery-th call; an error leaves them to a later sweep (they
// authenticate nothing meanwhile).
func (a *Authenticator) sweepSessions(ctx context.Context) {
	if a.started.Add(1)%sweepSessionsEvery != 0 {
		return
	}
	a.Store.SweepSessions(ctx, a.Sessions.Idle(), sessionSweepBatch) //nolint:errcheck // best effort
}

// RotateSession gives the session of id, which must be in the state from
// (store.SessionPending: the second factor just passed;
// store.SessionAuthenticated: a reauthentication), a new id and returns
// it; the old one stops working at once, and of two rotations of one id
// only one succeeds. It marks the session authenticated now, and a pending
// sign-in authenticated for the whole lifetime. A session that is gone,
// expired, idle or in another state is ErrSessionGone.
func (a *Authenticator) RotateSession(ctx context.Context, id, from string) (string, store.Session, error) {
	old, ok := ParseSessionID(id)
	if !ok {
		return "", store.Session{}, ErrSessionGone
	}
	s, err := a.Store.SessionByHash(ctx, old, a.Sessions.Idle())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", store.Session{}, ErrSessionGone
	case err != nil:
		return "", store.Session{}, err
	case s.State != from:
		return "", store.Session{}, ErrSessionGone
	}
	rot := store.Rotation{From: from, To: store.SessionAuthenticated, Authenticated: true}
	if from == store.SessionPending {
		rot.ExpiresAt = time.Now().Add(a.Sessions.life())
	}
	newID, hash := NewSessionID()
	s, err = a.Store.RotateSession(ctx, old, hash, rot)
	if errors.Is(err, store.ErrNotFound) {
		return "", store.Session{}, ErrSessionGone
	}
	if err != nil {
		return "", store.Session{}, err
	}
	return newID, s, nil
}

// EndSession ends the session of id, if there is one.
func (a *Authenticator) EndSession(ctx context.Context, id string) error {
	hash, ok := ParseSessionID(id)
	if !ok {
		return nil
	}
	return a.Store.DeleteSessionByHash(ctx, hash)
}

// AuthenticateSession turns the session a request carries into a Caller
// without scopes (ScopesIn gives them): the X-Session-Token header (the
// app client), else the session cookie, whose unsafe requests must pass
// CheckCSRF. A request without a live, authenticated session is
// ErrNoCredential; a cookie's failed CSRF check is ErrCSRF. Callers never
// ask it about a request with an Authorization header: a token is never
// judged by cookies.
func (a *Authenticator) AuthenticateSession(r *http.Request) (Caller, error) {
	id, cookie := a.SessionIDFrom(r, ClientApp), false
	if id == "" {
		id, cookie = a.SessionIDFrom(r, ClientBrowser), true
	}
	if id == "" {
		return Caller{}, ErrNoCredential
	}
	s, err := a.Session(r.Context(), id)
	if err != nil {
		return Caller{}, err
	}
	if s.State != store.SessionAuthenticated {
		return Caller{}, ErrNoCredential
	}
	if cookie {
		if err := a.CheckCSRF(r); err != nil {
			return Caller{}, err
		}
	}
	return Caller{UserID: s.UserID, SessionID: s.ID, AuthenticatedAt: s.AuthenticatedAt}, nil
}
