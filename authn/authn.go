package authn

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"errata/store"
)

// TokenPrefix starts every token. It is the prefix sentry-cli recognises as
// a user auth token, so sentry-cli accepts errata tokens without a warning,
// and secret scanners can spot a leaked one.
const TokenPrefix = "sntryu_"

// tokenBytes is the entropy of a token: 256 bits.
const tokenBytes = 32

// Scopes lists every scope name a token can carry.
var Scopes = []string{
	"project:read", "project:write", "project:admin", "project:releases",
	"team:read", "team:write", "team:admin",
	"event:read", "event:write", "event:admin",
	"org:read", "org:write", "org:admin",
	"member:read", "member:write", "member:admin",
}

// Errors of Authenticate.
var (
	ErrNoCredential  = errors.New("authn: no credential")
	ErrBadCredential = errors.New("authn: unknown or malformed credential")
)

// NewToken returns a fresh token and the hash to store for it.
func NewToken() (token string, hash []byte) {
	b := make([]byte, tokenBytes)
	rand.Read(b) // never fails: crypto/rand panics rather than return short
	token = TokenPrefix + hex.EncodeToString(b)
	return token, Hash(token)
}

// Hash is what the database keeps of a token.
func Hash(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// CheckScopes returns an error naming the first scope that does not exist.
func CheckScopes(scopes []string) error {
	if len(scopes) == 0 {
		return errors.New("at least one scope is required")
	}
	for _, s := range scopes {
		if !slices.Contains(Scopes, s) {
			return fmt.Errorf("unknown scope %q", s)
		}
	}
	return nil
}

// Caller is the authenticated user of a request: through an API token
// (TokenID set) or a signed-in session (SessionID set).
type Caller struct {
	UserID  int64
	TokenID int64
	Scopes  []string
	// SessionID is the row id of the caller's session, 0 for a token.
	SessionID int64
	// AuthenticatedAt is when the session's person last proved who they
	// are (password, second factor or reauthentication); zero for a token.
	AuthenticatedAt time.Time
}

// RecentlyAuthenticated reports whether the caller is a session whose
// person proved who they are within RecentAuthentication of now.
func (c Caller) RecentlyAuthenticated(now time.Time) bool {
	return c.SessionID != 0 && now.Sub(c.AuthenticatedAt) <= RecentAuthentication
}

// HasAny reports whether the caller holds at least one of scopes.
func (c Caller) HasAny(scopes []string) bool {
	for _, s := range scopes {
		if slices.Contains(c.Scopes, s) {
			return true
		}
	}
	return false
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller that WithCaller stored in ctx.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// Authenticator turns a request's credential into a Caller.
type Authenticator struct {
	Store *store.Store
	// CacheFor is how long a token found in the database is trusted
	// without asking the database again; 0 asks on every request. A
	// token whose user is deactivated or deleted, or which is deleted,
	// may go on working that long, except that ForgetUser and
	// ForgetToken end it at once in this process. A token never outlives
	// its expiry in the cache. Unknown tokens are never cached.
	CacheFor time.Duration

	// Sessions configures the sessions of people who signed in
	// (session.go); its zero value is the defaults.
	Sessions SessionConfig

	mu    sync.Mutex
	cache map[[sha256.Size]byte]cachedToken
	// roleCache keeps the roles of users (roles.go), as cache keeps tokens.
	roleCache map[roleKey]cachedRoles
	// started counts the sessions this process started, to sweep dead
	// ones now and then (session.go).
	started atomic.Uint64
}

// TokenCacheTime is how long the server trusts a token it found in the
// database before asking again: the bound on the staleness of its cache.
const TokenCacheTime = time.Second

// cachedToken is a token found in the database and until when it is
// trusted.
type cachedToken struct {
	token store.Token
	until time.Time
}

// maxCachedTokens is the size past which remembering a token first drops
// the expired ones.
const maxCachedTokens = 1024

// Authenticate reads "Authorization: Bearer <token>" (the scheme in any
// case) and looks the token up by its hash, in the cache first when
// CacheFor is set. Tokens of inactive users and expired tokens do not
// authenticate.
func (a *Authenticator) Authenticate(r *http.Request) (Caller, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return Caller{}, ErrNoCredential
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Caller{}, ErrBadCredential
	}
	return a.authenticateToken(r.Context(), token)
}

// AuthenticateBearerOrBasic is Authenticate that also takes the token as
// the password of Basic credentials, whatever the user name: libcurl sends
// Basic for the user:TOKEN@host URLs that debuginfod clients are given
// (docs/symbol-server.md). Only the routes that debuggers call take it;
// handlers/routes.go says which.
func (a *Authenticator) AuthenticateBearerOrBasic(r *http.Request) (Caller, error) {
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return a.Authenticate(r)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return Caller{}, ErrBadCredential
	}
	_, token, ok := strings.Cut(string(raw), ":")
	if !ok || token == "" {
		return Caller{}, ErrBadCredential
	}
	return a.authenticateToken(r.Context(), token)
}

