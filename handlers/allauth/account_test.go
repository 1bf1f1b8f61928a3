package allauth_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"errata/store/storetest"
)

const newPassword = "a brand new passphrase 2026"

// appSession signs an app client in as email.
func appSession(t *testing.T, s testServer, email string) *client {
	t.Helper()
	c := s.client(t, "app")
	c.signIn(email).expect(t, 200, "")
	return c
}

// lastMail returns the text of the last message queued to the address.
func lastMail(t *testing.T, s testServer, to string) string {
	t.Helper()
	ms, err := s.st.Outbox(context.Background(), to)
	if err != nil || len(ms) == 0 {
		t.Fatalf("no mail to %s: %v", to, err)
	}
	return ms[len(ms)-1].Text
}

func TestReauthenticate(t *testing.T) {
	s := newTestServer(t, false)
	c := appSession(t, s, "ann@example.com")
	storetest.Exec(t, s.db, `UPDATE sessions SET authenticated_at = now() - interval '1 hour'`)
	c.do("POST", "auth/reauthenticate", map[string]string{"password": "wrong"}).expect(t, 400,
		`{"status": 400, "errors": [{"message": "Incorrect password.", "code": "incorrect_password", "param": "password"}]}`)
	old := c.token
	got := c.do("POST", "auth/reauthenticate", map[string]string{"password": password})
	got.expect(t, 200, "")
	newToken := got.body["meta"].(map[string]any)["session_token"].(string)
	if newToken == old || len(newToken) != 43 {
		t.Fatalf("reauthentication gave the token %q", newToken)
	}
	if n := storetest.Count(t, s.db, `SELECT count(*) FROM sessions WHERE authenticated_at > now() - interval '1 minute'`); n != 1 {
		t.Error("reauthentication did not renew authenticated_at")
	}
	c.do("GET", "auth/session", nil).expect(t, 410, "")
	c.token = newToken
	c.do("GET", "auth/session", nil).expect(t, 200, "")

	b := s.client(t, "browser")
	b.signIn("ann@example.com").expect(t, 200, "")
	cookie := b.cookie("errata_session")
	b.do("POST", "auth/reauthenticate", map[string]string{"password": password}).expect(t, 200, "")
	if b.cookie("errata_session") == cookie {
		t.Error("the browser's session cookie kept its id")
	}
	b.do("GET", "auth/session", nil).expect(t, 200, "")
	nobody := s.client(t, "app")
	nobody.do("POST", "auth/reauthenticate", map[string]string{"password": password}).expect(t, 401, "")
}

func TestSessionList(t *testing.T) {
	s := newTestServer(t, false)
	app := appSession(t, s, "ann@example.com")
	browser := s.client(t, "browser")
	browser.signIn("ann@example.com").expect(t, 200, "")
	s.client(t, "app").signIn("tia@example.com").expect(t, 401, "") // pending: TOTP
	list := app.do("GET", "auth/sessions", nil)
	list.expect(t, 200, "")
	data := list.body["data"].([]any)
	if len(data) != 2 {
		t.Fatalf("ann's sessions: %s", list.raw)
	}
	var current, browserID float64
	for _, x := range data {
		m := x.(map[string]any)
		if m["is_current"] == true {
			current = m["id"].(float64)
		} else {
			browserID = m["id"].(float64)
		}
		if m["ip"] != "127.0.0.1" || m["user_agent"] != "Go-http-client/1.1" || m["created_at"].(float64) <= 0 {
			t.Errorf("session %v", m)
		}
	}
	if current == 0 || browserID == 0 {
		t.Fatalf("no current session in %s", list.raw)
	}
	tia := float64(storetest.Count(t, s.db, `SELECT s.id FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.email = 'tia@example.com'`))
	after := app.do("DELETE", "auth/sessions", map[string]any{"sessions": []float64{browserID, tia}})
	after.expect(t, 200, "")
	if n := len(after.body["data"].([]any)); n != 1 {
		t.Errorf("after ending the browser's session: %s", after.raw)
	}
	browser.do("GET", "auth/session", nil).expect(t, 401, "")
	if n := storetest.Count(t, s.db, `SELECT count(*) FROM sessions WHERE id = $1`, int64(tia)); n != 1 {
		t.Error("ann ended tia's session")
	}
	app.do("DELETE", "auth/sessions", map[string]any{"sessions": []float64{current}}).expect(t, 401, "")
	app.do("GET", "auth/session", nil).expect(t, 410, "")
}

