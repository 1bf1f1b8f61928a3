package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
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

// TestTokenExpiryAndTokenRoutes: against the real server, a token stops at
// its expiry (the admin CLI's --expires), even when the server's token
// cache found it a moment before; the api-tokens routes refuse tokens.
func TestTokenExpiryAndTokenRoutes(t *testing.T) {
	t.Parallel()
	s := startErrata(t, nil)
	setupAcme(t, s)

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
		if n := s.count(t, `SELECT count(*) FROM api_tokens WHERE expires_at < now()`); n != 1 {
			t.Errorf("%d expired tokens, want the one of the test before", n)
		}
	})

	t.Run("a token cannot list, make or delete tokens", func(t *testing.T) {
		before := s.count(t, `SELECT count(*) FROM api_tokens`)
		for _, r := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/api/0/api-tokens/", nil},
			{"POST", "/api/0/api-tokens/", map[string]any{"scopes": []string{"org:read"}}},
			{"DELETE", "/api/0/api-tokens/", map[string]any{"tokenId": "1"}},
			{"DELETE", "/api/0/api-tokens/1/", nil},
		} {
			status, body := s.api(t, r.method, r.path, r.body)
			expectAnswer(t, r.method+" "+r.path+" with a token", status, body, http.StatusForbidden, `{"detail":"Permission denied"}`)
			status, body = withToken(s, "").api(t, r.method, r.path, r.body)
			expectAnswer(t, r.method+" "+r.path+" with an empty credential", status, body, http.StatusUnauthorized, `{"detail":"Unauthorized"}`)
		}
		if after := s.count(t, `SELECT count(*) FROM api_tokens`); after != before {
			t.Errorf("%d tokens made by a token", after-before)
		}
	})
}
