package handlers

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// names lists the values of key in the list body of r, in order.
func names(t *testing.T, r response, key string) []string {
	t.Helper()
	r.expect(t, http.StatusOK, nil)
	var list []map[string]any
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatalf("not a list: %s", r.body)
	}
	out := []string{}
	for _, e := range list {
		out = append(out, e[key].(string))
	}
	return out
}

// filterFixture is an organization with releases deployed to some
// environments, linked to two projects, with files; and a second
// organization of the same user, which it does not own.
type filterFixture struct {
	*testAPI
	tok string
}

func newFilterFixture(t *testing.T) filterFixture {
	a := newTestAPI(t)
	a.user("owner@example.com")
	a.user("other@example.com")
	a.org("acme", "owner@example.com")
	a.org("beta-labs", "other@example.com")
	a.member("beta-labs", "owner@example.com", "member")
	a.project("acme", "web")
	a.project("acme", "api")
	a.project("acme", "web-admin")
	f := filterFixture{a, a.token("owner@example.com")}
	for _, rel := range []struct {
		version  string
		projects []string
	}{{"web@1.0.0", []string{"web"}}, {"web@2.0.0-RC1", []string{"web"}}, {"api@1.0.0", []string{"api"}}, {"api@1.1.0_x", []string{"api", "web"}}} {
		f.do("POST", "/api/0/organizations/acme/releases/", f.tok, map[string]any{"version": rel.version, "projects": rel.projects}).
			expect(t, http.StatusCreated, nil)
	}
	for _, d := range [][2]string{{"web@1.0.0", "production"}, {"web@2.0.0-RC1", "staging"}, {"api@1.0.0", "production"}} {
		f.do("POST", "/api/0/organizations/acme/releases/"+d[0]+"/deploys/", f.tok, map[string]any{"environment": d[1]}).
			expect(t, http.StatusCreated, nil)
	}
	for _, file := range [][2]string{{"~/app.min.js", "a"}, {"~/app.min.js.map", "b"}, {"~/vendor.js", "c"}} {
		body, ct := multipartBody(t, [][2]string{{"name", file[0]}}, []filePart{{"file", "x", []byte(file[1])}})
		f.doMultipart("POST", "/api/0/organizations/acme/releases/web@1.0.0/files/", f.tok, body, ct).expect(t, http.StatusCreated, nil)
	}
	return f
}

