package allauth

import (
	"context"
	"errors"
	"math/bits"
	"net/http"
	"time"

	"errata/authn"
	"errata/store"
)

// totpIssuer names errata in authenticator apps, before the account.
const totpIssuer = "errata"

// Types of authenticators, as allauth names them.
const (
	typeTOTP          = "totp"
	typeRecoveryCodes = "recovery_codes"
)

// secondFactorTypes returns the types of the second factors userID has,
// in allauth's names, as the flows that ask for one list them.
func (a *API) secondFactorTypes(ctx context.Context, userID int64) ([]string, error) {
	totp, codes, err := a.d.Store.SecondFactors(ctx, userID)
	var types []string
	if totp {
		types = append(types, typeTOTP)
	}
	if codes {
		types = append(types, typeRecoveryCodes)
	}
	return types, err
}

// codeBody is the body of the routes that take a code: {code}.
type codeBody struct {
	Code string `json:"code"`
}

// errIncorrectCode is allauth's answer to a code that is not the user's.
var errIncorrectCode = invalid("incorrect_code", "Incorrect code.", "code")

// decodeCode reads the {code} of r; an empty one is 400 required.
func decodeCode(r request) (string, error) {
	var body codeBody
	if err := decode(r.Request, &body); err != nil {
		return "", err
	}
	if authn.TrimCode(body.Code) == "" {
		return "", invalid("required", "This field is required.", "code")
	}
	return body.Code, nil
}

// spendCode spends code as a second factor of userID, and returns its
// type: a TOTP code of a step later than the last accepted one, or an
// unused recovery code, each taken by a conditional update (store), so
// that a code passes once even when two requests bring it at once. A code
// of neither is "".
func (a *API) spendCode(ctx context.Context, userID int64, code string) (string, error) {
	auth, err := a.d.Store.TOTPAuthenticator(ctx, userID)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return "", err
	default:
		secret, err := a.d.TOTPSecrets.Open(userID, auth.SecretEncrypted)
		if err != nil {
			return "", err
		}
		if step, ok := authn.MatchTOTP(secret, code, a.d.now(), auth.LastStep); ok {
			accepted, err := a.d.Store.AcceptTOTPStep(ctx, userID, step)
			if err != nil || !accepted { // !accepted: another request took this step first
				return "", err
			}
			return typeTOTP, nil
		}
	}
	rc, err := a.d.Store.RecoveryCodes(ctx, userID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", nil
	case err != nil:
		return "", err
	}
	seed, err := a.d.RecoverySeeds.Open(userID, rc.SeedEncrypted)
	if err != nil {
		return "", err
	}
	i := authn.RecoveryCodeIndex(seed, authn.TrimCode(code))
	if i < 0 || rc.UsedMask&(1<<i) != 0 {
		return "", nil
	}
	spent, err := a.d.Store.SpendRecoveryCode(ctx, userID, i)
	if err != nil || !spent {
		return "", err
	}
	return typeRecoveryCodes, nil
}

// proveSecondFactor spends code for userID within the throttle of
// failures to prove who one is (5 per 20 s, 20 per hour): a throttled user
// is 429 before the code is looked at, a wrong code 400 incorrect_code and
// counted, a right one (or no verdict: the database out of reach) not
// counted.
func (a *API) proveSecondFactor(r request, userID int64, code string) (string, error) {
	at, err := a.attempt(r, authn.ProofFailuresOf(userID)...)
	if err != nil {
		return "", err
	}
	kind, err := a.spendCode(r.Context(), userID, code)
	if err == nil && kind == "" {
		err = errIncorrectCode
	}
	return kind, settle(r, at, err, errIncorrectCode)
}

// TwoFactorAuthenticate serves POST
// /_allauth/{client}/v1/auth/2fa/authenticate {code}: a TOTP code or a
// recovery code completes the sign-in pending its second factor. The
// session then gets a new id (the pending one stops working) and is
// authenticated: 200. A wrong code is 400 incorrect_code; without a
// pending sign-in (none, expired after 15 minutes, or completed already)
// the answer is 401 with the flows.
func (a *API) TwoFactorAuthenticate() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		s, id, err := a.session(r)
		if err != nil && !errors.Is(err, errNoSession) {
			return err
		}
		if err != nil || s.State != store.SessionPending {
			return a.unauthenticated(w, r, nil, false)
		}
		return a.passSecondFactor(w, r, s, id)
	})
}

