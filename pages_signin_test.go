package main

// The pages of signing in, out and back (docs/pages.md), in a browser:
// the second factor, sign-out, a forgotten password, reauthentication,
// accepting an invitation and confirming an address; and, without a
// browser, that a link that was used is refused.

import (
	"encoding/base32"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"errata/authn"
)

// visitor is someone using the pages without a browser: a cookie jar,
// and the CSRF token of the pages' forms.
type visitor struct {
	t      *testing.T
	client *http.Client
}

func newVisitor(t *testing.T) *visitor {
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &visitor{t: t, client: client}
}

// page sends method to the page at link (its form when POST, with the
// CSRF token of the visitor's cookie, which a GET gave it) and returns the
// answer and its body.
func (v *visitor) page(method, link string, form url.Values) (*http.Response, string) {
	v.t.Helper()
	var body io.Reader
	if method == "POST" {
		u, err := url.Parse(link)
		if err != nil {
			v.t.Fatal(err)
		}
		if form == nil {
			form = url.Values{}
		}
		for _, c := range v.client.Jar.Cookies(u) {
			if c.Name == authn.CSRFCookieName {
				form.Set(authn.CSRFFormField, c.Value)
			}
		}
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, link, body)
	if err != nil {
		v.t.Fatal(err)
	}
	if method == "POST" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := v.client.Do(req)
	if err != nil {
		v.t.Fatalf("%s %s: %v", method, link, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		v.t.Fatal(err)
	}
	return res, string(b)
}

// postPage opens the page at link and posts its form with fields, as a
// browser does (the CSRF token included), and returns the answer.
func postPage(t *testing.T, link string, fields url.Values) (*http.Response, []byte) {
	t.Helper()
	v := newVisitor(t)
	if res, body := v.page("GET", link, nil); res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", link, res.StatusCode, body)
	}
	res, body := v.page("POST", link, fields)
	return res, []byte(body)
}

// enrolTOTP gives email, a person with signInPassword, TOTP through the
// sign-in API, accepting the code of the step before now (so that the
// browser's code of now is a later one), and returns the base32 secret
// and the person's recovery codes.
func enrolTOTP(t *testing.T, s *errataServer, email string) (string, []string) {
	t.Helper()
	p := newPerson(t, "app")
	p.signIn(s, email)
	status, offer := p.do(s, "GET", "account/authenticators/totp", nil)
	meta, _ := offer["meta"].(map[string]any)
	encoded, _ := meta["secret"].(string)
	secret, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(encoded)
	if status != http.StatusNotFound || err != nil {
		t.Fatalf("the TOTP offer: %d %v (%v)", status, offer, err)
	}
	code := authn.TOTPCode(secret, authn.TOTPStep(time.Now())-1)
	status, body := p.do(s, "POST", "account/authenticators/totp", map[string]string{"code": code})
	expectStatus(t, "activating TOTP", status, http.StatusOK, body)
	codes := p.unusedCodes(s)
	p.do(s, "DELETE", "auth/session", nil)
	return encoded, codes
}