// TestListFilters checks each documented filter of a shared list: the
// filtered list differs from the unfiltered one, and is what Sentry's
// filter keeps.
func TestListFilters(t *testing.T) {
	f := newFilterFixture(t)
	tests := []struct {
		name, path, key string
		all, filtered   []string
	}{
		{"org releases, query: a substring of the version in any case", "/api/0/organizations/acme/releases/?query=rc",
			"version", []string{"api@1.1.0_x", "api@1.0.0", "web@2.0.0-RC1", "web@1.0.0"}, []string{"web@2.0.0-RC1"}},
		{"org releases, query: LIKE's wildcards are characters", "/api/0/organizations/acme/releases/?query=0_",
			"version", nil, []string{"api@1.1.0_x"}},
		{"org releases, environment", "/api/0/organizations/acme/releases/?environment=production",
			"version", nil, []string{"api@1.0.0", "web@1.0.0"}},
		{"org releases, environment repeated", "/api/0/organizations/acme/releases/?environment=production&environment=staging",
			"version", nil, []string{"api@1.0.0", "web@2.0.0-RC1", "web@1.0.0"}},
		{"org releases, environment and query", "/api/0/organizations/acme/releases/?environment=production&query=web",
			"version", nil, []string{"web@1.0.0"}},
		{"org releases, project by slug", "/api/0/organizations/acme/releases/?project=api",
			"version", nil, []string{"api@1.1.0_x", "api@1.0.0"}},
		{"org releases, project -1 is every project", "/api/0/organizations/acme/releases/?project=-1",
			"version", nil, []string{"api@1.1.0_x", "api@1.0.0", "web@2.0.0-RC1", "web@1.0.0"}},
		{"project releases, query", "/api/0/projects/acme/web/releases/?query=1.",
			"version", []string{"api@1.1.0_x", "web@2.0.0-RC1", "web@1.0.0"}, []string{"api@1.1.0_x", "web@1.0.0"}},
		{"project releases, environment", "/api/0/projects/acme/web/releases/?environment=staging",
			"version", nil, []string{"web@2.0.0-RC1"}},
		{"projects, query: name or slug", "/api/0/organizations/acme/projects/?query=WEB",
			"slug", []string{"web-admin", "api", "web"}, []string{"web-admin", "web"}},
		{"projects, query: every word", "/api/0/organizations/acme/projects/?query=web+admin",
			"slug", nil, []string{"web-admin"}},
		{"organizations, owner", "/api/0/organizations/?owner=true",
			"slug", []string{"beta-labs", "acme"}, []string{"acme"}},
		{"organizations, query", "/api/0/organizations/?query=LABS",
			"slug", nil, []string{"beta-labs"}},
		{"organizations, query slug:", "/api/0/organizations/?query=slug:acme",
			"slug", nil, []string{"acme"}},
		{"release files, query", "/api/0/organizations/acme/releases/web@1.0.0/files/?query=.map",
			"name", []string{"~/vendor.js", "~/app.min.js.map", "~/app.min.js"}, []string{"~/app.min.js.map"}},
		{"release files, query repeated", "/api/0/projects/acme/web/releases/web@1.0.0/files/?query=MAP&query=vendor",
			"name", nil, []string{"~/vendor.js", "~/app.min.js.map"}},
		{"release files, checksum repeated", "/api/0/organizations/acme/releases/web@1.0.0/files/?checksum=" +
			sha1Hex([]byte("a")) + "&checksum=" + sha1Hex([]byte("c")) + "&checksum=" + sha1Hex([]byte("none")),
			"name", nil, []string{"~/vendor.js", "~/app.min.js"}},
		{"release files, checksum and query", "/api/0/organizations/acme/releases/web@1.0.0/files/?checksum=" +
			sha1Hex([]byte("a")) + "&checksum=" + sha1Hex([]byte("c")) + "&query=app",
			"name", nil, []string{"~/app.min.js"}},
		{"repositories, integration_id: none comes from an integration", "/api/0/organizations/acme/repos/?integration_id=1",
			"name", []string{"acme/web"}, []string{}},
	}
	f.do("POST", "/api/0/organizations/acme/repos/", f.tok, map[string]any{"name": "acme/web"}).expect(t, http.StatusCreated, nil)
	var all []string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := url.Parse(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if tt.all != nil {
				unfiltered := u.Path
				all = names(t, f.do("GET", unfiltered, f.tok, nil), tt.key)
				if diff := cmp.Diff(tt.all, all); diff != "" {
					t.Fatalf("unfiltered %s (-want +got):\n%s", unfiltered, diff)
				}
			}
			got := names(t, f.do("GET", tt.path, f.tok, nil), tt.key)
			if diff := cmp.Diff(tt.filtered, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if slices.Equal(got, all) && !slices.Contains([]string{"org releases, project -1 is every project"}, tt.name) {
				t.Errorf("the filter changed nothing: %v", got)
			}
		})
	}
}

// TestListFiltersRefused checks that a documented filter errata does not
// apply is a 422 naming it, never a 200 with the unfiltered list.
func TestListFiltersRefused(t *testing.T) {
	f := newFilterFixture(t)
	tests := []struct{ path, param string }{
		{"/api/0/organizations/?sortBy=members", "sortBy"},
		{"/api/0/organizations/?owner=maybe", "owner"},
		{"/api/0/organizations/?query=email:owner@example.com", "query"},
		{"/api/0/organizations/?query=id:x", "query"},
		{"/api/0/organizations/acme/?detailed=1", "detailed"},
		{"/api/0/organizations/acme/projects/?query=team:backend", "query"},
		{"/api/0/organizations/acme/releases/web@1.0.0/?health=1", "health"},
		{"/api/0/organizations/acme/releases/web@1.0.0/?adoptionStages=true", "adoptionStages"},
		{"/api/0/organizations/acme/releases/web@1.0.0/?project=1", "project"},
		{"/api/0/organizations/acme/releases/web@1.0.0/?project_id=1", "project_id"},
		{"/api/0/organizations/acme/releases/web@1.0.0/?summaryStatsPeriod=3d", "summaryStatsPeriod"},
		{"/api/0/organizations/acme/releases/web@1.0.0/?sort=name", "sort"},
		{"/api/0/projects/acme/web/releases/web@1.0.0/?status=all", "status"},
		{"/api/0/projects/acme/web/releases/?project=api", "project"},
		{"/api/0/organizations/acme/releases/web@1.0.0/files/?checksum=abc", "checksum"},
		{"/api/0/organizations/acme/repos/?expand=settings", "expand"},
		{"/api/0/organizations/acme/releases/?" + strings.Repeat("environment=e&", 101), "environment"},
		{"/api/0/organizations/acme/releases/?" + strings.Repeat("project=p&", 101), "project"},
		{"/api/0/organizations/acme/releases/1.0/files/?" + strings.Repeat("query=q&", 1001), "query"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			res := f.do("GET", tt.path, f.tok, nil)
			res.expect(t, http.StatusUnprocessableEntity, nil)
			var body struct {
				Detail []struct{ Loc []string }
			}
			json.Unmarshal(res.body, &body)
			if len(body.Detail) != 1 || !slices.Equal(body.Detail[0].Loc, []string{"query", tt.param}) {
				t.Errorf("body %s, want loc [query %s]", res.body, tt.param)
			}
		})
	}
	t.Run("the values Sentry's detail takes without data to shape are accepted", func(t *testing.T) {
		f.do("GET", "/api/0/organizations/acme/releases/web@1.0.0/?health=0&adoptionStages=false&summaryStatsPeriod=24h&sort=date&status=open&query=x",
			f.tok, nil).expect(t, http.StatusOK, nil)
		f.do("GET", "/api/0/organizations/acme/?detailed=0", f.tok, nil).expect(t, http.StatusOK, nil)
	})
}

