package allauth

import (
	"errors"
	"net/http"
	"strings"

	"errata/authn"
	"errata/store"
)

// errBadResetKey is allauth's 400 of a reset key that does not work.
var errBadResetKey = invalid("token_invalid", "The password reset token was invalid.", "key")

// ResetPath is where the link of a password reset mail leads, below the
// server's public address: the page that posts the key and the new
// password to POST auth/password/reset.
const ResetPath = "/reset-password/"

// RequestPassword serves POST /_allauth/{client}/v1/auth/password/request
// {email}: when an active user has the address, a mail with a reset link
// (the key works once, for an hour, and only while the password is
// unchanged) goes out through the outbox. The answer is 200 whether or not
// the address has an account; past 3 requests an hour from one client
// address or for one address, 429.
func (a *API) RequestPassword() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		var body struct {
			Email string `json:"email"`
		}
		if err := decode(r.Request, &body); err != nil {
			return err
		}
		if err := checkEmail(body.Email, "email"); err != nil {
			return err
		}
		if _, err := a.attempt(r, authn.ResetRequestsPerAddress.ForAddr(a.clientAddr(r.Request)),
			authn.ResetRequestsPerAccount.For(body.Email)); err != nil {
			return err
		}
		userID, hash, err := a.d.Store.PasswordHash(r.Context(), body.Email)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		default:
			key := a.d.ResetKeys.Sign(userID, hash, a.d.now().Add(authn.ResetKeyLifetime))
			link := a.publicBase(r.Request) + ResetPath + key + "/"
			err := a.d.Store.QueueSecurityMail(r.Context(), userID, "Reset your errata password",
				"Someone, hopefully you, asked to reset the password of your errata account.\n\n"+
					"To choose a new password, open this link within an hour:\n\n"+link+"\n\n"+
					"The link works once. If you did not ask for this, ignore this message: your password stays as it is.")
			if err != nil {
				return err
			}
			a.notifyMail()
		}
		write(w, a.d.Log, http.StatusOK, envelope{Status: http.StatusOK})
		return nil
	})
}

// publicBase is scheme://host of the links the API writes: PUBLIC_URL,
// else the request's own.
func (a *API) publicBase(r *http.Request) string {
	if a.d.PublicURL != "" {
		return strings.TrimSuffix(a.d.PublicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// checkResetKey returns the user a reset key resets and the password hash
// it was made for, or errBadResetKey.
func (a *API) checkResetKey(r request, key string) (userID int64, email, hash string, err error) {
	userID, err = a.d.ResetKeys.User(key)
	if err != nil {
		return 0, "", "", errBadResetKey
	}
	email, hash, err = a.d.Store.UserPasswordHash(r.Context(), userID)
	if errors.Is(err, store.ErrNotFound) {
		return 0, "", "", errBadResetKey
	}
	if err != nil {
		return 0, "", "", err
	}
	if err := a.d.ResetKeys.Check(key, hash, a.d.now()); err != nil {
		return 0, "", "", errBadResetKey
	}
	return userID, email, hash, nil
}

// PasswordResetInfo serves GET /_allauth/{client}/v1/auth/password/reset
// with the key in X-Password-Reset-Key (or the query's key): the user it
// resets, or 400 token_invalid.
func (a *API) PasswordResetInfo() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		key := r.Header.Get("X-Password-Reset-Key")
		if key == "" {
			key = r.URL.Query().Get("key")
		}
		userID, _, _, err := a.checkResetKey(r, key)
		if err != nil {
			return err
		}
		u, err := a.userOf(r.Context(), userID)
		if err != nil {
			return err
		}
		write(w, a.d.Log, http.StatusOK, envelope{Status: http.StatusOK, Data: struct {
			User user `json:"user"`
		}{u}})
		return nil
	})
}

// ResetPassword serves POST /_allauth/{client}/v1/auth/password/reset
// {key, password}: the key of a reset mail sets a new password, once. Every
// session of the user ends and a notice is mailed; the answer is 401 with
// the flows: the person signs in with the new password (and the second
// factor).
func (a *API) ResetPassword() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		var body struct {
			Key      string `json:"key"`
			Password string `json:"password"`
		}
		if err := decode(r.Request, &body); err != nil {
			return err
		}
		if body.Key == "" {
			return invalid("required", "This field is required.", "key")
		}
		userID, email, oldHash, err := a.checkResetKey(r, body.Key)
		if err != nil {
			return err
		}
		hash, err := a.hashNewPassword(r, body.Password, email, "password")
		if err != nil {
			return err
		}
		err = a.d.Store.ResetPassword(r.Context(), userID, oldHash, hash)
		if errors.Is(err, store.ErrNotFound) { // used meanwhile
			return errBadResetKey
		}
		if err != nil {
			return err
		}
		a.notifyMail()
		return a.unauthenticated(w, r, nil, false)
	})
}
