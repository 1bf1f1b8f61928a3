package handlers

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

const notFoundBody = `{"detail": "Not Found"}`

// envFixture is an organization acme with projects web and api, and an
// organization other whose owner is not a member of acme. Environments of
// acme:
//
// (ids 1, 3, 4 and 6: re-creating an environment uses up a sequence value)
//
//	production  visible in web and api
//	staging     hidden in web
//	dev         visible in web, hidden in api
//	orphan      linked to no project
//
// other has its own production, visible in site.
type envFixture struct {
	*testAPI
	tok     string // owner of acme, every scope
	outside string // owner of other, every scope
}

func newEnvFixture(t *testing.T) envFixture {
	t.Helper()
	a := newTestAPI(t)
	a.user("owner@acme.io")
	a.org("acme", "owner@acme.io")
	a.project("acme", "web")
	a.project("acme", "api")
	a.user("owner@other.io")
	a.org("other", "owner@other.io")
	a.project("other", "site")
	for _, e := range []struct {
		org, name, project string
		hidden             bool
	}{
		{"acme", "production", "web", false},
		{"acme", "production", "api", false},
		{"acme", "staging", "web", true},
		{"acme", "dev", "web", false},
		{"acme", "dev", "api", true},
		{"acme", "orphan", "", false},
		{"other", "production", "site", false},
	} {
		if _, err := a.st.CreateEnvironment(context.Background(), e.org, e.name, e.project, e.hidden); err != nil {
			t.Fatalf("create environment: %v", err)
		}
	}
	return envFixture{testAPI: a, tok: a.token("owner@acme.io"), outside: a.token("owner@other.io")}
}

