package handlers

import (
	"net/http"
	"strings"
)

// publicBase is scheme://host of the links the server writes: PUBLIC_URL,
// or the request's own when it is not set.
func publicBase(r *http.Request, publicURL string) string {
	if publicURL != "" {
		return strings.TrimSuffix(publicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
