// Package store owns errata's data in PostgreSQL: every SQL statement of the
// server lives here, literal and next to the call that runs it.
//
// Each exported method takes a context first, owns its transaction when it
// needs one, and returns plain Go types. pgx errors never leave the package:
// no rows becomes ErrNotFound, a unique violation ErrConflict, and a database
// that cannot be reached ErrUnavailable.
//
// Tenant isolation is part of the SQL: every method that reads or writes an
// organization's records takes the caller's user id and joins memberships in
// the same statement, so there is no separate check that a later edit could
// forget. The package must not know about HTTP, JSON wire formats or scopes.
package store
