package main

// The person's account pages in the browser (testdata/pages/account.mjs,
// security.mjs, tokens.mjs), and their redirect to reauthentication.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// TestPagesAccount: a person edits their name, adds an email address
// (confirmed by the link of its message), changes notifications and their
// password, and signs in with the new one.
func TestPagesAccount(t *testing.T) {
	t.Parallel()
	python := os.Getenv("SMTP_PYTHON")
	if python == "" {
		t.Fatal("SMTP_PYTHON is not set: run the tests with ./dev.sh test, which installs python3-aiosmtpd")
	}
	smtpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	maildir := filepath.Join(t.TempDir(), "maildir")
	startSMTP(t, python, smtpAddr, maildir)
	s := startErrata(t, map[string]string{"EMAIL_URL": "smtp://" + smtpAddr, "DEFAULT_FROM_EMAIL": "errata@example.com"})
	password := pageOrg(t, s, "ann@example.com", "acme", "Acme Corp")
	runPageFlow(t, s, "account", map[string]any{"email": "ann@example.com", "password": password}, maildir)
}

// TestPagesSecurity: a person turns two-factor authentication on with the
// secret the page shows (and its QR code), sees and regenerates their
// recovery codes, and turns it off.
func TestPagesSecurity(t *testing.T) {
	t.Parallel()
	s := startErrata(t, nil)
	password := pageOrg(t, s, "bea@example.com", "acme", "Acme Corp")
	runPageFlow(t, s, "security", map[string]any{"email": "bea@example.com", "password": password}, "")
}

// TestPagesTokens: a person ends their other sessions, one by one and all
// at once, and makes an API token (shown once), uses it, and revokes it.
func TestPagesTokens(t *testing.T) {
	t.Parallel()
	s := startErrata(t, nil)
	password := pageOrg(t, s, "cal@example.com", "acme", "Acme Corp")
	runPageFlow(t, s, "tokens", map[string]any{"email": "cal@example.com", "password": password}, "")
}

// TestPagesAccountReauthenticate: the pages that need a recent sign-in
// send a person who signed in long ago to confirm who they are, and come
// back after; the others still answer.
func TestPagesAccountReauthenticate(t *testing.T) {
	t.Parallel()
	s := startErrata(t, nil)
	pageOrg(t, s, "dan@example.com", "acme", "Acme Corp")
	p := newPerson(t, "browser")
	p.signIn(s, "dan@example.com")
	if _, err := s.db(t).Exec(context.Background(),
		`UPDATE sessions SET authenticated_at = now() - interval '1 hour'
		 WHERE user_id = (SELECT id FROM users WHERE email = 'dan@example.com')`); err != nil {
		t.Fatal(err)
	}
	client := *p.client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for path, recent := range map[string]bool{
		"/account/api-tokens/":              true, // /api/0/'s "Reauthentication required"
		"/account/security/recovery-codes/": true, // allauth's 401 with the reauthentication flow
		"/account/security/":                false,
		"/account/sessions/":                false,
		"/account/":                         false,
	} {
		res, err := client.Get(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		loc := res.Header.Get("Location")
		switch want := "/account/reauthenticate/?next=" + url.QueryEscape(path); {
		case recent && (res.StatusCode != http.StatusSeeOther || loc != want):
			t.Errorf("GET %s after an old sign-in: %d %q, want 303 to %s", path, res.StatusCode, loc, want)
		case !recent && res.StatusCode != http.StatusOK:
			t.Errorf("GET %s after an old sign-in: %d %q, want 200", path, res.StatusCode, loc)
		}
	}
}
