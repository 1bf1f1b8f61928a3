package handlers

// Tests of teams, the links of members to teams and of projects to teams
// (docs/members.md, Teams).

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"errata/authn"
	"errata/store"
	"errata/store/storetest"
)

// teamsFixture is acme, owned by ann, with ben a member and cat an admin,
// and project web; and rival, owned by rob, with a team backend and
// project web of its own.
type teamsFixture struct {
	*testAPI
	ann, ben, cat, rob string // tokens of every scope
	// benMember and catMember are ben's and cat's memberships of acme.
	benMember, catMember string
	// rivalTeam is the id of rival's backend.
	rivalTeam string
}

func newTeamsFixture(t *testing.T) *teamsFixture {
	t.Helper()
	a := newTestAPI(t)
	f := &teamsFixture{testAPI: a}
	ids := map[string]int64{}
	for _, email := range []string{"ann@acme.example", "ben@acme.example", "cat@acme.example", "rob@rival.example"} {
		ids[email] = a.user(email)
	}
	a.org("acme", "ann@acme.example")
	a.member("acme", "ben@acme.example", "member")
	a.member("acme", "cat@acme.example", "admin")
	a.org("rival", "rob@rival.example")
	a.project("acme", "web")
	a.project("rival", "web")
	f.ann, f.ben, f.cat, f.rob = a.token("ann@acme.example"), a.token("ben@acme.example"),
		a.token("cat@acme.example"), a.token("rob@rival.example")
	membership := func(email string) string {
		return strconv.Itoa(a.count(`SELECT id FROM memberships WHERE user_id = $1`, ids[email]))
	}
	f.benMember, f.catMember = membership("ben@acme.example"), membership("cat@acme.example")
	f.do("POST", "/api/0/organizations/rival/teams/", f.rob, map[string]any{"slug": "backend"}).expect(t, http.StatusCreated, nil)
	f.rivalTeam = strconv.Itoa(a.count(`SELECT t.id FROM teams t JOIN organizations o ON o.id = t.organization_id WHERE o.slug = 'rival'`))
	return f
}

