package allauth

import (
	"errors"
	"net/http"

	"errata/authn"
	"errata/store"
)

// loginBody is the body of POST auth/login.
type loginBody struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// errBusy is the answer when every password hash slot stayed taken: 503,
// to be tried again in a few seconds.
var errBusy = &apiError{status: http.StatusServiceUnavailable, retryAfter: 5}

// errMismatch is allauth's answer to a wrong address or password; both
// answer the same, after the same work.
var errMismatch = invalid("email_password_mismatch",
	"The email address and/or password you specified are not correct.", "password")

// Login serves POST /_allauth/{client}/v1/auth/login {email, password}: a
// new session, authenticated (200) or, for a user with TOTP, pending its
// second factor (401 with the flow mfa_authenticate). A wrong address or
// password is 400 email_password_mismatch, one signed in already 409.
// Wrong passwords are throttled per account (400 too_many_login_attempts,
// the right password too) and per client address (429).
func (a *API) Login() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		oldID, err := a.notSignedIn(r)
		if err != nil {
			return err
		}
		var body loginBody
		if err := decode(r.Request, &body); err != nil {
			return err
		}
		if err := checkEmail(body.Email, "email"); err != nil {
			return err
		}
		if body.Password == "" {
			return invalid("required", "This field is required.", "password")
		}
		at, err := a.attempt(r, authn.PasswordFailuresPerAccount.For(body.Email),
			authn.PasswordFailuresPerAddress.ForAddr(a.clientAddr(r.Request)))
		if err != nil {
			return err
		}
		userID, err := a.checkPassword(r, body.Email, body.Password)
		if err := settle(r, at, err, errMismatch); err != nil {
			return err
		}
		totp, _, err := a.d.Store.SecondFactors(r.Context(), userID)
		if err != nil {
			return err
		}
		if oldID != "" { // a sign-in that was pending starts over
			if err := a.d.Auth.EndSession(r.Context(), oldID); err != nil {
				return err
			}
		}
		id, s, err := a.d.Auth.StartSession(r.Context(), authn.NewSession{
			UserID: userID, Client: r.client, Pending: totp,
			UserAgent: r.UserAgent(), IP: a.clientIP(r.Request),
		})
		if err != nil {
			return err
		}
		a.setSession(w, r, id, s)
		if totp {
			return a.flows(w, r, &s, id)
		}
		return a.authenticated(w, r, s, id)
	})
}

// checkPassword returns the id of the active user of email when password
// is theirs, else errMismatch; an unknown address costs the same hash as
// a wrong password. A hash of older parameters is replaced by one of the
// current ones.
func (a *API) checkPassword(r request, email, password string) (int64, error) {
	userID, hash, err := a.d.Store.PasswordHash(r.Context(), email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return 0, err
	}
	ok, rehash, err := a.d.Passwords.Verify(r.Context(), hash, password)
	switch {
	case errors.Is(err, authn.ErrBusy):
		return 0, errBusy
	case err != nil:
		return 0, err
	case !ok || userID == 0:
		return 0, errMismatch
	}
	if rehash {
		if newHash, err := a.d.Passwords.Hash(r.Context(), password); err == nil {
			err = a.d.Store.RehashPassword(r.Context(), userID, hash, newHash)
			if err != nil {
				a.d.Log.WarnContext(r.Context(), "rehash password", "err", err)
			}
		}
	}
	return userID, nil
}
