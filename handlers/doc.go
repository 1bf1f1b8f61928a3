// Package handlers owns errata's HTTP surface: routes.go lists every route
// with the scopes it accepts, and each handler reads top to bottom:
// authorize, decode and validate, one store call, encode.
//
// Handlers return errors; one adapter (errors.go) turns them into the JSON
// error bodies of the contract, so no handler writes an error status itself.
// The package must not hold SQL (that is the store's) nor globals: every
// dependency arrives through Deps.
//
// Beside the API: openapi.json is the API's description, embedded and served
// as it is; metrics.go counts requests by route pattern for /metrics, which
// main.go serves on its own listener only when METRICS_ADDR is set.
// symbolicatejs.go and symbolicatejvm.go resolve stack traces through the
// stored files the store hands them, with the decoders of worker/dif; the
// parsed files they keep live in one SymbolCache, bounded in bytes.
package handlers
