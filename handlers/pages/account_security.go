package pages

import (
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"strings"
)

// Two-factor authentication and recovery codes (docs/accounts.md, "Second
// factors"): the sign-in API's account/authenticators routes, and the
// generate-and-confirm of /api/0/generate-recovery-codes/.

// authenticator is an item of GET account/authenticators: a TOTP
// authenticator or the recovery codes.
type authenticator struct {
	Type            string   `json:"type"`
	CreatedAt       float64  `json:"created_at"`
	LastUsedAt      *float64 `json:"last_used_at"`
	TotalCodeCount  int      `json:"total_code_count"`
	UnusedCodeCount int      `json:"unused_code_count"`
}

// securityView is the security page.
type securityView struct {
	TOTP bool
	// TOTPSince and TOTPLastUsed are when TOTP was turned on and last
	// used ("" for never).
	TOTPSince, TOTPLastUsed string
	RecoveryCodes           bool
	UnusedCodes, TotalCodes int
}

const authenticatorsPath = "/_allauth/browser/v1/account/authenticators"

// authenticators reads the person's second factors.
func authenticators(v *Visit) (securityView, error) {
	if err := signedIn(v); err != nil {
		return securityView{}, err
	}
	var answer struct {
		Data []authenticator `json:"data"`
	}
	if _, err := v.Call("GET", authenticatorsPath, nil, &answer); err != nil {
		return securityView{}, err
	}
	var s securityView
	for _, a := range answer.Data {
		switch a.Type {
		case "totp":
			s.TOTP, s.TOTPSince = true, epochTime(a.CreatedAt)
			if a.LastUsedAt != nil {
				s.TOTPLastUsed = epochTime(*a.LastUsedAt)
			}
		case "recovery_codes":
			s.RecoveryCodes, s.UnusedCodes, s.TotalCodes = true, a.UnusedCodeCount, a.TotalCodeCount
		}
	}
	return s, nil
}

// signedIn answers the 401 of a signed-out visitor (whoIsSignedIn), which
// sends them to sign in, before a page asks the sign-in API's account
// routes: those answer a signed-out visitor as allauth does, with the
// flows.
func signedIn(v *Visit) error {
	_, err := whoIsSignedIn(v)
	return err
}

// Security serves /account/security/: whether two-factor authentication
// is on, a link to turn it on or a button to turn it off (DELETE
// account/authenticators/totp, which removes the recovery codes too), and
// how many recovery codes are left.
func (p *Pages) Security(v *Visit) error {
	s, err := authenticators(v)
	if err != nil {
		return err
	}
	view := View{Title: "Security", Data: s}
	if v.R.Method == http.MethodPost {
		if v.Form("action") != "totp-off" {
			return badForm(v, "account_security.html", view)
		}
		_, err := v.Call("DELETE", authenticatorsPath+"/totp", nil, nil)
		var ae *APIError
		switch {
		case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
			view.Error = "Two-factor authentication is off already."
		case err != nil:
			return err
		default:
			view.Notice = "Two-factor authentication is off, and your recovery codes are removed."
		}
		if view.Data, err = authenticators(v); err != nil {
			return err
		}
	}
	return v.Render("account_security.html", view)
}

// totpView is the page that turns TOTP on.
type totpView struct {
	// On: TOTP is on already.
	On bool
	// Secret is the secret offered, in base32; QR the code of its
	// otpauth:// address.
	Secret    string
	QR        template.HTML
	CodeError string
}

