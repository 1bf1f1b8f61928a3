// Package authn owns API tokens and the caller of a request: how a token is
// made (random, prefixed, shown once), how it is stored (SHA-256 only), how a
// request's Authorization header becomes a Caller, and which scope names
// exist.
//
// It must not write HTTP responses: it reports ErrNoCredential and
// ErrBadCredential, and the handlers package turns them into 401 answers.
package authn
