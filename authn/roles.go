package authn

import (
	"context"
	"errors"
	"slices"
	"time"

	"errata/store"
)

// roleScopes is the table of roles and the scopes each grants in its
// organization (docs/accounts.md, "Roles and scopes"): Sentry's, which
// GlitchTip copies. Each role has the scopes of the one before it.
var roleScopes = map[string][]string{
	"member": memberScopes,
	"admin":  adminScopes,
	"manager": append(slices.Clip(adminScopes),
		"member:write", "member:admin", "org:write"),
	"owner": append(slices.Clip(Scopes), "org:integrations"),
}

var (
	memberScopes = []string{"event:read", "event:write", "event:admin", "project:releases",
		"project:read", "org:read", "member:read", "team:read"}
	adminScopes = append(slices.Clip(memberScopes),
		"project:write", "project:admin", "team:write", "team:admin", "org:integrations")
)

// RoleScopes returns the scopes of role, none for a role that does not
// exist. The caller must not change the slice.
func RoleScopes(role string) []string {
	return roleScopes[role]
}

// RolesScopes returns the union of the scopes of roles, in the order of
// Scopes (org:integrations, which no token can carry, last).
func RolesScopes(roles []string) []string {
	var union []string
	for _, s := range append(slices.Clip(Scopes), "org:integrations") {
		for _, role := range roles {
			if slices.Contains(roleScopes[role], s) {
				union = append(union, s)
				break
			}
		}
	}
	return union
}

// intersect returns the scopes of a that b has too, in a's order.
func intersect(a, b []string) []string {
	var both []string
	for _, s := range a {
		if slices.Contains(b, s) {
			both = append(both, s)
		}
	}
	return both
}

// ErrTwoFactorRequired refuses a member without TOTP the routes of an
// organization that requires two-factor authentication (Sentry's
// require2FA), whatever its credential, until it enrols.
var ErrTwoFactorRequired = errors.New("authn: the organization requires two-factor authentication")

// ScopesIn returns the scopes of c in the organization orgSlug ("" for
// the routes outside organizations), the one rule of both credentials:
//   - a session holds its role's scopes in an organization it belongs to,
//     and elsewhere the union of its roles' scopes over its organizations;
//   - a token's scopes are a ceiling: in an organization it belongs to,
//     the token's scopes that its role there grants; elsewhere the
//     token's scopes.
//
// A member of an organization that requires two-factor authentication
// who has no TOTP gets ErrTwoFactorRequired there, read in the same
// statement as its role. Roles are read through a cache of CacheFor
// (ForgetUser empties it for a user, ForgetOrganization for an
// organization), as tokens are.
func (a *Authenticator) ScopesIn(ctx context.Context, c Caller, orgSlug string) ([]string, error) {
	if orgSlug != "" {
		role, err := a.role(ctx, c.UserID, orgSlug)
		switch {
		case errors.Is(err, ErrTwoFactorRequired):
			return nil, err
		case err == nil && c.SessionID != 0:
			return RoleScopes(role), nil
		case err == nil:
			return intersect(c.Scopes, RoleScopes(role)), nil
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
		// Not a member: the route's handler answers 404.
	}
	if c.SessionID == 0 {
		return c.Scopes, nil
	}
	roles, err := a.roles(ctx, c.UserID)
	if err != nil {
		return nil, err
	}
	return RolesScopes(roles), nil
}

// roleKey names a cached role: a user's in an organization, or with org ""
// the list of its roles.
type roleKey struct {
	user int64
	org  string
}

// cachedRoles is a role lookup and until when it is trusted; notMember
// caches that the user is not a member, secondFactorMissing that the
// organization's require2FA refuses it.
type cachedRoles struct {
	roles               []string
	notMember           bool
	secondFactorMissing bool
	until               time.Time
}

// role returns the role of userID in orgSlug, ErrNotFound when it is not
// a member, ErrTwoFactorRequired when the organization refuses it until it
// enrols TOTP.
func (a *Authenticator) role(ctx context.Context, userID int64, orgSlug string) (string, error) {
	key := roleKey{userID, orgSlug}
	c, ok := a.cachedRole(key)
	if !ok {
		m, err := a.Store.MemberRole(ctx, userID, orgSlug)
		switch {
		case errors.Is(err, store.ErrNotFound):
			c = cachedRoles{notMember: true}
		case err != nil:
			return "", err
		default:
			c = cachedRoles{roles: []string{m.Role}, secondFactorMissing: m.SecondFactorMissing}
		}
		a.rememberRole(key, c)
	}
	switch {
	case c.notMember:
		return "", store.ErrNotFound
	case c.secondFactorMissing:
		return "", ErrTwoFactorRequired
	}
	return c.roles[0], nil
}

// ForgetOrganization drops the cached roles in the organization orgSlug,
// so that a change of its require2FA holds at once in this process.
func (a *Authenticator) ForgetOrganization(orgSlug string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range a.roleCache {
		if k.org == orgSlug {
			delete(a.roleCache, k)
		}
	}
}

// roles returns the roles of userID over its organizations.
func (a *Authenticator) roles(ctx context.Context, userID int64) ([]string, error) {
	key := roleKey{user: userID}
	c, ok := a.cachedRole(key)
	if !ok {
		roles, err := a.Store.UserRoles(ctx, userID)
		if err != nil {
			return nil, err
		}
		c = cachedRoles{roles: roles}
		a.rememberRole(key, c)
	}
	return c.roles, nil
}

func (a *Authenticator) cachedRole(key roleKey) (cachedRoles, bool) {
	if a.CacheFor <= 0 {
		return cachedRoles{}, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.roleCache[key]
	if !ok || time.Now().After(c.until) {
		return cachedRoles{}, false
	}
	return c, true
}

func (a *Authenticator) rememberRole(key roleKey, c cachedRoles) {
	if a.CacheFor <= 0 {
		return
	}
	now := time.Now()
	c.until = now.Add(a.CacheFor)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.roleCache == nil {
		a.roleCache = map[roleKey]cachedRoles{}
	}
	if len(a.roleCache) >= maxCachedTokens {
		for k, c := range a.roleCache {
			if now.After(c.until) {
				delete(a.roleCache, k)
			}
		}
		if len(a.roleCache) >= maxCachedTokens {
			// Still full of fresh lookups (many organization slugs
			// within one CacheFor, which any caller can name): the
			// cache stays bounded, and this lookup is not kept.
			return
		}
	}
	a.roleCache[key] = c
}

// RoleIn returns the role of userID in the organization orgSlug, through
// the cache ScopesIn reads; store.ErrNotFound when it is not a member.
// Routes that count an action against a throttle ask it first, so that a
// caller who is no member counts nothing.
func (a *Authenticator) RoleIn(ctx context.Context, userID int64, orgSlug string) (string, error) {
	return a.role(ctx, userID, orgSlug)
}

// CanAssign reports whether a member whose role is callerRole may give
// role to a member, or change or remove a member who has it
// (docs/members.md, "Members"): roles up to its own only, so that a
// manager never makes, changes or removes an owner. An unknown role is
// never assignable. Whether the caller may manage members at all is its
// scopes' (member:write or member:admin, routes.go).
func CanAssign(callerRole, role string) bool {
	c, r := slices.Index(store.Roles, callerRole), slices.Index(store.Roles, role)
	return c >= 0 && r >= 0 && r <= c
}