func TestChangePassword(t *testing.T) {
	s := newTestServer(t, false)
	c := appSession(t, s, "ann@example.com")
	other := appSession(t, s, "ann@example.com")
	c.do("POST", "account/password/change", map[string]string{"current_password": "wrong", "new_password": newPassword}).expect(t, 400,
		`{"status": 400, "errors": [{"message": "Incorrect password.", "code": "incorrect_password", "param": "current_password"}]}`)
	c.do("POST", "account/password/change", map[string]string{"current_password": password, "new_password": "short"}).expect(t, 400,
		`{"status": 400, "errors": [{"message": "This password is too short. It must contain at least 8 characters.", "code": "password_too_short", "param": "new_password"}]}`)
	c.do("POST", "account/password/change", map[string]string{"current_password": password, "new_password": "ANN@example.com"}).expect(t, 400, "")
	c.do("POST", "account/password/change", map[string]string{"current_password": password, "new_password": newPassword}).expect(t, 200, "")
	c.do("GET", "auth/session", nil).expect(t, 200, "")
	other.do("GET", "auth/session", nil).expect(t, 410, "")
	if m := lastMail(t, s, "ann@example.com"); !strings.Contains(m, "password") {
		t.Errorf("notice %q", m)
	}
	again := s.client(t, "app")
	again.do("POST", "auth/login", map[string]string{"email": "ann@example.com", "password": password}).expect(t, 400, "")
	again.do("POST", "auth/login", map[string]string{"email": "ann@example.com", "password": newPassword}).expect(t, 200, "")
}

func TestSignup(t *testing.T) {
	closed := newTestServer(t, false)
	closed.client(t, "app").do("POST", "auth/signup", map[string]string{"email": "new@example.com", "password": newPassword}).expect(t, 403, `{"status": 403}`)

	s := newTestServer(t, true)
	c := s.client(t, "app")
	c.do("POST", "auth/signup", map[string]string{"email": "new@example.com", "password": "password"}).expect(t, 400,
		`{"status": 400, "errors": [{"message": "This password is too common.", "code": "password_too_common", "param": "password"}]}`)
	c.do("POST", "auth/signup", map[string]string{"email": "ANN@example.com", "password": newPassword}).expect(t, 400,
		`{"status": 400, "errors": [{"message": "A user is already registered with this email address.", "code": "email_taken", "param": "email"}]}`)
	c.do("POST", "auth/signup", map[string]string{"email": "@", "password": newPassword}).expect(t, 400, "")
	got := c.do("POST", "auth/signup", map[string]string{"email": "new@example.com", "password": newPassword})
	got.expect(t, 200, "")
	c.token = got.body["meta"].(map[string]any)["session_token"].(string)
	c.do("GET", "auth/session", nil).expect(t, 200, "")
	c.do("POST", "auth/signup", map[string]string{"email": "new2@example.com", "password": newPassword}).expect(t, 409, `{"status": 409}`)
	if n := storetest.Count(t, s.db, `SELECT count(*) FROM email_addresses WHERE email = 'new@example.com' AND is_primary AND NOT is_verified`); n != 1 {
		t.Error("the new address is not an unverified primary address")
	}

	key := regexp.MustCompile(`/confirm-email/([^/]+)/`).FindStringSubmatch(lastMail(t, s, "new@example.com"))
	if key == nil {
		t.Fatal("no confirmation link mailed")
	}
	c.do("POST", "auth/email/verify/resend", nil).expect(t, 200, `{"status": 200}`)
	info := c.do("GET", "auth/email/verify", nil, "X-Email-Verification-Key", key[1])
	info.expect(t, 200, "")
	if info.body["data"].(map[string]any)["email"] != "new@example.com" {
		t.Errorf("verification info %s", info.raw)
	}
	c.do("GET", "auth/email/verify", nil, "X-Email-Verification-Key", key[1]+"x").expect(t, 400,
		`{"status": 400, "errors": [{"message": "Invalid or expired key.", "code": "invalid", "param": "key"}]}`)
	c.do("POST", "auth/email/verify", map[string]string{"key": key[1]}).expect(t, 200, "")
	if n := storetest.Count(t, s.db, `SELECT count(*) FROM email_addresses WHERE email = 'new@example.com' AND is_verified`); n != 1 {
		t.Error("the address is not verified")
	}
	c.do("POST", "auth/email/verify/resend", nil).expect(t, 409, `{"status": 409}`)
	s.client(t, "app").do("POST", "auth/email/verify", map[string]string{"key": key[1]}).expect(t, 401, "")
}

