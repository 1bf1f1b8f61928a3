// Package pages serves errata's pages for people (docs/pages.md): HTML
// rendered on the server from templates embedded in the binary, with one
// stylesheet and no script, under the session and CSRF rules of
// docs/accounts.md.
//
// A page holds no rule of its own about who may see or change what: it
// asks the API, in-process, with the visitor's own cookies, and shows
// what the API answers that person. A signed-out visitor's pages (all but
// the open ones) are redirected to sign-in when the API answers 401.
package pages

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"errata/authn"
)

// CSP is the Content-Security-Policy of every page: nothing but errata's
// own address (docs/pages.md), and no page of errata's in another's frame.
const CSP = "default-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static/errata.css
var stylesheet []byte

//go:embed static/favicon.svg
var favicon []byte

// Deps is what the pages use.
type Deps struct {
	// API serves the API's routes (/api/0/ and /_allauth/); the pages
	// call it in-process with the visitor's cookies.
	API     http.Handler
	Auth    *authn.Authenticator
	Log     *slog.Logger
	Version string
	// PublicURL is scheme://host of the addresses the home page names;
	// "" takes the request's own.
	PublicURL string
}

// Pages renders the pages.
type Pages struct {
	d     Deps
	pages map[string]*template.Template // by template file, each with the layout
}

// New parses every template; a template that does not parse is a bug
// of the build, so it panics.
func New(d Deps) *Pages {
	p := &Pages{d: d, pages: map[string]*template.Template{}}
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html"))
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	for _, name := range names {
		base := strings.TrimPrefix(name, "templates/")
		if base == "layout.html" {
			continue
		}
		p.pages[base] = template.Must(template.Must(layout.Clone()).ParseFS(templateFS, name))
	}
	return p
}

// Route is one page: its path pattern for http.ServeMux (no method: a
// page answers GET and HEAD, and POST for its forms, which post back to
// it), whether a signed-out person may open it, and its code.
type Route struct {
	Pattern string
	Open    bool
	Serve   func(v *Visit) error
}

// Handler wraps a page's code with the rules every page shares: its
// headers (CSP, no caching, no referrer), the CSRF check of a POST
// (authn.CheckCSRF, the one rule), the CSRF cookie for its forms, the
// redirect to sign-in when the API says the visitor is signed out, and an
// error page for what went wrong.
func (p *Pages) Handler(rt Route) http.Handler {
	open := rt.Open
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", CSP)
		hd.Set("Cache-Control", "no-store")
		// Some addresses carry keys: they go to no other site. (With
		// no-referrer, a browser posts forms with "Origin: null", which the
		// CSRF rule refuses.)
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("X-Frame-Options", "DENY")
		v := &Visit{p: p, w: w, R: r, open: open, cookies: map[string]string{}}
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodPost:
		default:
			hd.Set("Allow", "GET, HEAD, POST")
			v.fail(http.StatusMethodNotAllowed, "Method not allowed", "Pages answer GET and POST.")
			return
		}
		for _, c := range r.Cookies() {
			v.cookies[c.Name] = c.Value
		}
		if c := p.d.Auth.CSRFCookie(r); c != nil {
			http.SetCookie(w, c)
			v.cookies[c.Name] = c.Value
		}
		if r.Method == http.MethodPost {
			// The form is read first, within maxForm, so that the CSRF
			// check reads its field from it.
			r.Body = http.MaxBytesReader(w, r.Body, maxForm)
			if err := r.ParseForm(); err != nil {
				var tooLarge *http.MaxBytesError
				if errors.As(err, &tooLarge) {
					v.fail(http.StatusRequestEntityTooLarge, "The form is too large", "A form holds at most 1 MiB.")
					return
				}
				v.fail(http.StatusBadRequest, "The form could not be read", "Reload the page and send the form again.")
				return
			}
			if err := p.d.Auth.CheckCSRF(r); err != nil {
				v.fail(http.StatusForbidden, "The form was refused",
					"This form's security token did not match. Reload the page and send the form again.")
				return
			}
			v.checked = true
		}
		err := rt.Serve(v)
		var ae *APIError
		switch {
		case err == nil:
			if !v.done {
				p.d.Log.ErrorContext(r.Context(), "page answered nothing", "pattern", rt.Pattern)
				v.fail(http.StatusInternalServerError, "Something went wrong", "This page answered nothing.")
			}
		case errors.As(err, &ae) && ae.Reauthenticate:
			v.Redirect("/account/reauthenticate/?next=" + url.QueryEscape(r.URL.RequestURI()))
		case errors.As(err, &ae) && ae.Status == http.StatusUnauthorized && !open:
			v.Redirect("/?next=" + url.QueryEscape(r.URL.RequestURI()))
		case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
			v.fail(http.StatusNotFound, "Not found", "There is nothing here, or it is not yours to see.")
		case errors.As(err, &ae) && ae.Status == http.StatusForbidden:
			v.fail(http.StatusForbidden, "Not allowed", ae.Detail)
		case errors.As(err, &ae) && ae.Status < 500:
			v.fail(ae.Status, "Something is wrong with this request", ae.Detail)
		default:
			p.d.Log.ErrorContext(r.Context(), "page", "pattern", rt.Pattern, "err", err)
			v.fail(http.StatusServiceUnavailable, "Something went wrong", "errata could not answer just now. Try again in a moment.")
		}
	})
}

