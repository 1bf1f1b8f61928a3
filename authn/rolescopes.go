package authn

import "slices"

// roleScopes are the scopes of each role of a membership, Sentry's roles
// (docs/accounts.md): each role has the scopes of the one before it and
// more.
var roleScopes = map[string][]string{
	"member": {"event:read", "event:write", "event:admin", "project:releases", "project:read",
		"org:read", "member:read", "team:read"},
	"admin": {"event:read", "event:write", "event:admin", "project:releases", "project:read",
		"org:read", "member:read", "team:read",
		"project:write", "project:admin", "team:write", "team:admin"},
	"manager": {"event:read", "event:write", "event:admin", "project:releases", "project:read",
		"org:read", "member:read", "team:read",
		"project:write", "project:admin", "team:write", "team:admin",
		"member:write", "member:admin", "org:write"},
	"owner": Scopes,
}

// ScopesOfRoles returns the union of the scopes that roles grant, sorted;
// an unknown role grants none.
func ScopesOfRoles(roles []string) []string {
	var scopes []string
	for _, r := range roles {
		scopes = append(scopes, roleScopes[r]...)
	}
	slices.Sort(scopes)
	return slices.Compact(scopes)
}
