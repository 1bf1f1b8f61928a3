package allauth_test

import (
	"encoding/base32"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/authn"
	"errata/store/storetest"
)

// data returns the answer's data object.
func (a answer) data(t *testing.T) map[string]any {
	t.Helper()
	d, ok := a.body["data"].(map[string]any)
	if !ok {
		t.Fatalf("no data object in %s", a.raw)
	}
	return d
}

// enrolTOTP turns TOTP on for the signed-in client through the API and
// returns the secret it was offered and the step of its confirming code.
func (c *client) enrolTOTP() (secret []byte, step int64) {
	c.t.Helper()
	offer := c.do("GET", "account/authenticators/totp", nil)
	offer.expect(c.t, 404, "")
	meta := offer.body["meta"].(map[string]any)
	secret, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(meta["secret"].(string))
	if err != nil || len(secret) != 20 {
		c.t.Fatalf("meta.secret %q: %v", meta["secret"], err)
	}
	step = authn.TOTPStep(time.Now())
	c.do("POST", "account/authenticators/totp", map[string]string{"code": authn.TOTPCode(secret, step)}).expect(c.t, 200, "")
	return secret, step
}

// unusedCodes returns the recovery codes the client's user has left.
func (c *client) unusedCodes() []string {
	c.t.Helper()
	got := c.do("GET", "account/authenticators/recovery-codes", nil)
	got.expect(c.t, 200, "")
	var codes []string
	for _, code := range got.data(c.t)["unused_codes"].([]any) {
		codes = append(codes, code.(string))
	}
	return codes
}

// signInPending signs the client in as email, a user with TOTP, and checks
// that the sign-in waits for the second factor.
func (c *client) signInPending(email string) {
	c.t.Helper()
	got := c.signIn(email)
	got.expect(c.t, 401, "")
	flows := got.data(c.t)["flows"].([]any)
	if f := flows[len(flows)-1].(map[string]any); f["id"] != "mfa_authenticate" || f["is_pending"] != true {
		c.t.Fatalf("sign-in of %s is not pending its second factor: %s", email, got.raw)
	}
}

// authenticate2FA sends code to auth/2fa/authenticate and keeps an app's
// new session token.
func (c *client) authenticate2FA(code string) answer {
	c.t.Helper()
	a := c.do("POST", "auth/2fa/authenticate", map[string]string{"code": code})
	if meta, ok := a.body["meta"].(map[string]any); ok && a.status == 200 {
		c.token, _ = meta["session_token"].(string)
	}
	return a
}

// enrolled is a test server whose ann has TOTP on, and her app client.
type enrolled struct {
	s      testServer
	c      *client
	secret []byte
	step   int64    // of the code that turned TOTP on
	codes  []string // ann's recovery codes
}

// newEnrolled signs ann in through an app client and turns TOTP on for
// her; the client stays signed in.
func newEnrolled(t *testing.T) enrolled {
	t.Helper()
	e := enrolled{s: newTestServer(t, false)}
	e.c = e.s.client(t, "app")
	e.c.signIn("ann@example.com").expect(t, 200, "")
	e.secret, e.step = e.c.enrolTOTP()
	e.codes = e.c.unusedCodes()
	return e
}

var incorrectCode = `{"status": 400, "errors": [{"message": "Incorrect code.", "code": "incorrect_code", "param": "code"}]}`