// maxForm bounds the form of a page's POST; the resolve page's stack
// trace is the largest field. It is authn's bound on a form whose CSRF
// field it reads.
const maxForm = 1 << 20

// Visit is one request to a page.
type Visit struct {
	p *Pages
	w http.ResponseWriter
	R *http.Request
	// cookies are the visitor's, updated by the Set-Cookie answers of the
	// API calls made so far (sign-in rotates the session).
	cookies map[string]string
	open    bool // a page a signed-out person may open
	checked bool // the request is a POST that passed authn.CheckCSRF
	done    bool
}

// Form returns the posted field name.
func (v *Visit) Form(name string) string { return v.R.PostForm.Get(name) }

// Redirect answers 303 See Other to a path of errata's.
func (v *Visit) Redirect(path string) {
	if v.done {
		return
	}
	v.done = true
	http.Redirect(v.w, v.R, path, http.StatusSeeOther)
}

// LocalNext returns the request's ?next= when it is a path of errata's,
// else fallback: a redirect never leads elsewhere.
func (v *Visit) LocalNext(fallback string) string {
	next := v.R.URL.Query().Get("next")
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.ContainsAny(next, "\\\r\n\t") {
		return fallback
	}
	return next
}

// View is what the layout shows around a page's content.
type View struct {
	Title string
	// Org is the slug of the organization the page belongs to, which
	// shows the organization's links; OrgName is its name when the page
	// read it (else the links name the slug).
	Org, OrgName string
	// Error and Notice are shown above the content.
	Error, Notice string
	Data          any
	// SignedIn shows the links of a signed-in person; Render sets it on
	// every page that is not open (the API would have redirected a
	// signed-out visitor already).
	SignedIn bool
	// Set by Render.
	CSRF    string
	Version string
}

// Render writes page (a template file of templates/) with status 200.
func (v *Visit) Render(page string, view View) error {
	return v.RenderStatus(http.StatusOK, page, view)
}

// RenderStatus writes page with status.
func (v *Visit) RenderStatus(status int, page string, view View) error {
	if v.done {
		return nil
	}
	t, ok := v.p.pages[page]
	if !ok {
		return errors.New("pages: no template " + page)
	}
	view.CSRF = v.cookies[authn.CSRFCookieName]
	view.SignedIn = view.SignedIn || !v.open
	view.Version = v.p.d.Version
	buf := buffers.Get().(*bytes.Buffer)
	defer putBuffer(buf)
	if err := t.ExecuteTemplate(buf, "layout", view); err != nil {
		return err
	}
	v.done = true
	hd := v.w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Content-Length", strconv.Itoa(buf.Len()))
	v.w.WriteHeader(status)
	if v.R.Method != http.MethodHead {
		v.w.Write(buf.Bytes()) //nolint:errcheck // the client went away
	}
	return nil
}

// fail renders the error page.
func (v *Visit) fail(status int, title, message string) {
	if err := v.RenderStatus(status, "error.html", View{Title: title, Data: message}); err != nil {
		v.p.d.Log.ErrorContext(v.R.Context(), "render error page", "err", err)
		if !v.done {
			http.Error(v.w, title, status)
		}
	}
}

