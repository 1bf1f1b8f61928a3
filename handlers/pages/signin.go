package pages

import (
	"errors"
	"net/http"
	"net/url"
)

// The pages of signing in, out and back (docs/pages.md): the second step
// of sign-in, sign-out, a forgotten password and its reset link,
// reauthentication, accepting an invitation and confirming an address.
// Each asks the sign-in API (/_allauth/browser/v1/) or /api/0/ as its
// visitor, as every page does.

// signInAPI is the sign-in API's address for a browser.
const signInAPI = "/_allauth/browser/v1/"

// errSignedOut is what a page that needs a signed-in person returns for
// a signed-out visitor: the API's 401, which sends them to sign-in.
var errSignedOut = &APIError{Status: http.StatusUnauthorized, Detail: "Not signed in"}

// whoIsSignedIn returns who the visitor is (GET /api/0/), or errSignedOut
// when nobody is signed in.
func whoIsSignedIn(v *Visit) (me, error) {
	var who me
	if _, err := v.Call("GET", "/api/0/", nil, &who); err != nil {
		return who, err
	}
	if who.User == nil {
		return who, errSignedOut
	}
	return who, nil
}

// apiStatus returns the status of err when it is an answer of the API
// below 500, else 0.
func apiStatus(err error) (int, *APIError) {
	var ae *APIError
	if errors.As(err, &ae) && ae.Status < 500 {
		return ae.Status, ae
	}
	return 0, nil
}

// message is what a form shows of the API's refusal ae: its message, or
// for a throttled request (whose answer names none) what to do.
func message(ae *APIError) string {
	if ae.Status == http.StatusTooManyRequests && ae.Detail == http.StatusText(http.StatusTooManyRequests) {
		return "Too many attempts. Wait a few minutes, then try again."
	}
	return ae.Detail
}

// refuse shows page again as view with the API's refusal ae, and its
// status.
func refuse(v *Visit, page string, view View, ae *APIError) error {
	view.Error = message(ae)
	return v.RenderStatus(ae.Status, page, view)
}

// codeView is the form of the second step of sign-in.
type codeView struct{ Next string }

// TwoFactor serves /auth/2fa/: the second step of a sign-in that waits
// for it (POST / answered allauth's pending flow). Its one field takes a
// TOTP code or a recovery code (POST auth/2fa/authenticate); the person
// is then signed in and sent on to ?next=. Without a pending sign-in the
// visitor goes back to sign-in; a signed-in one goes on.
func (p *Pages) TwoFactor(v *Visit) error {
	next := v.LocalNext("/")
	view := View{Title: "Two-factor authentication", Data: codeView{Next: v.LocalNext("")}}
	if v.R.Method == http.MethodPost {
		_, err := v.Call("POST", signInAPI+"auth/2fa/authenticate", map[string]string{"code": v.Form("code")}, nil)
		status, ae := apiStatus(err)
		switch {
		case err == nil:
			v.Redirect(next)
			return nil
		case status == http.StatusUnauthorized:
			v.Redirect("/") // no sign-in waits: it expired, or ended
			return nil
		case ae != nil:
			return refuse(v, "signin_2fa.html", view, ae)
		}
		return err
	}
	_, err := v.Call("GET", signInAPI+"auth/session", nil, nil)
	status, ae := apiStatus(err)
	switch {
	case err == nil:
		v.Redirect(next) // signed in already
		return nil
	case status == http.StatusUnauthorized && ae.Pending == "mfa_authenticate":
		return v.Render("signin_2fa.html", view)
	case status == http.StatusUnauthorized:
		v.Redirect("/")
		return nil
	}
	return err
}

// SignOut serves /auth/logout/: a button that signs the person out
// (DELETE auth/session, which ends the session at once) and goes back to
// sign-in.
func (p *Pages) SignOut(v *Visit) error {
	if v.R.Method == http.MethodPost {
		_, err := v.Call("DELETE", signInAPI+"auth/session", nil, nil)
		// allauth answers a sign-out with 401, the flows of a signed-out
		// visitor.
		if status, _ := apiStatus(err); err != nil && status != http.StatusUnauthorized {
			return err
		}
		v.Redirect("/")
		return nil
	}
	who, err := whoIsSignedIn(v)
	if err != nil {
		return err
	}
	return v.Render("signin_logout.html", View{Title: "Sign out", Data: who.User.Email})
}

// recoverView is the form of a forgotten password.
type recoverView struct{ Email string }

