// Package allauth serves errata's sign-in API at /_allauth/{client}/v1/,
// the routes and shapes of django-allauth's headless API
// (docs/accounts.md): configuration, sign-in and sign-out, the session,
// sign-up, passwords, email verification and, in mfa.go, the second
// factor. The client is "browser" (the session in a cookie; unsafe
// methods pass authn.CheckCSRF) or "app" (the session in X-Session-Token).
//
// Each answer is allauth's envelope: status, data, meta, errors
// [{message, code, param}] and flows, written by envelope.go; no route
// answers the contract bodies of /api/0/. The routes authenticate by
// session themselves: handlers/routes.go lists them as open, outside the
// token access rule. Sessions, CSRF and passwords are authn's rules; SQL is
// the store's: this package only reads requests and writes answers.
package allauth