// APIError is an answer of the API that a page did not expect: its
// status and the message a person can read.
type APIError struct {
	Status int
	Detail string
	// Reauthenticate is the API's 401 "Reauthentication required": the
	// person is signed in but must confirm who they are again.
	Reauthenticate bool
	// Fields are the messages of allauth's errors by parameter ("" for
	// the request as a whole).
	Fields map[string]string
	// Body is the answer as it came, for the answers that carry more
	// than an error (allauth's 404 of TOTP offers a secret to enrol).
	Body []byte
	// Pending is the flow of allauth's 401 that waits for the visitor
	// ("mfa_authenticate" while a sign-in waits for its second factor),
	// "" when none does.
	Pending string
}

func (e *APIError) Error() string { return strconv.Itoa(e.Status) + " " + e.Detail }

// Call asks the API: method and path (with its query), body as JSON when
// not nil, the answer's JSON decoded into out when the status is 2xx. A
// status of 400 or more is an *APIError. The request carries the
// visitor's cookies, client address, origin and user agent, and the CSRF
// token (the page's own POST passed authn.CheckCSRF already); the
// cookies the API sets go to the visitor.
func (v *Visit) Call(method, path string, body, out any) (int, error) {
	status, _, err := v.call(method, path, body, out)
	return status, err
}

// Pager is where a list's neighbouring pages are: the cursors of the
// API's Link header, "" where there is no such page.
type Pager struct{ Previous, Next string }

// List asks the API for one page of a list, at the request's own
// ?cursor=, and decodes it into out: a page of a list shows what the
// API's page shows, and links to its neighbours by the API's cursors.
func (v *Visit) List(path string, out any) (Pager, error) {
	if c := v.R.URL.Query().Get("cursor"); c != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "cursor=" + url.QueryEscape(c)
	}
	_, h, err := v.call("GET", path, nil, out)
	if err != nil {
		return Pager{}, err
	}
	var p Pager
	for _, link := range strings.Split(h.Get("Link"), ",") {
		rel, results, cursor := linkParam(link, "rel"), linkParam(link, "results"), linkParam(link, "cursor")
		if results != "true" || cursor == "" {
			continue
		}
		switch rel {
		case "previous":
			p.Previous = cursor
		case "next":
			p.Next = cursor
		}
	}
	return p, nil
}

// linkParam is the value of the parameter name="value" of one link of a
// Link header.
func linkParam(link, name string) string {
	_, rest, ok := strings.Cut(link, "; "+name+"=\"")
	if !ok {
		return ""
	}
	value, _, _ := strings.Cut(rest, "\"")
	return value
}

// errUnsafeOnGet is a page's attempt to change something while it is
// shown: only a form's POST, which passed the CSRF check, may.
var errUnsafeOnGet = errors.New("pages: an unsafe API call outside a checked POST")

// call is Call, also returning the answer's header.
func (v *Visit) call(method, path string, body, out any) (int, http.Header, error) {
	switch method {
	case http.MethodGet, http.MethodHead:
	default:
		if !v.checked {
			return 0, nil, errUnsafeOnGet
		}
	}
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(v.R.Context(), method, path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.RemoteAddr, req.Host, req.TLS = v.R.RemoteAddr, v.R.Host, v.R.TLS
	for _, h := range []string{"Origin", "Sec-Fetch-Site", "X-Forwarded-For", "User-Agent"} {
		if s := v.R.Header.Get(h); s != "" {
			req.Header.Set(h, s)
		}
	}
	for name, value := range v.cookies {
		req.AddCookie(&http.Cookie{Name: name, Value: value})
	}
	req.Header.Set(authn.CSRFHeader, v.cookies[authn.CSRFCookieName])
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	rec := &recorder{header: http.Header{}, body: buffers.Get().(*bytes.Buffer)}
	defer putBuffer(rec.body)
	v.p.d.API.ServeHTTP(rec, req)
	for _, c := range (&http.Response{Header: rec.header}).Cookies() {
		http.SetCookie(v.w, c)
		if c.MaxAge < 0 {
			delete(v.cookies, c.Name)
		} else {
			v.cookies[c.Name] = c.Value
		}
	}
	if rec.status >= 400 {
		return rec.status, rec.header, apiError(rec.status, rec.body.Bytes())
	}
	if out != nil && rec.body.Len() > 0 {
		var err error
		if d, ok := out.(apiDecoder); ok {
			err = d.decodeAPI(rec.body.Bytes())
		} else {
			err = json.Unmarshal(rec.body.Bytes(), out)
		}
		if err != nil {
			return rec.status, rec.header, err
		}
	}
	return rec.status, rec.header, nil
}

// apiDecoder is an out of Call or List that reads the API's JSON itself:
// a long list whose page shows a few fields of each item skips the rest
// rather than having encoding/json check and decode all of it. It keeps
// nothing of body, whose buffer is reused.
type apiDecoder interface {
	decodeAPI(body []byte) error
}

// buffers recycles the buffers of the API's answers and of the pages
// rendered: a list's are tens of kilobytes, which would otherwise be
// allocated and collected for every page shown.
// A new one starts at 64 KiB, a list's page of the API, so that it is not
// grown step by step after each collection empties the pool.
var buffers = sync.Pool{New: func() any { return bytes.NewBuffer(make([]byte, 0, 64<<10)) }}

// putBuffer returns b to buffers, unless it grew beyond a list's size.
func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 {
		b.Reset()
		buffers.Put(b)
	}
}

