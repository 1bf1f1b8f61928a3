package pages

import (
	"errors"
	"net/http"
	"time"
)

// The person's account (docs/accounts.md): the profile, the email
// addresses, the notification settings and the password, each a page that
// asks the API as the visitor (/api/0/users/me/... and the sign-in API's
// account/password/change).

// userDetail is GET /api/0/users/me/: the fields the profile shows.
type userDetail struct {
	Email string `json:"email"`
	Name  string `json:"name"`
}

// profileView is the account page.
type profileView struct {
	Email, Name string
	// NameError is the API's message about the name.
	NameError string
}

// Account serves /account/: the person's name and address, a form that
// changes the name (PUT /api/0/users/me/), and links to the other pages
// of the account.
func (p *Pages) Account(v *Visit) error {
	var u userDetail
	if _, err := v.Call("GET", "/api/0/users/me/", nil, &u); err != nil {
		return err
	}
	view := View{Title: "Account", Data: profileView{Email: u.Email, Name: u.Name}}
	if v.R.Method == http.MethodPost {
		if v.Form("action") != "profile" {
			return badForm(v, "account_profile.html", view)
		}
		name := v.Form("name")
		_, err := v.Call("PUT", "/api/0/users/me/", map[string]string{"name": name}, &u)
		if ae, ok := correctable(err); ok {
			view.Error = ae.Detail
			view.Data = profileView{Email: u.Email, Name: name, NameError: ae.Detail}
			return v.RenderStatus(ae.Status, "account_profile.html", view)
		}
		if err != nil {
			return err
		}
		view.Notice = "Your name is saved."
		view.Data = profileView{Email: u.Email, Name: u.Name}
	}
	return v.Render("account_profile.html", view)
}

// emailAddress is an address of GET /api/0/users/me/emails/.
type emailAddress struct {
	Email      string `json:"email"`
	IsPrimary  bool   `json:"isPrimary"`
	IsVerified bool   `json:"isVerified"`
}

// emailRow is an address as the email addresses page shows it: its
// state, and the buttons of what may be done with it.
type emailRow struct {
	Email, State string
	Actions      []emailAction
}

// emailAction is a button of an address: the form's action, the
// button's text, its accessible name (naming the address), and its class.
type emailAction struct {
	Action, Text, Label, Class string
}

// emailRows are the addresses as the page shows them: the primary one
// can only be replaced, a verified one made primary, another confirmed.
func emailRows(as []emailAddress) []emailRow {
	rows := make([]emailRow, len(as))
	for i, a := range as {
		r := emailRow{Email: a.Email}
		switch {
		case a.IsPrimary && a.IsVerified:
			r.State = "Primary, verified"
		case a.IsPrimary:
			r.State = "Primary, not verified"
		case a.IsVerified:
			r.State = "Verified"
			r.Actions = append(r.Actions, emailAction{"primary", "Make primary", "Make primary: " + a.Email, "secondary"})
		default:
			r.State = "Not verified yet"
			r.Actions = append(r.Actions, emailAction{"resend", "Resend confirmation", "Resend confirmation to " + a.Email, "secondary"})
		}
		if !a.IsPrimary {
			r.Actions = append(r.Actions, emailAction{"remove", "Remove", "Remove " + a.Email, "danger"})
		}
		rows[i] = r
	}
	return rows
}

// emailsView is the email addresses page.
type emailsView struct {
	Addresses []emailRow
	// Email is the address the form to add one holds.
	Email string
}

