package handlers

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"errata/authn"
	"errata/store"
)

// memberFixture is acme, owned by owner@acme.example, with a manager, an
// admin and a member, each holding a token of every scope.
type memberFixture struct {
	*testAPI
	owner, manager, admin, member string // tokens
	ids                           map[string]int64
}

func newMemberFixture(t *testing.T) *memberFixture {
	t.Helper()
	a := newTestAPI(t)
	f := &memberFixture{testAPI: a, ids: map[string]int64{}}
	for _, role := range store.Roles {
		f.ids[role] = a.user(role + "@acme.example")
	}
	a.org("acme", "owner@acme.example")
	a.project("acme", "web")
	for _, role := range []string{"manager", "admin", "member"} {
		a.member("acme", role+"@acme.example", role)
	}
	f.owner, f.manager = a.token("owner@acme.example"), a.token("manager@acme.example")
	f.admin, f.member = a.token("admin@acme.example"), a.token("member@acme.example")
	return f
}

// membershipID returns the id of the membership of the user of email in acme.
func (f *memberFixture) membershipID(email string) string {
	f.t.Helper()
	var id int64
	f.t.Helper()
	rows := f.count(`SELECT count(*) FROM memberships m JOIN users u ON u.id = m.user_id WHERE lower(u.email) = lower($1)`, email)
	if rows != 1 {
		f.t.Fatalf("%s has %d memberships", email, rows)
	}
	id = int64(f.count(`SELECT m.id FROM memberships m JOIN users u ON u.id = m.user_id WHERE lower(u.email) = lower($1)`, email))
	return strconv.FormatInt(id, 10)
}

// outboxLink returns the invitation link of the last message to email.
func (f *memberFixture) outboxLink(t *testing.T, email string) string {
	t.Helper()
	ms, err := f.st.Outbox(context.Background(), email)
	if err != nil || len(ms) == 0 {
		t.Fatalf("outbox of %s: %v %v", email, ms, err)
	}
	link := regexp.MustCompile(`https?://[^\s]+/accept-invite/[^\s]+/`).FindString(ms[len(ms)-1].Text)
	if link == "" {
		t.Fatalf("no link in %q", ms[len(ms)-1].Text)
	}
	return link
}

// acceptPath is the API path of an invitation's link.
func acceptPath(t *testing.T, link string) string {
	t.Helper()
	_, rest, ok := strings.Cut(link, "/accept-invite/")
	if !ok {
		t.Fatalf("not an invitation link: %s", link)
	}
	return "/api/0/accept-invite/" + rest
}

