package handlers

import (
	"bytes"
	"errors"
	"html/template"
	"net/http"
	"net/mail"
	"strings"

	"errata/authn"
	"errata/store"
)

// maxEmailLen is the longest address accepted.
const maxEmailLen = 254

// emailOut is an email address as the API shows it.
type emailOut struct {
	Email      string `json:"email"`
	IsPrimary  bool   `json:"isPrimary"`
	IsVerified bool   `json:"isVerified"`
}

// emailIn is the body of the routes on one address (EmailAddressIn).
type emailIn struct {
	Email opt[string] `json:"email"`
}

// decodeEmailIn reads an EmailAddressIn body and returns its address,
// validated, with the domain lower-cased.
func decodeEmailIn(w http.ResponseWriter, r *http.Request) (string, error) {
	var in emailIn
	if err := decodeJSON(w, r, &in); err != nil {
		return "", err
	}
	switch {
	case !in.Email.Set:
		return "", invalid(missing, "Field required", "body", "email")
	case in.Email.Null:
		return "", invalid(typeError, "Input should be a valid string", "body", "email")
	}
	return normalizeEmail(in.Email.V)
}

// normalizeEmail checks that s is a bare address (no display name, no angle
// brackets) of at most maxEmailLen characters and lower-cases its domain.
// The local part keeps its case: comparisons ignore case anyway.
func normalizeEmail(s string) (string, error) {
	if len(s) > maxEmailLen {
		return "", invalid(valueErr, "Email should have at most 254 characters", "body", "email")
	}
	a, err := mail.ParseAddress(s)
	at := strings.LastIndexByte(s, '@')
	if err != nil || a.Name != "" || a.Address != s || at < 1 {
		return "", invalid(valueErr, "Input is not a valid email address", "body", "email")
	}
	return s[:at] + "@" + strings.ToLower(s[at+1:]), nil
}

// handleEmailList serves GET /api/0/users/{user_id}/emails/ (checked): at
// most 200 of the caller's addresses, not paginated.
func handleEmailList(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := checkedUser(r)
		if err != nil {
			return err
		}
		as, err := d.Store.EmailAddresses(r.Context(), id)
		if err != nil {
			return err
		}
		out := make([]emailOut, 0, len(as))
		for _, a := range as {
			out = append(out, emailOut(a))
		}
		writeJSON(w, r, d.Log, http.StatusOK, out)
		return nil
	}
}

// handleEmailCreate serves POST /api/0/users/{user_id}/emails/ (checked):
// it adds an unverified address and queues its confirmation message; an
// address verified by anyone, or one the caller has already, is 400.
func handleEmailCreate(d Deps) apiFunc {
	keys := authn.NewEmailKeys(d.SecretKey)
	return func(w http.ResponseWriter, r *http.Request) error {
		id, self, err := userSubject(r)
		if err != nil {
			return err
		}
		email, err := decodeEmailIn(w, r)
		if err != nil {
			return err
		}
		if !self {
			return errNotFound
		}
		m, err := confirmationMail(d, r, keys, id, email)
		if err != nil {
			return err
		}
		a, err := d.Store.AddEmailAddress(r.Context(), id, email, m)
		if errors.Is(err, store.ErrEmailTaken) {
			return badRequest("Email already exists")
		}
		if err != nil {
			return err
		}
		notifyMail(d)
		writeJSON(w, r, d.Log, http.StatusCreated, emailOut(a))
		return nil
	}
}

// handleEmailMakePrimary serves PUT /api/0/users/{user_id}/emails/
// (checked): the caller's verified address becomes its primary one.
func handleEmailMakePrimary(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, self, err := userSubject(r)
		if err != nil {
			return err
		}
		email, err := decodeEmailIn(w, r)
		if err != nil {
			return err
		}
		if !self {
			return errNotFound
		}
		a, err := d.Store.MakeEmailAddressPrimary(r.Context(), id, email)
		if errors.Is(err, store.ErrEmailTaken) {
			return badRequest("Email already exists")
		}
		if err != nil {
			return err
		}
		writeJSON(w, r, d.Log, http.StatusOK, emailOut(a))
		return nil
	}
}

// handleEmailDelete serves DELETE /api/0/users/{user_id}/emails/
// (checked): it removes one of the caller's addresses that is not the
// primary one.
func handleEmailDelete(d Deps) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, self, err := userSubject(r)
		if err != nil {
			return err
		}
		email, err := decodeEmailIn(w, r)
		if err != nil {
			return err
		}
		if !self {
			return errNotFound
		}
		if err := d.Store.DeleteEmailAddress(r.Context(), id, email); err != nil {
			return err
		}
		noContent(w)
		return nil
	}
}

// handleEmailConfirm serves POST /api/0/users/{user_id}/emails/confirm/
// (not checked): it queues the confirmation message of one of the caller's
// unverified addresses again.
func handleEmailConfirm(d Deps) apiFunc {
	keys := authn.NewEmailKeys(d.SecretKey)
	return func(w http.ResponseWriter, r *http.Request) error {
		id, _, err := userSubject(r)
		if err != nil {
			return err
		}
		email, err := decodeEmailIn(w, r)
		if err != nil {
			return err
		}
		m, err := confirmationMail(d, r, keys, id, email)
		if err != nil {
			return err
		}
		if err := d.Store.ResendConfirmation(r.Context(), id, email, m); err != nil {
			return err
		}
		notifyMail(d)
		noContent(w)
		return nil
	}
}

// notifyMail wakes the mail worker, when there is one to wake.
func notifyMail(d Deps) {
	if d.NotifyMail != nil {
		d.NotifyMail()
	}
}

// confirmationHTML is the HTML part of the confirmation message.
var confirmationHTML = template.Must(template.New("confirm").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Confirm your email address</title></head>
<body style="font-family: sans-serif; line-height: 1.5">
<p>Hello,</p>
<p>someone, hopefully you, added <strong>{{.Email}}</strong> to an errata account.</p>
<p><a href="{{.Link}}">Confirm {{.Email}}</a></p>
<p>The link works for three days. If you did not ask for this, ignore this message.</p>
</body></html>
`))

// confirmationMail composes the message that asks the owner of email to
// confirm it, with a link to the confirmation page carrying a key signed
// for the user and the address that expires after three days.
func confirmationMail(d Deps, r *http.Request, keys *authn.EmailKeys, userID int64, email string) (store.Mail, error) {
	key := keys.Sign(authn.EmailKey{UserID: userID, Email: email, Expires: d.Now().Add(authn.EmailKeyLifetime)})
	link := publicBase(r, d.PublicURL) + "/profile/confirm-email/" + key + "/"
	var html bytes.Buffer
	if err := confirmationHTML.Execute(&html, struct{ Email, Link string }{email, link}); err != nil {
		return store.Mail{}, err
	}
	text := "Hello,\n\n" +
		"someone, hopefully you, added " + email + " to an errata account.\n" +
		"To confirm the address, open this link:\n\n" +
		link + "\n\n" +
		"The link works for three days. If you did not ask for this, ignore this message.\n"
	return store.Mail{
		To:      email,
		Subject: "Confirm your email address",
		Text:    text,
		HTML:    html.String(),
	}, nil
}
