package handlers

import (
	"bytes"
	"errors"
	"html/template"
	"net/http"
	"strconv"
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

// confirmPage is the page of a confirmation link. It has no script: its
// button submits a form that posts the key back to the same address.
var confirmPage = template.Must(template.New("confirm-email").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · errata</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 32rem; margin: 4rem auto; padding: 0 1rem; line-height: 1.5; }
button { font: inherit; padding: .5rem 1rem; cursor: pointer; }
</style>
</head>
<body>
<main>
<h1 id="title">{{.Title}}</h1>
<p id="message">{{.Message}}</p>
{{- if .Key}}
<form method="post">
<input type="hidden" name="key" value="{{.Key}}">
<button type="submit" id="confirm">Confirm {{.Email}}</button>
</form>
{{- end}}
</main>
</body>
</html>
`))

// confirmView is what confirmPage shows; Key set shows the button.
type confirmView struct {
	Title, Message string
	Key, Email     string
}

// writeConfirmPage renders the confirmation page with status. The page
// loads nothing, runs nothing and may only post forms to errata itself;
// it is not cached and sends no referrer, since its address holds the key.
func writeConfirmPage(w http.ResponseWriter, d Deps, r *http.Request, status int, v confirmView) {
	var buf bytes.Buffer
	if err := confirmPage.Execute(&buf, v); err != nil {
		d.Log.ErrorContext(r.Context(), "render confirmation page", "err", err)
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString("Internal Server Error\n")
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(buf.Bytes()) //nolint:errcheck // the client went away
}

var invalidLinkView = confirmView{
	Title:   "Invalid link",
	Message: "This confirmation link is invalid or has expired. Ask for a new one from your account's email settings.",
}

// handleConfirmPage serves GET /profile/confirm-email/{key}/: a page whose
// button confirms the address the key names, so the link of the message
// works in a browser without scripts. Showing the page changes nothing:
// mail scanners that fetch links do not confirm addresses.
func handleConfirmPage(d Deps) apiFunc {
	keys := authn.NewEmailKeys(d.SecretKey)
	return func(w http.ResponseWriter, r *http.Request) error {
		key := r.PathValue("key")
		k, err := keys.Check(key, d.Now())
		if !validEmailKey(key) || err != nil {
			writeConfirmPage(w, d, r, http.StatusBadRequest, invalidLinkView)
			return nil
		}
		writeConfirmPage(w, d, r, http.StatusOK, confirmView{
			Title:   "Confirm your email address",
			Message: "Confirm that " + k.Email + " is your email address.",
			Key:     key,
			Email:   k.Email,
		})
		return nil
	}
}

// handleConfirmSubmit serves POST /profile/confirm-email/{key}/, the
// form of the confirmation page: it verifies the posted key as POST
// /api/0/auth/email/verify/ does and renders the outcome as a page.
func handleConfirmSubmit(d Deps) apiFunc {
	keys := authn.NewEmailKeys(d.SecretKey)
	return func(w http.ResponseWriter, r *http.Request) error {
		r.Body = http.MaxBytesReader(w, r.Body, 4096)
		key := r.PathValue("key")
		if err := r.ParseForm(); err != nil || r.PostForm.Get("key") != key || !validEmailKey(key) {
			writeConfirmPage(w, d, r, http.StatusBadRequest, invalidLinkView)
			return nil
		}
		err := verifyEmail(d, r, keys, key)
		var ae *apiError
		switch {
		case err == nil:
			k, _ := keys.Check(key, d.Now())
			writeConfirmPage(w, d, r, http.StatusOK, confirmView{
				Title:   "Email address confirmed",
				Message: k.Email + " is confirmed. You can close this page.",
			})
		case errors.Is(err, errBadEmailKey):
			writeConfirmPage(w, d, r, http.StatusBadRequest, invalidLinkView)
		case errors.As(err, &ae):
			writeConfirmPage(w, d, r, ae.status, confirmView{
				Title:   "Cannot confirm this address",
				Message: "This email address is already confirmed on another account.",
			})
		default:
			status, _ := errorResponse(err)
			d.Log.ErrorContext(r.Context(), "confirm email", "status", status, "err", err)
			writeConfirmPage(w, d, r, status, confirmView{
				Title:   "Something went wrong",
				Message: "The address could not be confirmed just now. Try again in a moment.",
			})
		}
		return nil
	}
}
