package main

import (
	"context"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"errata/authn"
	"errata/handlers/allauth/allauthdoc"
)

// allauthRoutes returns the sign-in routes errata serves, as "METHOD
// route" (route below /_allauth/{client}/v1/), read from the route table.
func allauthRoutes(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("handlers/routes.go")
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	for _, m := range regexp.MustCompile(`"(GET|POST|PUT|PATCH|DELETE) /_allauth/\{client\}/v1/([^"{}]+)"`).FindAllStringSubmatch(string(src), -1) {
		routes = append(routes, m[1]+" "+m[2])
	}
	for _, must := range []string{"GET config", "POST auth/login", "GET auth/session", "DELETE auth/session"} {
		if !slices.Contains(routes, must) {
			t.Fatalf("handlers/routes.go serves no %s: the sign-in routes were not found (%q)", must, routes)
		}
	}
	return routes
}

// allauthClient is one client of the sign-in API: a browser (its cookies
// and, on unsafe methods, the CSRF header) or an app (X-Session-Token).
// Every answer it gets is validated against the allauth document.
type allauthClient struct {
	s      *errataServer
	kind   string // browser or app
	http   *http.Client
	token  string          // an app's session token
	walked map[string]bool // the answers of the walk, "METHOD route status"
}

func newAllauthClient(t *testing.T, s *errataServer, kind string, walked map[string]bool) *allauthClient {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &allauthClient{s: s, kind: kind, http: &http.Client{Jar: jar}, walked: walked}
	if kind == "app" {
		c.http.Jar = nil
	}
	return c
}

// rawBody is a request body sent as it is, not encoded as JSON.
type rawBody string

// call sends method to route with body (JSON, a rawBody, or none when
// nil) and header (name, value, ...), checks that the answer is want and
// matches the allauth document, and returns the answer decoded. An app
// keeps the session token an answer gives.
func (c *allauthClient) call(t *testing.T, method, route string, body any, want int, header ...string) map[string]any {
	t.Helper()
	path := "/_allauth/" + c.kind + "/v1/" + route
	payload, isRaw := body.(rawBody)
	if body != nil && !isRaw {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		payload = rawBody(b)
	}
	req, err := http.NewRequest(method, c.s.url+path, strings.NewReader(string(payload)))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// Each kind of client comes from an address of its own (the server
	// trusts the loopback proxy), so that the two walks share no
	// throttle of client addresses.
	req.Header.Set("X-Forwarded-For", map[string]string{"browser": "192.0.2.1", "app": "192.0.2.2"}[c.kind])
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	switch {
	case c.kind == "app" && c.token != "":
		req.Header.Set(authn.SessionTokenHeader, c.token)
	case c.kind == "browser" && method != "GET":
		req.Header.Set(authn.CSRFHeader, c.cookie(t, authn.CSRFCookieName))
	}
	res, err := c.http.Do(req)
	var got []byte
	if err == nil {
		got, err = io.ReadAll(res.Body)
		res.Body.Close()
	}
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if res.StatusCode != want {
		t.Errorf("%s %s: status %d, want %d: %s", method, path, res.StatusCode, want, got)
	}
	allauthdoc.Check(t, method, path, res.StatusCode, got)
	c.walked[fmt.Sprintf("%s %s %d", method, route, res.StatusCode)] = true
	var v map[string]any
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, got)
	}
	if meta, _ := v["meta"].(map[string]any); meta != nil {
		if tok, _ := meta["session_token"].(string); tok != "" && c.kind == "app" {
			c.token = tok
		}
	}
	return v
}

// cookie returns the value of the browser's cookie name, asking GET config
// for the CSRF cookie when it has none yet.
func (c *allauthClient) cookie(t *testing.T, name string) string {
	t.Helper()
	u, err := url.Parse(c.s.url)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		for _, ck := range c.http.Jar.Cookies(u) {
			if ck.Name == name {
				return ck.Value
			}
		}
		c.call(t, "GET", "config", nil, http.StatusOK)
	}
	t.Fatalf("the browser has no cookie %s", name)
	return ""
}

// gone is the status of GET auth/session whose session has ended: an
// app's token that stopped working is 410, a browser (whose cookie sign-out
// removed, or whose session another request ended) is 401.
func (c *allauthClient) gone() int {
	if c.kind == "app" {
		return http.StatusGone
	}
	return http.StatusUnauthorized
}