// Emails serves /account/emails/: the person's addresses, and forms that
// add one (a confirmation message goes to it), make a verified one the
// primary one, send the confirmation again, and remove one.
func (p *Pages) Emails(v *Visit) error {
	const path = "/api/0/users/me/emails/"
	list := func() ([]emailAddress, error) {
		var as []emailAddress
		_, err := v.Call("GET", path, nil, &as)
		return as, err
	}
	as, err := list()
	if err != nil {
		return err
	}
	view := View{Title: "Email addresses"}
	if v.R.Method == http.MethodPost {
		email := v.Form("email")
		body := map[string]string{"email": email}
		var err error
		switch v.Form("action") {
		case "add":
			_, err = v.Call("POST", path, body, nil)
			view.Notice = "A message to confirm " + email + " is on its way."
		case "primary":
			_, err = v.Call("PUT", path, body, nil)
			view.Notice = email + " is your primary address."
		case "resend":
			_, err = v.Call("POST", path+"confirm/", body, nil)
			view.Notice = "The message to confirm " + email + " is sent again."
		case "remove":
			_, err = v.Call("DELETE", path, body, nil)
			view.Notice = email + " is removed."
		default:
			view.Data = emailsView{Addresses: emailRows(as)}
			return badForm(v, "account_emails.html", view)
		}
		if ae, ok := correctable(err); ok {
			view.Notice, view.Error = "", ae.Detail
			keep := ""
			if v.Form("action") == "add" {
				keep = email
			}
			view.Data = emailsView{Addresses: emailRows(as), Email: keep}
			return v.RenderStatus(ae.Status, "account_emails.html", view)
		}
		if err != nil {
			return err
		}
		if as, err = list(); err != nil {
			return err
		}
	}
	view.Data = emailsView{Addresses: emailRows(as)}
	return v.Render("account_emails.html", view)
}

// notificationSettings is GET and PUT /api/0/users/me/notifications/.
type notificationSettings struct {
	SubscribeByDefault bool `json:"subscribeByDefault"`
}

// Notifications serves /account/notifications/: the person's notification
// settings as a form (PUT /api/0/users/me/notifications/).
func (p *Pages) Notifications(v *Visit) error {
	const path = "/api/0/users/me/notifications/"
	var n notificationSettings
	if _, err := v.Call("GET", path, nil, &n); err != nil {
		return err
	}
	view := View{Title: "Notifications"}
	if v.R.Method == http.MethodPost {
		if v.Form("action") != "save" {
			view.Data = n
			return badForm(v, "account_notifications.html", view)
		}
		in := notificationSettings{SubscribeByDefault: v.Form("subscribeByDefault") == "on"}
		if _, err := v.Call("PUT", path, in, &n); err != nil {
			return err
		}
		view.Notice = "Your notification settings are saved."
	}
	view.Data = n
	return v.Render("account_notifications.html", view)
}

// passwordView is the password page: the API's messages by field.
type passwordView struct {
	CurrentError, NewError string
}

// Password serves /account/password/: a form with the current and the
// new password (POST account/password/change of the sign-in API). The
// change ends the person's other sessions; this one goes on.
func (p *Pages) Password(v *Visit) error {
	if _, err := v.Call("GET", "/api/0/users/me/", nil, nil); err != nil {
		return err
	}
	view := View{Title: "Password", Data: passwordView{}}
	if v.R.Method != http.MethodPost {
		return v.Render("account_password.html", view)
	}
	if v.Form("action") != "change" {
		return badForm(v, "account_password.html", view)
	}
	_, err := v.Call("POST", "/_allauth/browser/v1/account/password/change", map[string]string{
		"current_password": v.Form("current_password"), "new_password": v.Form("new_password")}, nil)
	if ae, ok := correctable(err); ok {
		view.Error = ae.Detail
		view.Data = passwordView{CurrentError: ae.Fields["current_password"], NewError: ae.Fields["new_password"]}
		return v.RenderStatus(ae.Status, "account_password.html", view)
	}
	if err != nil {
		return err
	}
	view.Notice = "Your password is changed. Your other sessions are signed out."
	return v.Render("account_password.html", view)
}

// correctable returns the API's answer to an account form that a person
// can correct: a 4xx other than 401 (signed out, or reauthentication),
// 403 and 404, which the page's wrapper answers.
func correctable(err error) (*APIError, bool) {
	var ae *APIError
	if !errors.As(err, &ae) {
		return nil, false
	}
	switch ae.Status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return nil, false
	}
	return ae, ae.Status < 500
}

// badForm answers a POST whose action the page does not know (a form of
// another version of the page, or none) with the page and a 400.
func badForm(v *Visit, page string, view View) error {
	view.Error = "This form was not understood. Send it again from this page."
	view.Notice = ""
	return v.RenderStatus(http.StatusBadRequest, page, view)
}

// shownTime is how the account's pages show a moment: UTC, to the minute.
func shownTime(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// epochTime is an allauth timestamp (seconds since 1970) as shownTime.
func epochTime(seconds float64) string {
	return shownTime(time.UnixMicro(int64(seconds * 1e6)))
}
