package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// memberScopes are the scopes of the tokens of the member tests: every
// member scope, and reading the organization.
const memberScopes = "org:read,member:read,member:write,member:admin"

// call sends a JSON request with token to s and returns the status and
// the decoded body.
func call(t *testing.T, s *errataServer, token, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	var got map[string]any
	json.NewDecoder(res.Body).Decode(&got)
	return res.StatusCode, got
}

// TestMembersAndInvitations runs the members and invitations of one
// organization through two replicas on one database: an invitation is
// accepted once, refused once used or expired; a new person accepts with
// a password and signs in; roles are assigned up to the caller's own;
// the last owner stays, even against two demotions at once; a removed
// member's token is refused on the other replica within a second.
func TestMembersAndInvitations(t *testing.T) {
	t.Parallel()
	a := newErrata(t, nil)
	b := newErrata(t, map[string]string{"DATABASE_URL": a.env["DATABASE_URL"]})
	a.serve(t)
	b.serve(t)
	tokens := map[string]string{}
	for _, who := range []string{"ann", "max", "ada", "mel"} {
		tokens[who] = a.user(t, who+"@example.com", memberScopes)
	}
	a.cli(t, "admin", "create-org", "--slug", "acme", "--owner", "ann@example.com")
	for who, role := range map[string]string{"max": "manager", "ada": "admin", "mel": "member"} {
		a.cli(t, "admin", "add-member", "--org", "acme", "--email", who+"@example.com", "--role", role)
	}
	const members = "/api/0/organizations/acme/members/"
	memberOf := func(who string) string {
		t.Helper()
		return members + strconv.Itoa(a.count(t, `SELECT m.id FROM memberships m JOIN users u ON u.id = m.user_id
			WHERE u.email = $1`, who+"@example.com")) + "/"
	}
	// invite has ann invite email and returns the API path of the link
	// that ann, an owner, is shown: the mail's link (handlers/members_test.go
	// checks that they are one).
	invite := func(t *testing.T, email string) string {
		t.Helper()
		status, body := call(t, a, tokens["ann"], "POST", members, map[string]any{"email": email, "orgRole": "member"})
		expectStatus(t, "POST members", status, http.StatusCreated, body)
		id, _ := body["id"].(string)
		status, body = call(t, a, tokens["ann"], "GET", members+id+"/", nil)
		expectStatus(t, "GET the pending member", status, http.StatusOK, body)
		link, _ := body["invite_link"].(string)
		path, ok := strings.CutPrefix(link, a.env["PUBLIC_URL"]+"/accept-invite/acme/"+id+"/")
		if !ok {
			t.Fatalf("invite_link %q is not PUBLIC_URL/accept-invite/acme/%s/{token}/", link, id)
		}
		return "/api/0/accept-invite/acme/" + id + "/" + path
	}

	t.Run("an invitation is accepted once and refused the second time", func(t *testing.T) {
		link := invite(t, "new@example.com")
		status, body := call(t, b, "", "GET", link, nil)
		expectStatus(t, "GET the invitation on the other replica", status, http.StatusOK, body)
		if body["email"] != "new@example.com" || body["hasAccount"] != false {
			t.Errorf("the invitation: %v", body)
		}
		status, body = call(t, a, "", "POST", link, map[string]any{"password": signInPassword, "name": "New"})
		expectStatus(t, "accepting as a new person", status, http.StatusOK, body)
		session, _ := body["meta"].(map[string]any)["session_token"].(string)
		status, body = call(t, b, "", "POST", link, map[string]any{"password": signInPassword})
		expectStatus(t, "accepting again on the other replica", status, http.StatusNotFound, body)
		status, body = call(t, a, "", "GET", link, nil)
		expectStatus(t, "the used link", status, http.StatusNotFound, body)

		p := newPerson(t, "app")
		p.token = session
		status, body = p.do(b, "GET", "/api/0/organizations/acme/", nil)
		expectStatus(t, "the new person's session reads the organization", status, http.StatusOK, body)
		signedIn := newPerson(t, "browser")
		signedIn.signIn(b, "new@example.com")
		status, body = signedIn.do(a, "GET", members+"me/", nil)
		expectStatus(t, "the new person signed in reads its membership", status, http.StatusOK, body)
		if body["orgRole"] != "member" || body["pending"] != false {
			t.Errorf("the new member: %v", body)
		}
	})
	t.Run("a signed-in person accepts with its session", func(t *testing.T) {
		a.user(t, "sam@example.com", "org:read")
		setPassword(t, a, "sam@example.com")
		link := invite(t, "sam@example.com")
		p := newPerson(t, "browser")
		p.signIn(a, "sam@example.com")
		status, body := p.do(b, "POST", link, map[string]any{})
		expectStatus(t, "accepting with a session", status, http.StatusNoContent, body)
		status, body = p.do(b, "GET", "/api/0/organizations/acme/", nil)
		expectStatus(t, "reading the organization joined", status, http.StatusOK, body)
	})
	t.Run("an invitation is refused after it expires", func(t *testing.T) {
		link := invite(t, "late@example.com")
		if _, err := a.db(t).Exec(context.Background(), `
			UPDATE memberships SET invite_expires_at = now() - interval '1 second' WHERE email = 'late@example.com'`); err != nil {
			t.Fatal(err)
		}
		status, body := call(t, b, "", "GET", link, nil)
		expectStatus(t, "GET the expired invitation", status, http.StatusNotFound, body)
		status, body = call(t, a, "", "POST", link, map[string]any{"password": signInPassword})
		expectStatus(t, "accepting the expired invitation", status, http.StatusNotFound, body)
	})
	t.Run("an admin cannot make an owner, nor invite", func(t *testing.T) {
		status, body := call(t, a, tokens["ada"], "PUT", memberOf("mel"), map[string]any{"orgRole": "owner"})
		expectStatus(t, "the admin's promotion", status, http.StatusForbidden, body)
		status, body = call(t, a, tokens["ada"], "POST", members, map[string]any{"email": "x@example.com"})
		expectStatus(t, "the admin's invitation", status, http.StatusForbidden, body)
	})
	t.Run("a manager cannot make an owner", func(t *testing.T) {
		status, body := call(t, a, tokens["max"], "PUT", memberOf("mel"), map[string]any{"orgRole": "owner"})
		expectStatus(t, "the manager's promotion to owner", status, http.StatusForbidden, body)
		status, body = call(t, a, tokens["max"], "POST", members, map[string]any{"email": "boss@example.com", "orgRole": "owner"})
		expectStatus(t, "the manager's invitation of an owner", status, http.StatusForbidden, body)
		status, body = call(t, a, tokens["max"], "PUT", memberOf("ann"), map[string]any{"orgRole": "member"})
		expectStatus(t, "the manager's demotion of the owner", status, http.StatusForbidden, body)
		status, body = call(t, a, tokens["max"], "PUT", memberOf("mel"), map[string]any{"orgRole": "admin"})
		expectStatus(t, "the manager's promotion to admin", status, http.StatusOK, body)
	})
	t.Run("the last owner is protected", func(t *testing.T) {
		status, body := call(t, a, tokens["ann"], "PUT", members+"me/", map[string]any{"orgRole": "manager"})
		expectStatus(t, "the last owner's demotion", status, http.StatusUnprocessableEntity, body)
		status, body = call(t, a, tokens["ann"], "DELETE", members+"me/", nil)
		expectStatus(t, "the last owner leaving", status, http.StatusUnprocessableEntity, body)
	})
	t.Run("two owners demoting each other at once leave one owner", func(t *testing.T) {
		status, body := call(t, a, tokens["ann"], "PUT", memberOf("max"), map[string]any{"orgRole": "owner"})
		expectStatus(t, "a second owner", status, http.StatusOK, body)
		var wg sync.WaitGroup
		statuses := make([]int, 2)
		paths := map[string]string{"ann": memberOf("ann"), "max": memberOf("max")}
		for i, pair := range [][2]string{{"ann", "max"}, {"max", "ann"}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i], _ = call(t, []*errataServer{a, b}[i], tokens[pair[0]], "PUT", paths[pair[1]], map[string]any{"orgRole": "member"})
			}()
		}
		wg.Wait()
		if n := a.count(t, `SELECT count(*) FROM memberships WHERE role = 'owner' AND user_id IS NOT NULL`); n != 1 {
			t.Errorf("%d owners after two demotions at once (statuses %v), want 1", n, statuses)
		}
		ok := 0
		for _, s := range statuses {
			if s == http.StatusOK {
				ok++
			} else if s != http.StatusUnprocessableEntity && s != http.StatusForbidden {
				t.Errorf("a demotion answered %d", s)
			}
		}
		if ok != 1 {
			t.Errorf("statuses %v: want one 200", statuses)
		}
	})
	t.Run("a removed member's token is refused on the other replica within a second", func(t *testing.T) {
		a.user(t, "rob@example.com", memberScopes)
		rob := a.cli(t, "admin", "create-token", "--email", "rob@example.com", "--scopes", memberScopes)
		a.cli(t, "admin", "add-member", "--org", "acme", "--email", "rob@example.com", "--role", "member")
		status, body := call(t, b, rob, "GET", "/api/0/organizations/acme/", nil)
		expectStatus(t, "the member's token on the other replica", status, http.StatusOK, body)
		// The owner left by the demotions above is ann or max, whichever
		// won; the other is still a member, of a lower role.
		owner := tokens["ann"]
		if _, me := call(t, a, owner, "GET", members+"me/", nil); me["orgRole"] != "owner" {
			owner = tokens["max"]
		}
		status, body = call(t, a, owner, "DELETE", memberOf("rob"), nil)
		expectStatus(t, "removing the member", status, http.StatusNoContent, body)
		removed := time.Now()
		status, body = call(t, a, rob, "GET", "/api/0/organizations/acme/", nil)
		expectStatus(t, "the removed member's token on the replica that removed it", status, http.StatusNotFound, body)
		for {
			status, _ := call(t, b, rob, "GET", "/api/0/organizations/acme/", nil)
			if status == http.StatusNotFound {
				break
			}
			if time.Since(removed) > 1500*time.Millisecond {
				t.Fatalf("the removed member's token still gets %d on the other replica after %s", status, time.Since(removed))
			}
			time.Sleep(50 * time.Millisecond)
		}
		if d := time.Since(removed); d > 1200*time.Millisecond {
			t.Errorf("the other replica refused the token after %s, want within a second", d)
		}
	})
}