func TestOrganizationEnvironments(t *testing.T) {
	f := newEnvFixture(t)
	const base = "/api/0/organizations/acme/environments/"
	t.Run("each environment once, visible by default", func(t *testing.T) {
		res := f.do("GET", base, f.tok, nil)
		res.expect(t, http.StatusOK, nil)
		res.golden(t, "env_org_visible")
		if got := res.header.Get("X-Hits"); got != "2" {
			t.Errorf("X-Hits = %q, want 2", got)
		}
	})
	for _, tc := range []struct {
		name, query, golden string
	}{
		{"visible keeps environments with a visible link", "?visibility=visible", "env_org_visible"},
		{"hidden keeps environments with a hidden link", "?visibility=hidden", "env_org_hidden"},
		{"all keeps every environment", "?visibility=all", "env_org_all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := f.do("GET", base+tc.query, f.tok, nil)
			res.expect(t, http.StatusOK, nil)
			res.golden(t, tc.golden)
		})
	}
	t.Run("pages newest first with Link headers", func(t *testing.T) {
		res := f.do("GET", base+"?visibility=all&limit=3", f.tok, nil)
		res.expect(t, http.StatusOK, `[{"id": 6, "name": "orphan"}, {"id": 4, "name": "dev"}, {"id": 3, "name": "staging"}]`)
		link := res.header.Get("Link")
		if !strings.Contains(link, `rel="previous"; results="false"`) || !strings.Contains(link, `rel="next"; results="true"`) {
			t.Fatalf("Link = %q", link)
		}
		next := link[strings.LastIndex(link, `cursor="`)+len(`cursor="`) : len(link)-1]
		res = f.do("GET", base+"?visibility=all&limit=3&cursor="+next, f.tok, nil)
		res.expect(t, http.StatusOK, `[{"id": 1, "name": "production"}]`)
		if got := res.header.Get("X-Hits"); got != "4" {
			t.Errorf("X-Hits = %q, want 4", got)
		}
	})
	t.Run("org:read is enough", func(t *testing.T) {
		f.do("GET", base, f.token("owner@acme.io", "org:read"), nil).expect(t, http.StatusOK, nil)
	})
	for _, tc := range []struct {
		name, path, token string
		status            int
		want              string
	}{
		{"unknown organization is 404", "/api/0/organizations/nope/environments/", f.tok, 404, notFoundBody},
		{"foreign organization is 404 like a missing one", base, f.outside, 404, notFoundBody},
		{"bad visibility is 422", base + "?visibility=secret", f.tok, 422,
			`{"detail": [{"type": "value_error", "loc": ["query", "visibility"], "msg": "Input should be 'all', 'hidden' or 'visible'"}]}`},
		{"invalid slug is 422", "/api/0/organizations/%2E%2E/environments/", f.tok, 422,
			`{"detail": [{"type": "value_error", "loc": ["path", "organization_slug"], "msg": "Invalid slug"}]}`},
		{"bad cursor is 422", base + "?cursor=zz", f.tok, 422,
			`{"detail": [{"type": "value_error", "loc": ["query", "cursor"], "msg": "Invalid cursor"}]}`},
		{"no token is 401", base, "", 401, `{"detail": "Unauthorized"}`},
		{"project scopes are 403", base, f.token("owner@acme.io", "project:read", "project:write", "project:admin", "project:releases"), 403,
			`{"detail": "Permission denied"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.do("GET", tc.path, tc.token, nil).expect(t, tc.status, tc.want)
		})
	}
}

func TestProjectEnvironments(t *testing.T) {
	f := newEnvFixture(t)
	const base = "/api/0/projects/acme/web/environments/"
	for _, tc := range []struct {
		name, path, golden string
	}{
		{"visible by default", base, "env_project_visible"},
		{"visible keeps links that are not hidden", base + "?visibility=visible", "env_project_visible"},
		{"hidden keeps hidden links", base + "?visibility=hidden", "env_project_hidden"},
		{"all keeps both", base + "?visibility=all", "env_project_all"},
		{"another project has its own links", "/api/0/projects/acme/api/environments/?visibility=all", "env_project_api_all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := f.do("GET", tc.path, f.tok, nil)
			res.expect(t, http.StatusOK, nil)
			res.golden(t, tc.golden)
			if res.header.Get("Link") == "" || res.header.Get("X-Max-Hits") != "1000" {
				t.Errorf("missing page headers: %v", res.header)
			}
		})
	}
	for _, scope := range []string{"project:read", "project:write", "project:admin"} {
		t.Run(scope+" is enough", func(t *testing.T) {
			f.do("GET", base, f.token("owner@acme.io", scope), nil).expect(t, http.StatusOK, nil)
		})
	}
	for _, tc := range []struct {
		name, path, token string
		status            int
		want              string
	}{
		{"unknown organization is 404", "/api/0/projects/nope/web/environments/", f.tok, 404, notFoundBody},
		{"unknown project is 404", "/api/0/projects/acme/nope/environments/", f.tok, 404, notFoundBody},
		{"foreign organization is 404", base, f.outside, 404, notFoundBody},
		{"foreign project is 404", "/api/0/projects/other/site/environments/", f.tok, 404, notFoundBody},
		{"bad visibility is 422", base + "?visibility=ALL", f.tok, 422,
			`{"detail": [{"type": "value_error", "loc": ["query", "visibility"], "msg": "Input should be 'all', 'hidden' or 'visible'"}]}`},
		{"invalid project slug is 422", "/api/0/projects/acme/a%20b/environments/", f.tok, 422,
			`{"detail": [{"type": "value_error", "loc": ["path", "project_slug"], "msg": "Invalid slug"}]}`},
		{"org scopes are 403", base, f.token("owner@acme.io", "org:read", "org:write", "org:admin", "project:releases"), 403,
			`{"detail": "Permission denied"}`},
		{"no token is 401", base, "", 401, `{"detail": "Unauthorized"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.do("GET", tc.path, tc.token, nil).expect(t, tc.status, tc.want)
		})
	}
}

