package main

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSignInThrottling: wrong passwords are counted in PostgreSQL, so two
// replicas share the counts: an account's 6th wrong password is refused
// with allauth's too_many_login_attempts, and its right password too; an
// address's 11th is 429. The address is X-Forwarded-For's last untrusted
// hop behind TRUSTED_PROXIES, and the connection's without it.
func TestSignInThrottling(t *testing.T) {
	t.Parallel()
	a := newErrata(t, map[string]string{"TRUSTED_PROXIES": "127.0.0.1"})
	b := newErrata(t, map[string]string{"TRUSTED_PROXIES": "127.0.0.0/8, ::1", "DATABASE_URL": a.env["DATABASE_URL"]})
	direct := newErrata(t, map[string]string{"DATABASE_URL": a.env["DATABASE_URL"]})
	a.serve(t)
	b.serve(t)
	direct.serve(t)
	for _, email := range []string{"ann@example.com", "bob@example.com", "cat@example.com"} {
		a.user(t, email, "org:read")
		setPassword(t, a, email)
	}
	app := newPerson(t, "app")
	login := func(s *errataServer, email, password, forwardedFor string) (int, map[string]any) {
		t.Helper()
		body := map[string]string{"email": email, "password": password}
		if forwardedFor == "" {
			return app.do(s, "POST", "auth/login", body)
		}
		return app.do(s, "POST", "auth/login", body, "X-Forwarded-For", forwardedFor)
	}
	// expect fails unless the answer is status with the error code (400)
	// or the body {"status": 429} (429), or status alone (200).
	expect := func(what string, want int, code string, got int, body map[string]any) {
		t.Helper()
		switch {
		case got != want:
			t.Errorf("%s: %d %v, want %d %s", what, got, body, want, code)
		case want == 429:
			if diff := cmp.Diff(map[string]any{"status": 429.0}, body); diff != "" {
				t.Errorf("%s: body (-want +got):\n%s", what, diff)
			}
		case want == 400:
			errs, _ := body["errors"].([]any)
			var first map[string]any
			if len(errs) == 1 {
				first, _ = errs[0].(map[string]any)
			}
			if first["code"] != code {
				t.Errorf("%s: %v, want the error code %s", what, body, code)
			}
		}
	}
	const mismatch, tooMany = "email_password_mismatch", "too_many_login_attempts"

	t.Run("an account's 6th wrong password is refused on either replica, the right one too", func(t *testing.T) {
		for i := range 5 {
			s := []*errataServer{a, b}[i%2]
			status, body := login(s, "Ann@Example.com", "wrong password", fmt.Sprintf("203.0.113.%d", i+1))
			expect(fmt.Sprintf("wrong password %d", i+1), 400, mismatch, status, body)
		}
		if n := a.count(t, `SELECT count(*) FROM throttle_events WHERE bucket = 'password_account:ann@example.com'`); n != 5 {
			t.Errorf("%d failures of the account counted, want 5", n)
		}
		status, body := login(a, "ann@example.com", "wrong password", "203.0.113.6")
		expect("the 6th wrong password", 400, tooMany, status, body)
		status, body = login(b, "ann@example.com", signInPassword, "203.0.113.7")
		expect("the right password after 5 failures", 400, tooMany, status, body)
		status, body = login(b, "bob@example.com", signInPassword, "203.0.113.7")
		expect("another account", 200, "", status, body)
		if n := a.count(t, `SELECT count(*) FROM throttle_events WHERE bucket = 'password_account:bob@example.com'`); n != 0 {
			t.Errorf("a right password left %d events", n)
		}
	})

	t.Run("an address's 11th wrong password is 429 on either replica, behind trusted proxies", func(t *testing.T) {
		for i := range 10 {
			s := []*errataServer{a, b}[i%2]
			status, body := login(s, fmt.Sprintf("nobody%d@example.com", i), "wrong password", "198.51.100.1")
			expect(fmt.Sprintf("wrong password %d", i+1), 400, mismatch, status, body)
		}
		status, body := login(b, "nobody10@example.com", "wrong password", "198.51.100.1")
		expect("the 11th wrong password", 429, "", status, body)
		status, body = login(a, "cat@example.com", signInPassword, "198.51.100.1")
		expect("a right password from the address", 429, "", status, body)
		status, body = login(a, "cat@example.com", signInPassword, "198.51.100.1, 127.0.0.1")
		expect("through two trusted proxies", 429, "", status, body)
		status, body = login(b, "cat@example.com", signInPassword, "198.51.100.2, 198.51.100.1")
		expect("with a spoofed address to the left", 429, "", status, body)
		status, body = login(a, "nobody11@example.com", "wrong password", "198.51.100.2")
		expect("another address", 400, mismatch, status, body)
		status, body = login(b, "cat@example.com", signInPassword, "2001:db8::1")
		expect("an IPv6 address", 200, "", status, body)
	})

	t.Run("without TRUSTED_PROXIES the header is ignored", func(t *testing.T) {
		for i := range 10 {
			status, body := login(direct, fmt.Sprintf("direct%d@example.com", i), "wrong password", fmt.Sprintf("192.0.2.%d", i+1))
			expect(fmt.Sprintf("wrong password %d", i+1), 400, mismatch, status, body)
		}
		status, body := login(direct, "cat@example.com", signInPassword, "192.0.2.99")
		expect("the 11th attempt from the connection's address", 429, "", status, body)
		if n := a.count(t, `SELECT count(*) FROM throttle_events WHERE bucket = 'password_address:addr:127.0.0.1'`); n != 10 {
			t.Errorf("%d failures counted for the connection's address, want 10", n)
		}
	})

	t.Run("a TRUSTED_PROXIES that does not parse stops the start", func(t *testing.T) {
		env := map[string]string{"DATABASE_URL": "postgres://unused", "PUBLIC_URL": "http://errata.test",
			"SECRET_KEY": strings.Repeat("k", 32), "TRUSTED_PROXIES": "10.0.0.0/8, proxy.example"}
		err := run(t.Context(), []string{"serve"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
		if want := `TRUSTED_PROXIES: "10.0.0.0/8, proxy.example" is not comma-separated CIDRs or addresses`; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("serve: %v, want an error that says %s", err, want)
		}
	})
}