func TestMembers(t *testing.T) {
	f := newMemberFixture(t)
	const members = "/api/0/organizations/acme/members/"

	t.Run("the list shows every member", func(t *testing.T) {
		res := f.do("GET", members, f.member, nil)
		res.expect(t, http.StatusOK, nil)
		res.golden(t, "members/list")
	})
	t.Run("the detail of me is the caller's", func(t *testing.T) {
		res := f.do("GET", members+"me/", f.member, nil)
		res.expect(t, http.StatusOK, nil)
		res.golden(t, "members/detail")
	})
	t.Run("a malformed member id is 422", func(t *testing.T) {
		f.do("GET", members+"nobody/", f.member, nil).expect(t, http.StatusUnprocessableEntity, nil)
	})
	t.Run("another organization's member is 404", func(t *testing.T) {
		f.user("owner@rival.example")
		f.org("rival", "owner@rival.example")
		id := f.membershipID("owner@rival.example")
		f.do("GET", members+id+"/", f.owner, nil).expect(t, http.StatusNotFound, `{"detail":"Not Found"}`)
	})

	var pendingID string
	t.Run("an invitation is a pending member, mailed its link", func(t *testing.T) {
		res := f.do("POST", members, f.manager, map[string]any{"email": "new@example.com", "role": "admin"})
		res.expect(t, http.StatusCreated, nil)
		out := res.json(t).(map[string]any)
		pendingID = out["id"].(string)
		delete(out, "id")
		res.golden(t, "members/invited")
		f.outboxLink(t, "new@example.com")
	})
	t.Run("the invitation's link is shown to owners and managers", func(t *testing.T) {
		link := f.outboxLink(t, "new@example.com")
		for _, tok := range []string{f.owner, f.manager} {
			got := f.do("GET", members+pendingID+"/", tok, nil).field(t, "invite_link")
			if got != link {
				t.Errorf("invite_link = %v, want %s", got, link)
			}
		}
		for _, tok := range []string{f.admin, f.member} {
			if got := f.do("GET", members+pendingID+"/", tok, nil).field(t, "invite_link"); got != nil {
				t.Errorf("invite_link = %v, want null", got)
			}
		}
	})
	t.Run("an owner's invitation's link is shown to no manager, nor to a token that cannot invite", func(t *testing.T) {
		res := f.do("POST", members, f.owner, map[string]any{"email": "boss@example.com", "role": "owner"})
		res.expect(t, http.StatusCreated, nil)
		id := res.json(t).(map[string]any)["id"].(string)
		if got := f.do("GET", members+id+"/", f.owner, nil).field(t, "invite_link"); got != f.outboxLink(t, "boss@example.com") {
			t.Errorf("the owner: invite_link = %v, want the mailed link", got)
		}
		if got := f.do("GET", members+id+"/", f.manager, nil).field(t, "invite_link"); got != nil {
			t.Errorf("a manager: invite_link = %v of an owner's invitation, want null", got)
		}
		reader := f.token("owner@acme.example", "member:read")
		if got := f.do("GET", members+id+"/", reader, nil).field(t, "invite_link"); got != nil {
			t.Errorf("the owner's member:read token: invite_link = %v, want null", got)
		}
	})
	t.Run("inviting a member's address is 409", func(t *testing.T) {
		f.do("POST", members, f.owner, map[string]any{"email": "MEMBER@acme.example"}).
			expect(t, http.StatusConflict, nil)
		f.do("POST", members, f.owner, map[string]any{"email": "new@example.com", "reinvite": false}).
			expect(t, http.StatusConflict, nil)
	})
	t.Run("a manager cannot invite an owner", func(t *testing.T) {
		f.do("POST", members, f.manager, map[string]any{"email": "boss@example.com", "orgRole": "owner"}).
			expect(t, http.StatusForbidden, nil)
	})
	t.Run("an admin cannot invite", func(t *testing.T) {
		f.do("POST", members, f.admin, map[string]any{"email": "x@example.com"}).
			expect(t, http.StatusForbidden, `{"detail":"Permission denied"}`)
	})
	t.Run("a bad role is 422", func(t *testing.T) {
		f.do("POST", members, f.owner, map[string]any{"email": "x@example.com", "orgRole": "billing"}).
			expect(t, http.StatusUnprocessableEntity, nil)
	})
	t.Run("the invitation's link accepts once", func(t *testing.T) {
		path := acceptPath(t, f.outboxLink(t, "new@example.com"))
		res := f.do("GET", path, "", nil)
		res.expect(t, http.StatusOK, `{"organization":{"slug":"acme","name":"ACME"},"email":"new@example.com","role":"admin","hasAccount":false,"needs2fa":false}`)
		f.do("POST", path, "", map[string]any{"password": "short"}).expect(t, http.StatusUnprocessableEntity, nil)
		res = f.do("POST", path, "", map[string]any{"password": "correct horse battery staple", "name": "New"})
		res.expect(t, http.StatusOK, nil)
		if tok, _ := res.json(t).(map[string]any)["meta"].(map[string]any)["session_token"].(string); tok == "" {
			t.Errorf("no session token: %s", res.body)
		}
		f.do("POST", path, "", map[string]any{"password": "correct horse battery staple"}).expect(t, http.StatusNotFound, nil)
		f.do("GET", path, "", nil).expect(t, http.StatusNotFound, nil)
		if got := f.do("GET", members+pendingID+"/", f.owner, nil).field(t, "pending"); got != false {
			t.Errorf("pending = %v after acceptance", got)
		}
	})
	t.Run("a browser accepting as a new person passes the CSRF check and gets the session cookie", func(t *testing.T) {
		f.do("POST", members, f.owner, map[string]any{"email": "web@example.com"}).expect(t, http.StatusCreated, nil)
		path := acceptPath(t, f.outboxLink(t, "web@example.com"))
		csrf := authn.NewCSRFToken()
		send := func(header string) *http.Response {
			req, _ := http.NewRequest("POST", f.srv.URL+path, strings.NewReader(`{"password": "correct horse battery staple"}`))
			req.Header.Set("Content-Type", "application/json")
			req.AddCookie(&http.Cookie{Name: authn.CSRFCookieName, Value: csrf})
			if header != "" {
				req.Header.Set(authn.CSRFHeader, header)
			}
			res, err := f.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			return res
		}
		if res := send(""); res.StatusCode != http.StatusForbidden {
			t.Errorf("without the CSRF header: %d, want 403", res.StatusCode)
		}
		res := send(csrf)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("with the CSRF header: %d", res.StatusCode)
		}
		found := false
		for _, c := range res.Cookies() {
			found = found || c.Name == authn.SessionCookieName && c.Value != "" && c.HttpOnly
		}
		if !found {
			t.Errorf("no session cookie: %v", res.Header["Set-Cookie"])
		}
	})
	t.Run("a signed-in person accepts with a session", func(t *testing.T) {
		id := f.user("known@example.com")
		f.do("POST", members, f.owner, map[string]any{"email": "known@example.com"}).expect(t, http.StatusCreated, nil)
		path := acceptPath(t, f.outboxLink(t, "known@example.com"))
		f.do("GET", path, "", nil).field(t, "hasAccount")
		tok := f.token("known@example.com")
		f.do("POST", path, tok, map[string]any{}).expect(t, http.StatusForbidden, nil)
		f.do("POST", path, "", map[string]any{"password": "correct horse battery staple"}).expect(t, http.StatusConflict, nil)
		session, _ := f.startSession(t, id)
		req, _ := http.NewRequest("POST", f.srv.URL+path, strings.NewReader("{}"))
		req.Header.Set(authn.SessionTokenHeader, session)
		res, err := f.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNoContent {
			t.Fatalf("status %d", res.StatusCode)
		}
		f.do("GET", "/api/0/organizations/acme/", tok, nil).expect(t, http.StatusOK, nil)
	})

	t.Run("a member leaves, and cannot remove another", func(t *testing.T) {
		f.do("DELETE", members+f.membershipID("admin@acme.example")+"/", f.member, nil).
			expect(t, http.StatusForbidden, nil)
		f.do("DELETE", members+"me/", f.admin, nil).expect(t, http.StatusNoContent, nil)
		f.do("GET", members, f.admin, nil).expect(t, http.StatusNotFound, nil)
	})
	t.Run("roles up to the caller's own", func(t *testing.T) {
		f.testAPI.member("acme", "admin@acme.example", "admin") // back after leaving
		member := members + f.membershipID("member@acme.example") + "/"
		f.do("PUT", member, f.manager, map[string]any{"orgRole": "owner"}).expect(t, http.StatusForbidden, nil)
		f.do("PUT", member, f.admin, map[string]any{"orgRole": "owner"}).expect(t, http.StatusForbidden, nil)
		f.do("PUT", members+f.membershipID("owner@acme.example")+"/", f.manager, map[string]any{"orgRole": "member"}).
			expect(t, http.StatusForbidden, nil)
		res := f.do("PUT", member, f.manager, map[string]any{"orgRole": "manager"})
		res.expect(t, http.StatusOK, nil)
		if got := res.field(t, "orgRole"); got != "manager" {
			t.Errorf("orgRole = %v", got)
		}
	})
	t.Run("the last owner stays", func(t *testing.T) {
		owner := members + f.membershipID("owner@acme.example") + "/"
		f.do("PUT", owner, f.owner, map[string]any{"orgRole": "member"}).expect(t, http.StatusUnprocessableEntity, nil)
		f.do("DELETE", members+"me/", f.owner, nil).expect(t, http.StatusUnprocessableEntity, nil)
		if got := f.do("GET", owner, f.owner, nil).field(t, "isOnlyOwner"); got != true {
			t.Errorf("isOnlyOwner = %v", got)
		}
	})
	t.Run("team roles are stored and read back", func(t *testing.T) {
		f.exec(`INSERT INTO teams (organization_id, slug, name)
			SELECT id, s, s FROM organizations, unnest(ARRAY['backend', 'web']) s WHERE slug = 'acme'`)
		member := members + f.membershipID("member@acme.example") + "/"
		res := f.do("PUT", member, f.owner, map[string]any{"teamRoles": []any{
			map[string]any{"teamSlug": "backend", "role": "admin"}, map[string]any{"teamSlug": "web", "role": nil}}})
		res.expect(t, http.StatusOK, nil)
		got := res.json(t).(map[string]any)
		// A manager by now (above): at least a team admin on each team,
		// whatever is stored (the team routes' rule).
		want := `[backend web] [map[role:admin teamSlug:backend] map[role:admin teamSlug:web]]`
		if s := fmt.Sprint(got["teams"], " ", got["teamRoles"]); s != want {
			t.Errorf("teams and teamRoles: %s, want %s", s, want)
		}
		f.do("PUT", member, f.owner, map[string]any{"teamRoles": []any{map[string]any{"teamSlug": "nope"}}}).
			expect(t, http.StatusUnprocessableEntity, nil)
		f.do("PUT", member, f.owner, map[string]any{"teamRoles": []any{map[string]any{"teamSlug": "web", "role": "boss"}}}).
			expect(t, http.StatusUnprocessableEntity, nil)
		res = f.do("POST", members, f.owner, map[string]any{"email": "teamed@example.com", "teams": []string{"web"}})
		res.expect(t, http.StatusCreated, nil)
		got = f.do("GET", members+res.field(t, "id").(string)+"/", f.owner, nil).json(t).(map[string]any)
		if s := fmt.Sprint(got["teams"], " ", got["teamRoles"]); s != "[web] [map[role:contributor teamSlug:web]]" {
			t.Errorf("the invited member's teams and teamRoles: %s, want web as a contributor (the default)", s)
		}
	})
	t.Run("project members are those who joined", func(t *testing.T) {
		res := f.do("GET", "/api/0/projects/acme/web/members/", f.member, nil)
		res.expect(t, http.StatusOK, nil)
		for _, m := range res.json(t).([]any) {
			if m.(map[string]any)["pending"] != false {
				t.Errorf("a pending member: %v", m)
			}
		}
	})
}

