package allauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/authn"
	"errata/handlers"
	"errata/handlers/allauth/allauthdoc"
	"errata/store"
	"errata/store/storetest"
)

const password = "correct horse battery staple"

// testServer is errata's handlers on a fresh database with ann, who has a
// password and owns acme, and tia, who has a password and TOTP.
type testServer struct {
	*httptest.Server
	st *store.Store
	db string
}

func newTestServer(t *testing.T, signupOpen bool, change ...func(*handlers.Deps)) testServer {
	t.Helper()
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	hash, err := authn.HashPassword(password)
	if err != nil {
		t.Fatal(err)
	}
	for _, email := range []string{"ann@example.com", "tia@example.com"} {
		id, err := st.CreateUser(ctx, email, "")
		if err != nil {
			t.Fatal(err)
		}
		storetest.Exec(t, db, `UPDATE users SET password_hash = $2 WHERE id = $1`, id, hash)
	}
	if _, err := st.CreateOrganization(ctx, "acme", "Acme", "ann@example.com"); err != nil {
		t.Fatal(err)
	}
	storetest.Exec(t, db, `
		INSERT INTO totp_authenticators (user_id, secret_encrypted, last_step)
		SELECT id, '\x00', 0 FROM users WHERE email = 'tia@example.com'`)
	d := handlers.Deps{
		Store:      st,
		Auth:       &authn.Authenticator{Store: st},
		Log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		Passwords:  authn.NewHasher(2, time.Second),
		SignupOpen: signupOpen,
		SecretKey:  "a test secret key of more than 32 bytes",
	}
	for _, c := range change {
		c(&d)
	}
	srv := httptest.NewServer(handlers.New(d))
	t.Cleanup(srv.Close)
	return testServer{Server: srv, st: st, db: db}
}

// client is one client of the sign-in API: a browser with its cookies, or
// an app with its session token.
type client struct {
	t     *testing.T
	srv   testServer
	kind  string
	http  *http.Client
	token string // the app's session token
}

func (s testServer) client(t *testing.T, kind string) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, srv: s, kind: kind, http: &http.Client{Jar: jar}}
}

// cookie returns the value of the browser's cookie name, "" when none.
func (c *client) cookie(name string) string {
	u, _ := url.Parse(c.srv.URL)
	for _, k := range c.http.Jar.Cookies(u) {
		if k.Name == name {
			return k.Value
		}
	}
	return ""
}

// answer is a response: its status and decoded body.
type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

// do sends a request to path below /_allauth/{kind}/v1/ (or path itself
// when it starts with /), with the credentials of the client: a browser
// sends its CSRF token on unsafe methods unless header says otherwise.
// Every answer of the sign-in API must fit allauth's reference document
// (allauthdoc.CheckExcusing).
func (c *client) do(method, path string, body any, header ...string) answer {
	c.t.Helper()
	if !strings.HasPrefix(path, "/") {
		path = "/_allauth/" + c.kind + "/v1/" + path
	}
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		enc, _ := json.Marshal(b)
		r = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, c.srv.URL+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.kind == "browser" && method != "GET" {
		req.Header.Set("X-CSRFToken", c.cookie("csrftoken"))
	}
	if c.token != "" {
		req.Header.Set("X-Session-Token", c.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	a := answer{status: res.StatusCode, header: res.Header, raw: raw}
	json.Unmarshal(raw, &a.body)
	if strings.HasPrefix(path, "/_allauth/"+c.kind+"/v1/") {
		allauthdoc.CheckExcusing(c.t, method, path, a.status, raw)
	}
	return a
}

// expect checks the status and, when want is not "", the whole body.
func (a answer) expect(t *testing.T, status int, want string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.raw)
	}
	if want == "" {
		return
	}
	var w map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want: %v", err)
	}
	if diff := cmp.Diff(w, a.body); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

// signIn signs the client in as email and keeps an app's session token.
func (c *client) signIn(email string) answer {
	c.t.Helper()
	if c.kind == "browser" && c.cookie("csrftoken") == "" {
		c.do("GET", "config", nil).expect(c.t, 200, "")
	}
	a := c.do("POST", "auth/login", map[string]string{"email": email, "password": password})
	if meta, ok := a.body["meta"].(map[string]any); ok {
		if tok, ok := meta["session_token"].(string); ok {
			c.token = tok
		}
	}
	return a
}

