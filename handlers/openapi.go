package handlers

import (
	"bytes"
	"crypto/sha256"
	_ "embed" // the OpenAPI document is part of the binary
	"encoding/hex"
	"net/http"
	"time"
)

// openAPIDocument is the OpenAPI 3.1 description of every route of
// routes.go. It is read-only: handleOpenAPI serves it as it is, and
// openapi_test.go keeps it in step with the route table and the handlers.
//
//go:embed openapi.json
var openAPIDocument []byte

// handleOpenAPI serves GET /api/0/openapi.json: the OpenAPI document,
// without a token. Its ETag is a hash of the document, so a client
// revalidates (no-cache) and gets 304 while the binary is the same.
func handleOpenAPI() apiFunc {
	sum := sha256.Sum256(openAPIDocument)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	return func(w http.ResponseWriter, r *http.Request) error {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("ETag", etag)
		h.Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, "openapi.json", time.Time{}, bytes.NewReader(openAPIDocument))
		return nil
	}
}
