package handlers

import (
	"net/http"

	"errata/authn"
)

// recoveryCodesOut is RecoveryCodesSchema.
type recoveryCodesOut struct {
	Codes []string `json:"codes"`
}

// handleRecoveryCodesGenerate serves GET /api/0/generate-recovery-codes/:
// a new set of codes whose seed is held for the caller, replacing any held
// one, until a POST confirms it or it expires. The codes are not active yet.
func handleRecoveryCodesGenerate(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		seed := authn.NewRecoverySeed()
		if err := d.RecoverySeeds.Put(r.Context(), caller(r).UserID, seed); err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, recoveryCodesOut{Codes: authn.RecoveryCodes(seed)})
		return nil
	}
}

// recoveryCodeIn is RecoveryCodeSchema.
type recoveryCodeIn struct {
	Code opt[string] `json:"code"`
}

// handleRecoveryCodesActivate serves POST /api/0/generate-recovery-codes/:
// one of the held codes proves the caller wrote them down, and their seed,
// encrypted, replaces the caller's recovery codes. A wrong code leaves the
// held seed for another try; a right one consumes it first, so that of two
// concurrent POSTs (on two replicas) only one activates it. Should saving
// then fail, the caller asks for new codes.
func handleRecoveryCodesActivate(d Deps) apiFunc {
	seeds := authn.NewSeedCipher(d.SecretKey)
	return func(w http.ResponseWriter, r *http.Request) error {
		var in recoveryCodeIn
		if err := decodeJSON(w, r, &in); err != nil {
			return err
		}
		switch {
		case !in.Code.Set:
			return invalid(missing, "Field required", "body", "code")
		case in.Code.Null:
			return invalid(typeError, "Input should be a valid string", "body", "code")
		}
		user := caller(r).UserID
		seed, ok, err := d.RecoverySeeds.Get(r.Context(), user)
		if err != nil {
			return err
		}
		if !ok {
			return badRequest("No recovery codes set, use GET first")
		}
		if authn.RecoveryCodeIndex(seed, in.Code.V) < 0 {
			return badRequest("Invalid code")
		}
		consumed, err := d.RecoverySeeds.Consume(r.Context(), user, seed)
		if err != nil {
			return err
		}
		if !consumed {
			return badRequest("No recovery codes set, use GET first")
		}
		if err := d.Store.RegenerateRecoveryCodes(r.Context(), user, seeds.Seal(user, seed)); err != nil {
			return err
		}
		noContent(w)
		return nil
	}
}