func TestConfig(t *testing.T) {
	s := newTestServer(t, false)
	b := s.client(t, "browser")
	b.do("GET", "config", nil).expect(t, 200, `{"status": 200, "data": {
		"account": {"authentication_method": "email", "login_methods": ["email"], "is_open_for_signup": false,
			"email_verification_by_code_enabled": false, "login_by_code_enabled": false, "password_reset_by_code_enabled": false},
		"mfa": {"supported_types": ["totp", "recovery_codes"]},
		"usersessions": {"track_activity": true}}}`)
	if len(b.cookie("csrftoken")) < 43 {
		t.Errorf("the browser got no CSRF cookie of 256 bits: %q", b.cookie("csrftoken"))
	}
	a := s.client(t, "app")
	a.do("GET", "config", nil).expect(t, 200, "")
	if a.cookie("csrftoken") != "" {
		t.Error("the app got a CSRF cookie")
	}
	a.do("GET", "/_allauth/desktop/v1/config", nil).expect(t, 404, `{"status": 404}`)
	open := newTestServer(t, true)
	if got := open.client(t, "app").do("GET", "config", nil); got.body["data"].(map[string]any)["account"].(map[string]any)["is_open_for_signup"] != true {
		t.Errorf("SIGNUP=open: %s", got.raw)
	}
}

func TestLogin(t *testing.T) {
	s := newTestServer(t, false)
	for _, kind := range []string{"browser", "app"} {
		t.Run(kind, func(t *testing.T) {
			c := s.client(t, kind)
			c.do("GET", "auth/session", nil).expect(t, 401, `{"status": 401, "data": {"flows": [{"id": "login"}]}, "meta": {"is_authenticated": false}}`)
			mismatch := `{"status": 400, "errors": [{"message": "The email address and/or password you specified are not correct.", "code": "email_password_mismatch", "param": "password"}]}`
			c.do("POST", "auth/login", map[string]string{"email": "ann@example.com", "password": "wrong password"}).expect(t, 400, mismatch)
			c.do("POST", "auth/login", map[string]string{"email": "nobody@example.com", "password": password}).expect(t, 400, mismatch)
			c.do("POST", "auth/login", map[string]string{"email": "ann@example.com"}).expect(t, 400,
				`{"status": 400, "errors": [{"message": "This field is required.", "code": "required", "param": "password"}]}`)

			got := c.signIn("ann@example.com")
			got.expect(t, 200, "")
			data := got.body["data"].(map[string]any)
			if u := data["user"].(map[string]any); u["email"] != "ann@example.com" || u["has_usable_password"] != true || u["display"] != "ann@example.com" {
				t.Errorf("user %v", u)
			}
			meta := got.body["meta"].(map[string]any)
			switch kind {
			case "app":
				if len(c.token) != 43 {
					t.Errorf("app session token %q", c.token)
				}
			case "browser":
				if _, ok := meta["session_token"]; ok || c.cookie("errata_session") == "" {
					t.Errorf("browser: meta %v, cookie %q; want the cookie alone", meta, c.cookie("errata_session"))
				}
			}
			c.do("GET", "auth/session", nil).expect(t, 200, "")
			c.do("POST", "auth/login", map[string]string{"email": "ann@example.com", "password": password}).expect(t, 409, `{"status": 409}`)

			// The session authenticates /api/0/ with the union of its roles.
			root := c.do("GET", "/api/0/", nil)
			root.expect(t, 200, "")
			if u := root.body["user"].(map[string]any); u["email"] != "ann@example.com" {
				t.Errorf("GET /api/0/ user %v", u)
			}
			if n := len(root.body["auth"].(map[string]any)["scopes"].([]any)); n != len(authn.RoleScopes("owner")) {
				t.Errorf("GET /api/0/ has %d scopes, want the owner's %d", n, len(authn.RoleScopes("owner")))
			}

			c.do("DELETE", "auth/session", nil).expect(t, 401, "")
			if kind == "app" {
				c.do("GET", "auth/session", nil).expect(t, 410, `{"status": 410, "data": {}, "meta": {"is_authenticated": false}}`)
			} else {
				c.do("GET", "auth/session", nil).expect(t, 401, "")
			}
			c.do("GET", "/api/0/", nil).expect(t, 200, `{"version": "0", "user": null, "auth": null}`)
		})
	}
}