// Recover serves /account/recover/: a forgotten password. The address
// goes to POST auth/password/request, which mails a reset link when an
// account has it; the page says the same either way.
func (p *Pages) Recover(v *Visit) error {
	view := View{Title: "Forgotten password"}
	if v.R.Method != http.MethodPost {
		view.Data = recoverView{}
		return v.Render("signin_recover.html", view)
	}
	email := v.Form("email")
	view.Data = recoverView{Email: email}
	_, err := v.Call("POST", signInAPI+"auth/password/request", map[string]string{"email": email}, nil)
	_, ae := apiStatus(err)
	switch {
	case err == nil:
		view.Notice = "If an account has the address " + email + ", a message with a link to choose a new password is on its way. The link works once, for an hour."
		view.Data = recoverView{}
		return v.Render("signin_recover.html", view)
	case ae != nil:
		return refuse(v, "signin_recover.html", view, ae)
	}
	return err
}

// resetView is the form of a reset link; Done shows the outcome instead.
type resetView struct {
	Email string
	Key   string
	Done  bool
}

// resetUser is the data of GET auth/password/reset.
type resetUser struct {
	Data struct {
		User struct {
			Email string `json:"email"`
		} `json:"user"`
	} `json:"data"`
}

// badResetLink is the page of a reset link that does not work.
func badResetLink(v *Visit) error {
	return v.RenderStatus(http.StatusBadRequest, "signin_badlink.html", View{Title: "Invalid link",
		Data: "This password reset link is invalid, used or has expired."})
}

// ResetPassword serves /reset-password/{key}/, the link of a reset mail:
// the key is checked first (GET auth/password/reset; a used, expired or
// forged one is a 400 page), then the new password goes to POST
// auth/password/reset with it. The API ends every session of the person,
// who then signs in with the new password.
func (p *Pages) ResetPassword(v *Visit) error {
	key := v.R.PathValue("key")
	var who resetUser
	_, err := v.Call("GET", signInAPI+"auth/password/reset?key="+url.QueryEscape(key), nil, &who)
	if status, _ := apiStatus(err); status == http.StatusBadRequest {
		return badResetLink(v)
	}
	if err != nil {
		return err
	}
	view := View{Title: "Choose a new password", Data: resetView{Email: who.Data.User.Email, Key: key}}
	if v.R.Method != http.MethodPost {
		return v.Render("signin_reset.html", view)
	}
	_, err = v.Call("POST", signInAPI+"auth/password/reset",
		map[string]string{"key": key, "password": v.Form("password")}, nil)
	status, ae := apiStatus(err)
	switch {
	case err == nil, status == http.StatusUnauthorized:
		// allauth answers a reset with 401: the person signs in anew.
		view.Notice = "Your new password is set. Sign in with it."
		view.Data = resetView{Email: who.Data.User.Email, Done: true}
		return v.Render("signin_reset.html", view)
	case status == http.StatusBadRequest && ae.Fields["key"] != "":
		return badResetLink(v)
	case ae != nil:
		return refuse(v, "signin_reset.html", view, ae)
	}
	return err
}

// reauthView is the reauthentication form; TOTP offers the code too.
type reauthView struct {
	Email string
	TOTP  bool
}

// Reauthenticate serves /account/reauthenticate/: the person confirms
// who they are again, with their password (POST auth/reauthenticate) or,
// when they have TOTP, a code (POST auth/2fa/reauthenticate), before a
// change the API guards so; then back to ?next=. The other pages send
// the person here on the API's 401 "Reauthentication required".
func (p *Pages) Reauthenticate(v *Visit) error {
	who, err := whoIsSignedIn(v)
	if err != nil {
		return err
	}
	var authenticators struct {
		Data []struct {
			Type string `json:"type"`
		} `json:"data"`
	}
	if _, err := v.Call("GET", signInAPI+"account/authenticators", nil, &authenticators); err != nil {
		return err
	}
	data := reauthView{Email: who.User.Email}
	for _, a := range authenticators.Data {
		data.TOTP = data.TOTP || a.Type == "totp"
	}
	view := View{Title: "Confirm it is you", Data: data}
	if v.R.Method != http.MethodPost {
		return v.Render("signin_reauth.html", view)
	}
	if data.TOTP && v.Form("action") == "code" {
		_, err = v.Call("POST", signInAPI+"auth/2fa/reauthenticate", map[string]string{"code": v.Form("code")}, nil)
	} else {
		_, err = v.Call("POST", signInAPI+"auth/reauthenticate", map[string]string{"password": v.Form("password")}, nil)
	}
	status, ae := apiStatus(err)
	switch {
	case err == nil:
		v.Redirect(v.LocalNext("/account/"))
		return nil
	case status == http.StatusBadRequest || status == http.StatusTooManyRequests:
		return refuse(v, "signin_reauth.html", view, ae)
	}
	return err
}