// TwoFactorReauthenticate serves POST
// /_allauth/{client}/v1/auth/2fa/reauthenticate {code}: a TOTP code or a
// recovery code renews the session's recent authentication, which the
// sensitive changes need, and gives the session a new id: 200 as
// auth/session. A wrong code is 400 incorrect_code.
func (a *API) TwoFactorReauthenticate() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		s, id, ok, err := a.signedIn(w, r)
		if !ok {
			return err
		}
		return a.passSecondFactor(w, r, s, id)
	})
}

// passSecondFactor reads the {code} of r and, when it is a second factor
// of the user of s, the session of id (pending its second factor, or
// authenticated and proving who they are again) gets a new id and is
// authenticated now: 200 as auth/session, the code's type among the
// methods. A session that ended or rotated meanwhile is 401.
func (a *API) passSecondFactor(w http.ResponseWriter, r request, s store.Session, id string) error {
	code, err := decodeCode(r)
	if err != nil {
		return err
	}
	kind, err := a.proveSecondFactor(r, s.UserID, code)
	if err != nil {
		return err
	}
	newID, rotated, err := a.d.Auth.RotateSession(r.Context(), id, s.State)
	if errors.Is(err, authn.ErrSessionGone) {
		a.clearSession(w, r)
		return a.unauthenticated(w, r, nil, false)
	}
	if err != nil {
		return err
	}
	a.setSession(w, r, newID, rotated)
	return a.authenticated(w, r, rotated, newID, method{Method: "mfa", At: epoch(rotated.AuthenticatedAt),
		Type: kind, Reauthenticated: s.State == store.SessionAuthenticated})
}

// recentlyAuthenticated returns the authenticated session of r when its
// person proved who they are within authn.RecentAuthentication; else it
// answers 401 with the reauthentication flows (or as signedIn does).
func (a *API) recentlyAuthenticated(w http.ResponseWriter, r request) (store.Session, string, bool, error) {
	s, id, ok, err := a.signedIn(w, r)
	if !ok {
		return s, id, false, err
	}
	caller := authn.Caller{SessionID: s.ID, AuthenticatedAt: s.AuthenticatedAt}
	if caller.RecentlyAuthenticated(a.d.now()) { // the rule of /api/0/api-tokens/ too
		return s, id, true, nil
	}
	u, err := a.userOf(r.Context(), s.UserID)
	if err != nil {
		return s, id, false, err
	}
	types, err := a.secondFactorTypes(r.Context(), s.UserID)
	if err != nil {
		return s, id, false, err
	}
	flows := []flow{{ID: "reauthenticate"}}
	if len(types) > 0 {
		flows = append(flows, flow{ID: "mfa_reauthenticate", Types: types})
	}
	write(w, a.d.Log, http.StatusUnauthorized, envelope{Status: http.StatusUnauthorized,
		Data: struct {
			User    user     `json:"user"`
			Methods []method `json:"methods"`
			Flows   []flow   `json:"flows"`
		}{u, []method{{Method: "password", At: epoch(s.AuthenticatedAt), Email: u.Email}}, flows},
		Meta: authMeta{IsAuthenticated: true}})
	return s, id, false, nil
}

// totpOut is allauth's TOTPAuthenticator.
type totpOut struct {
	Type       string   `json:"type"`
	CreatedAt  float64  `json:"created_at"`
	LastUsedAt *float64 `json:"last_used_at"`
}

// recoveryCodesOut is allauth's RecoveryCodesAuthenticator.
type recoveryCodesOut struct {
	Type            string   `json:"type"`
	CreatedAt       float64  `json:"created_at"`
	LastUsedAt      *float64 `json:"last_used_at"`
	TotalCodeCount  int      `json:"total_code_count"`
	UnusedCodeCount int      `json:"unused_code_count"`
}

// unusedRecoveryCodesOut is allauth's SensitiveRecoveryCodesAuthenticator:
// the codes too.
type unusedRecoveryCodesOut struct {
	recoveryCodesOut
	UnusedCodes []string `json:"unused_codes"`
}

// optionalEpoch is epoch of t, or nil.
func optionalEpoch(t *time.Time) *float64 {
	if t == nil {
		return nil
	}
	e := epoch(*t)
	return &e
}

// totpOf is allauth's TOTPAuthenticator of a.
func totpOf(a store.TOTPAuthenticator) totpOut {
	return totpOut{Type: typeTOTP, CreatedAt: epoch(a.DateCreated), LastUsedAt: optionalEpoch(a.LastUsedAt)}
}

