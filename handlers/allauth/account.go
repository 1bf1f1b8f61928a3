package allauth

import (
	"errors"
	"net/http"
	"slices"

	"errata/authn"
	"errata/store"
)

// errIncorrectPassword is allauth's answer to a wrong password of the
// signed-in user, about param.
func errIncorrectPassword(param string) error {
	return invalid("incorrect_password", "Incorrect password.", param)
}

// verifyOwnPassword checks password against the stored one of the signed-in
// user userID: nil, errIncorrectPassword(param), or errBusy. Failures count
// as the user's failed proofs: past their limits, 429.
func (a *API) verifyOwnPassword(r request, userID int64, password, param string) error {
	at, err := a.attempt(r, authn.ProofFailuresOf(userID)...)
	if err != nil {
		return err
	}
	err = settle(r, at, a.checkOwnPassword(r, userID, password), errIncorrect)
	if errors.Is(err, errIncorrect) {
		return errIncorrectPassword(param)
	}
	return err
}

// errIncorrect is checkOwnPassword's wrong password.
var errIncorrect = errors.New("allauth: incorrect password")

// checkOwnPassword checks password against the stored one of userID: nil,
// errIncorrect, errBusy, or the store's error.
func (a *API) checkOwnPassword(r request, userID int64, password string) error {
	u, err := a.d.Store.User(r.Context(), userID)
	if err != nil {
		return err
	}
	_, hash, err := a.d.Store.PasswordHash(r.Context(), u.Email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	ok, _, err := a.d.Passwords.Verify(r.Context(), hash, password)
	switch {
	case errors.Is(err, authn.ErrBusy):
		return errBusy
	case err != nil:
		return err
	case !ok:
		return errIncorrect
	}
	return nil
}

// Reauthenticate serves POST /_allauth/{client}/v1/auth/reauthenticate
// {password}: the signed-in person proves who they are again, which the
// sensitive changes need within authn.RecentAuthentication. The session
// gets a new id (the app's in meta.session_token) and answers 200; a
// wrong password is 400 incorrect_password.
func (a *API) Reauthenticate() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		s, id, ok, err := a.signedIn(w, r)
		if !ok {
			return err
		}
		var body struct {
			Password string `json:"password"`
		}
		if err := decode(r.Request, &body); err != nil {
			return err
		}
		if body.Password == "" {
			return invalid("required", "This field is required.", "password")
		}
		if err := a.verifyOwnPassword(r, s.UserID, body.Password, "password"); err != nil {
			return err
		}
		newID, s, err := a.d.Auth.RotateSession(r.Context(), id, store.SessionAuthenticated)
		if errors.Is(err, authn.ErrSessionGone) { // ended or rotated meanwhile
			a.clearSession(w, r)
			return a.unauthenticated(w, r, nil, false)
		}
		if err != nil {
			return err
		}
		a.setSession(w, r, newID, s)
		return a.authenticated(w, r, s, newID)
	})
}

// sessionInfo is allauth's session of a list.
type sessionInfo struct {
	ID         int64   `json:"id"`
	UserAgent  string  `json:"user_agent"`
	IP         string  `json:"ip"`
	CreatedAt  float64 `json:"created_at"`
	LastSeenAt float64 `json:"last_seen_at"`
	IsCurrent  bool    `json:"is_current"`
}

// listSessions answers 200 with the live sessions of the user of current.
func (a *API) listSessions(w http.ResponseWriter, r request, current store.Session) error {
	list, err := a.d.Store.UserSessions(r.Context(), current.UserID, a.d.Auth.Sessions.Idle())
	if err != nil {
		return err
	}
	data := make([]sessionInfo, len(list))
	for i, s := range list {
		data[i] = sessionInfo{ID: s.ID, UserAgent: s.UserAgent, IP: s.IP, CreatedAt: epoch(s.CreatedAt),
			LastSeenAt: epoch(s.LastSeenAt), IsCurrent: s.ID == current.ID}
	}
	write(w, a.d.Log, http.StatusOK, envelope{Status: http.StatusOK, Data: data})
	return nil
}

// Sessions serves GET /_allauth/{client}/v1/auth/sessions: the signed-in
// user's sessions, the current one marked.
func (a *API) Sessions() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		s, _, ok, err := a.signedIn(w, r)
		if !ok {
			return err
		}
		return a.listSessions(w, r, s)
	})
}

// maxEndSessions bounds the ids one DELETE auth/sessions names.
const maxEndSessions = 1000

// EndSessions serves DELETE /_allauth/{client}/v1/auth/sessions
// {sessions: [id, ...]}: it ends those of the ids that are the caller's
// own sessions (another user's are left alone) and answers the list; when
// the current session is among them, 401 as a sign-out.
func (a *API) EndSessions() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		s, _, ok, err := a.signedIn(w, r)
		if !ok {
			return err
		}
		var body struct {
			Sessions []int64 `json:"sessions"`
		}
		if err := decode(r.Request, &body); err != nil {
			return err
		}
		switch {
		case body.Sessions == nil:
			return invalid("required", "This field is required.", "sessions")
		case len(body.Sessions) > maxEndSessions:
			return invalid("invalid", "Too many sessions.", "sessions")
		}
		if _, err := a.d.Store.DeleteUserSessions(r.Context(), s.UserID, body.Sessions); err != nil {
			return err
		}
		if slices.Contains(body.Sessions, s.ID) {
			a.clearSession(w, r)
			return a.unauthenticated(w, r, nil, false)
		}
		return a.listSessions(w, r, s)
	})
}

// passwordError is the 400 of a new password the rules refuse, about
// param; nil when err is not a *authn.PasswordError.
func passwordError(err error, param string) error {
	if pe, ok := errors.AsType[*authn.PasswordError](err); ok {
		return invalid(pe.Code, pe.Message, param)
	}
	return err
}

// hashNewPassword checks password against the rules for the user of
// email and hashes it: the 400 of the rules, errBusy, or the hash.
func (a *API) hashNewPassword(r request, password, email, param string) (string, error) {
	if password == "" {
		return "", invalid("required", "This field is required.", param)
	}
	if err := authn.CheckNewPassword(password, email); err != nil {
		return "", passwordError(err, param)
	}
	hash, err := a.d.Passwords.Hash(r.Context(), password)
	if errors.Is(err, authn.ErrBusy) {
		return "", errBusy
	}
	return hash, err
}

// ChangePassword serves POST /_allauth/{client}/v1/account/password/change
// {current_password, new_password}: the current password (when the user
// has one) proves the person; the change ends every other session of the
// user and mails a notice. It answers 200 in the shape of GET
// auth/session.
func (a *API) ChangePassword() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		s, _, ok, err := a.signedIn(w, r)
		if !ok {
			return err
		}
		var body struct {
			Current string `json:"current_password"`
			New     string `json:"new_password"`
		}
		if err := decode(r.Request, &body); err != nil {
			return err
		}
		u, err := a.d.Store.User(r.Context(), s.UserID)
		if err != nil {
			return err
		}
		if u.HasPasswordAuth {
			if body.Current == "" {
				return invalid("required", "This field is required.", "current_password")
			}
			if err := a.verifyOwnPassword(r, u.ID, body.Current, "current_password"); err != nil {
				return err
			}
		}
		hash, err := a.hashNewPassword(r, body.New, u.Email, "new_password")
		if err != nil {
			return err
		}
		if err := a.d.Store.SetPassword(r.Context(), u.ID, hash, s.ID); err != nil {
			return err
		}
		a.notifyMail()
		return a.authenticated(w, r, s, "")
	})
}