// invitation is the answer of GET /api/0/accept-invite/...: what an
// invitation offers.
type invitation struct {
	Organization organization `json:"organization"`
	Email        string       `json:"email"`
	Role         string       `json:"role"`
	HasAccount   bool         `json:"hasAccount"`
	Needs2FA     bool         `json:"needs2fa"`
}

// inviteView is the invitation page: the invitation, who is signed in
// ("" for nobody), the name typed, and Joined once accepted.
type inviteView struct {
	Invitation invitation
	SignedInAs string
	Name       string
	SignIn     string // the sign-in address that comes back here
	Joined     bool
}

// AcceptInvitation serves
// /accept-invite/{organization_slug}/{member_id}/{token}/, the link of an
// invitation: what it offers (GET /api/0/accept-invite/...; a used,
// expired or wrong link is 404), and a button that accepts it (POST on
// the same API route): as the signed-in person, or as a new person with
// a name and a password, who is then signed in.
func (p *Pages) AcceptInvitation(v *Visit) error {
	api := "/api/0/accept-invite/" + url.PathEscape(v.R.PathValue("organization_slug")) + "/" +
		url.PathEscape(v.R.PathValue("member_id")) + "/" + url.PathEscape(v.R.PathValue("token")) + "/"
	var inv invitation
	if _, err := v.Call("GET", api, nil, &inv); err != nil {
		return err
	}
	who, err := whoIsSignedIn(v)
	if err != nil && err != errSignedOut {
		return err
	}
	data := inviteView{Invitation: inv, Name: v.Form("name"), SignIn: "/?next=" + url.QueryEscape(v.R.URL.Path)}
	if who.User != nil {
		data.SignedInAs = who.User.Email
	}
	view := View{Title: "Join " + inv.Organization.Name, SignedIn: who.User != nil, Data: data}
	if v.R.Method != http.MethodPost {
		return v.Render("signin_invite.html", view)
	}
	body := map[string]string{} // the signed-in person joins as they are
	if who.User == nil {
		body = map[string]string{"name": v.Form("name"), "password": v.Form("password")}
	}
	_, err = v.Call("POST", api, body, nil)
	status, ae := apiStatus(err)
	switch {
	case err == nil:
		data.Joined = true
		view.Data, view.SignedIn = data, true
		view.Title = "Welcome to " + inv.Organization.Name
		view.Notice = "You joined " + inv.Organization.Name + " as " + inv.Role + "."
		return v.Render("signin_invite.html", view)
	case status == http.StatusNotFound:
		return err
	case ae != nil:
		return refuse(v, "signin_invite.html", view, ae)
	}
	return err
}

// confirmView is the confirmation page: the address the key confirms,
// and Done once it is.
type confirmView struct {
	Email, Key string
	Done       bool
}

// ConfirmEmail serves /profile/confirm-email/{key}/, the link of a
// confirmation mail: a button that confirms the address the key names
// (POST /api/0/auth/email/verify/). Showing the page changes nothing
// (GET auth/email/verify only reads the key), so a mail scanner that
// opens links confirms nothing. A forged, expired or void key is a 400
// page.
func (p *Pages) ConfirmEmail(v *Visit) error {
	key := v.R.PathValue("key")
	badLink := func() error {
		return v.RenderStatus(http.StatusBadRequest, "signin_badlink.html", View{Title: "Invalid link",
			Data: "This confirmation link is invalid or has expired. Ask for a new one from your account's email settings."})
	}
	var info struct {
		Data struct {
			Email string `json:"email"`
		} `json:"data"`
	}
	_, err := v.Call("GET", signInAPI+"auth/email/verify?key="+url.QueryEscape(key), nil, &info)
	if status, _ := apiStatus(err); status == http.StatusBadRequest {
		return badLink()
	}
	if err != nil {
		return err
	}
	email := info.Data.Email
	view := View{Title: "Confirm your email address", Data: confirmView{Email: email, Key: key}}
	if v.R.Method != http.MethodPost {
		return v.Render("signin_confirm.html", view)
	}
	if v.Form("key") != key { // the form posts the key of its own page
		return badLink()
	}
	_, err = v.Call("POST", "/api/0/auth/email/verify/", map[string]string{"key": key}, nil)
	status, ae := apiStatus(err)
	switch {
	case err == nil:
		view.Title = "Email address confirmed"
		view.Notice = email + " is confirmed. You can close this page."
		view.Data = confirmView{Email: email, Done: true}
		return v.Render("signin_confirm.html", view)
	case status == http.StatusBadRequest && ae.Detail == "Email already exists":
		view.Title = "Cannot confirm this address"
		view.Error = "This email address is already confirmed on another account."
		view.Data = confirmView{Email: email, Done: true}
		return v.RenderStatus(status, "signin_confirm.html", view)
	case status == http.StatusBadRequest:
		return badLink()
	}
	return err
}