func TestTOTPEnrolment(t *testing.T) {
	s := newTestServer(t, false)
	for _, kind := range []string{"app", "browser"} {
		t.Run(kind, func(t *testing.T) {
			email := kind + "@example.com"
			storetest.Exec(t, s.db, `INSERT INTO users (email, password_hash) SELECT $1, password_hash FROM users WHERE email = 'ann@example.com'`, email)
			c := s.client(t, kind)
			c.signIn(email).expect(t, 200, "")
			c.do("GET", "account/authenticators", nil).expect(t, 200, `{"status": 200, "data": []}`)

			offer := c.do("GET", "account/authenticators/totp", nil)
			offer.expect(t, 404, "")
			meta := offer.body["meta"].(map[string]any)
			secret := meta["secret"].(string)
			if want := "otpauth://totp/errata:" + strings.Replace(email, "@", "%40", 1) + "?secret=" + secret +
				"&issuer=errata&algorithm=SHA1&digits=6&period=30"; meta["totp_url"] != want {
				t.Errorf("totp_url %q, want %q", meta["totp_url"], want)
			}
			if again := c.do("GET", "account/authenticators/totp", nil); again.body["meta"].(map[string]any)["secret"] != secret {
				t.Error("a second GET offered another secret")
			}
			if other := s.client(t, kind); other.signIn(email).status == 200 {
				if got := other.do("GET", "account/authenticators/totp", nil); got.body["meta"].(map[string]any)["secret"] == secret {
					t.Error("another session of the same user was offered the same secret")
				}
			}
			raw, _ := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(secret)
			now := authn.TOTPStep(time.Now())
			c.do("POST", "account/authenticators/totp", map[string]string{"code": authn.TOTPCode(raw, now-3)}).expect(t, 400, incorrectCode)
			c.do("POST", "account/authenticators/totp", map[string]string{"code": "12345"}).expect(t, 400, incorrectCode)
			c.do("POST", "account/authenticators/totp", map[string]string{}).expect(t, 400,
				`{"status": 400, "errors": [{"message": "This field is required.", "code": "required", "param": "code"}]}`)

			got := c.do("POST", "account/authenticators/totp", map[string]string{"code": authn.TOTPCode(raw, now)})
			got.expect(t, 200, "")
			if d := got.data(t); d["type"] != "totp" || d["last_used_at"] != nil || got.body["meta"].(map[string]any)["recovery_codes_generated"] != true {
				t.Errorf("activation answered %s", got.raw)
			}
			c.do("POST", "account/authenticators/totp", map[string]string{"code": authn.TOTPCode(raw, now+1)}).expect(t, 409, `{"status": 409}`)
			c.do("GET", "account/authenticators/totp", nil).expect(t, 200, "")

			list := c.do("GET", "account/authenticators", nil)
			list.expect(t, 200, "")
			var types []string
			for _, a := range list.body["data"].([]any) {
				a := a.(map[string]any)
				types = append(types, a["type"].(string))
				if a["type"] == "recovery_codes" && (a["total_code_count"] != 10.0 || a["unused_code_count"] != 10.0) {
					t.Errorf("recovery codes %v", a)
				}
				if _, ok := a["unused_codes"]; ok {
					t.Error("the list shows the codes")
				}
			}
			if diff := cmp.Diff([]string{"totp", "recovery_codes"}, types); diff != "" {
				t.Errorf("authenticators (-want +got):\n%s", diff)
			}
			if codes := c.unusedCodes(); len(codes) != 10 {
				t.Errorf("%d unused codes, want 10", len(codes))
			}
			if n := storetest.Count(t, s.db, `SELECT count(*) FROM mail_outbox WHERE to_address = $1 AND subject = 'Two-factor authentication was turned on'`, email); n != 1 {
				t.Errorf("%d notices of the activation, want 1", n)
			}
		})
	}
}

func TestTwoFactorSignIn(t *testing.T) {
	e := newEnrolled(t)
	s, c, secret, step, codes := e.s, e.c, e.secret, e.step, e.codes
	c.do("DELETE", "auth/session", nil).expect(t, 401, "")

	t.Run("no pending sign-in is 401", func(t *testing.T) {
		fresh := s.client(t, "app")
		fresh.authenticate2FA(authn.TOTPCode(secret, step+1)).expect(t, 401, "")
	})
	t.Run("the confirming code does not sign in", func(t *testing.T) {
		c.signInPending("ann@example.com")
		c.authenticate2FA(authn.TOTPCode(secret, step)).expect(t, 400, incorrectCode)
	})
	t.Run("a later code signs in once, on a new session id", func(t *testing.T) {
		pending := c.token
		got := c.authenticate2FA(" " + authn.TOTPCode(secret, step+1)[:3] + " " + authn.TOTPCode(secret, step+1)[3:])
		got.expect(t, 200, "")
		methods := got.data(t)["methods"].([]any)
		if m := methods[len(methods)-1].(map[string]any); m["method"] != "mfa" || m["type"] != "totp" {
			t.Errorf("methods %v", methods)
		}
		if c.token == pending {
			t.Fatal("the session kept its pending id")
		}
		c.do("GET", "auth/session", nil).expect(t, 200, "")
		old := s.client(t, "app")
		old.token = pending
		old.do("GET", "auth/session", nil).expect(t, 410, "")

		c.do("DELETE", "auth/session", nil).expect(t, 401, "")
		c.signInPending("ann@example.com")
		c.authenticate2FA(authn.TOTPCode(secret, step+1)).expect(t, 400, incorrectCode)
	})
	t.Run("a recovery code signs in once and leaves the list", func(t *testing.T) {
		got := c.authenticate2FA(codes[2])
		got.expect(t, 200, "")
		methods := got.data(t)["methods"].([]any)
		if m := methods[len(methods)-1].(map[string]any); m["type"] != "recovery_codes" {
			t.Errorf("methods %v", methods)
		}
		left := c.unusedCodes()
		if len(left) != 9 || slices.Contains(left, codes[2]) {
			t.Errorf("unused codes %v, want 9 without %s", left, codes[2])
		}
		c.do("DELETE", "auth/session", nil).expect(t, 401, "")
		c.signInPending("ann@example.com")
		c.authenticate2FA(codes[2]).expect(t, 400, incorrectCode)
		c.authenticate2FA(codes[3]).expect(t, 200, "")
	})
	t.Run("a code of the wrong form is incorrect", func(t *testing.T) {
		storetest.Exec(t, s.db, `DELETE FROM throttle_events`) // the failures above
		c.do("DELETE", "auth/session", nil).expect(t, 401, "")
		c.signInPending("ann@example.com")
		for _, code := range []string{"1", "abcdef", "\u0660\u0661\u0662\u0663\u0664\u0665"} {
			c.authenticate2FA(code).expect(t, 400, incorrectCode)
		}
		c.authenticate2FA("").expect(t, 400, `{"status": 400, "errors": [{"message": "This field is required.", "code": "required", "param": "code"}]}`)
		c.do("POST", "auth/2fa/authenticate", `{"code": 123456}`).expect(t, 400, "")
	})
	t.Run("a browser's second factor needs the CSRF token and rotates its cookie", func(t *testing.T) {
		b := s.client(t, "browser")
		b.signInPending("ann@example.com")
		pending := b.cookie("errata_session")
		b.do("POST", "auth/2fa/authenticate", map[string]string{"code": codes[5]}, "X-CSRFToken", "").expect(t, 403, `{"status": 403}`)
		b.authenticate2FA(codes[5]).expect(t, 200, "")
		if b.cookie("errata_session") == pending || b.cookie("errata_session") == "" {
			t.Errorf("the session cookie %q after the second factor, was %q", b.cookie("errata_session"), pending)
		}
		b.do("GET", "auth/session", nil).expect(t, 200, "")
	})
}