func TestTeams(t *testing.T) {
	f := newTeamsFixture(t)
	const teams = "/api/0/organizations/acme/teams/"
	const backend = "/api/0/teams/acme/backend/"

	t.Run("an admin creates a team and is on it as its admin", func(t *testing.T) {
		res := f.do("POST", teams, f.cat, map[string]any{"slug": "backend", "name": "Back end"})
		res.expect(t, http.StatusCreated, nil)
		res.golden(t, "teams/create")
	})
	t.Run("a taken slug is 409", func(t *testing.T) {
		f.do("POST", teams, f.ann, map[string]any{"slug": "backend"}).
			expect(t, http.StatusConflict, `{"detail": "A team with this slug already exists."}`)
	})
	t.Run("a name alone makes the slug", func(t *testing.T) {
		res := f.do("POST", teams, f.ann, map[string]any{"name": "Front End"})
		res.expect(t, http.StatusCreated, nil)
		if got := res.field(t, "slug"); got != "front-end" {
			t.Errorf("slug %v, want front-end", got)
		}
	})
	t.Run("a slug alone names the team", func(t *testing.T) {
		res := f.do("POST", teams, f.ann, map[string]any{"slug": "ops"})
		res.expect(t, http.StatusCreated, nil)
		if got := res.field(t, "name"); got != "ops" {
			t.Errorf("name %v, want ops", got)
		}
	})
	t.Run("bad bodies are 422", func(t *testing.T) {
		for _, body := range []map[string]any{{}, {"slug": "Bad!"}, {"slug": "123"}, {"name": "   "},
			{"slug": "a-slug-longer-than-fifty-characters-is-too-long-for-sentry"}} {
			if res := f.do("POST", teams, f.ann, body); res.status != http.StatusUnprocessableEntity {
				t.Errorf("%v: status %d, want 422: %s", body, res.status, res.body)
			}
		}
	})
	t.Run("a member may not create a team", func(t *testing.T) {
		f.do("POST", teams, f.ben, map[string]any{"slug": "mine"}).expect(t, http.StatusForbidden, nil)
	})
	t.Run("the list and a team, by slug or id", func(t *testing.T) {
		res := f.do("GET", teams, f.ann, nil)
		res.expect(t, http.StatusOK, nil)
		res.golden(t, "teams/list")
		res = f.do("GET", backend, f.ann, nil)
		res.expect(t, http.StatusOK, nil)
		if org := res.field(t, "organization").(map[string]any); org["slug"] != "acme" {
			t.Errorf("the team's organization: %v", org)
		}
		// Without its organization, whose links name the test server.
		id := res.field(t, "id").(string)
		res = f.do("GET", "/api/0/teams/acme/"+id+"/?collapse=organization", f.ann, nil)
		res.expect(t, http.StatusOK, nil)
		res.golden(t, "teams/detail")
		f.do("GET", backend+"?expand=projects", f.ann, nil).expect(t, http.StatusUnprocessableEntity, nil)
		res = f.do("GET", teams+"?query=slug:ops", f.ann, nil)
		res.expect(t, http.StatusOK, nil)
		if list := res.json(t).([]any); len(list) != 1 {
			t.Errorf("query=slug:ops lists %d teams", len(list))
		}
	})
	t.Run("another organization's team is 404", func(t *testing.T) {
		for _, path := range []string{backend, "/api/0/teams/acme/" + f.rivalTeam + "/", "/api/0/teams/acme/backend/members/",
			"/api/0/teams/acme/backend/projects/", teams, "/api/0/organizations/acme/user-teams/"} {
			f.do("GET", path, f.rob, nil).expect(t, http.StatusNotFound, nil)
		}
		// rival's own route with acme's team id or membership id.
		acmeTeam := f.do("GET", backend, f.ann, nil).field(t, "id").(string)
		f.do("GET", "/api/0/teams/rival/"+acmeTeam+"/", f.rob, nil).expect(t, http.StatusNotFound, nil)
		f.do("POST", "/api/0/organizations/rival/members/"+f.benMember+"/teams/backend/", f.rob, nil).expect(t, http.StatusNotFound, nil)
		f.do("POST", "/api/0/organizations/acme/members/me/teams/backend/", f.rob, nil).expect(t, http.StatusNotFound, nil)
		f.do("POST", "/api/0/projects/acme/web/teams/backend/", f.rob, nil).expect(t, http.StatusNotFound, nil)
		f.do("POST", "/api/0/projects/rival/web/teams/"+acmeTeam+"/", f.rob, nil).expect(t, http.StatusNotFound, nil)
	})
}

