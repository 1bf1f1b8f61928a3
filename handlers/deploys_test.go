package handlers

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestDeployCreate(t *testing.T) {
	t.Run("creates the environment and links it to the release's projects", func(t *testing.T) {
		f := newRelFixture(t)
		f.release(t, "1.0.0", "web", "api")
		res := f.do("POST", "/api/0/organizations/acme/releases/1.0.0/deploys/", f.tok,
			`{"environment": "production", "name": null, "url": null, "dateStarted": null,
			"dateFinished": "2026-04-05T06:07:08.9Z"}`)
		res.expect(t, http.StatusCreated, `{"id": "1", "environment": "production", "name": null, "url": null,
			"dateStarted": null, "dateFinished": "2026-04-05T06:07:08.900Z"}`)
		res.golden(t, "deploy_created")
		f.do("GET", "/api/0/organizations/acme/environments/", f.tok, nil).
			expect(t, http.StatusOK, `[{"id": 1, "name": "production"}]`)
		f.do("GET", "/api/0/projects/acme/web/environments/", f.tok, nil).
			expect(t, http.StatusOK, `[{"id": 1, "name": "production", "isHidden": false}]`)
		f.do("GET", "/api/0/projects/acme/api/environments/", f.tok, nil).
			expect(t, http.StatusOK, `[{"id": 2, "name": "production", "isHidden": false}]`)
	})
	t.Run("dateFinished defaults to now; the release counts its deploys", func(t *testing.T) {
		f := newRelFixture(t)
		f.release(t, "1.0.0", "web")
		f.do("POST", "/api/0/organizations/acme/releases/1.0.0/deploys/", f.tok,
			`{"environment": "staging", "name": "first", "url": "https://ci/1", "dateStarted": "2026-01-01T00:00:00Z"}`).
			expect(t, http.StatusCreated, nil)
		res := f.do("POST", "/api/0/organizations/acme/releases/1.0.0/deploys/", f.tok,
			`{"environment": "production", "name": "second"}`)
		res.expect(t, http.StatusCreated, nil)
		finished, err := time.Parse(time.RFC3339, res.field(t, "dateFinished").(string))
		if err != nil || time.Since(finished).Abs() > time.Minute {
			t.Errorf("dateFinished = %v (%v), want about now", finished, err)
		}
		res = f.do("GET", "/api/0/organizations/acme/releases/1.0.0/", f.tok, nil)
		res.expect(t, http.StatusOK, nil)
		res.golden(t, "deploy_release_with_deploys")
		res = f.do("GET", "/api/0/organizations/acme/releases/1.0.0/deploys/", f.tok, nil)
		res.expect(t, http.StatusOK, nil)
		res.golden(t, "deploy_list")
		if got := res.header.Get("X-Hits"); got != "2" {
			t.Errorf("X-Hits = %q", got)
		}
		f.do("GET", "/api/0/organizations/acme/releases/", f.tok, nil).golden(t, "deploy_release_list")
	})
	t.Run("projects names the projects to link; existing links keep their visibility", func(t *testing.T) {
		f := newRelFixture(t)
		f.release(t, "1.0.0", "web")
		if _, err := f.st.CreateEnvironment(context.Background(), "acme", "production", "web", true); err != nil {
			t.Fatal(err)
		}
		f.do("POST", "/api/0/organizations/acme/releases/1.0.0/deploys/", f.tok,
			`{"environment": "production", "projects": ["web", "api", "site", "nope"]}`).expect(t, http.StatusCreated, nil)
		f.do("GET", "/api/0/projects/acme/web/environments/?visibility=all", f.tok, nil).
			expect(t, http.StatusOK, `[{"id": 1, "name": "production", "isHidden": true}]`)
		// Link 2 went to the conflicting insert for web.
		f.do("GET", "/api/0/projects/acme/api/environments/?visibility=all", f.tok, nil).
			expect(t, http.StatusOK, `[{"id": 3, "name": "production", "isHidden": false}]`)
		f.do("GET", "/api/0/projects/other/site/environments/?visibility=all", f.outside, nil).
			expect(t, http.StatusOK, `[]`)
	})
	f := newRelFixture(t)
	f.release(t, "1.0.0", "web")
	const path = "/api/0/organizations/acme/releases/1.0.0/deploys/"
	for _, tc := range []struct {
		name, path, token, body string
		status                  int
		want                    string
	}{
		{"unknown version is 404", "/api/0/organizations/acme/releases/2.0.0/deploys/", f.tok, `{"environment": "production"}`, 404, notFoundBody},
		{"unknown organization is 404", "/api/0/organizations/nope/releases/1.0.0/deploys/", f.tok, `{"environment": "production"}`, 404, notFoundBody},
		{"foreign organization is 404", path, f.outside, `{"environment": "production"}`, 404, notFoundBody},
		{"invalid version is 422", "/api/0/organizations/acme/releases/latest/deploys/", f.tok, `{"environment": "production"}`, 422,
			invalidBody("value_error", []string{"path", "version"}, "Invalid release version")},
		{"missing environment is 422", path, f.tok, `{"name": "x"}`, 422,
			invalidBody("missing", []string{"body", "environment"}, "Field required")},
		{"null environment is 422", path, f.tok, `{"environment": null}`, 422,
			invalidBody("type_error", []string{"body", "environment"}, "Input should be a valid string")},
		{"empty environment is 422", path, f.tok, `{"environment": ""}`, 422,
			invalidBody("value_error", []string{"body", "environment"}, "Invalid environment name")},
		{"environment with a slash is 422", path, f.tok, `{"environment": "a/b"}`, 422,
			invalidBody("value_error", []string{"body", "environment"}, "Invalid environment name")},
		{"environment over 64 characters is 422", path, f.tok, `{"environment": "` + strings.Repeat("e", 65) + `"}`, 422,
			invalidBody("value_error", []string{"body", "environment"}, "Invalid environment name")},
		{"bad dateFinished is 422", path, f.tok, `{"environment": "production", "dateFinished": "soon"}`, 422,
			invalidBody("type_error", []string{"body", "dateFinished"}, "Input should be a valid datetime")},
		{"name with NUL is 422", path, f.tok, `{"environment": "production", "name": "\u0000"}`, 422,
			invalidBody("value_error", []string{"body", "name"}, "Input should not contain NUL characters")},
		{"no token is 401", path, "", `{"environment": "production"}`, 401, `{"detail": "Unauthorized"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.do("POST", tc.path, tc.token, tc.body).expect(t, tc.status, tc.want)
		})
	}
	t.Run("failed deploys created no environment", func(t *testing.T) {
		f.do("GET", "/api/0/organizations/acme/environments/?visibility=all", f.tok, nil).expect(t, http.StatusOK, `[]`)
		f.do("GET", path, f.tok, nil).expect(t, http.StatusOK, `[]`)
	})
}

func TestDeployList(t *testing.T) {
	f := newRelFixture(t)
	f.release(t, "my.app@1.2.3+build.7", "web")
	const path = "/api/0/organizations/acme/releases/my.app@1.2.3%2Bbuild.7/deploys/"
	for _, env := range []string{"a", "b", "c"} {
		f.do("POST", path, f.tok, `{"environment": "`+env+`"}`).expect(t, http.StatusCreated, nil)
	}
	t.Run("newest first, paged", func(t *testing.T) {
		res := f.do("GET", path+"?limit=2", f.tok, nil)
		res.expect(t, http.StatusOK, nil)
		var envs []string
		for _, d := range res.json(t).([]any) {
			envs = append(envs, d.(map[string]any)["environment"].(string))
		}
		if strings.Join(envs, ",") != "c,b" {
			t.Errorf("environments = %v, want c,b", envs)
		}
		if link := res.header.Get("Link"); !strings.Contains(link, `rel="next"; results="true"`) {
			t.Errorf("Link = %q", link)
		}
		if got := res.header.Get("X-Hits"); got != "3" {
			t.Errorf("X-Hits = %q", got)
		}
	})
	for _, tc := range []struct {
		name, path, token string
		status            int
		want              string
	}{
		{"unknown version is 404", "/api/0/organizations/acme/releases/2/deploys/", f.tok, 404, notFoundBody},
		{"unknown organization is 404", "/api/0/organizations/nope/releases/1/deploys/", f.tok, 404, notFoundBody},
		{"foreign organization is 404", path, f.outside, 404, notFoundBody},
		{"invalid version is 422", "/api/0/organizations/acme/releases/a%5Cb/deploys/", f.tok, 422,
			invalidBody("value_error", []string{"path", "version"}, "Invalid release version")},
		{"no project:releases is 403", path, f.token("owner@acme.io", "project:admin", "org:admin"), 403, `{"detail": "Permission denied"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.do("GET", tc.path, tc.token, nil).expect(t, tc.status, tc.want)
		})
	}
	t.Run("deleting the release deletes its deploys", func(t *testing.T) {
		f.do("DELETE", "/api/0/organizations/acme/releases/my.app@1.2.3%2Bbuild.7/", f.tok, nil).expect(t, http.StatusNoContent, nil)
		f.do("GET", path, f.tok, nil).expect(t, 404, notFoundBody)
		f.do("GET", "/api/0/organizations/acme/environments/?visibility=all", f.tok, nil).
			expect(t, http.StatusOK, `[{"id": 3, "name": "c"}, {"id": 2, "name": "b"}, {"id": 1, "name": "a"}]`)
	})
}
