package authn

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
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

// Caller is the authenticated user of a request.
type Caller struct {
	UserID  int64
	TokenID int64
	Scopes  []string
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
}

// Authenticate reads "Authorization: Bearer <token>" (the scheme in any
// case) and looks the token up by its hash. Tokens of inactive users do not
// authenticate.
func (a *Authenticator) Authenticate(r *http.Request) (Caller, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return Caller{}, ErrNoCredential
	}
	scheme, token, ok := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || !wellFormed(token) {
		return Caller{}, ErrBadCredential
	}
	t, err := a.Store.TokenByHash(r.Context(), Hash(token))
	if errors.Is(err, store.ErrNotFound) {
		return Caller{}, ErrBadCredential
	}
	if err != nil {
		return Caller{}, err
	}
	if t.LastUsed == nil || time.Since(*t.LastUsed) > time.Minute {
		if err := a.Store.TouchToken(r.Context(), t.ID); err != nil {
			return Caller{}, err
		}
	}
	return Caller{UserID: t.UserID, TokenID: t.ID, Scopes: t.Scopes}, nil
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
