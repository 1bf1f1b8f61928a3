package handlers

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"errata/authn"
	"errata/store"
)

// handleHealth serves GET /healthz: the process is alive.
func handleHealth() apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		writeJSON(w, r, nil, http.StatusOK, map[string]string{"status": "ok"})
		return nil
	}
}

// handleReady serves GET /readyz: the database answers within two seconds.
func handleReady(st *store.Store) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := st.Ping(ctx); err != nil {
			return &apiError{status: http.StatusServiceUnavailable, detail: "Service Unavailable", cause: err}
		}
		writeJSON(w, r, nil, http.StatusOK, map[string]string{"status": "ok"})
		return nil
	}
}

// indexUser is the user block of the API root.
type indexUser struct {
	ID    string `json:"id"`
	Email string `json:"email"`
	Name  string `json:"name"`
}

type indexAuth struct {
	Scopes []string `json:"scopes"`
}

type indexResponse struct {
	Version string     `json:"version"`
	User    *indexUser `json:"user"`
	Auth    *indexAuth `json:"auth"`
}

// handleIndex serves GET /api/0/, which sentry-cli info reads: who the token
// or the signed-in session belongs to and what it may do.
func handleIndex(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		resp := indexResponse{Version: "0"}
		if c, ok := authn.CallerFrom(r.Context()); ok {
			u, err := d.Store.User(r.Context(), c.UserID)
			if err != nil {
				return err
			}
			resp.User = &indexUser{ID: strconv.FormatInt(u.ID, 10), Email: u.Email, Name: u.Name}
			// A session's scopes are the union of its roles' (authorize):
			// none, an empty list, when the user belongs to no
			// organization.
			resp.Auth = &indexAuth{Scopes: append([]string{}, c.Scopes...)}
		}
		writeJSON(w, r, d.Log, http.StatusOK, resp)
		return nil
	}
}