func TestInvitationExpires(t *testing.T) {
	f := newMemberFixture(t)
	f.do("POST", "/api/0/organizations/acme/members/", f.owner, map[string]any{"email": "late@example.com"}).
		expect(t, http.StatusCreated, nil)
	path := acceptPath(t, f.outboxLink(t, "late@example.com"))
	f.exec(`UPDATE memberships SET invite_expires_at = now() - interval '1 second' WHERE email = 'late@example.com'`)
	f.do("GET", path, "", nil).expect(t, http.StatusNotFound, `{"detail":"Not Found"}`)
	f.do("POST", path, "", map[string]any{"password": "correct horse battery staple"}).expect(t, http.StatusNotFound, nil)

	// Sent again, the new link works and the old one does not.
	id := strconv.Itoa(f.count(`SELECT id FROM memberships WHERE email = 'late@example.com'`))
	res := f.do("PUT", "/api/0/organizations/acme/members/"+id+"/", f.owner, map[string]any{"reinvite": true})
	res.expect(t, http.StatusOK, nil)
	if res.field(t, "expired") != false {
		t.Errorf("expired after reinvite: %s", res.body)
	}
	fresh := acceptPath(t, f.outboxLink(t, "late@example.com"))
	if fresh == path {
		t.Fatal("the new link is the old one")
	}
	f.do("GET", fresh, "", nil).expect(t, http.StatusOK, nil)
	f.do("GET", path, "", nil).expect(t, http.StatusNotFound, nil)
}

