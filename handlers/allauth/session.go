package allauth

import (
	"context"
	"net/http"
	"time"

	"errata/authn"
	"errata/store"
)

// configData is the data of GET config: every field the reference
// document requires, as errata's features are.
type configData struct {
	Account struct {
		AuthenticationMethod           string   `json:"authentication_method"`
		LoginMethods                   []string `json:"login_methods"`
		IsOpenForSignup                bool     `json:"is_open_for_signup"`
		EmailVerificationByCodeEnabled bool     `json:"email_verification_by_code_enabled"`
		LoginByCodeEnabled             bool     `json:"login_by_code_enabled"`
		PasswordResetByCodeEnabled     bool     `json:"password_reset_by_code_enabled"`
	} `json:"account"`
	MFA struct {
		SupportedTypes []string `json:"supported_types"`
	} `json:"mfa"`
	UserSessions struct {
		TrackActivity bool `json:"track_activity"`
	} `json:"usersessions"`
}

// Config serves GET /_allauth/{client}/v1/config: how to sign in here. It
// gives a browser its CSRF cookie.
func (a *API) Config() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		var c configData
		c.Account.AuthenticationMethod = "email"
		c.Account.LoginMethods = []string{"email"}
		c.Account.IsOpenForSignup = a.d.SignupOpen
		c.MFA.SupportedTypes = []string{"totp", "recovery_codes"}
		c.UserSessions.TrackActivity = true // last_seen_at
		a.setCSRFCookie(w, r)
		write(w, a.d.Log, http.StatusOK, envelope{Status: http.StatusOK, Data: c})
		return nil
	})
}

// Session serves GET /_allauth/{client}/v1/auth/session: the signed-in
// user (200), or 401 with the flows; an app's token that no longer works
// is 410. It gives a browser its CSRF cookie.
func (a *API) Session() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		a.setCSRFCookie(w, r)
		s, _, ok, err := a.signedIn(w, r)
		if !ok {
			return err
		}
		return a.authenticated(w, r, s, "")
	})
}

// SignOut serves DELETE /_allauth/{client}/v1/auth/session: the session
// ends at once, on every replica (it is a row), and the answer is 401
// with the flows, as allauth's.
func (a *API) SignOut() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		_, id, err := a.session(r)
		if err != nil && err != errNoSession {
			return err
		}
		if id != "" {
			if err := a.d.Auth.EndSession(r.Context(), id); err != nil {
				return err
			}
		}
		a.clearSession(w, r)
		return a.unauthenticated(w, r, nil, false)
	})
}

// user is allauth's user.
type user struct {
	ID                int64  `json:"id"`
	Display           string `json:"display"`
	HasUsablePassword bool   `json:"has_usable_password"`
	Email             string `json:"email"`
}

// method is one way the session's person proved who they are.
type method struct {
	Method          string  `json:"method"`
	At              float64 `json:"at"`
	Email           string  `json:"email,omitempty"`
	Type            string  `json:"type,omitempty"` // of the authenticator, for "mfa"
	Reauthenticated bool    `json:"reauthenticated,omitempty"`
}

// authMeta is the meta of answers about authentication; SessionToken is
// the app's new session id, in the answers that start or rotate one.
type authMeta struct {
	IsAuthenticated bool   `json:"is_authenticated"`
	SessionToken    string `json:"session_token,omitempty"`
}

// flow is a flow the client may take next, pending or not.
type flow struct {
	ID        string   `json:"id"`
	IsPending bool     `json:"is_pending,omitempty"`
	Types     []string `json:"types,omitempty"`
}

// epoch is allauth's timestamp: seconds since 1970, with a fraction.
func epoch(t time.Time) float64 {
	return float64(t.UnixMicro()) / 1e6
}

// userOf returns allauth's user of the session's user.
func (a *API) userOf(ctx context.Context, userID int64) (user, error) {
	u, err := a.d.Store.User(ctx, userID)
	if err != nil {
		return user{}, err
	}
	display := u.Name
	if display == "" {
		display = u.Email
	}
	return user{ID: u.ID, Display: display, HasUsablePassword: u.HasPasswordAuth, Email: u.Email}, nil
}

// authenticated answers 200 with the session's user; newID, when set, is
// the session's new id, which an app finds in meta.session_token (a
// browser got it as its cookie from setSession). more are the methods
// after the password (a second factor).
func (a *API) authenticated(w http.ResponseWriter, r request, s store.Session, newID string, more ...method) error {
	u, err := a.userOf(r.Context(), s.UserID)
	if err != nil {
		return err
	}
	meta := authMeta{IsAuthenticated: true}
	if r.client == authn.ClientApp {
		meta.SessionToken = newID
	}
	data := struct {
		User    user     `json:"user"`
		Methods []method `json:"methods"`
	}{u, append([]method{{Method: "password", At: epoch(s.AuthenticatedAt), Email: u.Email}}, more...)}
	write(w, a.d.Log, http.StatusOK, envelope{Status: http.StatusOK, Data: data, Meta: meta})
	return nil
}

// unauthenticated answers 401 with the flows a client may take: sign-in,
// sign-up when it is open, and the second factor when pending (a pending
// sign-in's session). gone makes it the 410 of an app whose token no
// longer works.
func (a *API) unauthenticated(w http.ResponseWriter, r request, pending *store.Session, gone bool) error {
	if gone && r.client == authn.ClientApp {
		write(w, a.d.Log, http.StatusGone, envelope{Status: http.StatusGone, Data: struct{}{}, Meta: authMeta{}})
		return nil
	}
	return a.flows(w, r, pending, "")
}

// flows answers 401 with the flows; newID, for a sign-in now pending its
// second factor, is the pending session's id an app carries next.
func (a *API) flows(w http.ResponseWriter, r request, pending *store.Session, newID string) error {
	flows := []flow{{ID: "login"}}
	if a.d.SignupOpen {
		flows = append(flows, flow{ID: "signup"})
	}
	if pending != nil && pending.State == store.SessionPending {
		types, err := a.secondFactorTypes(r.Context(), pending.UserID)
		if err != nil {
			return err
		}
		flows = append(flows, flow{ID: "mfa_authenticate", IsPending: true, Types: types})
	}
	meta := authMeta{}
	if r.client == authn.ClientApp {
		meta.SessionToken = newID
	}
	write(w, a.d.Log, http.StatusUnauthorized, envelope{Status: http.StatusUnauthorized,
		Data: struct {
			Flows []flow `json:"flows"`
		}{flows}, Meta: meta})
	return nil
}

// StartSignedIn starts an authenticated session of userID for client
// (authn.ClientBrowser: the session cookie; authn.ClientApp: the id in
// meta.session_token) and answers as auth/login does for a person without
// a second factor: 200 with the user. Routes outside the sign-in API that
// sign a person in answer with it (accepting an invitation as a new
// person, handlers/invitations.go).
func (a *API) StartSignedIn(w http.ResponseWriter, r *http.Request, client string, userID int64) error {
	rq := request{Request: r, client: client}
	id, s, err := a.d.Auth.StartSession(r.Context(), authn.NewSession{
		UserID: userID, Client: client, UserAgent: r.UserAgent(), IP: a.clientIP(r),
	})
	if err != nil {
		return err
	}
	a.setSession(w, rq, id, s)
	return a.authenticated(w, rq, s, id)
}