func TestMemberTeams(t *testing.T) {
	f := newTeamsFixture(t)
	f.do("POST", "/api/0/organizations/acme/teams/", f.ann, map[string]any{"slug": "backend"}).expect(t, http.StatusCreated, nil)
	link := func(member string) string { return "/api/0/organizations/acme/members/" + member + "/teams/backend/" }

	t.Run("a member joins itself: 201, then 204", func(t *testing.T) {
		res := f.do("POST", link("me"), f.ben, nil)
		res.expect(t, http.StatusCreated, nil)
		if res.field(t, "isMember") != true || res.field(t, "teamRole") != "contributor" {
			t.Errorf("ben after joining: %s", res.body)
		}
		f.do("POST", link(f.benMember), f.ben, nil).expect(t, http.StatusNoContent, nil)
	})
	t.Run("a member may not add another", func(t *testing.T) {
		f.do("POST", link(f.catMember), f.ben, nil).
			expect(t, http.StatusForbidden, `{"detail": "You do not have permission to change this member's teams"}`)
	})
	t.Run("an owner adds another", func(t *testing.T) {
		f.do("POST", link(f.catMember), f.ann, nil).expect(t, http.StatusCreated, nil)
	})
	t.Run("a member id that is not a number is 422, an unknown one 404", func(t *testing.T) {
		f.do("POST", link("ben"), f.ann, nil).expect(t, http.StatusUnprocessableEntity, nil)
		f.do("POST", link("999999"), f.ann, nil).expect(t, http.StatusNotFound, nil)
	})
	t.Run("the team's members and the caller's teams", func(t *testing.T) {
		res := f.do("GET", "/api/0/teams/acme/backend/members/", f.ben, nil)
		res.expect(t, http.StatusOK, nil)
		res.golden(t, "teams/members")
		res = f.do("GET", "/api/0/organizations/acme/user-teams/", f.ben, nil)
		res.expect(t, http.StatusOK, nil)
		if list := res.json(t).([]any); len(list) != 1 {
			t.Errorf("ben's teams: %s", res.body)
		}
	})
	t.Run("team roles", func(t *testing.T) {
		f.do("PUT", link("me"), f.ben, map[string]any{"teamRole": "admin"}).expect(t, http.StatusForbidden, nil)
		f.do("PUT", link("me"), f.ben, map[string]any{"teamRole": "contributor"}).
			expect(t, http.StatusOK, `{"isActive": true, "teamRole": "contributor"}`)
		f.do("PUT", link(f.benMember), f.ann, map[string]any{"teamRole": "admin"}).
			expect(t, http.StatusOK, `{"isActive": true, "teamRole": "admin"}`)
		// An organization admin is at least a team admin.
		f.do("PUT", link(f.catMember), f.ann, map[string]any{"teamRole": "contributor"}).
			expect(t, http.StatusOK, `{"isActive": true, "teamRole": "admin"}`)
		f.do("PUT", link(f.benMember), f.ann, map[string]any{"teamRole": "owner"}).expect(t, http.StatusUnprocessableEntity, nil)
		var roles []string
		for _, m := range f.do("GET", "/api/0/teams/acme/backend/members/", f.ann, nil).json(t).([]any) {
			roles = append(roles, m.(map[string]any)["teamRole"].(string))
		}
		if len(roles) != 3 || roles[0] != "admin" || roles[1] != "admin" || roles[2] != "admin" {
			t.Errorf("team roles %v, want admin for each", roles)
		}
	})
	t.Run("a member leaves itself, not another", func(t *testing.T) {
		f.do("PUT", link(f.benMember), f.ann, map[string]any{"teamRole": "contributor"}).expect(t, http.StatusOK, nil)
		f.do("DELETE", link(f.catMember), f.ben, nil).expect(t, http.StatusForbidden, nil)
		res := f.do("DELETE", link("me"), f.ben, nil)
		res.expect(t, http.StatusOK, nil)
		if res.field(t, "isMember") != false {
			t.Errorf("ben after leaving: %s", res.body)
		}
		f.do("DELETE", link("me"), f.ben, nil).expect(t, http.StatusOK, nil)
		f.do("PUT", link("me"), f.ben, map[string]any{"teamRole": "contributor"}).expect(t, http.StatusNotFound, nil)
	})
	t.Run("a team's update and delete", func(t *testing.T) {
		f.do("POST", "/api/0/organizations/acme/teams/", f.ann, map[string]any{"slug": "taken"}).expect(t, http.StatusCreated, nil)
		f.do("PUT", "/api/0/teams/acme/backend/", f.ann, map[string]any{"slug": "taken"}).expect(t, http.StatusConflict, nil)
		f.do("PUT", "/api/0/teams/acme/backend/", f.ann, map[string]any{"name": "x"}).expect(t, http.StatusUnprocessableEntity, nil)
		res := f.do("PUT", "/api/0/teams/acme/backend/", f.cat, map[string]any{"slug": "platform", "name": "Platform"})
		res.expect(t, http.StatusOK, nil)
		if res.field(t, "slug") != "platform" || res.field(t, "name") != "Platform" {
			t.Errorf("after the update: %s", res.body)
		}
		f.do("DELETE", "/api/0/teams/acme/platform/", f.ben, nil).expect(t, http.StatusForbidden, nil)
		f.do("DELETE", "/api/0/teams/acme/platform/", f.cat, nil).expect(t, http.StatusNoContent, nil)
		f.do("GET", "/api/0/teams/acme/platform/", f.ann, nil).expect(t, http.StatusNotFound, nil)
		if n := f.count(`SELECT count(*) FROM team_members tm JOIN teams t ON t.id = tm.team_id WHERE t.slug = 'platform'`); n != 0 {
			t.Errorf("%d links of the deleted team remain", n)
		}
	})
}