// recoveryCodesOf is allauth's RecoveryCodesAuthenticator of rc.
func recoveryCodesOf(rc store.RecoveryCodes) recoveryCodesOut {
	used := bits.OnesCount32(uint32(rc.UsedMask) & (1<<authn.RecoveryCodeCount - 1))
	return recoveryCodesOut{Type: typeRecoveryCodes, CreatedAt: epoch(rc.DateCreated), LastUsedAt: optionalEpoch(rc.LastUsedAt),
		TotalCodeCount: authn.RecoveryCodeCount, UnusedCodeCount: authn.RecoveryCodeCount - used}
}

// unusedRecoveryCodesOf is allauth's SensitiveRecoveryCodesAuthenticator
// of rc, whose seed is seed: the codes whose bit of the used mask is clear.
func unusedRecoveryCodesOf(rc store.RecoveryCodes, seed string) unusedRecoveryCodesOut {
	out := unusedRecoveryCodesOut{recoveryCodesOf(rc), []string{}}
	for i, c := range authn.RecoveryCodes(seed) {
		if rc.UsedMask&(1<<i) == 0 {
			out.UnusedCodes = append(out.UnusedCodes, c)
		}
	}
	return out
}

// Authenticators serves GET /_allauth/{client}/v1/account/authenticators:
// the user's TOTP authenticator and recovery codes (their counts, not the
// codes).
func (a *API) Authenticators() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		s, _, ok, err := a.signedIn(w, r)
		if !ok {
			return err
		}
		list := []any{}
		auth, err := a.d.Store.TOTPAuthenticator(r.Context(), s.UserID)
		switch {
		case err == nil:
			list = append(list, totpOf(auth))
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		rc, err := a.d.Store.RecoveryCodes(r.Context(), s.UserID)
		switch {
		case err == nil:
			list = append(list, recoveryCodesOf(rc))
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		write(w, a.d.Log, http.StatusOK, envelope{Status: http.StatusOK, Data: list})
		return nil
	})
}

// TOTP serves GET /_allauth/{client}/v1/account/authenticators/totp: the
// user's TOTP authenticator, or 404 with a secret to enrol
// (meta.secret, meta.totp_url). The server makes the secret and keeps it,
// sealed, with the session until POST confirms it; the same session is
// offered the same secret until then.
func (a *API) TOTP() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		s, _, ok, err := a.signedIn(w, r)
		if !ok {
			return err
		}
		auth, err := a.d.Store.TOTPAuthenticator(r.Context(), s.UserID)
		if err == nil {
			write(w, a.d.Log, http.StatusOK, envelope{Status: http.StatusOK, Data: totpOf(auth)})
			return nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		secret, err := a.offeredTOTPSecret(r.Context(), s)
		if err != nil {
			return err
		}
		u, err := a.d.Store.User(r.Context(), s.UserID)
		if err != nil {
			return err
		}
		write(w, a.d.Log, http.StatusNotFound, envelope{Status: http.StatusNotFound, Meta: struct {
			Secret  string `json:"secret"`
			TOTPURL string `json:"totp_url"`
		}{authn.EncodeTOTPSecret(secret), authn.TOTPURI(secret, totpIssuer, u.Email)}})
		return nil
	})
}

// offeredTOTPSecret returns the TOTP secret offered to the session s for
// enrolment: the one it holds, or a new one kept sealed with it.
func (a *API) offeredTOTPSecret(ctx context.Context, s store.Session) ([]byte, error) {
	sealed, err := a.d.Store.OfferTOTPSecret(ctx, s.ID, a.d.TOTPSecrets.Seal(s.UserID, authn.NewTOTPSecret()))
	if err != nil {
		return nil, err
	}
	return a.d.TOTPSecrets.Open(s.UserID, sealed)
}

