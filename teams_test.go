package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"testing"
)

// listOf sends GET path as p (an app's session) to s and returns the
// status and the list it answers.
func listOf(t *testing.T, p *person, s *errataServer, path string) (int, []map[string]any) {
	t.Helper()
	req, err := http.NewRequest("GET", s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Session-Token", p.token)
	res, err := p.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var list []map[string]any
	if res.StatusCode == http.StatusOK {
		if err := json.NewDecoder(res.Body).Decode(&list); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	return res.StatusCode, list
}

// slugsOf returns the key of each entry of list.
func slugsOf(list []map[string]any, key string) []string {
	var out []string
	for _, e := range list {
		v, _ := e[key].(string)
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// TestTeamsThroughSessions: an owner signed in makes a team, puts a member
// on it and gives it a project, through the API; the member's lists show
// it, the member cannot change another member's teams, and someone of
// another organization finds none of it.
func TestTeamsThroughSessions(t *testing.T) {
	t.Parallel()
	s := startErrata(t, nil)
	s.user(t, "ann@example.com", "org:read")
	s.user(t, "mel@example.com", "org:read")
	s.user(t, "rob@example.com", "org:read")
	s.cli(t, "admin", "create-org", "--slug", "acme", "--owner", "ann@example.com")
	s.cli(t, "admin", "add-member", "--org", "acme", "--email", "mel@example.com", "--role", "member")
	s.cli(t, "admin", "create-org", "--slug", "rival", "--owner", "rob@example.com")
	s.cli(t, "admin", "create-project", "--org", "acme", "--slug", "web")
	for _, email := range []string{"ann@example.com", "mel@example.com", "rob@example.com"} {
		setPassword(t, s, email)
	}
	ann, mel, rob := newPerson(t, "app"), newPerson(t, "app"), newPerson(t, "app")
	ann.signIn(s, "ann@example.com")
	mel.signIn(s, "mel@example.com")
	rob.signIn(s, "rob@example.com")
	melMember := strconv.Itoa(s.count(t, `SELECT m.id FROM memberships m JOIN users u ON u.id = m.user_id
		WHERE u.email = 'mel@example.com'`))
	annMember := strconv.Itoa(s.count(t, `SELECT m.id FROM memberships m JOIN users u ON u.id = m.user_id
		WHERE u.email = 'ann@example.com'`))

	t.Run("the owner makes a team, puts the member on it and gives it the project", func(t *testing.T) {
		status, body := ann.do(s, "POST", "/api/0/organizations/acme/teams/", map[string]any{"slug": "backend", "name": "Backend"})
		expectStatus(t, "create the team", status, http.StatusCreated, body)
		status, body = mel.do(s, "POST", "/api/0/organizations/acme/teams/", map[string]any{"slug": "mine"})
		expectStatus(t, "a member creates a team", status, http.StatusForbidden, body)
		status, body = ann.do(s, "POST", "/api/0/organizations/acme/members/"+melMember+"/teams/backend/", nil)
		expectStatus(t, "put the member on the team", status, http.StatusCreated, body)
		status, body = ann.do(s, "POST", "/api/0/projects/acme/web/teams/backend/", nil)
		expectStatus(t, "give the team the project", status, http.StatusCreated, body)
	})
	t.Run("the member's lists show it", func(t *testing.T) {
		status, members := listOf(t, mel, s, "/api/0/teams/acme/backend/members/")
		if got := slugsOf(members, "email"); status != http.StatusOK || !slices.Equal(got, []string{"ann@example.com", "mel@example.com"}) {
			t.Errorf("the team's members: %d %v", status, got)
		}
		status, teams := listOf(t, mel, s, "/api/0/organizations/acme/user-teams/")
		if got := slugsOf(teams, "slug"); status != http.StatusOK || !slices.Equal(got, []string{"backend"}) {
			t.Errorf("the member's teams: %d %v", status, got)
		}
		status, teams = listOf(t, mel, s, "/api/0/projects/acme/web/teams/")
		if got := slugsOf(teams, "slug"); status != http.StatusOK || !slices.Equal(got, []string{"backend"}) {
			t.Errorf("the project's teams: %d %v", status, got)
		}
		status, projects := listOf(t, mel, s, "/api/0/teams/acme/backend/projects/")
		if got := slugsOf(projects, "slug"); status != http.StatusOK || !slices.Equal(got, []string{"web"}) {
			t.Errorf("the team's projects: %d %v", status, got)
		}
		status, projects = listOf(t, mel, s, "/api/0/organizations/acme/projects/")
		if status != http.StatusOK || len(projects) != 1 {
			t.Fatalf("the organization's projects: %d %v", status, projects)
		}
		teamsOfWeb, _ := projects[0]["teams"].([]any)
		if len(teamsOfWeb) != 1 || teamsOfWeb[0].(map[string]any)["slug"] != "backend" {
			t.Errorf("web's teams in the organization's list: %v", projects[0]["teams"])
		}
	})
	t.Run("the member changes its own teams only", func(t *testing.T) {
		status, body := mel.do(s, "DELETE", "/api/0/organizations/acme/members/"+annMember+"/teams/backend/", nil)
		expectStatus(t, "the member takes the owner off the team", status, http.StatusForbidden, body)
		status, body = mel.do(s, "DELETE", "/api/0/organizations/acme/members/me/teams/backend/", nil)
		expectStatus(t, "the member leaves", status, http.StatusOK, body)
		status, body = mel.do(s, "POST", "/api/0/organizations/acme/members/me/teams/backend/", nil)
		expectStatus(t, "the member joins again", status, http.StatusCreated, body)
	})
	t.Run("another organization's owner finds none of it", func(t *testing.T) {
		status, body := rob.do(s, "GET", "/api/0/teams/acme/backend/", nil)
		expectStatus(t, "the team", status, http.StatusNotFound, body)
		status, body = rob.do(s, "POST", "/api/0/organizations/rival/members/"+melMember+"/teams/backend/", nil)
		expectStatus(t, "the member through rival", status, http.StatusNotFound, body)
		status, _ = listOf(t, rob, s, "/api/0/organizations/acme/teams/")
		if status != http.StatusNotFound {
			t.Errorf("the team list: %d", status)
		}
	})
}