func TestTwoFactorThrottle(t *testing.T) {
	e := newEnrolled(t)
	s, c, codes := e.s, e.c, e.codes
	c.do("DELETE", "auth/session", nil).expect(t, 401, "")
	c.signInPending("ann@example.com")
	for i := range 4 {
		c.authenticate2FA(fmt.Sprintf("%08d", i)).expect(t, 400, incorrectCode)
	}
	// A right code is not counted: one more failure is still answered.
	c.authenticate2FA(codes[1]).expect(t, 200, "")
	c.do("DELETE", "auth/session", nil).expect(t, 401, "")
	c.signInPending("ann@example.com")
	c.authenticate2FA("00000004").expect(t, 400, incorrectCode)
	c.authenticate2FA(codes[0]).expect(t, 429, `{"status": 429}`)
	if n := storetest.Count(t, s.db, `SELECT used_mask FROM recovery_codes`); n != 1<<1 {
		t.Errorf("used mask %b, want code 1 alone spent: a throttled attempt spends nothing", n)
	}
}

func TestRecentAuthentication(t *testing.T) {
	e := newEnrolled(t)
	s, c, secret, step, codes := e.s, e.c, e.secret, e.step, e.codes
	storetest.Exec(t, s.db, `UPDATE sessions SET authenticated_at = now() - interval '6 minutes'`)

	for _, r := range []struct{ method, path string }{
		{"DELETE", "account/authenticators/totp"},
		{"GET", "account/authenticators/recovery-codes"},
		{"POST", "account/authenticators/recovery-codes"},
	} {
		got := c.do(r.method, r.path, nil)
		got.expect(t, 401, "")
		var flows []string
		for _, f := range got.data(t)["flows"].([]any) {
			flows = append(flows, f.(map[string]any)["id"].(string))
		}
		if diff := cmp.Diff([]string{"reauthenticate", "mfa_reauthenticate"}, flows); diff != "" || got.body["meta"].(map[string]any)["is_authenticated"] != true {
			t.Errorf("%s %s: %s", r.method, r.path, got.raw)
		}
	}
	c.do("GET", "account/authenticators", nil).expect(t, 200, "")

	old := c.token
	got := c.do("POST", "auth/2fa/reauthenticate", map[string]string{"code": authn.TOTPCode(secret, step+1)})
	got.expect(t, 200, "")
	c.token = got.body["meta"].(map[string]any)["session_token"].(string)
	if c.token == old {
		t.Error("reauthentication kept the session id")
	}
	c.do("POST", "auth/2fa/reauthenticate", map[string]string{"code": authn.TOTPCode(secret, step+1)}).expect(t, 400, incorrectCode)

	regenerated := c.do("POST", "account/authenticators/recovery-codes", nil)
	regenerated.expect(t, 200, "")
	fresh := c.unusedCodes()
	if len(fresh) != 10 || fresh[0] == codes[0] {
		t.Errorf("regenerated codes %v", fresh)
	}
	c.do("DELETE", "account/authenticators/totp", nil).expect(t, 200, `{"status": 200}`)
	c.do("GET", "account/authenticators", nil).expect(t, 200, `{"status": 200, "data": []}`)
	c.do("DELETE", "account/authenticators/totp", nil).expect(t, 404, `{"status": 404}`)
	c.do("POST", "account/authenticators/recovery-codes", nil).expect(t, 400, "")

	// Without TOTP, sign-in asks for no second factor.
	c.do("DELETE", "auth/session", nil).expect(t, 401, "")
	c.signIn("ann@example.com").expect(t, 200, "")
}
