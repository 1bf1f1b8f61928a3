package allauth

import (
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
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
	// Throttle counts failed passwords and codes and reset requests in
	// PostgreSQL; TrustedProxies name the proxies whose X-Forwarded-For
	// gives the client address it counts by (authn.ClientAddr).
	Throttle       *authn.Throttle
	TrustedProxies []netip.Prefix
	// TOTPSecrets and RecoverySeeds seal TOTP secrets and recovery-code
	// seeds under keys derived from SECRET_KEY.
	TOTPSecrets   *authn.TOTPCipher
	RecoverySeeds *authn.SeedCipher
	// SignupOpen lets anyone sign up (SIGNUP=open); else people join by
	// invitation and POST auth/signup is 403.
	SignupOpen bool
	// PublicURL is scheme://host of the links of mail; "" takes the
	// request's.
	PublicURL string
	// ResetKeys signs and checks the keys of password reset mail.
	ResetKeys *authn.ResetKeys
	// EmailKeys checks the keys of confirmation mail, and
	// ConfirmationMail composes that mail for a user's address (the
	// handlers package's, which /api/0/'s email routes send too).
	EmailKeys        *authn.EmailKeys
	ConfirmationMail func(r *http.Request, userID int64, email string) (store.Mail, error)
	// NotifyMail wakes the mail worker after a message is queued; nil
	// leaves it to its poll.
	NotifyMail func()
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// now is the time by the API's clock.
func (d Deps) now() time.Time {
	if d.Now == nil {
		return time.Now()
	}
	return d.Now()
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

// notSignedIn returns the id of r's pending sign-in ("" for none), which
// a new sign-in replaces; a client signed in already is 409.
func (a *API) notSignedIn(r request) (string, error) {
	s, id, err := a.session(r)
	switch {
	case errors.Is(err, errNoSession):
		return "", nil
	case err != nil:
		return "", err
	case s.State == store.SessionAuthenticated:
		return "", status(http.StatusConflict)
	}
	return id, nil
}

// signedIn returns the authenticated session of r, or answers as the
// routes that need one do: 401 with the flows (a pending sign-in among
// them), or for an app whose token no longer works 410.
func (a *API) signedIn(w http.ResponseWriter, r request) (store.Session, string, bool, error) {
	s, id, err := a.session(r)
	switch {
	case errors.Is(err, errNoSession):
		return s, "", false, a.unauthenticated(w, r, nil, r.Header.Get(authn.SessionTokenHeader) != "")
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

// clientAddr is the client's address: what throttles count by.
func (a *API) clientAddr(r *http.Request) netip.Addr {
	return authn.ClientAddr(r, a.d.TrustedProxies)
}

// clientIP is the client's address as a session records it, "" when the
// connection has none (a Unix socket).
func (a *API) clientIP(r *http.Request) string {
	if addr := a.clientAddr(r); addr.IsValid() {
		return addr.String()
	}
	return ""
}

// errTooManyLogins is allauth's answer while an account's wrong passwords
// are throttled.
var errTooManyLogins = invalid("too_many_login_attempts", "Too many failed login attempts. Try again later.", "")

// attempt counts an attempt in buckets (authn's rules); a refused one is
// the rule's answer: 400 too_many_login_attempts for an account's
// passwords, else 429 {"status":429}. A caller calls Succeeded on the
// attempt when the password or code was right.
func (a *API) attempt(r request, buckets ...authn.Bucket) (*authn.Attempt, error) {
	at, err := a.d.Throttle.Attempt(r.Context(), buckets...)
	if err != nil {
		return nil, err
	}
	if rule, refused := at.Refused(); refused {
		if rule.Name == authn.PasswordFailuresPerAccount.Name {
			return nil, errTooManyLogins
		}
		return nil, status(http.StatusTooManyRequests)
	}
	return at, nil
}

// settle ends an attempt by the verdict err of its check: a failure
// (failed) stays counted; anything else, a success or no verdict at all
// (the hasher busy, the database out of reach), is taken back. It returns
// err, or the error of taking back.
func settle(r request, at *authn.Attempt, err, failed error) error {
	if errors.Is(err, failed) {
		return err
	}
	if back := at.Succeeded(r.Context()); err == nil {
		return back
	}
	return err
}