// mailSetup starts an SMTP server that keeps its mail in a Maildir, and
// returns errata's settings for it and the Maildir.
func mailSetup(t *testing.T) (map[string]string, string) {
	t.Helper()
	python := os.Getenv("SMTP_PYTHON")
	if python == "" {
		t.Fatal("SMTP_PYTHON is not set: run the tests with ./dev.sh test, which installs python3-aiosmtpd")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	maildir := filepath.Join(t.TempDir(), "maildir")
	startSMTP(t, python, addr, maildir)
	return map[string]string{"EMAIL_URL": "smtp://" + addr, "DEFAULT_FROM_EMAIL": "errata@example.com"}, maildir
}

// TestPagesSignIn: a person with TOTP signs in with their password then a
// code, or a recovery code, and a wrong code is refused; signs out;
// confirms who they are again; forgets their password, and sets a new one
// by the link of the mail.
func TestPagesSignIn(t *testing.T) {
	t.Parallel()
	env, maildir := mailSetup(t)
	s := startErrata(t, env)
	password := pageOrg(t, s, "tess@example.com", "acme", "Acme Corp")
	secret, codes := enrolTOTP(t, s, "tess@example.com")
	runPageFlow(t, s, "signin", map[string]any{
		"email": "tess@example.com", "password": password, "secret": secret,
		"recoveryCodes": codes[:2], "newPassword": "a brand new passphrase 7",
	}, maildir)
}

// TestPagesInvite: a new person accepts an invitation and makes their
// account on its page; a person with an account signs in from it and
// joins; a wrong link is 404.
func TestPagesInvite(t *testing.T) {
	t.Parallel()
	s := startErrata(t, nil)
	password := pageOrg(t, s, "olga@example.com", "acme", "Acme Corp")
	s.token = s.cli(t, "admin", "create-token", "--email", "olga@example.com", "--scopes", "member:admin,org:read")
	s.cli(t, "admin", "create-user", "--email", "bob@example.com")
	setPassword(t, s, "bob@example.com")
	runPageFlow(t, s, "invite", map[string]any{
		"newcomer": invitePath(t, s, "acme", "nina@example.com"), "newcomerPassword": "nina's own passphrase 3",
		"member": invitePath(t, s, "acme", "bob@example.com"), "memberEmail": "bob@example.com", "memberPassword": password,
		"orgName": "Acme Corp",
	}, "")
	for _, who := range []string{"nina@example.com", "bob@example.com"} {
		if n := s.count(t, `SELECT count(*) FROM memberships m JOIN users u ON u.id = m.user_id
			JOIN organizations o ON o.id = m.organization_id WHERE u.email = $1 AND o.slug = 'acme'`, who); n != 1 {
			t.Errorf("%s has %d memberships of acme, want 1", who, n)
		}
	}
}

// invitePath invites email into org as s.token's person and returns the
// path of the invitation's link (invite_link, which owners are shown).
func invitePath(t *testing.T, s *errataServer, org, email string) string {
	t.Helper()
	members := "/api/0/organizations/" + org + "/members/"
	status, body := s.api(t, "POST", members, map[string]any{"email": email, "orgRole": "member", "sendInvite": false})
	var m struct {
		ID         string  `json:"id"`
		InviteLink *string `json:"invite_link"`
	}
	if status != http.StatusCreated || json.Unmarshal(body, &m) != nil {
		t.Fatalf("invite %s: %d %s", email, status, body)
	}
	status, body = s.api(t, "GET", members+m.ID+"/", nil)
	if status != http.StatusOK || json.Unmarshal(body, &m) != nil || m.InviteLink == nil {
		t.Fatalf("the invitation of %s: %d %s", email, status, body)
	}
	path, ok := strings.CutPrefix(*m.InviteLink, s.env["PUBLIC_URL"])
	if !ok || !strings.HasPrefix(path, "/accept-invite/"+org+"/"+m.ID+"/") {
		t.Fatalf("invite_link %q is not PUBLIC_URL/accept-invite/%s/%s/{token}/", *m.InviteLink, org, m.ID)
	}
	return path
}

// TestPagesConfirm: the link of a confirmation mail, opened in a browser,
// shows a button; only clicking it confirms the address.
func TestPagesConfirm(t *testing.T) {
	t.Parallel()
	// No EMAIL_URL: the test signs the link the message carried with the
	// server's secret, as the server did.
	s := startErrata(t, nil)
	s.token = s.user(t, "ann@example.com", "org:read")
	status, body := s.api(t, "POST", "/api/0/users/me/emails/", map[string]any{"email": "work@example.com"})
	if status != http.StatusCreated {
		t.Fatalf("POST emails: %d %s", status, body)
	}
	var me struct{ ID string }
	if code := s.getJSON(t, "/api/0/users/me/", &me); code != http.StatusOK {
		t.Fatalf("GET users/me: %d", code)
	}
	userID, _ := strconv.ParseInt(me.ID, 10, 64)
	key := authn.NewEmailKeys(s.env["SECRET_KEY"]).Sign(authn.EmailKey{
		UserID: userID, Email: "work@example.com", Expires: time.Now().Add(authn.EmailKeyLifetime)})
	verified := func() int {
		return s.count(t, `SELECT count(*) FROM email_addresses WHERE email = 'work@example.com' AND is_verified`)
	}
	// A mail scanner that opens the link confirms nothing: only the
	// page's button does.
	path := "/profile/confirm-email/" + key + "/"
	if res, body := newVisitor(t).page("GET", s.url+path, nil); res.StatusCode != http.StatusOK || !strings.Contains(body, "Confirm work@example.com") {
		t.Fatalf("the page: %d\n%s", res.StatusCode, body)
	}
	if verified() != 0 {
		t.Fatal("showing the page verified the address")
	}
	runPageFlow(t, s, "confirm", map[string]any{"path": path, "email": "work@example.com"}, "")
	if verified() != 1 {
		t.Error("after the flow the database does not show the address verified")
	}
	if got := s.emails(t); !slices.Contains(got, "work@example.com verified=true primary=false") {
		t.Errorf("emails = %q", got)
	}
}

// TestPagesUsedLinksAreRefused: a password reset link works once, and so
// does an invitation's link; used, their pages refuse them (400 and 404).
func TestPagesUsedLinksAreRefused(t *testing.T) {
	t.Parallel()
	// Mail waits in the outbox (no SMTP server listens), where the test
	// reads its link.
	s := startErrata(t, map[string]string{"EMAIL_URL": fmt.Sprintf("smtp://127.0.0.1:%d", freePort(t))})
	pageOrg(t, s, "uma@example.com", "acme", "Acme Corp")

	t.Run("a password reset link", func(t *testing.T) {
		v := newVisitor(t)
		if res, body := v.page("GET", s.url+"/account/recover/", nil); res.StatusCode != http.StatusOK {
			t.Fatalf("the forgotten password page: %d\n%s", res.StatusCode, body)
		}
		res, body := v.page("POST", s.url+"/account/recover/", url.Values{"email": {"uma@example.com"}})
		if res.StatusCode != http.StatusOK || !strings.Contains(body, "on its way") {
			t.Fatalf("asking for a link: %d\n%s", res.StatusCode, body)
		}
		link := s.url + "/reset-password/" + mailKey(t, s.db(t), "uma@example.com", "/reset-password/") + "/"
		if res, body := v.page("GET", link, nil); res.StatusCode != http.StatusOK || !strings.Contains(body, "New password") {
			t.Fatalf("the link: %d\n%s", res.StatusCode, body)
		}
		res, body = v.page("POST", link, url.Values{"password": {"uma's new passphrase 9"}})
		if res.StatusCode != http.StatusOK || !strings.Contains(body, "Your new password is set") {
			t.Fatalf("setting the password: %d\n%s", res.StatusCode, body)
		}
		for _, method := range []string{"GET", "POST"} {
			res, body := v.page(method, link, url.Values{"password": {"yet another passphrase 4"}})
			if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "invalid, used or has expired") {
				t.Errorf("%s of the used link: %d\n%s", method, res.StatusCode, body)
			}
		}
		p := newPerson(t, "app")
		status, answer := p.do(s, "POST", "auth/login", map[string]string{"email": "uma@example.com", "password": "uma's new passphrase 9"})
		expectStatus(t, "sign-in with the new password", status, http.StatusOK, answer)
	})

	t.Run("an invitation's link", func(t *testing.T) {
		s.token = s.cli(t, "admin", "create-token", "--email", "uma@example.com", "--scopes", "member:admin,org:read")
		link := s.url + invitePath(t, s, "acme", "vic@example.com")
		v := newVisitor(t)
		if res, body := v.page("GET", link, nil); res.StatusCode != http.StatusOK || !strings.Contains(body, "Join Acme Corp") {
			t.Fatalf("the invitation: %d\n%s", res.StatusCode, body)
		}
		res, body := v.page("POST", link, url.Values{"name": {"Vic"}, "password": {"vic's own passphrase 2"}})
		if res.StatusCode != http.StatusOK || !strings.Contains(body, "You joined Acme Corp") {
			t.Fatalf("accepting: %d\n%s", res.StatusCode, body)
		}
		for _, who := range []*visitor{v, newVisitor(t)} { // the new member, and someone else
			for _, method := range []string{"GET", "POST"} {
				res, body := who.page(method, link, url.Values{"name": {"Eve"}, "password": {"eve's own passphrase 1"}})
				if res.StatusCode != http.StatusNotFound {
					t.Errorf("%s of the used link: %d\n%s", method, res.StatusCode, body)
				}
			}
		}
		if n := s.count(t, `SELECT count(*) FROM users WHERE email = 'vic@example.com'`); n != 1 {
			t.Errorf("%d users vic@example.com, want 1", n)
		}
	})
}
