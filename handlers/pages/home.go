package pages

import (
	"errors"
	"net/http"
	"strings"
)

// me is the API root's answer (GET /api/0/): who the visitor is.
type me struct {
	User *struct {
		ID    string `json:"id"`
		Email string `json:"email"`
		Name  string `json:"name"`
	} `json:"user"`
}

// organization is an organization of a list.
type organization struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
}

// homeView is the home page of a signed-in person.
type homeView struct {
	Name, Email   string
	Organizations []organization
	Bases         []apiBase
}

// apiBase is an address of errata's API for clients, shown on the home
// page.
type apiBase struct{ What, URL, Hint string }

// signInView is the sign-in form, and errata's addresses for clients.
type signInView struct {
	Email string
	Next  string
	Bases []apiBase
}

// Home serves GET / and POST /: a signed-in person's home (their
// organizations, and errata's addresses for clients), else the sign-in
// form, which posts the email address and password back here.
func (p *Pages) Home(v *Visit) error {
	if v.R.Method == http.MethodPost {
		return p.signIn(v)
	}
	var who me
	if _, err := v.Call("GET", "/api/0/", nil, &who); err != nil {
		return err
	}
	if who.User == nil {
		return v.Render("signin.html", View{Title: "Sign in", Data: signInView{Next: v.LocalNext(""), Bases: p.bases(v.R)}})
	}
	var orgs []organization
	_, err := v.Call("GET", "/api/0/organizations/", nil, &orgs)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusForbidden {
		err = nil // a member of no organization holds no org:read
	}
	if err != nil {
		return err
	}
	return v.Render("home.html", View{Title: "Home", SignedIn: true, Data: homeView{
		Name: who.User.Name, Email: who.User.Email, Organizations: orgs, Bases: p.bases(v.R)}})
}

// signIn posts the form's address and password to the sign-in API. A
// person with TOTP goes on to the second step; a wrong password shows the
// form again with the API's message.
func (p *Pages) signIn(v *Visit) error {
	next := v.LocalNext("/")
	_, err := v.Call("POST", "/_allauth/browser/v1/auth/login",
		map[string]string{"email": v.Form("email"), "password": v.Form("password")}, nil)
	var ae *APIError
	switch {
	case err == nil:
		v.Redirect(next)
		return nil
	case errors.As(err, &ae) && ae.Status == http.StatusUnauthorized:
		// allauth's 401 of a pending sign-in: the second factor's turn.
		v.Redirect("/auth/2fa/?next=" + queryEscape(next))
		return nil
	case errors.As(err, &ae) && ae.Status == http.StatusConflict:
		v.Redirect(next) // signed in already
		return nil
	case errors.As(err, &ae) && ae.Status < 500:
		return v.RenderStatus(ae.Status, "signin.html", View{Title: "Sign in", Error: ae.Detail,
			Data: signInView{Email: v.Form("email"), Next: v.LocalNext(""), Bases: p.bases(v.R)}})
	}
	return err
}

// bases are errata's addresses for clients: the API, its document, and
// the symbol servers of debuggers (docs/symbol-server.md).
func (p *Pages) bases(r *http.Request) []apiBase {
	base := p.d.PublicURL
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	base = strings.TrimSuffix(base, "/")
	return []apiBase{
		{"API root", base + "/api/0/", "Authorization: Bearer TOKEN, as sentry-cli sends it"},
		{"OpenAPI document", base + "/api/0/openapi.json", ""},
		{"debuginfod", base + "/debuginfod/{organization_slug}/",
			"DEBUGINFOD_URLS=" + strings.Replace(base, "://", "://errata:TOKEN@", 1) + "/debuginfod/{organization_slug}"},
		{"Symbol server", base + "/symbols/{organization_slug}/", `srv*C:\symbols*` + base + "/symbols/{organization_slug}"},
	}
}