func TestProjectEnvironmentUpdate(t *testing.T) {
	const path = "/api/0/projects/acme/web/environments/production/"
	t.Run("hides the environment and returns the link", func(t *testing.T) {
		f := newEnvFixture(t)
		res := f.do("PUT", path, f.tok, `{"isHidden": true, "name": "ignored"}`)
		res.expect(t, http.StatusOK, `{"id": 1, "name": "production", "isHidden": true}`)
		res.golden(t, "env_update_hidden")
		f.do("GET", "/api/0/projects/acme/web/environments/?visibility=hidden", f.tok, nil).
			expect(t, http.StatusOK, `[{"id": 3, "name": "staging", "isHidden": true}, {"id": 1, "name": "production", "isHidden": true}]`)
		// api still shows production, so the organization lists it as both.
		f.do("GET", "/api/0/organizations/acme/environments/?visibility=visible", f.tok, nil).
			expect(t, http.StatusOK, `[{"id": 4, "name": "dev"}, {"id": 1, "name": "production"}]`)
		f.do("GET", "/api/0/organizations/acme/environments/?visibility=hidden", f.tok, nil).
			expect(t, http.StatusOK, `[{"id": 4, "name": "dev"}, {"id": 3, "name": "staging"}, {"id": 1, "name": "production"}]`)
	})
	t.Run("shows a hidden environment; snake_case is accepted", func(t *testing.T) {
		f := newEnvFixture(t)
		f.do("PUT", "/api/0/projects/acme/web/environments/staging/", f.tok, `{"is_hidden": false}`).
			expect(t, http.StatusOK, `{"id": 3, "name": "staging", "isHidden": false}`)
	})
	t.Run("project:write is enough", func(t *testing.T) {
		f := newEnvFixture(t)
		f.do("PUT", path, f.token("owner@acme.io", "project:write"), `{"isHidden": false}`).
			expect(t, http.StatusOK, `{"id": 1, "name": "production", "isHidden": false}`)
	})
	f := newEnvFixture(t)
	for _, tc := range []struct {
		name, path, token, body string
		status                  int
		want                    string
	}{
		{"environment not linked to the project is 404", "/api/0/projects/acme/web/environments/orphan/", f.tok, `{"isHidden": true}`, 404, notFoundBody},
		{"unknown environment is 404", "/api/0/projects/acme/web/environments/nope/", f.tok, `{"isHidden": true}`, 404, notFoundBody},
		{"unknown project is 404", "/api/0/projects/acme/nope/environments/production/", f.tok, `{"isHidden": true}`, 404, notFoundBody},
		{"unknown organization is 404", "/api/0/projects/nope/web/environments/production/", f.tok, `{"isHidden": true}`, 404, notFoundBody},
		{"foreign organization is 404", path, f.outside, `{"isHidden": true}`, 404, notFoundBody},
		{"foreign project is 404", "/api/0/projects/other/site/environments/production/", f.tok, `{"isHidden": true}`, 404, notFoundBody},
		{"missing isHidden is 422", path, f.tok, `{"name": "production"}`, 422,
			`{"detail": [{"type": "missing", "loc": ["body", "isHidden"], "msg": "Field required"}]}`},
		{"null isHidden is 422", path, f.tok, `{"isHidden": null}`, 422,
			`{"detail": [{"type": "type_error", "loc": ["body", "isHidden"], "msg": "Input should be a valid boolean"}]}`},
		{"isHidden of the wrong type is 422", path, f.tok, `{"isHidden": "yes"}`, 422, ""},
		{"a body that does not parse is 400", path, f.tok, `{"isHidden":`, 400, `{"detail": "Cannot parse request body"}`},
		{"a name with a slash is 422", "/api/0/projects/acme/web/environments/a%2Fb/", f.tok, `{"isHidden": true}`, 422,
			`{"detail": [{"type": "value_error", "loc": ["path", "name"], "msg": "Invalid environment name"}]}`},
		{"a name over 64 characters is 422", "/api/0/projects/acme/web/environments/" + strings.Repeat("e", 65) + "/", f.tok, `{"isHidden": true}`, 422,
			`{"detail": [{"type": "value_error", "loc": ["path", "name"], "msg": "Invalid environment name"}]}`},
		{"project:read is 403", path, f.token("owner@acme.io", "project:read", "org:admin", "project:releases"), `{"isHidden": true}`, 403,
			`{"detail": "Permission denied"}`},
		{"no token is 401", path, "", `{"isHidden": true}`, 401, `{"detail": "Unauthorized"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want any
			if tc.want != "" {
				want = tc.want
			}
			f.do("PUT", tc.path, tc.token, tc.body).expect(t, tc.status, want)
		})
	}
	t.Run("failed updates changed nothing", func(t *testing.T) {
		f.do("GET", "/api/0/projects/acme/web/environments/?visibility=all", f.tok, nil).
			golden(t, "env_project_all")
	})
}