// TOTP serves /account/security/totp/: the secret the API offers
// (GET account/authenticators/totp answers 404 with it until TOTP is on)
// as a QR code of its otpauth:// address and as text, and a form whose
// code from the app turns TOTP on (POST account/authenticators/totp).
// The recovery codes made with it are shown next.
func (p *Pages) TOTP(v *Visit) error {
	const path = authenticatorsPath + "/totp"
	if err := signedIn(v); err != nil {
		return err
	}
	_, err := v.Call("GET", path, nil, nil)
	var ae *APIError
	switch {
	case err == nil:
		return v.Render("account_totp.html", View{Title: "Two-factor authentication", Data: totpView{On: true}})
	case !errors.As(err, &ae) || ae.Status != http.StatusNotFound:
		return err
	}
	var offer struct {
		Meta struct {
			Secret  string `json:"secret"`
			TOTPURL string `json:"totp_url"`
		} `json:"meta"`
	}
	if json.Unmarshal(ae.Body, &offer) != nil || offer.Meta.Secret == "" {
		return ae // a 404 that offers no secret
	}
	qrCode, err := qrSVG(offer.Meta.TOTPURL, "QR code of the setup address for your authenticator app")
	if err != nil {
		return err
	}
	data := totpView{Secret: strings.ToUpper(offer.Meta.Secret), QR: qrCode}
	view := View{Title: "Two-factor authentication", Data: data}
	if v.R.Method != http.MethodPost {
		return v.Render("account_totp.html", view)
	}
	if v.Form("action") != "activate" {
		return badForm(v, "account_totp.html", view)
	}
	var answer struct {
		Meta struct {
			RecoveryCodesGenerated bool `json:"recovery_codes_generated"`
		} `json:"meta"`
	}
	_, err = v.Call("POST", path, map[string]string{"code": v.Form("code")}, &answer)
	if fe, ok := correctable(err); ok {
		view.Error = fe.Detail
		data.CodeError = fe.Detail
		if fe.Status == http.StatusConflict {
			data = totpView{On: true}
		}
		view.Data = data
		return v.RenderStatus(fe.Status, "account_totp.html", view)
	}
	if err != nil {
		return err
	}
	v.Redirect("/account/security/recovery-codes/?from=totp")
	return nil
}

// recoveryView is the recovery codes page: the unused codes, or a new
// set waiting to be confirmed.
type recoveryView struct {
	// Codes are the unused codes; New the new set to confirm.
	Codes, New []string
	// Has: the person has recovery codes.
	Has       bool
	CodeError string
}

// maxRecoveryCodes is the size of a set of recovery codes
// (docs/accounts.md).
const maxRecoveryCodes = 10

// RecoveryCodes serves /account/security/recovery-codes/: the person's
// unused recovery codes (GET account/authenticators/recovery-codes, which
// needs a recent sign-in), and new ones by the generate-and-confirm of
// /api/0/generate-recovery-codes/: "Generate new codes" shows a new set,
// held by the API; typing one of them back into "Code" proves they are
// written down and makes them the person's codes, the old ones void.
func (p *Pages) RecoveryCodes(v *Visit) error {
	if _, err := authenticators(v); err != nil {
		return err
	}
	view := View{Title: "Recovery codes"}
	if v.R.Method == http.MethodPost {
		switch v.Form("action") {
		case "generate":
			var set struct {
				Codes []string `json:"codes"`
			}
			if _, err := v.Call("GET", "/api/0/generate-recovery-codes/", nil, &set); err != nil {
				return err
			}
			view.Data = recoveryView{New: set.Codes}
			return v.Render("account_recovery.html", view)
		case "confirm":
			_, err := v.Call("POST", "/api/0/generate-recovery-codes/", map[string]string{"code": v.Form("code")}, nil)
			if fe, ok := correctable(err); ok {
				// The set shown is the page's own: the API holds it until
				// one of its codes comes back.
				view.Error = fe.Detail
				shown := v.R.PostForm["new"]
				shown = shown[:min(len(shown), maxRecoveryCodes)]
				view.Data = recoveryView{New: shown, CodeError: fe.Detail}
				return v.RenderStatus(fe.Status, "account_recovery.html", view)
			}
			if err != nil {
				return err
			}
			v.Redirect("/account/security/recovery-codes/?from=saved")
			return nil
		default:
			view.Data = recoveryView{}
			return badForm(v, "account_recovery.html", view)
		}
	}
	var codes struct {
		Data struct {
			UnusedCodes []string `json:"unused_codes"`
		} `json:"data"`
	}
	_, err := v.Call("GET", authenticatorsPath+"/recovery-codes", nil, &codes)
	var ae *APIError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
	case err != nil:
		return err
	}
	switch v.R.URL.Query().Get("from") {
	case "totp":
		view.Notice = "Two-factor authentication is on. Keep these recovery codes somewhere safe: each signs you in once without your app."
	case "saved":
		view.Notice = "Your new recovery codes are saved; the old ones no longer work."
	}
	view.Data = recoveryView{Codes: codes.Data.UnusedCodes, Has: err == nil}
	return v.Render("account_recovery.html", view)
}