// apiError reads the message of an API error: Sentry's {"detail"}, a
// validation error's list, or allauth's {"errors": [{message, param}]}.
func apiError(status int, body []byte) *APIError {
	// body is a pooled buffer's: what is kept is a copy.
	e := &APIError{Status: status, Fields: map[string]string{}, Body: bytes.Clone(body)}
	var answer struct {
		Detail any `json:"detail"`
		Errors []struct {
			Message string `json:"message"`
			Param   string `json:"param"`
		} `json:"errors"`
		Meta struct {
			IsAuthenticated bool `json:"is_authenticated"`
		} `json:"meta"`
		Data struct {
			Flows []struct {
				ID        string `json:"id"`
				IsPending bool   `json:"is_pending"`
			} `json:"flows"`
		} `json:"data"`
	}
	json.Unmarshal(body, &answer) //nolint:errcheck // an unreadable body keeps the status's text
	switch d := answer.Detail.(type) {
	case string:
		e.Detail = d
	case []any:
		for _, item := range d {
			if m, ok := item.(map[string]any); ok {
				if msg, ok := m["msg"].(string); ok {
					e.Detail = msg
					break
				}
			}
		}
	}
	for _, fe := range answer.Errors {
		if e.Detail == "" {
			e.Detail = fe.Message
		}
		if _, seen := e.Fields[fe.Param]; !seen {
			e.Fields[fe.Param] = fe.Message
		}
	}
	for _, f := range answer.Data.Flows {
		if f.IsPending {
			e.Pending = f.ID
		}
	}
	if e.Detail == "" {
		e.Detail = http.StatusText(status)
	}
	// The API's 401 of a route that needs a recent sign-in: /api/0/'s
	// message, or the sign-in API's 401 to a person who is signed in
	// (allauth answers it with the reauthentication flows).
	e.Reauthenticate = status == http.StatusUnauthorized &&
		(e.Detail == "Reauthentication required" || answer.Meta.IsAuthenticated)
	return e
}

// recorder keeps an in-process answer of the API.
type recorder struct {
	header http.Header
	status int
	body   *bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// Stylesheet serves GET /static/errata.css.
func (p *Pages) Stylesheet() http.Handler { return static("text/css; charset=utf-8", stylesheet) }

// Favicon serves GET /static/favicon.svg, the pages' icon.
func (p *Pages) Favicon() http.Handler { return static("image/svg+xml", favicon) }

// static serves body, a file of the binary's, as contentType.
func static(contentType string, body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Type", contentType)
		hd.Set("Cache-Control", "public, max-age=3600")
		hd.Set("Content-Security-Policy", CSP)
		hd.Set("Content-Length", strconv.Itoa(len(body)))
		if r.Method != http.MethodHead {
			w.Write(body) //nolint:errcheck // the client went away
		}
	})
}

// funcs are the templates' own functions.
var funcs = template.FuncMap{
	// path escapes one segment of a path (a release version may hold "/").
	"path": url.PathEscape,
}

// queryEscape escapes a query value.
func queryEscape(s string) string { return url.QueryEscape(s) }