func TestProjectTeams(t *testing.T) {
	f := newTeamsFixture(t)
	f.do("POST", "/api/0/organizations/acme/teams/", f.ann, map[string]any{"slug": "backend"}).expect(t, http.StatusCreated, nil)

	t.Run("a project linked to a team", func(t *testing.T) {
		res := f.do("POST", "/api/0/projects/acme/web/teams/backend/", f.ann, nil)
		res.expect(t, http.StatusCreated, nil)
		res.golden(t, "teams/project-linked")
		f.do("POST", "/api/0/projects/acme/web/teams/backend/", f.ann, nil).expect(t, http.StatusCreated, nil)
		res = f.do("GET", "/api/0/projects/acme/web/teams/", f.ben, nil)
		res.expect(t, http.StatusOK, nil)
		res.golden(t, "teams/project-teams")
		res = f.do("GET", "/api/0/teams/acme/backend/projects/", f.ben, nil)
		res.expect(t, http.StatusOK, nil)
		res.golden(t, "teams/team-projects")
		projects := f.do("GET", "/api/0/organizations/acme/projects/", f.ben, nil).json(t).([]any)
		if teams := projects[0].(map[string]any)["teams"].([]any); len(teams) != 1 {
			t.Errorf("the organization's list shows web's teams as %v", teams)
		}
	})
	t.Run("a member may not link or unlink", func(t *testing.T) {
		f.do("DELETE", "/api/0/projects/acme/web/teams/backend/", f.ben, nil).expect(t, http.StatusForbidden, nil)
	})
	t.Run("a project created through its team", func(t *testing.T) {
		res := f.do("POST", "/api/0/teams/acme/backend/projects/", f.cat, map[string]any{"name": "Mobile App"})
		res.expect(t, http.StatusCreated, nil)
		team := res.field(t, "team").(map[string]any)
		if res.field(t, "slug") != "mobile-app" || team["slug"] != "backend" {
			t.Errorf("the created project: %s", res.body)
		}
		f.do("POST", "/api/0/teams/acme/backend/projects/", f.cat, map[string]any{"name": "Web", "slug": "web"}).
			expect(t, http.StatusConflict, `{"detail": "A project with this slug already exists"}`)
		f.do("POST", "/api/0/teams/acme/nobody/projects/", f.cat, map[string]any{"name": "Web2"}).expect(t, http.StatusNotFound, nil)
		f.do("POST", "/api/0/teams/acme/backend/projects/", f.cat, map[string]any{"slug": "x"}).expect(t, http.StatusUnprocessableEntity, nil)
	})
	t.Run("unlinked", func(t *testing.T) {
		res := f.do("DELETE", "/api/0/projects/acme/web/teams/backend/", f.ann, nil)
		res.expect(t, http.StatusOK, nil)
		if teams := res.field(t, "teams").([]any); len(teams) != 0 {
			t.Errorf("web's teams after the unlink: %v", teams)
		}
		if _, ok := res.json(t).(map[string]any)["team"]; ok {
			t.Errorf("a project without teams answers a team: %s", res.body)
		}
		f.do("GET", "/api/0/projects/acme/nope/teams/", f.ann, nil).expect(t, http.StatusNotFound, nil)
		f.do("POST", "/api/0/projects/acme/web/teams/nobody/", f.ann, nil).expect(t, http.StatusNotFound, nil)
	})
}

// matrixTeam creates, in acme and rival, a team of a new name without
// members, and returns its slug; with victimOn, the victim is on acme's,
// and with web, both organizations' web belong to it.
func (f *matrixFixture) matrixTeam(t *testing.T, victimOn, web bool) string {
	t.Helper()
	slug := f.name("team")
	for _, org := range []string{"acme", "rival"} {
		f.exec(`INSERT INTO teams (organization_id, slug, name) SELECT id, $2, $2 FROM organizations WHERE slug = $1`, org, slug)
		if web {
			f.exec(`INSERT INTO project_teams (project_id, team_id)
				SELECT p.id, t.id FROM teams t JOIN projects p ON p.organization_id = t.organization_id AND p.slug = 'web'
				JOIN organizations o ON o.id = t.organization_id WHERE o.slug = $1 AND t.slug = $2`, org, slug)
		}
	}
	if victimOn {
		f.exec(`INSERT INTO team_members (team_id, membership_id)
			SELECT t.id, m.id FROM teams t JOIN organizations o ON o.id = t.organization_id
			JOIN memberships m ON m.organization_id = o.id AND m.user_id = $2
			WHERE o.slug = 'acme' AND t.slug = $1`, slug, f.victim.id)
	}
	return slug
}