// setPasswordByCLI gives the user email the password with `errata admin
// set-password`, run as a child (the password is its standard input).
func setPasswordByCLI(t *testing.T, s *errataServer, email, password string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "admin", "set-password", "--email", email)
	cmd.Env = []string{childEnv + "=1", "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir()}
	for k, v := range s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = strings.NewReader(password + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("errata admin set-password --email %s: %v\n%s", email, err, out)
	}
}

// ageSession makes every session of the user email authenticated 10
// minutes ago: no longer recently (5 minutes), without waiting.
func ageSession(t *testing.T, db *pgx.Conn, email string) {
	t.Helper()
	if _, err := db.Exec(context.Background(), `
		UPDATE sessions SET authenticated_at = authenticated_at - interval '10 minutes'
		WHERE user_id = (SELECT id FROM users WHERE email = $1)`, email); err != nil {
		t.Fatal(err)
	}
}

// errorCode is the code of an answer's first error.
func errorCode(v map[string]any) string {
	errs, _ := v["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	e, _ := errs[0].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// flowIDs lists the ids of an answer's flows, with "(pending)" after a
// pending one.
func flowIDs(v map[string]any) []string {
	data, _ := v["data"].(map[string]any)
	flows, _ := data["flows"].([]any)
	var ids []string
	for _, f := range flows {
		f, _ := f.(map[string]any)
		id, _ := f["id"].(string)
		if f["is_pending"] == true {
			id += " (pending)"
		}
		ids = append(ids, id)
	}
	return ids
}

// TestAllauthConformance walks every sign-in route errata serves through
// both clients, browser and app, over their successes and errors, and
// validates each answer against django-allauth's OpenAPI document
// (allauthdoc.Check): path, method, status and body. The answers the
// document names no success for are held to the GET that docs/accounts.md
// gives their shape. A route of handlers/routes.go that
// the walk never asks fails the test: a new route cannot land unchecked.
func TestAllauthConformance(t *testing.T) {
	t.Parallel()
	// Mail goes to a port where nothing listens: it stays in the outbox,
	// where the walk reads the keys of its links.
	s := startErrata(t, map[string]string{
		"TRUSTED_PROXIES": "127.0.0.1",
		"EMAIL_URL":       fmt.Sprintf("smtp://127.0.0.1:%d", freePort(t)),
	})
	routes := allauthRoutes(t)
	for _, kind := range []string{"browser", "app"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			walked := map[string]bool{}
			walkAllauth(t, s, kind, walked)
			answers := slices.Sorted(maps.Keys(walked))
			for _, route := range routes {
				if !slices.ContainsFunc(answers, func(a string) bool { return strings.HasPrefix(a, route+" ") }) {
					t.Errorf("%s is served but the walk never asks it", route)
				}
			}
			t.Logf("%s client, answers validated:\n%s", kind, strings.Join(answers, "\n"))
		})
	}
	t.Run("open sign-up", func(t *testing.T) {
		t.Parallel()
		walkOpenSignup(t)
	})
}

// walkOpenSignup signs people up through both clients on a server of its
// own, whose sign-up is open (SIGNUP=open).
func walkOpenSignup(t *testing.T) {
	s := startErrata(t, map[string]string{"SIGNUP": "open"})
	for _, kind := range []string{"browser", "app"} {
		walked := map[string]bool{}
		email := "joins-" + kind + "@example.com"
		password := "joining " + kind + " passphrase 1"
		c := newAllauthClient(t, s, kind, walked)
		c.call(t, "GET", "config", nil, http.StatusOK)
		if v := c.call(t, "GET", "auth/session", nil, http.StatusUnauthorized); !slices.Contains(flowIDs(v), "signup") {
			t.Errorf("open sign-up: flows %q, want signup among them", flowIDs(v))
		}
		c.call(t, "POST", "auth/signup", map[string]string{"email": email, "password": "short"}, http.StatusBadRequest)
		c.call(t, "POST", "auth/signup", map[string]string{"email": email, "password": password}, http.StatusOK)
		c.call(t, "POST", "auth/signup", map[string]string{"email": email, "password": password}, http.StatusConflict)
		c.call(t, "GET", "auth/session", nil, http.StatusOK)
		other := newAllauthClient(t, s, kind, walked)
		if v := other.call(t, "POST", "auth/signup", map[string]string{"email": email, "password": password}, http.StatusBadRequest); errorCode(v) != "email_taken" {
			t.Errorf("a taken address: code %q, want email_taken", errorCode(v))
		}
		t.Logf("%s client, open sign-up, answers validated:\n%s", kind, strings.Join(slices.Sorted(maps.Keys(walked)), "\n"))
	}
}

