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
// The resolution routes (symbolicate.go, symbolicatejs.go,
// symbolicatejvm.go) hand stack traces to the engines of
// handlers/symbolication, which keep the files they parsed in a
// DebugFileCache and a MapCache, each bounded in bytes.
package handlers