// victimMembership is the id of the victim's membership of acme.
func (f *matrixFixture) victimMembership(t *testing.T) string {
	t.Helper()
	return strconv.Itoa(f.count(`SELECT m.id FROM memberships m JOIN organizations o ON o.id = m.organization_id
		WHERE o.slug = 'acme' AND m.user_id = $1`, f.victim.id))
}

// onTeam is the entry of a route of a team that both organizations have
// (new for each request, with the victim on acme's when victimOn, and web
// in both when web), naming the victim's membership of acme.
func onTeam(want int, body matrixBody, victimOn, web bool) matrixEntry {
	return matrixEntry{prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
		team := f.matrixTeam(t, victimOn, web)
		return f.on(want, body, "team_slug", team, "member_id", f.victimMembership(t))
	}}
}

// newTeamEntry creates a team whose slug the intruder's organization has
// already.
var newTeamEntry = matrixEntry{prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
	slug := f.name("created")
	f.exec(`INSERT INTO teams (organization_id, slug, name) SELECT id, $1, $1 FROM organizations WHERE slug = 'rival'`, slug)
	return f.on(http.StatusCreated, jsonBody(map[string]any{"slug": slug}))
}}

// newTeamProjectEntry creates a project, through a team both organizations
// have, whose slug the intruder's organization has already.
var newTeamProjectEntry = matrixEntry{prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
	team, slug := f.matrixTeam(t, false, false), f.name("created")
	f.project("rival", slug)
	return f.on(http.StatusCreated, jsonBody(map[string]any{"name": slug, "slug": slug}), "team_slug", team)
}}

// renameTeamEntry renames a team both organizations have, keeping its
// slug, which an update must send.
var renameTeamEntry = matrixEntry{prepare: func(t *testing.T, f *matrixFixture) matrixRequest {
	team := f.matrixTeam(t, false, false)
	return f.on(http.StatusOK, jsonBody(map[string]any{"slug": team, "name": "Intruded"}), "team_slug", team)
}}

// teamFuzzRoutes are the team routes that read a body, a query or a
// free-form path value; {} and ?{} as in apiFuzzRoutes.
var teamFuzzRoutes = []apiFuzzRoute{
	{method: "POST", path: "/api/0/organizations/acme/teams/", contentType: "application/json"},
	{method: "PUT", path: "/api/0/teams/acme/scratch/", contentType: "application/json"},
	{method: "GET", path: "/api/0/organizations/acme/teams/?{}"},
	{method: "GET", path: "/api/0/teams/acme/backend/?{}"},
	{method: "GET", path: "/api/0/teams/acme/{}/members/"},
	{method: "PUT", path: "/api/0/organizations/acme/members/{}/teams/backend/", contentType: "application/json"},
	{method: "POST", path: "/api/0/organizations/acme/members/{}/teams/backend/"},
	{method: "POST", path: "/api/0/teams/acme/backend/projects/", contentType: "application/json"},
	{method: "POST", path: "/api/0/projects/acme/web/teams/{}/"},
}

