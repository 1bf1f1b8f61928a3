package authn

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// CSRF names (docs/accounts.md, "CSRF"): Django's, which allauth's
// browser clients send.
const (
	CSRFCookieName = "csrftoken"
	CSRFHeader     = "X-CSRFToken"
	CSRFFormField  = "csrfmiddlewaretoken"
)

// csrfTokenBytes is the entropy of a CSRF token: 256 bits.
const csrfTokenBytes = 32

// maxCSRFForm bounds the form CheckCSRF reads for its field.
const maxCSRFForm = 1 << 20

// ErrCSRF means that an unsafe request carrying cookies did not prove it
// comes from errata's own pages: no token, a wrong one, or a cross-site
// origin.
var ErrCSRF = errors.New("authn: CSRF check failed")

// NewCSRFToken returns a fresh CSRF token (256 random bits, base64url).
func NewCSRFToken() string {
	b := make([]byte, csrfTokenBytes)
	rand.Read(b) // never fails: crypto/rand panics rather than return short
	return base64.RawURLEncoding.EncodeToString(b)
}

// wellFormedCSRF reports whether t could be a token of NewCSRFToken.
func wellFormedCSRF(t string) bool {
	if len(t) != base64.RawURLEncoding.EncodedLen(csrfTokenBytes) {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(t)
	return err == nil
}

// CSRFCookie returns the cookie to set when r carries no well-formed CSRF
// token, nil when it does: a new token, readable by the page's script (not
// HttpOnly), SameSite=Lax, Secure over https.
func (a *Authenticator) CSRFCookie(r *http.Request) *http.Cookie {
	if c, err := r.Cookie(CSRFCookieName); err == nil && wellFormedCSRF(c.Value) {
		return nil
	}
	return &http.Cookie{
		Name: CSRFCookieName, Value: NewCSRFToken(), Path: "/",
		MaxAge: 365 * 24 * 60 * 60, Secure: a.Sessions.secure(), SameSite: http.SameSiteLaxMode,
	}
}

// CheckCSRF is the one CSRF rule of errata, for every request that cookies
// may authenticate (the browser client of the sign-in API, /api/0/ with
// the session cookie, the pages). A safe method (GET, HEAD, OPTIONS,
// TRACE) passes. An unsafe one is ErrCSRF when:
//   - it says it is cross-site (Sec-Fetch-Site: cross-site), or its Origin
//     is not the server's (PUBLIC_URL's, else the request's own), even with
//     the right token;
//   - its X-CSRFToken header (or, for a form, its csrfmiddlewaretoken
//     field) is not equal, in constant time, to the well-formed token of
//     its csrftoken cookie.
func (a *Authenticator) CheckCSRF(r *http.Request) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return nil
	}
	if strings.EqualFold(r.Header.Get("Sec-Fetch-Site"), "cross-site") {
		return ErrCSRF
	}
	if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, a.origin(r)) {
		return ErrCSRF
	}
	c, err := r.Cookie(CSRFCookieName)
	if err != nil || !wellFormedCSRF(c.Value) {
		return ErrCSRF
	}
	sent := r.Header.Get(CSRFHeader)
	if sent == "" && isForm(r) {
		r.Body = http.MaxBytesReader(nil, r.Body, maxCSRFForm)
		sent = r.PostFormValue(CSRFFormField)
	}
	if subtle.ConstantTimeCompare([]byte(sent), []byte(c.Value)) != 1 {
		return ErrCSRF
	}
	return nil
}

// origin is the server's origin, scheme://host[:port]: PUBLIC_URL's, else
// the request's own.
func (a *Authenticator) origin(r *http.Request) string {
	if u, err := url.Parse(a.Sessions.PublicURL); err == nil && u.Scheme != "" && u.Host != "" {
		return u.Scheme + "://" + u.Host
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// sameOrigin reports whether the origins a and b (scheme://host[:port])
// are one: the scheme and host compared without case, a missing port
// being the scheme's own. "null", anything unparsable, and a URL with more
// than an origin (a path, a user, a query) is no origin.
func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil || ua.Host == "" || ub.Host == "" {
		return false
	}
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if strings.EqualFold(u.Scheme, "https") {
			return "443"
		}
		return "80"
	}
	bare := func(u *url.URL) bool { return u.Path == "" && u.User == nil && u.RawQuery == "" && u.Fragment == "" }
	return bare(ua) && bare(ub) && strings.EqualFold(ua.Scheme, ub.Scheme) &&
		strings.EqualFold(ua.Hostname(), ub.Hostname()) && port(ua) == port(ub)
}

// isForm reports whether r's body is an HTML form.
func isForm(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/x-www-form-urlencoded"
}
