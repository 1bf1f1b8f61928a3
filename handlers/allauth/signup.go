package allauth

import (
	"errors"
	"net/http"

	"errata/authn"
	"errata/store"
)

// errEmailTaken is the 400 of a sign-up with an address that has an
// account.
var errEmailTaken = invalid("email_taken", "A user is already registered with this email address.", "email")

// errBadEmailKey is the 400 of a confirmation key that is malformed,
// forged, expired, or names an address that no longer exists.
var errBadEmailKey = invalid("invalid", "Invalid or expired key.", "key")

// Signup serves POST /_allauth/{client}/v1/auth/signup {email, password}:
// with SIGNUP=open, a new user whose address waits for its confirmation
// (mailed), signed in at once (200); otherwise 403. A signed-in client is
// 409; a taken address 400 email_taken; a password the rules refuse 400
// with their code.
func (a *API) Signup() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		if !a.d.SignupOpen {
			return status(http.StatusForbidden)
		}
		oldID, err := a.notSignedIn(r)
		if err != nil {
			return err
		}
		var body struct {
			Email    string `json:"email"`
			Password string `json:"password"`
		}
		if err := decode(r.Request, &body); err != nil {
			return err
		}
		if err := checkEmail(body.Email, "email"); err != nil {
			return err
		}
		hash, err := a.hashNewPassword(r, body.Password, body.Email, "password")
		if err != nil {
			return err
		}
		userID, err := a.d.Store.SignUp(r.Context(), body.Email, hash, func(id int64) (store.Mail, error) {
			return a.d.ConfirmationMail(r.Request, id, body.Email)
		})
		if errors.Is(err, store.ErrEmailTaken) {
			return errEmailTaken
		}
		if err != nil {
			return err
		}
		a.notifyMail()
		if oldID != "" { // a pending sign-in of someone else ends
			if err := a.d.Auth.EndSession(r.Context(), oldID); err != nil {
				return err
			}
		}
		id, s, err := a.d.Auth.StartSession(r.Context(), authn.NewSession{
			UserID: userID, Client: r.client, UserAgent: r.UserAgent(), IP: a.clientIP(r.Request),
		})
		if err != nil {
			return err
		}
		a.setSession(w, r, id, s)
		return a.authenticated(w, r, s, id)
	})
}

// notifyMail wakes the mail worker after a message was queued.
func (a *API) notifyMail() {
	if a.d.NotifyMail != nil {
		a.d.NotifyMail()
	}
}

// checkEmailKey returns what a confirmation key says, or errBadEmailKey.
func (a *API) checkEmailKey(key string) (authn.EmailKey, error) {
	k, err := a.d.EmailKeys.Check(key, a.d.now())
	if err != nil {
		return k, errBadEmailKey
	}
	return k, nil
}

// VerifyEmailInfo serves GET /_allauth/{client}/v1/auth/email/verify with
// the key in X-Email-Verification-Key (or the query's key, as
// auth/password/reset takes it): the address and user it confirms.
func (a *API) VerifyEmailInfo() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		key := r.Header.Get("X-Email-Verification-Key")
		if key == "" {
			key = r.URL.Query().Get("key")
		}
		k, err := a.checkEmailKey(key)
		if err != nil {
			return err
		}
		u, err := a.userOf(r.Context(), k.UserID)
		if errors.Is(err, store.ErrNotFound) {
			return errBadEmailKey
		}
		if err != nil {
			return err
		}
		write(w, a.d.Log, http.StatusOK, envelope{Status: http.StatusOK,
			Data: struct {
				Email string `json:"email"`
				User  user   `json:"user"`
			}{k.Email, u},
			Meta: struct {
				IsAuthenticating bool `json:"is_authenticating"`
			}{false}})
		return nil
	})
}

// VerifyEmail serves POST /_allauth/{client}/v1/auth/email/verify {key}:
// the key of a confirmation mail, its own proof, verifies the address it
// names. A signed-in client gets 200 with its session, another 401 (the
// address is verified all the same, as allauth answers).
func (a *API) VerifyEmail() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		var body struct {
			Key string `json:"key"`
		}
		if err := decode(r.Request, &body); err != nil {
			return err
		}
		if body.Key == "" {
			return invalid("required", "This field is required.", "key")
		}
		k, err := a.checkEmailKey(body.Key)
		if err != nil {
			return err
		}
		err = a.d.Store.VerifyEmailAddress(r.Context(), k.UserID, k.Email)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return errBadEmailKey
		case errors.Is(err, store.ErrEmailTaken):
			return invalid("email_taken", "Another account verified this address first.", "key")
		case err != nil:
			return err
		}
		s, _, err := a.session(r)
		switch {
		case errors.Is(err, errNoSession):
			return a.unauthenticated(w, r, nil, false)
		case err != nil:
			return err
		case s.State != store.SessionAuthenticated:
			return a.unauthenticated(w, r, &s, false)
		}
		return a.authenticated(w, r, s, "")
	})
}

// ResendVerification serves POST
// /_allauth/{client}/v1/auth/email/verify/resend: the confirmation mail of
// the signed-in user's first unverified address (the primary first) is
// queued again. Without a session or an unverified address, nothing is
// pending: 409.
func (a *API) ResendVerification() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		s, _, err := a.session(r)
		switch {
		case errors.Is(err, errNoSession):
			return status(http.StatusConflict)
		case err != nil:
			return err
		case s.State != store.SessionAuthenticated:
			return status(http.StatusConflict)
		}
		addrs, err := a.d.Store.EmailAddresses(r.Context(), s.UserID)
		if err != nil {
			return err
		}
		for _, e := range addrs {
			if e.IsVerified {
				continue
			}
			m, err := a.d.ConfirmationMail(r.Request, s.UserID, e.Email)
			if err != nil {
				return err
			}
			if err := a.d.Store.ResendConfirmation(r.Context(), s.UserID, e.Email, m); err != nil {
				return err
			}
			a.notifyMail()
			write(w, a.d.Log, http.StatusOK, envelope{Status: http.StatusOK})
			return nil
		}
		return status(http.StatusConflict)
	})
}