func TestLoginWithTOTPIsPending(t *testing.T) {
	s := newTestServer(t, false)
	c := s.client(t, "app")
	got := c.signIn("tia@example.com")
	got.expect(t, 401, "")
	flows := got.body["data"].(map[string]any)["flows"].([]any)
	if diff := cmp.Diff(map[string]any{"id": "mfa_authenticate", "is_pending": true, "types": []any{"totp"}}, flows[len(flows)-1]); diff != "" {
		t.Errorf("pending flow (-want +got):\n%s", diff)
	}
	if len(c.token) != 43 {
		t.Fatalf("no session token for the pending sign-in: %s", got.raw)
	}
	c.do("GET", "auth/session", nil).expect(t, 401, "")
	c.do("GET", "/api/0/", nil).expect(t, 200, `{"version": "0", "user": null, "auth": null}`)
	c.do("GET", "/api/0/organizations/", nil).expect(t, 401, "")
	// Signing in again starts over: the pending session ends.
	old := c.token
	c.signIn("tia@example.com").expect(t, 401, "")
	if n := storetest.Count(t, s.db, `SELECT count(*) FROM sessions`); n != 1 || c.token == old {
		t.Errorf("%d sessions after a second pending sign-in, want the new one alone", n)
	}
}

func TestBrowserCSRF(t *testing.T) {
	s := newTestServer(t, false)
	c := s.client(t, "browser")
	c.do("GET", "config", nil).expect(t, 200, "")
	login := map[string]string{"email": "ann@example.com", "password": password}
	c.do("POST", "auth/login", login, "X-CSRFToken", "").expect(t, 403, `{"status": 403}`)
	c.do("POST", "auth/login", login, "X-CSRFToken", authn.NewCSRFToken()).expect(t, 403, `{"status": 403}`)
	c.do("POST", "auth/login", login, "Origin", "https://evil.example").expect(t, 403, `{"status": 403}`)
	c.do("POST", "auth/login", login, "Sec-Fetch-Site", "cross-site").expect(t, 403, `{"status": 403}`)
	c.do("POST", "auth/login", login, "Origin", s.URL, "Sec-Fetch-Site", "same-origin").expect(t, 200, "")
	c.do("DELETE", "auth/session", nil, "X-CSRFToken", "").expect(t, 403, `{"status": 403}`)
	c.do("GET", "auth/session", nil).expect(t, 200, "")
}

func TestBadBodies(t *testing.T) {
	s := newTestServer(t, false)
	c := s.client(t, "app")
	malformed := `{"status": 400, "errors": [{"message": "The request body is not valid JSON.", "code": "invalid"}]}`
	c.do("POST", "auth/login", "{", "Content-Type", "application/json").expect(t, 400, malformed)
	c.do("POST", "auth/login", "[]").expect(t, 400, malformed)
	c.do("POST", "auth/login", `{"email": "ann@example.com", "password": "x"} {}`).expect(t, 400, malformed)
	c.do("POST", "auth/login", "{\"email\": \"ann@example.com\xff\", \"password\": \"x\"}").expect(t, 400, malformed)
	c.do("POST", "auth/login", `{"email": 1, "password": "x"}`).expect(t, 400,
		`{"status": 400, "errors": [{"message": "Enter a valid value.", "code": "invalid", "param": "email"}]}`)
	c.do("POST", "auth/login", `{"email": "ann\u0000@example.com", "password": "x"}`).expect(t, 400,
		`{"status": 400, "errors": [{"message": "Enter a valid email address.", "code": "invalid", "param": "email"}]}`)
	c.do("POST", "auth/login", `{"email": "`+strings.Repeat("a", 20000)+`"}`).expect(t, 413, `{"status": 413}`)
}

func TestBusyHasher(t *testing.T) {
	hasher := authn.NewHasher(1, time.Millisecond)
	s := newTestServer(t, false, func(d *handlers.Deps) { d.Passwords = hasher })
	// Two goroutines keep the one hash slot taken, one after the other, so
	// a sign-in finds it taken (and waits 1 ms for it) nearly every time.
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for ctx.Err() == nil {
				hasher.Hash(ctx, "a password that keeps the slot taken")
			}
		})
	}
	defer wg.Wait()
	defer stop()
	// One by one: a sign-in that slips into the slot is a 200 and counts
	// no failure, so five stay within the account's throttle.
	for i := range 5 {
		a := s.client(t, "app").do("POST", "auth/login", map[string]string{"email": "ann@example.com", "password": password})
		switch a.status {
		case 200:
			continue
		case 503:
			if a.header.Get("Retry-After") != "5" || string(a.raw) != `{"status":503}`+"\n" {
				t.Errorf("busy answer: Retry-After %q, body %s", a.header.Get("Retry-After"), a.raw)
			}
			return
		default:
			t.Fatalf("sign-in %d: status %d: %s", i, a.status, a.raw)
		}
	}
	t.Errorf("none of 5 sign-ins while the one hash slot was kept taken was told to retry")
}