func TestPasswordReset(t *testing.T) {
	s := newTestServer(t, false)
	signedIn := appSession(t, s, "ann@example.com")
	c := s.client(t, "browser")
	c.do("GET", "config", nil).expect(t, 200, "")
	c.do("POST", "auth/password/request", map[string]string{"email": "nobody@example.com"}).expect(t, 200, `{"status": 200}`)
	c.do("POST", "auth/password/request", map[string]string{"email": "ANN@example.com"}).expect(t, 200, `{"status": 200}`)
	if ms, _ := s.st.Outbox(context.Background(), "nobody@example.com"); len(ms) != 0 {
		t.Error("mail to an address without an account")
	}
	m := regexp.MustCompile(`/reset-password/([^/\s]+)/`).FindStringSubmatch(lastMail(t, s, "ann@example.com"))
	if m == nil {
		t.Fatal("no reset link mailed")
	}
	key := m[1]
	invalidKey := `{"status": 400, "errors": [{"message": "The password reset token was invalid.", "code": "token_invalid", "param": "key"}]}`
	info := c.do("GET", "auth/password/reset", nil, "X-Password-Reset-Key", key)
	info.expect(t, 200, "")
	if info.body["data"].(map[string]any)["user"].(map[string]any)["email"] != "ann@example.com" {
		t.Errorf("reset info %s", info.raw)
	}
	c.do("GET", "auth/password/reset?key="+key, nil).expect(t, 200, "")
	c.do("GET", "auth/password/reset", nil, "X-Password-Reset-Key", strings.ToUpper(key)).expect(t, 400, invalidKey)
	c.do("GET", "auth/password/reset", nil).expect(t, 400, invalidKey)
	c.do("POST", "auth/password/reset", map[string]string{"key": key, "password": "short"}).expect(t, 400, "")
	c.do("POST", "auth/password/reset", map[string]string{"key": key, "password": newPassword}).expect(t, 401, "")
	c.do("POST", "auth/password/reset", map[string]string{"key": key, "password": newPassword + "!"}).expect(t, 400, invalidKey)
	c.do("GET", "auth/password/reset", nil, "X-Password-Reset-Key", key).expect(t, 400, invalidKey)
	signedIn.do("GET", "auth/session", nil).expect(t, 410, "")
	again := s.client(t, "app")
	again.do("POST", "auth/login", map[string]string{"email": "ann@example.com", "password": newPassword}).expect(t, 200, "")
}

func TestThrottles(t *testing.T) {
	s := newTestServer(t, false)
	c := s.client(t, "app")
	wrong := map[string]string{"email": "ann@example.com", "password": "wrong password"}
	for range 5 {
		c.do("POST", "auth/login", wrong).expect(t, 400, "")
	}
	tooMany := `{"status": 400, "errors": [{"message": "Too many failed login attempts. Try again later.", "code": "too_many_login_attempts"}]}`
	c.do("POST", "auth/login", map[string]string{"email": "ANN@example.com", "password": password}).expect(t, 400, tooMany)

	for i := range 5 { // 10 failures from this address in all
		c.do("POST", "auth/login", map[string]string{"email": "someone" + string(rune('a'+i)) + "@example.com", "password": "x"}).expect(t, 400, "")
	}
	c.do("POST", "auth/login", map[string]string{"email": "tia@example.com", "password": password}).expect(t, 429, `{"status": 429}`)

	for range 3 {
		c.do("POST", "auth/password/request", map[string]string{"email": "tia@example.com"}).expect(t, 200, "")
	}
	c.do("POST", "auth/password/request", map[string]string{"email": "tia@example.com"}).expect(t, 429, `{"status": 429}`)
}

func TestReauthenticationThrottled(t *testing.T) {
	s := newTestServer(t, false)
	c := appSession(t, s, "ann@example.com")
	for range 5 {
		c.do("POST", "auth/reauthenticate", map[string]string{"password": "wrong"}).expect(t, 400, "")
	}
	c.do("POST", "auth/reauthenticate", map[string]string{"password": password}).expect(t, 429, `{"status": 429}`)
	c.do("POST", "account/password/change", map[string]string{"current_password": password, "new_password": newPassword}).expect(t, 429, `{"status": 429}`)
}
