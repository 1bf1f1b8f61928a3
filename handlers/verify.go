package handlers

import (
	"errors"
	"net/http"
	"strings"

	"errata/authn"
	"errata/store"
)

// errBadEmailKey is the answer to a confirmation key that is malformed,
// forged, expired or names an address that no longer exists.
var errBadEmailKey = badRequest("Invalid or expired key")

// verifyEmail checks key and marks the address it names verified.
func verifyEmail(d Deps, r *http.Request, keys *authn.EmailKeys, key string) error {
	k, err := keys.Check(key, d.Now())
	if err != nil {
		return errBadEmailKey
	}
	err = d.Store.VerifyEmailAddress(r.Context(), k.UserID, k.Email)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errBadEmailKey
	case errors.Is(err, store.ErrEmailTaken):
		return badRequest("Email already exists")
	}
	return err
}

// verifyIn is the body of POST /api/0/auth/email/verify/.
type verifyIn struct {
	Key opt[string] `json:"key"`
}

// handleEmailVerify serves POST /api/0/auth/email/verify/: the key of a
// confirmation link, which is its own proof (no token), verifies the address
// it names.
func handleEmailVerify(d Deps) apiFunc {
	keys := authn.NewEmailKeys(d.SecretKey)
	return func(w http.ResponseWriter, r *http.Request) error {
		var in verifyIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		switch {
		case !in.Key.Set:
			return invalid(missing, "Field required", "body", "key")
		case in.Key.Null:
			return invalid(typeError, "Input should be a valid string", "body", "key")
		}
		if !validEmailKey(in.Key.V) {
			return errBadEmailKey
		}
		if err := verifyEmail(d, r, keys, in.Key.V); err != nil {
			return err
		}
		noContent(w)
		return nil
	}
}

// base64URLAlphabet is the alphabet of unpadded base64url.
const base64URLAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// validEmailKey reports whether key has the shape of a confirmation key:
// two base64url parts of 1 to 600 and 1 to 100 characters, joined by a
// dot. (A regular expression with these counts compiles to a 400 KB
// program at start-up.)
func validEmailKey(key string) bool {
	payload, sig, ok := strings.Cut(key, ".")
	return ok && len(payload) >= 1 && len(payload) <= 600 && len(sig) >= 1 && len(sig) <= 100 &&
		strings.Trim(payload, base64URLAlphabet) == "" && strings.Trim(sig, base64URLAlphabet) == ""
}