// walkAllauth is one client's walk: signed out, signed in with the
// password, an address verified, TOTP enrolled, signed in with a recovery
// code, the password changed and reset.
func walkAllauth(t *testing.T, s *errataServer, kind string, walked map[string]bool) {
	email := kind + "@example.com"
	password := "first " + kind + " passphrase 1"
	s.cli(t, "admin", "create-user", "--email", email, "--name", "Signs In "+kind)
	setPasswordByCLI(t, s, email, password)
	c := newAllauthClient(t, s, kind, walked)
	// The walk's own connection: the server's (s.db) is not for two
	// goroutines.
	db, err := pgx.Connect(context.Background(), s.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	login := map[string]string{"email": email, "password": password}

	// Signed out.
	c.call(t, "GET", "config", nil, http.StatusOK)
	c.call(t, "GET", "auth/session", nil, http.StatusUnauthorized)
	c.call(t, "DELETE", "auth/session", nil, http.StatusUnauthorized)
	if v := c.call(t, "POST", "auth/login", map[string]string{"email": email, "password": "not the passphrase"}, http.StatusBadRequest); errorCode(v) != "email_password_mismatch" {
		t.Errorf("a wrong password: code %q, want email_password_mismatch", errorCode(v))
	}
	c.call(t, "POST", "auth/login", map[string]string{"email": "not an address", "password": password}, http.StatusBadRequest)
	c.call(t, "POST", "auth/login", rawBody(`{"email": "`+email+`", "password": `), http.StatusBadRequest)
	c.call(t, "POST", "auth/2fa/authenticate", map[string]string{"code": "123456"}, http.StatusUnauthorized)
	c.call(t, "POST", "auth/signup", map[string]string{"email": "new-" + email, "password": password}, http.StatusForbidden)
	c.call(t, "DELETE", "auth/sessions", map[string]any{"sessions": []int{1}}, http.StatusUnauthorized)
	c.call(t, "GET", "account/authenticators", nil, http.StatusUnauthorized)
	c.call(t, "GET", "auth/email/verify", nil, http.StatusBadRequest, "X-Email-Verification-Key", "not-a-key")
	c.call(t, "POST", "auth/email/verify", map[string]string{"key": "not-a-key"}, http.StatusBadRequest)
	c.call(t, "POST", "auth/email/verify/resend", nil, http.StatusConflict)

	// Signed in with the password alone; signed out; in again.
	c.call(t, "POST", "auth/login", login, http.StatusOK)
	c.call(t, "POST", "auth/login", login, http.StatusConflict)
	c.call(t, "GET", "auth/session", nil, http.StatusOK)
	c.call(t, "DELETE", "auth/session", nil, http.StatusUnauthorized)
	c.call(t, "GET", "auth/session", nil, c.gone()) // an app still sends the ended token
	c.token = ""
	c.call(t, "GET", "auth/session", nil, http.StatusUnauthorized)
	c.call(t, "POST", "auth/login", login, http.StatusOK)

	// Sessions: another one listed, then ended.
	other := newAllauthClient(t, s, kind, walked)
	other.call(t, "POST", "auth/login", login, http.StatusOK)
	v := c.call(t, "GET", "auth/sessions", nil, http.StatusOK)
	list, _ := v["data"].([]any)
	var otherID any
	for _, e := range list {
		if e, _ := e.(map[string]any); e["is_current"] == false {
			otherID = e["id"]
		}
	}
	if len(list) != 2 || otherID == nil {
		t.Fatalf("GET auth/sessions: want the current and one other session: %v", v)
	}
	c.call(t, "DELETE", "auth/sessions", map[string]any{"sessions": []any{otherID}}, http.StatusOK)
	other.call(t, "GET", "auth/session", nil, other.gone())

	// Reauthentication.
	if v := c.call(t, "POST", "auth/reauthenticate", map[string]string{"password": "not the passphrase"}, http.StatusBadRequest); errorCode(v) != "incorrect_password" {
		t.Errorf("reauthenticate with a wrong password: code %q, want incorrect_password", errorCode(v))
	}
	c.call(t, "POST", "auth/reauthenticate", map[string]string{"password": password}, http.StatusOK)

	// A second address, added through /api/0/, verified by the key its
	// mail carries.
	second := "second-" + email
	s.token = s.cli(t, "admin", "create-token", "--email", email, "--scopes", "member:write")
	if status, body := s.api(t, "POST", "/api/0/users/me/emails/", map[string]string{"email": second}); status != http.StatusCreated {
		t.Fatalf("add %s: %d %s", second, status, body)
	}
	c.call(t, "GET", "auth/email/verify", nil, http.StatusOK, "X-Email-Verification-Key", mailKey(t, db, second, "/profile/confirm-email/"))
	c.call(t, "POST", "auth/email/verify/resend", nil, http.StatusOK)
	c.call(t, "POST", "auth/email/verify", map[string]string{"key": mailKey(t, db, second, "/profile/confirm-email/")}, http.StatusOK)
	c.call(t, "POST", "auth/email/verify/resend", nil, http.StatusConflict)

	// Second factors: none yet, then TOTP enrolled with its recovery codes.
	c.call(t, "GET", "account/authenticators", nil, http.StatusOK)
	c.call(t, "GET", "account/authenticators/recovery-codes", nil, http.StatusNotFound)
	if v := c.call(t, "POST", "account/authenticators/recovery-codes", nil, http.StatusBadRequest); errorCode(v) != "cannot_generate_recovery_codes" {
		t.Errorf("recovery codes without TOTP: code %q, want cannot_generate_recovery_codes", errorCode(v))
	}
	v = c.call(t, "GET", "account/authenticators/totp", nil, http.StatusNotFound)
	meta, _ := v["meta"].(map[string]any)
	encoded, _ := meta["secret"].(string)
	secret, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(encoded)
	if err != nil {
		t.Fatalf("meta.secret %q: %v", encoded, err)
	}
	step := authn.TOTPStep(time.Now())
	code := authn.TOTPCode(secret, step)
	n, err := strconv.Atoi(code)
	if err != nil {
		t.Fatalf("TOTP code %q: %v", code, err)
	}
	wrong := fmt.Sprintf("%06d", (n+500000)%1000000)
	c.call(t, "POST", "account/authenticators/totp", map[string]string{"code": wrong}, http.StatusBadRequest)
	c.call(t, "POST", "account/authenticators/totp", map[string]string{"code": code}, http.StatusOK)
	c.call(t, "POST", "account/authenticators/totp", map[string]string{"code": code}, http.StatusConflict)
	c.call(t, "GET", "account/authenticators/totp", nil, http.StatusOK)
	c.call(t, "GET", "account/authenticators", nil, http.StatusOK)
	c.call(t, "GET", "account/authenticators/recovery-codes", nil, http.StatusOK)
	v = c.call(t, "POST", "account/authenticators/recovery-codes", nil, http.StatusOK)
	data, _ := v["data"].(map[string]any)
	recoveryCodes, _ := data["unused_codes"].([]any)
	if len(recoveryCodes) == 0 {
		t.Fatalf("no recovery codes after enrolment: %v", v)
	}

	// Not recently authenticated: refused, then reauthenticated with the
	// next step's code (one step of drift is accepted, and it is later than
	// the step enrolment spent).
	ageSession(t, db, email)
	c.call(t, "GET", "account/authenticators/recovery-codes", nil, http.StatusUnauthorized)
	c.call(t, "POST", "auth/2fa/reauthenticate", map[string]string{"code": wrong}, http.StatusBadRequest)
	c.call(t, "POST", "auth/2fa/reauthenticate", map[string]string{"code": authn.TOTPCode(secret, step+1)}, http.StatusOK)
	c.call(t, "GET", "account/authenticators/recovery-codes", nil, http.StatusOK)

	// Signed out, then in with the password and a recovery code.
	c.call(t, "DELETE", "auth/session", nil, http.StatusUnauthorized)
	c.token = ""
	v = c.call(t, "POST", "auth/login", login, http.StatusUnauthorized)
	if !slices.Contains(flowIDs(v), "mfa_authenticate (pending)") {
		t.Errorf("a sign-in with TOTP: flows %q, want mfa_authenticate pending", flowIDs(v))
	}
	c.call(t, "GET", "auth/session", nil, http.StatusUnauthorized)
	if v := c.call(t, "POST", "auth/2fa/authenticate", map[string]string{"code": wrong}, http.StatusBadRequest); errorCode(v) != "incorrect_code" {
		t.Errorf("a wrong code: code %q, want incorrect_code", errorCode(v))
	}
	c.call(t, "POST", "auth/2fa/authenticate", map[string]any{"code": recoveryCodes[0]}, http.StatusOK)
	c.call(t, "GET", "auth/session", nil, http.StatusOK)

	// TOTP removed, after a reauthentication.
	ageSession(t, db, email)
	c.call(t, "DELETE", "account/authenticators/totp", nil, http.StatusUnauthorized)
	c.call(t, "POST", "auth/reauthenticate", map[string]string{"password": password}, http.StatusOK)
	c.call(t, "DELETE", "account/authenticators/totp", nil, http.StatusOK)
	c.call(t, "GET", "account/authenticators/totp", nil, http.StatusNotFound)

	// The password changed, then reset by the key of its mail.
	next := "second " + kind + " passphrase 2"
	c.call(t, "POST", "account/password/change", map[string]string{"current_password": "not the passphrase", "new_password": next}, http.StatusBadRequest)
	c.call(t, "POST", "account/password/change", map[string]string{"current_password": password, "new_password": "short"}, http.StatusBadRequest)
	c.call(t, "POST", "account/password/change", map[string]string{"current_password": password, "new_password": next}, http.StatusOK)
	signedOut := newAllauthClient(t, s, kind, walked)
	signedOut.call(t, "POST", "auth/password/request", map[string]string{"email": "not an address"}, http.StatusBadRequest)
	signedOut.call(t, "POST", "auth/password/request", map[string]string{"email": "nobody-" + email}, http.StatusOK)
	signedOut.call(t, "POST", "auth/password/request", map[string]string{"email": email}, http.StatusOK)
	key := mailKey(t, db, email, "/reset-password/")
	signedOut.call(t, "GET", "auth/password/reset", nil, http.StatusBadRequest, "X-Password-Reset-Key", "not-a-key")
	signedOut.call(t, "GET", "auth/password/reset", nil, http.StatusOK, "X-Password-Reset-Key", key)
	reset := "third " + kind + " passphrase 3"
	signedOut.call(t, "POST", "auth/password/reset", map[string]string{"key": "not-a-key", "password": reset}, http.StatusBadRequest)
	signedOut.call(t, "POST", "auth/password/reset", map[string]string{"key": key, "password": "short"}, http.StatusBadRequest)
	signedOut.call(t, "POST", "auth/password/reset", map[string]string{"key": key, "password": reset}, http.StatusUnauthorized)
	signedOut.call(t, "POST", "auth/password/reset", map[string]string{"key": key, "password": reset + "4"}, http.StatusBadRequest) // once
	signedOut.call(t, "POST", "auth/login", map[string]string{"email": email, "password": reset}, http.StatusOK)
}

// mailKey reads the key of the last mail to address from the outbox: the
// path segment after prefix in its link.
func mailKey(t *testing.T, db *pgx.Conn, address, prefix string) string {
	t.Helper()
	var body string
	if err := db.QueryRow(context.Background(), `
		SELECT text_body FROM mail_outbox WHERE to_address = $1 ORDER BY id DESC LIMIT 1`, address).Scan(&body); err != nil {
		t.Fatalf("the last mail to %s: %v", address, err)
	}
	_, after, ok := strings.Cut(body, prefix)
	key, _, _ := strings.Cut(after, "/")
	if !ok || key == "" {
		t.Fatalf("no link %s... in the mail to %s: %s", prefix, address, body)
	}
	return key
}
