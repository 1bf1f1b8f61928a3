package main

import (
	"encoding/base32"
	"net/http"
	"testing"
	"time"

	"errata/authn"
)

// enrolTOTP enrols the signed-in app person in TOTP through the sign-in
// API, with a code computed from the secret it is offered.
func (p *person) enrolTOTP(s *errataServer) {
	p.t.Helper()
	status, offer := p.do(s, "GET", "account/authenticators/totp", nil)
	meta, _ := offer["meta"].(map[string]any)
	encoded, _ := meta["secret"].(string)
	secret, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(encoded)
	if status != 404 || err != nil {
		p.t.Fatalf("the TOTP offer: %d %v (%v)", status, offer, err)
	}
	status, body := p.do(s, "POST", "account/authenticators/totp", map[string]string{"code": authn.TOTPCode(secret, authn.TOTPStep(time.Now()))})
	if status != 200 {
		p.t.Fatalf("TOTP activation: %d %v", status, body)
	}
}

// TestRequire2FA: an owner who enrolled TOTP through the sign-in API
// requires two-factor authentication of acme; a member without TOTP then
// gets Sentry's 401 2fa-required on acme's routes, by session and by
// token, and passes once it enrols. With ORG_CREATION's default, only a
// superuser creates organizations.
func TestRequire2FA(t *testing.T) {
	t.Parallel()
	s := startErrata(t, nil)
	s.user(t, "ann@example.com", "org:read")
	melToken := s.user(t, "mel@example.com", "org:read,project:read")
	s.cli(t, "admin", "create-org", "--slug", "acme", "--owner", "ann@example.com")
	s.cli(t, "admin", "create-project", "--org", "acme", "--slug", "web")
	s.cli(t, "admin", "add-member", "--org", "acme", "--email", "mel@example.com", "--role", "member")
	s.cli(t, "admin", "create-org", "--slug", "other", "--owner", "mel@example.com")
	setPassword(t, s, "ann@example.com")
	setPassword(t, s, "mel@example.com")
	ann, mel := newPerson(t, "app"), newPerson(t, "app")
	ann.signIn(s, "ann@example.com")
	mel.signIn(s, "mel@example.com")
	melByToken := newPerson(t, "app")
	const acme = "/api/0/organizations/acme/"
	twoFactorRequired := func(t *testing.T, what string, status int, body map[string]any) {
		t.Helper()
		d, _ := body["detail"].(map[string]any)
		if status != http.StatusUnauthorized || d["code"] != "2fa-required" ||
			d["message"] != "Organization requires two-factor authentication to be enabled" {
			t.Errorf("%s: %d %v, want 401 2fa-required", what, status, body)
		}
	}

	t.Run("an owner without TOTP cannot require it", func(t *testing.T) {
		status, body := ann.do(s, "PUT", acme, map[string]any{"require2FA": true})
		expectStatus(t, "PUT require2FA", status, http.StatusBadRequest, body)
	})
	t.Run("an owner who enrolled requires it", func(t *testing.T) {
		ann.enrolTOTP(s)
		status, body := ann.do(s, "PUT", acme, map[string]any{"require2FA": true})
		expectStatus(t, "PUT require2FA", status, http.StatusOK, body)
		if body["require2FA"] != true || body["orgRole"] != "owner" {
			t.Errorf("the answer: %v", body)
		}
		status, body = ann.do(s, "GET", acme, nil)
		expectStatus(t, "the owner's GET", status, http.StatusOK, body)
	})
	t.Run("a member without TOTP gets 401 2fa-required on its routes", func(t *testing.T) {
		for _, path := range []string{acme, acme + "projects/", "/api/0/projects/acme/web/"} {
			status, body := mel.do(s, "GET", path, nil)
			twoFactorRequired(t, "the session's GET "+path, status, body)
			status, body = melByToken.do(s, "GET", path, nil, "Authorization", "Bearer "+melToken)
			twoFactorRequired(t, "the token's GET "+path, status, body)
		}
		status, body := mel.do(s, "GET", "/api/0/organizations/other/", nil)
		expectStatus(t, "its own organization", status, http.StatusOK, body)
	})
	t.Run("and passes once it enrols", func(t *testing.T) {
		mel.enrolTOTP(s)
		status, body := mel.do(s, "GET", acme, nil)
		expectStatus(t, "the session's GET", status, http.StatusOK, body)
		// The token's lookup may be cached for a second (authn.TokenCacheTime).
		waitFor(t, 3*time.Second, "the token passes", func() bool {
			status, _ := melByToken.do(s, "GET", acme, nil, "Authorization", "Bearer "+melToken)
			return status == http.StatusOK
		})
	})
	t.Run("only a superuser creates organizations (ORG_CREATION=superuser)", func(t *testing.T) {
		status, body := mel.do(s, "POST", "/api/0/organizations/", map[string]any{"name": "Globex"})
		expectStatus(t, "a member's POST", status, http.StatusUnauthorized, body)
		if _, err := s.db(t).Exec(t.Context(), `UPDATE users SET is_superuser = true WHERE email = 'mel@example.com'`); err != nil {
			t.Fatal(err)
		}
		status, body = mel.do(s, "POST", "/api/0/organizations/", map[string]any{"name": "Globex"})
		expectStatus(t, "a superuser's POST", status, http.StatusCreated, body)
		if body["slug"] != "globex" || body["orgRole"] != "owner" {
			t.Errorf("the answer: %v", body)
		}
	})
}

// TestOrgCreationOpen: with ORG_CREATION=open every signed-in person
// creates organizations and owns them; a taken slug is 409.
func TestOrgCreationOpen(t *testing.T) {
	t.Parallel()
	s := startErrata(t, map[string]string{"ORG_CREATION": "open"})
	s.user(t, "ann@example.com", "org:read")
	setPassword(t, s, "ann@example.com")
	ann := newPerson(t, "browser")
	ann.signIn(s, "ann@example.com")

	t.Run("a person who is no superuser creates one and owns it", func(t *testing.T) {
		status, body := ann.do(s, "POST", "/api/0/organizations/", map[string]any{"name": "Initech", "slug": "initech"})
		expectStatus(t, "POST", status, http.StatusCreated, body)
		status, body = ann.do(s, "GET", "/api/0/organizations/initech/", nil)
		expectStatus(t, "GET", status, http.StatusOK, body)
		if body["orgRole"] != "owner" {
			t.Errorf("orgRole %v, want owner", body["orgRole"])
		}
	})
	t.Run("a taken slug is 409", func(t *testing.T) {
		status, body := ann.do(s, "POST", "/api/0/organizations/", map[string]any{"name": "Initech", "slug": "initech"})
		expectStatus(t, "POST", status, http.StatusConflict, body)
	})
}