// FuzzMemberIn decodes arbitrary bodies of the member routes: an error is
// a 4xx of the contract, and a role read is one of the roles.
func FuzzMemberIn(f *testing.F) {
	f.Add([]byte(`{"email": "a@example.com", "orgRole": "admin", "teamRoles": [{"teamSlug": "x", "role": "admin"}], "sendInvite": false}`))
	f.Add([]byte(`{"role": "owner", "teams": ["x"], "reinvite": true}`))
	f.Add([]byte(`{"orgRole": null, "role": 3}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("PUT", "/", bytes.NewReader(body))
		var in memberIn
		err := decodeJSON(httptest.NewRecorder(), r, &in)
		if err == nil {
			var role string
			role, err = in.role()
			if err == nil && role != "" && !slices.Contains(store.Roles, role) {
				t.Fatalf("role %q is no role", role)
			}
		}
		if err == nil {
			var teams []store.MemberTeam
			teams, err = in.teams()
			for _, tm := range teams {
				if tm.Slug == "" || tm.Role != nil && *tm.Role != "contributor" && *tm.Role != "admin" {
					t.Fatalf("team role %+v", tm)
				}
			}
		}
		if status, _ := errorResponse(err); err != nil && (status < 400 || status >= 500) {
			t.Fatalf("%q: status %d for %v", body, status, err)
		}
	})
}

// FuzzInvitationPath reads arbitrary member ids and tokens of the member
// and accept-invite routes: a member id is "me", a positive id or 422; an
// invitation is a positive id with a token's SHA-256, or 404.
func FuzzInvitationPath(f *testing.F) {
	f.Add("me", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	f.Add("12", "not a token")
	f.Add("-1", "")
	f.Fuzz(func(t *testing.T, id, token string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.SetPathValue("member_id", id)
		r.SetPathValue("token", token)
		n, err := memberID(r)
		switch status, _ := errorResponse(err); {
		case err != nil && status != http.StatusUnprocessableEntity:
			t.Fatalf("member id %q: status %d", id, status)
		case err == nil && (n < 0 || n == 0 && id != "me"):
			t.Fatalf("member id %q read as %d", id, n)
		}
		n, hash, err := invitationOf(r)
		switch {
		case err != nil && err != errNotFound:
			t.Fatalf("invitation %q/%q: %v", id, token, err)
		case err == nil && (n < 0 || len(hash) != 32):
			t.Fatalf("invitation %q/%q read as %d, %x", id, token, n, hash)
		}
	})
}
