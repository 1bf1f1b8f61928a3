package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"errata/authn"
)

// signInPassword is the password of the people of the sign-in tests.
const signInPassword = "sessions test password 1"

// setPassword gives the user of email the password signInPassword.
func setPassword(t *testing.T, s *errataServer, email string) {
	t.Helper()
	hash, err := authn.HashPassword(signInPassword)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db(t).Exec(context.Background(), `UPDATE users SET password_hash = $2 WHERE email = $1`, email, hash); err != nil {
		t.Fatal(err)
	}
}

// person is someone signed in through one client of the sign-in API: a
// browser (cookies, and the CSRF token on unsafe methods) or an app (the
// session token in X-Session-Token).
type person struct {
	t      *testing.T
	kind   string // browser or app
	client *http.Client
	token  string // the app's session token
}

func newPerson(t *testing.T, kind string) *person {
	jar, _ := cookiejar.New(nil)
	return &person{t: t, kind: kind, client: &http.Client{Jar: jar}}
}

// cookie returns the value of the browser's cookie name for s.
func (p *person) cookie(s *errataServer, name string) string {
	u, _ := url.Parse(s.url)
	for _, c := range p.client.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// do sends a request to s: a path below /_allauth/{kind}/v1/, or one that
// starts with /. A browser sends its CSRF token on unsafe methods; header
// adds or replaces headers. It returns the status and decoded body.
func (p *person) do(s *errataServer, method, path string, body any, header ...string) (int, map[string]any) {
	p.t.Helper()
	if !strings.HasPrefix(path, "/") {
		path = "/_allauth/" + p.kind + "/v1/" + path
	}
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if p.kind == "browser" && method != "GET" {
		req.Header.Set("X-CSRFToken", p.cookie(s, "csrftoken"))
	}
	if p.token != "" {
		req.Header.Set("X-Session-Token", p.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := p.client.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	var got map[string]any
	json.NewDecoder(res.Body).Decode(&got)
	return res.StatusCode, got
}

// signIn signs in as email on s and keeps the session.
func (p *person) signIn(s *errataServer, email string) {
	p.t.Helper()
	if p.kind == "browser" {
		if status, _ := p.do(s, "GET", "config", nil); status != 200 {
			p.t.Fatalf("GET config: %d", status)
		}
	}
	status, body := p.do(s, "POST", "auth/login", map[string]string{"email": email, "password": signInPassword})
	if status != 200 {
		p.t.Fatalf("sign-in of %s: %d %v", email, status, body)
	}
	if p.kind == "app" {
		p.token, _ = body["meta"].(map[string]any)["session_token"].(string)
	}
}

// whoami returns the email GET /api/0/ answers for the person on s, "" for
// nobody.
func (p *person) whoami(s *errataServer) string {
	p.t.Helper()
	status, body := p.do(s, "GET", "/api/0/", nil)
	if status != 200 {
		p.t.Fatalf("GET /api/0/: %d", status)
	}
	u, _ := body["user"].(map[string]any)
	email, _ := u["email"].(string)
	return email
}

// expectStatus fails when a request's status is not want.
func expectStatus(t *testing.T, what string, got, want int, body map[string]any) {
	t.Helper()
	if got != want {
		t.Errorf("%s: %d %v, want %d", what, got, body, want)
	}
}

// TestSessions: people sign in through both clients of the sign-in API
// on one replica and are known on the other; sessions end on every
// replica at once; a session reads /api/0/ with its role's scopes, and its
// cookie's unsafe requests need the CSRF token.
func TestSessions(t *testing.T) {
	t.Parallel()
	a := newErrata(t, nil)
	b := newErrata(t, map[string]string{"DATABASE_URL": a.env["DATABASE_URL"]})
	a.serve(t)
	b.serve(t)
	ownerToken := a.user(t, "ann@example.com", "org:read,org:write")
	memberToken := a.user(t, "mel@example.com", "org:read,org:write")
	a.cli(t, "admin", "create-org", "--slug", "acme", "--owner", "ann@example.com")
	a.cli(t, "admin", "add-member", "--org", "acme", "--email", "mel@example.com", "--role", "member")
	setPassword(t, a, "ann@example.com")
	setPassword(t, a, "mel@example.com")

	for _, kind := range []string{"browser", "app"} {
		t.Run("a "+kind+" signs in on one replica and is known on the other", func(t *testing.T) {
			p := newPerson(t, kind)
			p.signIn(a, "ann@example.com")
			if got := p.whoami(b); got != "ann@example.com" {
				t.Errorf("GET /api/0/ on the other replica answers %q", got)
			}
			status, body := p.do(b, "GET", "auth/session", nil)
			expectStatus(t, "GET auth/session on the other replica", status, 200, body)
		})
	}

	t.Run("sign-out ends the session on the other replica at once", func(t *testing.T) {
		for _, kind := range []string{"browser", "app"} {
			p := newPerson(t, kind)
			p.signIn(a, "ann@example.com")
			held := p.cookie(a, "errata_session") + p.token
			status, body := p.do(a, "DELETE", "auth/session", nil)
			expectStatus(t, kind+": DELETE auth/session", status, 401, body)
			replay := newPerson(t, "app")
			replay.token = held
			if kind == "browser" {
				replay.token = ""
				u, _ := url.Parse(b.url)
				replay.client.Jar.SetCookies(u, []*http.Cookie{{Name: "errata_session", Value: held}})
			}
			status, body = replay.do(b, "GET", "/api/0/organizations/", nil)
			expectStatus(t, kind+": the ended session on the other replica", status, 401, body)
		}
	})

	// gone reports whether p's session no longer works on s.
	gone := func(p *person, s *errataServer) bool {
		status, _ := p.do(s, "GET", "/api/0/organizations/", nil)
		return status == http.StatusUnauthorized
	}

	t.Run("reauthentication rotates the id: the old one stops on the other replica", func(t *testing.T) {
		p := newPerson(t, "app")
		p.signIn(a, "mel@example.com")
		old := *p
		status, body := p.do(a, "POST", "auth/reauthenticate", map[string]string{"password": signInPassword})
		expectStatus(t, "POST auth/reauthenticate", status, 200, body)
		p.token, _ = body["meta"].(map[string]any)["session_token"].(string)
		if p.token == old.token || !gone(&old, b) {
			t.Error("the id from before reauthentication still works on the other replica")
		}
		if gone(p, b) {
			t.Error("the new id does not work on the other replica")
		}
	})

	t.Run("a password change ends the other sessions on the other replica", func(t *testing.T) {
		changer, other := newPerson(t, "browser"), newPerson(t, "app")
		changer.signIn(a, "mel@example.com")
		other.signIn(b, "mel@example.com")
		const next = "the next sessions password 2"
		status, body := changer.do(a, "POST", "account/password/change",
			map[string]string{"current_password": signInPassword, "new_password": next})
		expectStatus(t, "POST account/password/change", status, 200, body)
		waitFor(t, time.Second, "the other session to end", func() bool { return gone(other, b) })
		if gone(changer, b) {
			t.Error("the session that changed the password ended")
		}
		setPassword(t, a, "mel@example.com")
	})

	t.Run("errata admin end-sessions ends them on both replicas", func(t *testing.T) {
		p, q := newPerson(t, "app"), newPerson(t, "browser")
		p.signIn(a, "mel@example.com")
		q.signIn(b, "mel@example.com")
		a.cli(t, "admin", "end-sessions", "--email", "mel@example.com")
		waitFor(t, time.Second, "the sessions to end", func() bool { return gone(p, b) && gone(p, a) && gone(q, a) && gone(q, b) })
		bearer := newPerson(t, "app")
		status, body := bearer.do(b, "GET", "/api/0/organizations/", nil, "Authorization", "Bearer "+memberToken)
		expectStatus(t, "the user's API token after end-sessions", status, 200, body)
	})

	t.Run("a session has its role's scopes; a token's are capped by its role", func(t *testing.T) {
		rename := map[string]string{"name": "Acme"}
		mel := newPerson(t, "app")
		mel.signIn(a, "mel@example.com")
		status, body := mel.do(b, "GET", "/api/0/organizations/acme/", nil)
		expectStatus(t, "a member's session reads its organization", status, 200, body)
		status, body = mel.do(b, "PUT", "/api/0/organizations/acme/", rename)
		expectStatus(t, "a member's session changes its organization", status, 403, body)
		status, body = mel.do(b, "GET", "/api/0/organizations/nope/", nil)
		expectStatus(t, "a session reads another organization", status, 404, body)

		ann := newPerson(t, "app")
		ann.signIn(a, "ann@example.com")
		status, body = ann.do(b, "PUT", "/api/0/organizations/acme/", rename)
		expectStatus(t, "an owner's session changes its organization", status, 200, body)

		bearer := newPerson(t, "app")
		status, body = bearer.do(b, "PUT", "/api/0/organizations/acme/", rename, "Authorization", "Bearer "+memberToken)
		expectStatus(t, "a member's token with org:write", status, 403, body)
		status, body = bearer.do(b, "PUT", "/api/0/organizations/acme/", rename, "Authorization", "Bearer "+ownerToken)
		expectStatus(t, "an owner's admin-CLI token", status, 200, body)
	})

	t.Run("a cookie's unsafe /api/0/ request needs the CSRF token", func(t *testing.T) {
		rename := map[string]string{"name": "Acme"}
		p := newPerson(t, "browser")
		p.signIn(a, "ann@example.com")
		denied := map[string]any{"detail": "Permission denied"}
		for _, tc := range []struct {
			name   string
			header []string
			want   int
		}{
			{"without the token", []string{"X-CSRFToken", ""}, 403},
			{"with a wrong token", []string{"X-CSRFToken", authn.NewCSRFToken()}, 403},
			{"from a cross-site origin", []string{"Origin", "https://evil.example"}, 403},
			{"said cross-site", []string{"Sec-Fetch-Site", "cross-site"}, 403},
			{"with the token", nil, 200},
			{"with a token as Bearer, not judged by the cookies", []string{"X-CSRFToken", "", "Authorization", "Bearer " + ownerToken}, 200},
			{"with a bad Bearer token beside a good cookie", []string{"Authorization", "Bearer sntryu_nope"}, 401},
		} {
			status, body := p.do(a, "PUT", "/api/0/organizations/acme/", rename, tc.header...)
			expectStatus(t, tc.name, status, tc.want, body)
			if tc.want == 403 && body["detail"] != denied["detail"] {
				t.Errorf("%s: body %v, want %v", tc.name, body, denied)
			}
		}
	})
}

// TestSessionTimeouts: a session in use outlives the idle timeout but not
// the lifetime; an unused one ends after the idle timeout.
func TestSessionTimeouts(t *testing.T) {
	t.Parallel()
	const idle, life = 2 * time.Second, 5 * time.Second
	s := startErrata(t, map[string]string{"SESSION_IDLE_TIMEOUT": idle.String(), "SESSION_LIFETIME": life.String()})
	s.user(t, "ann@example.com", "org:read")
	setPassword(t, s, "ann@example.com")

	var wg sync.WaitGroup
	wg.Go(func() {
		busy := newPerson(t, "app")
		busy.signIn(s, "ann@example.com")
		start := time.Now() // after the session's creation, which its lifetime counts from
		for time.Since(start) < idle+time.Second {
			if got := busy.whoami(s); got != "ann@example.com" {
				t.Errorf("a session in use after %v: %q", time.Since(start), got)
				return
			}
			time.Sleep(idle / 4)
		}
		for time.Since(start) < life-300*time.Millisecond {
			busy.whoami(s)
			time.Sleep(idle / 4)
		}
		time.Sleep(time.Until(start.Add(life + 200*time.Millisecond)))
		if got := busy.whoami(s); got != "" {
			t.Errorf("a session past its lifetime of %v answers %q", life, got)
		}
	})
	wg.Go(func() {
		idler := newPerson(t, "browser")
		idler.signIn(s, "ann@example.com")
		if got := idler.whoami(s); got != "ann@example.com" {
			t.Errorf("a new session: %q", got)
		}
		time.Sleep(idle + 300*time.Millisecond)
		if got := idler.whoami(s); got != "" {
			t.Errorf("a session idle past %v answers %q", idle, got)
		}
	})
	wg.Wait()
}
