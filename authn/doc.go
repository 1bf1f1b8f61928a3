// Package authn owns the credentials of errata: API tokens and the caller
// of a request (how a token is made: random, prefixed, shown once; how it
// is stored: SHA-256 only; how a request's Authorization header becomes a
// Caller: Bearer, or on the routes of debuggers Basic with the token as
// its password; which scope names exist), the signed, expiring email
// confirmation keys, and recovery codes (their allauth-compatible derivation, the pending
// seeds, held in a TTL map in memory or, for replicas, encrypted in
// PostgreSQL, and the encryption of stored seeds), and TOTP (RFC 6238 codes,
// which of them match, the otpauth:// URI, and the encryption of stored
// secrets, under a key of its own). Sessions of people are its too
// (session.go: ids, cookies, timeouts, rotation), the one CSRF rule
// (csrf.go), the table of roles and the scopes a caller holds in an
// organization (roles.go), and the password reset keys (resetkey.go).
//
// It must not write HTTP responses: it reports ErrNoCredential and
// ErrBadCredential, and the handlers package turns them into 401 answers;
// cookies it only describes (*http.Cookie), for handlers to set.
package authn