// ActivateTOTP serves POST /_allauth/{client}/v1/account/authenticators/totp
// {code}: a code of the secret the session was offered turns TOTP on (that
// code's step is the last accepted one, so it cannot sign in again) and,
// when the user has none, makes a set of recovery codes: 200 with the
// authenticator and meta.recovery_codes_generated. A wrong code (or none
// offered) is 400 incorrect_code, a user with TOTP already 409; it needs
// recent authentication.
func (a *API) ActivateTOTP() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		s, _, ok, err := a.recentlyAuthenticated(w, r)
		if !ok {
			return err
		}
		code, err := decodeCode(r)
		if err != nil {
			return err
		}
		has, _, err := a.d.Store.SecondFactors(r.Context(), s.UserID)
		if err != nil {
			return err
		}
		if has {
			return status(http.StatusConflict)
		}
		sealed, err := a.d.Store.OfferedTOTPSecret(r.Context(), s.ID)
		if err != nil {
			return err
		}
		if sealed == nil {
			return errIncorrectCode
		}
		secret, err := a.d.TOTPSecrets.Open(s.UserID, sealed)
		if err != nil {
			return err
		}
		step, ok := authn.MatchTOTP(secret, code, a.d.now(), 0)
		if !ok {
			return errIncorrectCode
		}
		created, err := a.d.Store.ActivateTOTP(r.Context(), s.UserID, sealed, step,
			a.d.RecoverySeeds.Seal(s.UserID, authn.NewRecoverySeed()))
		if errors.Is(err, store.ErrConflict) {
			return status(http.StatusConflict)
		}
		if err != nil {
			return err
		}
		a.d.Auth.ForgetUser(s.UserID) // require2FA lets it in at once (authn.ScopesIn)
		auth, err := a.d.Store.TOTPAuthenticator(r.Context(), s.UserID)
		if err != nil {
			return err
		}
		write(w, a.d.Log, http.StatusOK, envelope{Status: http.StatusOK, Data: totpOf(auth),
			Meta: struct {
				RecoveryCodesGenerated bool `json:"recovery_codes_generated"`
			}{created}})
		return nil
	})
}

// DeactivateTOTP serves DELETE
// /_allauth/{client}/v1/account/authenticators/totp: TOTP is turned off,
// and the recovery codes with it (it was the last second factor): 200. A
// user without TOTP is 404; it needs recent authentication.
func (a *API) DeactivateTOTP() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		s, _, ok, err := a.recentlyAuthenticated(w, r)
		if !ok {
			return err
		}
		err = a.d.Store.DeleteTOTP(r.Context(), s.UserID)
		if errors.Is(err, store.ErrNotFound) {
			return status(http.StatusNotFound)
		}
		if err != nil {
			return err
		}
		a.d.Auth.ForgetUser(s.UserID) // require2FA refuses it at once (authn.ScopesIn)
		write(w, a.d.Log, http.StatusOK, envelope{Status: http.StatusOK})
		return nil
	})
}

// RecoveryCodes serves GET
// /_allauth/{client}/v1/account/authenticators/recovery-codes: the user's
// unused recovery codes (a used one is never shown again), or 404 when
// the user has none. It needs recent authentication.
func (a *API) RecoveryCodes() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		s, _, ok, err := a.recentlyAuthenticated(w, r)
		if !ok {
			return err
		}
		return a.writeRecoveryCodes(w, r, s.UserID)
	})
}

// writeRecoveryCodes answers 200 with the user's unused recovery codes, or
// 404 when the user has none.
func (a *API) writeRecoveryCodes(w http.ResponseWriter, r request, userID int64) error {
	rc, err := a.d.Store.RecoveryCodes(r.Context(), userID)
	if errors.Is(err, store.ErrNotFound) {
		return status(http.StatusNotFound)
	}
	if err != nil {
		return err
	}
	seed, err := a.d.RecoverySeeds.Open(userID, rc.SeedEncrypted)
	if err != nil {
		return err
	}
	write(w, a.d.Log, http.StatusOK, envelope{Status: http.StatusOK, Data: unusedRecoveryCodesOf(rc, seed)})
	return nil
}

// RegenerateRecoveryCodes serves POST
// /_allauth/{client}/v1/account/authenticators/recovery-codes: a new set
// of recovery codes replaces the user's (the old codes stop working, the
// user is mailed), answered 200 as GET. As in allauth, only a user with
// TOTP has recovery codes made here: another is 400
// cannot_generate_recovery_codes. It needs recent authentication.
func (a *API) RegenerateRecoveryCodes() Handler {
	return a.serve(func(w http.ResponseWriter, r request) error {
		s, _, ok, err := a.recentlyAuthenticated(w, r)
		if !ok {
			return err
		}
		totp, _, err := a.d.Store.SecondFactors(r.Context(), s.UserID)
		if err != nil {
			return err
		}
		if !totp {
			return invalid("cannot_generate_recovery_codes",
				"You cannot generate recovery codes without two-factor authentication.", "")
		}
		if err := a.d.Store.RegenerateRecoveryCodes(r.Context(), s.UserID, a.d.RecoverySeeds.Seal(s.UserID, authn.NewRecoverySeed())); err != nil {
			return err
		}
		return a.writeRecoveryCodes(w, r, s.UserID)
	})
}