// authenticateToken looks token up, as Authenticate does.
func (a *Authenticator) authenticateToken(ctx context.Context, token string) (Caller, error) {
	token = strings.TrimSpace(token)
	if !wellFormed(token) {
		return Caller{}, ErrBadCredential
	}
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	c, ok := a.cached(key, now)
	if !ok {
		t, err := a.Store.TokenByHash(ctx, key[:])
		if errors.Is(err, store.ErrNotFound) {
			return Caller{}, ErrBadCredential
		}
		if err != nil {
			return Caller{}, err
		}
		c = cachedToken{token: t, until: now.Add(a.CacheFor)}
		if t.ExpiresAt != nil && t.ExpiresAt.Before(c.until) {
			c.until = *t.ExpiresAt
		}
	}
	t := c.token
	if t.ExpiresAt != nil && !now.Before(*t.ExpiresAt) {
		// The database refuses it too; this stops a token at its expiry
		// even when this process found it a moment before.
		return Caller{}, ErrBadCredential
	}
	touch := t.LastUsed == nil || now.Sub(*t.LastUsed) > time.Minute
	if touch {
		if err := a.Store.TouchToken(ctx, t.ID); err != nil {
			return Caller{}, err
		}
		c.token.LastUsed = &now
	}
	if !ok || touch {
		a.remember(key, c, now)
	}
	return Caller{UserID: t.UserID, TokenID: t.ID, Scopes: t.Scopes}, nil
}

// cached returns the token of hash key when it is cached and still
// trusted.
func (a *Authenticator) cached(key [sha256.Size]byte, now time.Time) (cachedToken, bool) {
	if a.CacheFor <= 0 {
		return cachedToken{}, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.cache[key]
	if !ok || now.After(c.until) {
		return cachedToken{}, false
	}
	return c, true
}

// remember caches c; now is the time, to drop expired tokens.
func (a *Authenticator) remember(key [sha256.Size]byte, c cachedToken, now time.Time) {
	if a.CacheFor <= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cache == nil {
		a.cache = map[[sha256.Size]byte]cachedToken{}
	}
	if len(a.cache) >= maxCachedTokens {
		for k, c := range a.cache {
			if now.After(c.until) {
				delete(a.cache, k)
			}
		}
	}
	a.cache[key] = c
}

// ForgetToken drops the token tokenID from the cache, so that it stops
// working at once in this process when its owner deletes it.
func (a *Authenticator) ForgetToken(tokenID int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forgetTokens(func(t store.Token) bool { return t.ID == tokenID })
}

// ForgetUser drops the cached tokens and roles of the user, so that a
// change to the user (deleted, a membership changed) holds at once in this
// process.
func (a *Authenticator) ForgetUser(userID int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forgetTokens(func(t store.Token) bool { return t.UserID == userID })
	for k := range a.roleCache {
		if k.user == userID {
			delete(a.roleCache, k)
		}
	}
}

// forgetTokens drops the cached tokens that match; a.mu is held.
func (a *Authenticator) forgetTokens(match func(store.Token) bool) {
	for k, c := range a.cache {
		if match(c.token) {
			delete(a.cache, k)
		}
	}
}

// wellFormed reports whether token could be one of ours, so that garbage
// never reaches the database.
func wellFormed(token string) bool {
	hexPart, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok || len(hexPart) != 2*tokenBytes {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil && strings.ToLower(hexPart) == hexPart
}