// FuzzTeamInputs sends arbitrary bodies, queries and path values to the
// team routes of the real handler on a real database: the answer is never
// a 5xx, and is JSON of the contract.
func FuzzTeamInputs(f *testing.F) {
	st, _ := storetest.NewWithURL(f)
	ctx := context.Background()
	owner, err := st.CreateUser(ctx, "owner@acme.example", "Owner")
	if err != nil {
		f.Fatal(err)
	}
	if _, err := st.CreateOrganization(ctx, "acme", "Acme", "owner@acme.example"); err != nil {
		f.Fatal(err)
	}
	if _, err := st.CreateProject(ctx, store.Operator, "acme", store.NewProject{Slug: "web", Name: "Web"}); err != nil {
		f.Fatal(err)
	}
	for _, slug := range []string{"backend", "scratch"} {
		if _, err := st.CreateTeam(ctx, owner, "acme", slug, slug); err != nil {
			f.Fatal(err)
		}
	}
	tok, hash := authn.NewToken()
	if _, err := st.CreateToken(ctx, "owner@acme.example", hash, authn.Scopes, "fuzz"); err != nil {
		f.Fatal(err)
	}
	d := Deps{Store: st, Auth: &authn.Authenticator{Store: st}, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: time.Now}
	h := serve(d, routes(d))
	f.Add(uint8(0), "", []byte(`{"slug": "frontend", "name": "Frontend"}`))
	f.Add(uint8(1), "", []byte(`{"slug": null}`))
	f.Add(uint8(2), "query=slug:backend id:1&detailed=0", []byte(nil))
	f.Add(uint8(3), "collapse=organization&expand=x", []byte(nil))
	f.Add(uint8(5), "me", []byte(`{"teamRole": "admin"}`))
	f.Add(uint8(6), "99999999999999999999", []byte(nil))
	f.Add(uint8(7), "", []byte(`{"name": "Jobs", "platform": 1}`))
	f.Fuzz(func(t *testing.T, route uint8, segment string, body []byte) {
		rt := teamFuzzRoutes[int(route)%len(teamFuzzRoutes)]
		target := strings.Replace(rt.path, "?{}", "?"+segment, 1)
		target = strings.Replace(target, "{}", url.PathEscape(segment), 1)
		u, err := url.Parse(target)
		if err != nil {
			return // no client can send it
		}
		r := httptest.NewRequest(rt.method, "http://errata.test/", bytes.NewReader(body))
		r.URL = u
		r.Header.Set("Authorization", "Bearer "+tok)
		if rt.contentType != "" {
			r.Header.Set("Content-Type", rt.contentType)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code >= 500 {
			t.Fatalf("%s %s: %d %s", rt.method, target, w.Code, w.Body)
		}
		checkContractAnswer(t, rt, target, w)
	})
}

// TestPendingMemberTeams: an invitation's teamRoles put the pending member
// on the team. The team's members list it (pending, user null), its
// memberCount counts the members who joined alone, and the member–team
// routes act on it as on any other member: a plain member may not take it
// off, an admin may.
func TestPendingMemberTeams(t *testing.T) {
	f := newTeamsFixture(t)
	f.do("POST", "/api/0/organizations/acme/teams/", f.ann, map[string]any{"slug": "backend"}).expect(t, http.StatusCreated, nil)
	res := f.do("POST", "/api/0/organizations/acme/members/", f.ann, map[string]any{"email": "dan@example.com",
		"teamRoles": []any{map[string]any{"teamSlug": "backend", "role": nil}}, "sendInvite": false})
	res.expect(t, http.StatusCreated, nil)
	dan := res.field(t, "id").(string)
	members := func() map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, m := range f.do("GET", "/api/0/teams/acme/backend/members/", f.ben, nil).json(t).([]any) {
			out[m.(map[string]any)["id"].(string)] = m.(map[string]any)
		}
		return out
	}
	t.Run("the team lists the pending member, and counts the joined", func(t *testing.T) {
		got := members()
		m, ok := got[dan]
		if len(got) != 2 || !ok || m["pending"] != true || m["user"] != nil || m["teamRole"] != "contributor" ||
			m["email"] != "dan@example.com" {
			t.Errorf("the team's members %v, want ann and dan pending with no user, a contributor", got)
		}
		if n := f.do("GET", "/api/0/teams/acme/backend/", f.ben, nil).field(t, "memberCount"); n != 1.0 {
			t.Errorf("memberCount %v, want 1 (ann; dan has not joined)", n)
		}
		detail := f.do("GET", "/api/0/organizations/acme/members/"+dan+"/", f.ann, nil)
		if teams := detail.field(t, "teams"); len(teams.([]any)) != 1 || teams.([]any)[0] != "backend" {
			t.Errorf("dan's teams %v, want [backend]", teams)
		}
	})
	t.Run("a member may not take it off, an admin may", func(t *testing.T) {
		link := "/api/0/organizations/acme/members/" + dan + "/teams/backend/"
		f.do("DELETE", link, f.ben, nil).expect(t, http.StatusForbidden, nil)
		f.do("DELETE", link, f.cat, nil).expect(t, http.StatusOK, nil)
		if _, ok := members()[dan]; ok {
			t.Errorf("dan is still on the team")
		}
	})
}
