package store

import "fmt"

// Actor is who asks for a change that both the API and the admin CLI make:
// a user, who reaches only the organizations it is a member of, or the
// operator of the admin CLI, who reaches every organization. The zero
// Actor is no user and reaches nothing.
type Actor struct {
	userID   int64
	operator bool
}

// Member is the user userID, limited to its organizations.
func Member(userID int64) Actor { return Actor{userID: userID} }

// Operator is the operator of the admin CLI: whoever can run `errata
// admin` on the database owns every organization in it.
var Operator = Actor{operator: true}

// actorOrg selects the id of the organization $2 when the actor ($1 its
// user, $3 whether it is the operator) may reach it: membership is part of
// the statement, as everywhere in the store.
const actorOrg = `SELECT o.id FROM organizations o
	WHERE o.slug = $2 AND ($3 OR EXISTS (
		SELECT 1 FROM memberships m WHERE m.organization_id = o.id AND m.user_id = $1))`

// args are the actor's placeholders of actorOrg for the organization
// orgSlug.
func (a Actor) args(orgSlug string) []any {
	return []any{a.userID, orgSlug, a.operator}
}

// orgNotFound is the error of an organization the actor cannot reach.
func orgNotFound(orgSlug string) error {
	return fmt.Errorf("organization %q: %w", orgSlug, ErrNotFound)
}