// TestFiltersKeepMembership checks that a filter never reaches another
// organization's rows.
func TestFiltersKeepMembership(t *testing.T) {
	f := newFilterFixture(t)
	f.project("beta-labs", "web")
	other := f.token("other@example.com")
	f.do("POST", "/api/0/organizations/beta-labs/releases/", other, map[string]any{"version": "web@9.0.0", "projects": []string{"web"}}).
		expect(t, http.StatusCreated, nil)
	if got := names(t, f.do("GET", "/api/0/organizations/acme/releases/?query=9.0", f.tok, nil), "version"); len(got) != 0 {
		t.Errorf("acme's releases matching 9.0: %v", got)
	}
	if got := names(t, f.do("GET", "/api/0/organizations/?query=acme", other, nil), "slug"); len(got) != 0 {
		t.Errorf("another user's organizations matching acme: %v", got)
	}
	f.do("GET", "/api/0/organizations/acme/releases/?query=web", other, nil).expect(t, http.StatusNotFound, nil)
	f.do("GET", "/api/0/organizations/acme/projects/?query=web", other, nil).expect(t, http.StatusNotFound, nil)
	if got := names(t, f.do("GET", "/api/0/organizations/acme/releases/web@1.0.0/files/?query=app", other, nil), "name"); len(got) != 0 {
		t.Errorf("an outsider's filtered files: %v", got)
	}
}

// TestProjectSummary checks the fields of a project that errata fills
// from its own records: the environments it does not hide, its latest
// release as Sentry picks it, and on its detail its organization.
func TestProjectSummary(t *testing.T) {
	f := newFilterFixture(t)
	type project struct {
		Slug          string
		Environments  []string
		LatestRelease *struct{ Version string }
		Organization  *struct{ Slug string }
	}
	get := func(t *testing.T) (list map[string]project, detail project) {
		t.Helper()
		var l []project
		res := f.do("GET", "/api/0/organizations/acme/projects/", f.tok, nil)
		res.expect(t, http.StatusOK, nil)
		json.Unmarshal(res.body, &l)
		list = map[string]project{}
		for _, p := range l {
			list[p.Slug] = p
		}
		res = f.do("GET", "/api/0/projects/acme/web/", f.tok, nil)
		res.expect(t, http.StatusOK, nil)
		json.Unmarshal(res.body, &detail)
		return list, detail
	}
	list, detail := get(t)
	if diff := cmp.Diff([]string{"production", "staging"}, detail.Environments); diff != "" {
		t.Errorf("web's environments (-want +got):\n%s", diff)
	}
	if got := list["web-admin"]; got.Environments == nil || len(got.Environments) != 0 || got.LatestRelease != nil {
		t.Errorf("a project without environments and releases: %+v", got)
	}
	// Unreleased, the latest created; then the latest released.
	if detail.LatestRelease == nil || detail.LatestRelease.Version != "api@1.1.0_x" || list["web"].LatestRelease.Version != "api@1.1.0_x" {
		t.Errorf("latest release of web: %+v", detail.LatestRelease)
	}
	if detail.Organization == nil || detail.Organization.Slug != "acme" {
		t.Errorf("organization: %+v", detail.Organization)
	}
	f.do("PUT", "/api/0/organizations/acme/releases/web@1.0.0/", f.tok, map[string]any{"dateReleased": "2099-01-01T00:00:00Z"}).
		expect(t, http.StatusOK, nil)
	f.do("PUT", "/api/0/projects/acme/web/environments/staging/", f.tok, map[string]any{"isHidden": true}).
		expect(t, http.StatusOK, nil)
	list, detail = get(t)
	if diff := cmp.Diff([]string{"production"}, list["web"].Environments); diff != "" {
		t.Errorf("web's environments after hiding staging (-want +got):\n%s", diff)
	}
	if detail.LatestRelease == nil || detail.LatestRelease.Version != "web@1.0.0" {
		t.Errorf("latest release of web once 1.0.0 is released: %+v", detail.LatestRelease)
	}
}
