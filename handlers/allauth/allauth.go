package allauth

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"errata/authn"
	"errata/store"
)

// Deps is what the sign-in API uses, built once in run().
type Deps struct {
	Store *store.Store
	Auth  *authn.Authenticator
	Log   *slog.Logger
	// Passwords verifies and hashes passwords within its bound on
	// concurrent hashes.
	Passwords *authn.Hasher
	// SignupOpen lets anyone sign up (SIGNUP=open); else people join by
	// invitation and POST auth/signup is 403.
	SignupOpen bool
}

// API is the sign-in API; handlers/routes.go registers its handlers.
type API struct {
	d Deps
}

// New returns the sign-in API of d.
func New(d Deps) *API {
	return &API{d: d}
}

// Handler is the type of the API's handlers, handlers/routes.go's apiFunc:
// each writes its own answer, errors included, and returns nil.
type Handler = func(w http.ResponseWriter, r *http.Request) error

// request is what a handler knows of its request: the client it is for
// and, through the Authenticator, its session.
type request struct {
	*http.Request
	client string // authn.ClientBrowser or authn.ClientApp
}

// handlerFunc is a handler of the API before serve: it returns its error.
type handlerFunc func(w http.ResponseWriter, r request) error

// serve wraps h: the client from the path (another one is 404), the CSRF
// check of the browser client's unsafe methods (sign-in included; 403
// {"status":403}), and the envelope of h's error.
func (a *API) serve(h handlerFunc) Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		client := r.PathValue("client")
		if client != authn.ClientBrowser && client != authn.ClientApp {
			writeError(w, r, a.d.Log, status(http.StatusNotFound))
			return nil
		}
		if client == authn.ClientBrowser {
			if err := a.d.Auth.CheckCSRF(r); err != nil {
				writeError(w, r, a.d.Log, err)
				return nil
			}
		}
		if err := h(w, request{Request: r, client: client}); err != nil {
			writeError(w, r, a.d.Log, err)
		}
		return nil
	}
}

// errNoSession means that a request carries no live session.
var errNoSession = errors.New("allauth: no session")

// session returns the live session r carries for its client and its id,
// errNoSession when there is none (or it expired, or ended).
func (a *API) session(r request) (store.Session, string, error) {
	id := a.d.Auth.SessionIDFrom(r.Request, r.client)
	if id == "" {
		return store.Session{}, "", errNoSession
	}
	s, err := a.d.Auth.Session(r.Context(), id)
	if errors.Is(err, authn.ErrNoCredential) {
		return store.Session{}, "", errNoSession
	}
	return s, id, err
}

// signedIn returns the authenticated session of r, or answers as the
// routes that need one do: 401 with the flows (a pending sign-in among
// them), or for an app whose token no longer works 410.
func (a *API) signedIn(w http.ResponseWriter, r request) (store.Session, string, bool, error) {
	s, id, err := a.session(r)
	switch {
	case errors.Is(err, errNoSession):
		return s, "", false, a.unauthenticated(w, r, nil, id != "" || r.Header.Get(authn.SessionTokenHeader) != "")
	case err != nil:
		return s, "", false, err
	case s.State != store.SessionAuthenticated:
		return s, "", false, a.unauthenticated(w, r, &s, false)
	}
	return s, id, true, nil
}

// setSession gives the client the session id: the browser a cookie until
// the session ends, the app nothing here (meta.session_token carries it).
func (a *API) setSession(w http.ResponseWriter, r request, id string, s store.Session) {
	if r.client == authn.ClientBrowser {
		http.SetCookie(w, a.d.Auth.SessionCookie(id, s.ExpiresAt))
	}
}

// clearSession removes the browser's session cookie.
func (a *API) clearSession(w http.ResponseWriter, r request) {
	if r.client == authn.ClientBrowser {
		http.SetCookie(w, a.d.Auth.SessionCookie("", time.Time{}))
	}
}

// setCSRFCookie gives a browser the CSRF cookie when it has none.
func (a *API) setCSRFCookie(w http.ResponseWriter, r request) {
	if r.client != authn.ClientBrowser {
		return
	}
	if c := a.d.Auth.CSRFCookie(r.Request); c != nil {
		http.SetCookie(w, c)
	}
}

// clientIP is the address a session records.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
