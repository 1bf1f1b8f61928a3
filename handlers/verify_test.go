package handlers

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"errata/authn"
	"errata/handlers/pages"
)

// postForm posts the confirmation page's form as a browser does.
// It carries the CSRF token in its cookie and its form, as every page's
// form does.
func (a *userAPI) postForm(path string, form url.Values) (int, string) {
	a.t.Helper()
	csrf := authn.NewCSRFToken()
	form.Set(authn.CSRFFormField, csrf)
	req, err := http.NewRequest("POST", a.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: authn.CSRFCookieName, Value: csrf})
	res, err := a.srv.Client().Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if ct := res.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		a.t.Errorf("Content-Type = %q, want HTML", ct)
	}
	return res.StatusCode, string(b)
}

// getPage fetches a page.
func (a *userAPI) getPage(path string) (*http.Response, string) {
	a.t.Helper()
	res, err := a.srv.Client().Get(a.srv.URL + path)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// addressState returns "verified,primary" flags of an address.
func (a *userAPI) addressState(email string) (verified, primary bool) {
	a.t.Helper()
	err := a.db.QueryRow(t0(), `SELECT is_verified, is_primary FROM email_addresses WHERE lower(email) = lower($1)`, email).
		Scan(&verified, &primary)
	if err != nil {
		a.t.Fatalf("address %s: %v", email, err)
	}
	return verified, primary
}

func TestEmailVerify(t *testing.T) {
	a := newUserAPI(t)
	me := a.account("ann@example.com")
	other := a.account("bob@example.com")
	a.do("POST", "/api/0/users/me/emails/", me.token, map[string]any{"email": "work@example.com"}).expect(t, 201, nil)
	key := a.confirmKey("work@example.com")

	t.Run("invalid key is 400", func(t *testing.T) {
		a.do("POST", "/api/0/auth/email/verify/", "", map[string]any{"key": "x" + key}).golden(t, "email_verify_invalid")
	})
	t.Run("key signed with another secret is 400", func(t *testing.T) {
		forged := authn.NewEmailKeys("other").Sign(authn.EmailKey{UserID: me.id, Email: "work@example.com", Expires: a.clock.Now().Add(time.Hour)})
		a.do("POST", "/api/0/auth/email/verify/", "", map[string]any{"key": forged}).golden(t, "email_verify_invalid")
	})
	t.Run("missing key is 422", func(t *testing.T) {
		a.do("POST", "/api/0/auth/email/verify/", "", map[string]any{}).golden(t, "email_verify_missing")
	})
	t.Run("valid key verifies without a token and keeps the primary", func(t *testing.T) {
		a.do("POST", "/api/0/auth/email/verify/", "", map[string]any{"key": key}).expect(t, 204, nil)
		if v, p := a.addressState("work@example.com"); !v || p {
			t.Errorf("verified, primary = %t, %t; want true, false", v, p)
		}
	})
	t.Run("verifying again changes nothing", func(t *testing.T) {
		a.do("POST", "/api/0/auth/email/verify/", "", map[string]any{"key": key}).expect(t, 204, nil)
	})
	t.Run("the address can now become primary", func(t *testing.T) {
		a.do("PUT", "/api/0/users/me/emails/", me.token, map[string]any{"email": "work@example.com"}).expect(t, 200, nil)
	})
	t.Run("expired key is 400", func(t *testing.T) {
		a.do("POST", "/api/0/users/me/emails/", me.token, map[string]any{"email": "late@example.com"}).expect(t, 201, nil)
		late := a.confirmKey("late@example.com")
		a.clock.advance(authn.EmailKeyLifetime)
		a.do("POST", "/api/0/auth/email/verify/", "", map[string]any{"key": late}).golden(t, "email_verify_invalid")
		if v, _ := a.addressState("late@example.com"); v {
			t.Error("expired key verified the address")
		}
	})
	t.Run("key of a deleted address is 400", func(t *testing.T) {
		a.do("POST", "/api/0/users/me/emails/", me.token, map[string]any{"email": "gone@example.com"}).expect(t, 201, nil)
		gone := a.confirmKey("gone@example.com")
		a.do("DELETE", "/api/0/users/me/emails/", me.token, map[string]any{"email": "gone@example.com"}).expect(t, 204, nil)
		a.do("POST", "/api/0/auth/email/verify/", "", map[string]any{"key": gone}).golden(t, "email_verify_invalid")
	})
	t.Run("address verified meanwhile on another account is 400", func(t *testing.T) {
		a.do("POST", "/api/0/users/me/emails/", me.token, map[string]any{"email": "shared@example.com"}).expect(t, 201, nil)
		mine := a.confirmKey("shared@example.com")
		a.do("POST", "/api/0/users/me/emails/", other.token, map[string]any{"email": "SHARED@example.com"}).expect(t, 201, nil)
		a.exec(`UPDATE email_addresses SET is_verified = true WHERE user_id = $1 AND email = 'SHARED@example.com'`, other.id)
		a.do("POST", "/api/0/auth/email/verify/", "", map[string]any{"key": mine}).golden(t, "email_exists")
		if n := a.count(`SELECT count(*) FROM email_addresses WHERE lower(email) = 'shared@example.com' AND is_verified`); n != 1 {
			t.Errorf("%d verified twins, want 1", n)
		}
	})
	t.Run("a user without a primary gets the address as primary and email", func(t *testing.T) {
		c := a.account("carol@example.com")
		a.do("POST", "/api/0/users/me/emails/", c.token, map[string]any{"email": "carol@work.example"}).expect(t, 201, nil)
		a.exec(`DELETE FROM email_addresses WHERE user_id = $1 AND email = 'carol@example.com'`, c.id)
		a.do("POST", "/api/0/auth/email/verify/", "", map[string]any{"key": a.confirmKey("carol@work.example")}).expect(t, 204, nil)
		a.do("GET", "/api/0/users/me/emails/", c.token, nil).expect(t, 200,
			`[{"email":"carol@work.example","isPrimary":true,"isVerified":true}]`)
		a.do("GET", "/api/0/", c.token, nil).expect(t, 200, nil)
		if n := a.count(`SELECT count(*) FROM users WHERE id = $1 AND email = 'carol@work.example'`, c.id); n != 1 {
			t.Error("the user's email is not the verified address")
		}
	})
}

func TestConfirmPage(t *testing.T) {
	a := newUserAPI(t)
	me := a.account("ann@example.com")
	a.do("POST", "/api/0/users/me/emails/", me.token, map[string]any{"email": "work@example.com"}).expect(t, 201, nil)
	key := a.confirmKey("work@example.com")
	page := "/profile/confirm-email/" + key + "/"

	t.Run("GET shows a form that posts the key and changes nothing", func(t *testing.T) {
		res, body := a.getPage(page)
		if res.StatusCode != 200 {
			t.Fatalf("status %d", res.StatusCode)
		}
		for _, want := range []string{`<form method="post">`, `name="csrfmiddlewaretoken"`, `name="key" value="` + key + `"`, `<button type="submit" id="confirm">Confirm work@example.com</button>`} {
			if !strings.Contains(body, want) {
				t.Errorf("page lacks %q:\n%s", want, body)
			}
		}
		if strings.Contains(strings.ToLower(body), "<script") {
			t.Error("page has a script")
		}
		if csp := res.Header.Get("Content-Security-Policy"); csp != pages.CSP {
			t.Errorf("Content-Security-Policy = %q, want %q", csp, pages.CSP)
		}
		// same-origin: the key goes to no other site (no-referrer would
		// make a browser post the form with "Origin: null").
		if res.Header.Get("Referrer-Policy") != "same-origin" {
			t.Error("page may leak its key as a referrer")
		}
		if v, _ := a.addressState("work@example.com"); v {
			t.Error("GET verified the address")
		}
	})
	t.Run("GET with an invalid key shows no form", func(t *testing.T) {
		for _, bad := range []string{"x" + key, "nodot", strings.Repeat("a", 700) + ".b"} {
			res, body := a.getPage("/profile/confirm-email/" + bad + "/")
			if res.StatusCode != 400 || strings.Contains(body, "<form") || !strings.Contains(body, "invalid or has expired") {
				t.Errorf("%s: status %d, body:\n%s", bad, res.StatusCode, body)
			}
		}
	})
	t.Run("posting another key than the page's is 400", func(t *testing.T) {
		status, body := a.postForm(page, url.Values{"key": {"x" + key}})
		if status != 400 || !strings.Contains(body, "invalid or has expired") {
			t.Errorf("status %d, body:\n%s", status, body)
		}
	})
	t.Run("posting the form verifies the address", func(t *testing.T) {
		status, body := a.postForm(page, url.Values{"key": {key}})
		if status != 200 || !strings.Contains(body, "work@example.com is confirmed") {
			t.Errorf("status %d, body:\n%s", status, body)
		}
		if v, _ := a.addressState("work@example.com"); !v {
			t.Error("address is not verified")
		}
	})
	t.Run("posting an expired key is 400", func(t *testing.T) {
		a.clock.advance(authn.EmailKeyLifetime)
		status, body := a.postForm(page, url.Values{"key": {key}})
		if status != 400 || !strings.Contains(body, "invalid or has expired") {
			t.Errorf("status %d, body:\n%s", status, body)
		}
	})
}

func t0() context.Context { return context.Background() }
