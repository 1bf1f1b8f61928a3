package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"errata/authn"
)

// withToken is s sending token in its api requests.
func withToken(s *errataServer, token string) *errataServer {
	c := *s
	c.token = token
	return &c
}

// expectAnswer checks a status and, when want is not "", the JSON body.
func expectAnswer(t *testing.T, what string, status int, body []byte, wantStatus int, want string) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("%s: status %d, want %d: %s", what, status, wantStatus, body)
	}
	if want == "" {
		return
	}
	var got, w any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%s: body is not JSON: %s", what, body)
	}
	json.Unmarshal([]byte(want), &w)
	b1, _ := json.Marshal(got)
	b2, _ := json.Marshal(w)
	if !bytes.Equal(b1, b2) {
		t.Errorf("%s: body %s, want %s", what, body, want)
	}
}

// tokenList returns the raw answer of GET /api/0/api-tokens/ to p, an app
// signed in on s.
func tokenList(t *testing.T, s *errataServer, p *person) []byte {
	t.Helper()
	req, err := http.NewRequest("GET", s.url+"/api/0/api-tokens/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(authn.SessionTokenHeader, p.token)
	res, err := p.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/0/api-tokens/: %d %s %v", res.StatusCode, body, err)
	}
	return body
}

// TestPersonalAPITokens: against the real server, a person signed in
// through the sign-in API's app client (X-Session-Token) or browser client
// makes a token, uses it on /api/0/, sees it listed without its secret and
// deletes it; a token cannot make tokens; a session that authenticated
// more than 5 minutes ago must reauthenticate; a member's token is capped
// by its role; a token made to expire, through the API or the admin CLI's
// --expires, is refused from its expiry on, even when the server's token
// cache found it a moment before.
func TestPersonalAPITokens(t *testing.T) {
	t.Parallel()
	s := startErrata(t, nil)
	setupAcme(t, s) // ops@example.com owns acme
	s.cli(t, "admin", "create-user", "--email", "mel@example.com", "--name", "Mel")
	s.cli(t, "admin", "add-member", "--org", "acme", "--email", "mel@example.com", "--role", "member")
	setPassword(t, s, "ops@example.com")
	setPassword(t, s, "mel@example.com")
	ops := newPerson(t, "app")
	ops.signIn(s, "ops@example.com")

	var token, id string
	t.Run("a signed-in person makes a token and uses it", func(t *testing.T) {
		status, body := ops.do(s, "POST", "/api/0/api-tokens/", map[string]any{"name": "ci", "scopes": []string{"project:releases", "org:read"}})
		expectStatus(t, "POST /api/0/api-tokens/", status, http.StatusCreated, body)
		token, _ = body["token"].(string)
		id, _ = body["id"].(string)
		if len(token) < 40 || !strings.HasPrefix(token, authn.TokenPrefix) || body["tokenLastCharacters"] != token[len(token)-4:] {
			t.Fatalf("answer %v: want a token of 40 characters or more and its last four", body)
		}
		status, raw := withToken(s, token).api(t, "GET", "/api/0/", nil)
		expectAnswer(t, "GET /api/0/ with the new token", status, raw, http.StatusOK, "")
		var root struct {
			User struct{ Email string }
			Auth struct{ Scopes []string }
		}
		json.Unmarshal(raw, &root)
		if root.User.Email != "ops@example.com" || strings.Join(root.Auth.Scopes, ",") != "org:read,project:releases" {
			t.Errorf("GET /api/0/: %s; want ops@example.com with org:read and project:releases", raw)
		}
		status, raw = withToken(s, token).api(t, "GET", "/api/0/organizations/acme/releases/", nil)
		expectAnswer(t, "the token lists releases", status, raw, http.StatusOK, "")
		if n := s.count(t, `SELECT count(*) FROM mail_outbox WHERE to_address = 'ops@example.com'
			AND subject = 'A new API token was created for your account'`); n != 1 {
			t.Errorf("%d security notices, want 1", n)
		}
	})

	t.Run("the list shows the token without its secret", func(t *testing.T) {
		body := tokenList(t, s, ops)
		if !bytes.Contains(body, []byte(`"id":"`+id+`"`)) || !bytes.Contains(body, []byte(`"tokenLastCharacters":"`+token[len(token)-4:]+`"`)) {
			t.Errorf("the list %s does not show token %s", body, id)
		}
		if bytes.Contains(body, []byte(token[len(authn.TokenPrefix):len(token)-4])) || bytes.Contains(body, []byte(`"token"`)) {
			t.Errorf("the list shows the secret: %s", body)
		}
	})

	t.Run("a token cannot list, make or delete tokens", func(t *testing.T) {
		before := s.count(t, `SELECT count(*) FROM api_tokens`)
		bearer := newPerson(t, "app")
		for _, method := range []string{"GET", "POST", "DELETE"} {
			status, body := bearer.do(s, method, "/api/0/api-tokens/", map[string]any{"scopes": []string{"org:read"}, "tokenId": id},
				"Authorization", "Bearer "+token)
			expectStatus(t, method+" with the token", status, http.StatusForbidden, body)
		}
		status, body := bearer.do(s, "DELETE", "/api/0/api-tokens/"+id+"/", nil, "Authorization", "Bearer "+token)
		expectStatus(t, "the token deleting itself", status, http.StatusForbidden, body)
		if after := s.count(t, `SELECT count(*) FROM api_tokens`); after != before {
			t.Errorf("the token changed the tokens: %d, then %d", before, after)
		}
	})

	t.Run("a deleted token stops working", func(t *testing.T) {
		status, body := ops.do(s, "DELETE", "/api/0/api-tokens/"+id+"/", nil)
		expectStatus(t, "DELETE", status, http.StatusNoContent, body)
		status, raw := withToken(s, token).api(t, "GET", "/api/0/", nil)
		expectAnswer(t, "the deleted token", status, raw, http.StatusUnauthorized, `{"detail":"Unauthorized"}`)
		status, body = ops.do(s, "DELETE", "/api/0/api-tokens/"+id+"/", nil)
		expectStatus(t, "DELETE again", status, http.StatusNotFound, body)
	})

	t.Run("a member's token is capped by its role", func(t *testing.T) {
		mel := newPerson(t, "app")
		mel.signIn(s, "mel@example.com")
		status, body := mel.do(s, "POST", "/api/0/api-tokens/", map[string]any{"scopes": []string{"project:releases", "org:admin"}})
		expectStatus(t, "a member asks for org:admin", status, http.StatusBadRequest, body)
		if body["detail"] != "None of your roles grants the scope org:admin" {
			t.Errorf("body %v", body)
		}
		status, body = mel.do(s, "POST", "/api/0/api-tokens/", map[string]any{"scopes": []string{"project:releases"}})
		expectStatus(t, "a member asks for project:releases", status, http.StatusCreated, body)
	})

	t.Run("a session that authenticated more than 5 minutes ago must reauthenticate", func(t *testing.T) {
		p := newPerson(t, "app")
		p.signIn(s, "ops@example.com")
		if _, err := s.db(t).Exec(context.Background(), `UPDATE sessions SET authenticated_at = now() - interval '6 minutes'
			WHERE id_hash = $1`, authn.Hash(p.token)); err != nil {
			t.Fatal(err)
		}
		status, body := p.do(s, "POST", "/api/0/api-tokens/", map[string]any{"scopes": []string{"org:read"}})
		expectStatus(t, "POST with an old session", status, http.StatusUnauthorized, body)
		if body["detail"] != "Reauthentication required" {
			t.Errorf("body %v, want Reauthentication required", body)
		}
		status, body = p.do(s, "GET", "/api/0/organizations/", nil)
		expectStatus(t, "the old session reads the API", status, http.StatusOK, body)
	})

	t.Run("the browser client makes a token with its CSRF token", func(t *testing.T) {
		b := newPerson(t, "browser")
		b.signIn(s, "ops@example.com")
		status, body := b.do(s, "POST", "/api/0/api-tokens/", map[string]any{"scopes": []string{"org:read"}}, "X-CSRFToken", "")
		expectStatus(t, "without the CSRF token", status, http.StatusForbidden, body)
		status, body = b.do(s, "POST", "/api/0/api-tokens/", map[string]any{"scopes": []string{"org:read"}})
		expectStatus(t, "with the CSRF token", status, http.StatusCreated, body)
	})

	t.Run("a token stops at its expiry, not a cache period later", func(t *testing.T) {
		tok := s.cli(t, "admin", "create-token", "--email", "ops@example.com", "--scopes", "org:read", "--expires", "1500ms")
		var expires time.Time
		if err := s.db(t).QueryRow(context.Background(), `SELECT expires_at FROM api_tokens WHERE last_characters = $1`,
			tok[len(tok)-4:]).Scan(&expires); err != nil {
			t.Fatal(err)
		}
		status, body := withToken(s, tok).api(t, "GET", "/api/0/organizations/", nil)
		expectAnswer(t, "before its expiry", status, body, http.StatusOK, "")
		// The server caches a token for a second: this use, 0.4 s before
		// the expiry, would keep it trusted 0.6 s past it.
		time.Sleep(time.Until(expires.Add(-400 * time.Millisecond)))
		status, body = withToken(s, tok).api(t, "GET", "/api/0/organizations/", nil)
		expectAnswer(t, "just before its expiry", status, body, http.StatusOK, "")
		time.Sleep(time.Until(expires.Add(50 * time.Millisecond)))
		status, body = withToken(s, tok).api(t, "GET", "/api/0/organizations/", nil)
		expectAnswer(t, "after its expiry", status, body, http.StatusUnauthorized, `{"detail":"Unauthorized"}`)
	})

	t.Run("create-token refuses an expiry that has passed or is no time", func(t *testing.T) {
		for _, when := range []string{"-1h", "2020-01-01T00:00:00Z", "tomorrow"} {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{"admin", "create-token", "--email", "ops@example.com",
				"--scopes", "org:read", "--expires", when}, s.getenv, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), "--expires") || stdout.Len() != 0 {
				t.Errorf("--expires %s: err %v, stdout %q; want an error naming --expires and no token", when, err, stdout.String())
			}
		}
		if n := s.count(t, `SELECT count(*) FROM api_tokens WHERE expires_at IS NOT NULL AND label = ''`); n != 1 {
			t.Errorf("%d tokens of the admin CLI with an expiry, want the one of the test before", n)
		}
	})

	t.Run("a token made to expire is refused after its expiry", func(t *testing.T) {
		expires := time.Now().Add(1500 * time.Millisecond)
		status, body := ops.do(s, "POST", "/api/0/api-tokens/", map[string]any{"scopes": []string{"org:read"},
			"expiresAt": expires.UTC().Format(time.RFC3339Nano)})
		expectStatus(t, "POST with expiresAt", status, http.StatusCreated, body)
		tok, _ := body["token"].(string)
		status, raw := withToken(s, tok).api(t, "GET", "/api/0/organizations/", nil)
		expectAnswer(t, "before its expiry", status, raw, http.StatusOK, "")
		time.Sleep(time.Until(expires) + 50*time.Millisecond)
		status, raw = withToken(s, tok).api(t, "GET", "/api/0/organizations/", nil)
		expectAnswer(t, "after its expiry", status, raw, http.StatusUnauthorized, `{"detail":"Unauthorized"}`)
	})
}
