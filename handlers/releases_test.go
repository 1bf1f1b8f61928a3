package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// relFixture is an organization acme with projects web and api, and an
// organization other with project site whose owner is not a member of
// acme.
type relFixture struct {
	*testAPI
	tok     string // owner of acme, every scope
	outside string // owner of other, every scope
}

func newRelFixture(t *testing.T) relFixture {
	t.Helper()
	a := newTestAPI(t)
	a.user("owner@acme.io")
	a.org("acme", "owner@acme.io")
	a.project("acme", "web")
	a.project("acme", "api")
	a.user("owner@other.io")
	a.org("other", "owner@other.io")
	a.project("other", "site")
	return relFixture{testAPI: a, tok: a.token("owner@acme.io"), outside: a.token("owner@other.io")}
}

// release creates version in acme linked to projects through the
// organization route.
func (f relFixture) release(t *testing.T, version string, projects ...string) {
	t.Helper()
	f.do("POST", "/api/0/organizations/acme/releases/", f.tok,
		map[string]any{"version": version, "projects": projects}).expect(t, http.StatusCreated, nil)
}

// field decodes the body and returns its top-level key.
func (r response) field(t *testing.T, key string) any {
	t.Helper()
	m, ok := r.json(t).(map[string]any)
	if !ok {
		t.Fatalf("body is not an object: %s", r.body)
	}
	return m[key]
}

func invalidBody(typ string, loc []string, msg string) string {
	l, _ := json.Marshal(loc)
	return `{"detail": [{"type": "` + typ + `", "loc": ` + string(l) + `, "msg": "` + msg + `"}]}`
}

const noValidProjectBody = `{"detail":[{"type":"value_error","loc":["body","projects"],"msg":"Require at least one valid project"}]}`

func TestReleaseCreateOrganization(t *testing.T) {
	const path = "/api/0/organizations/acme/releases/"
	t.Run("creates with 201, ignoring unknown projects; then 208 links and keeps fields", func(t *testing.T) {
		f := newRelFixture(t)
		res := f.do("POST", path, f.tok, `{"version": "1.0.0", "ref": "abc123", "url": "https://example.com/1.0.0",
			"dateStarted": "2026-01-02T03:04:05.123456Z", "data": {"snake_key": {"x": 1}},
			"projects": ["web", "nope", "site"]}`)
		res.expect(t, http.StatusCreated, nil)
		res.golden(t, "release_org_created")
		if got := res.field(t, "dateStarted"); got != "2026-01-02T03:04:05.123Z" {
			t.Errorf("dateStarted = %v", got)
		}
		res = f.do("POST", path, f.tok, `{"version": "1.0.0", "ref": "other", "url": null, "data": {},
			"dateReleased": "2026-01-03T00:00:00Z", "projects": ["api"]}`)
		res.expect(t, http.StatusAlreadyReported, nil)
		res.golden(t, "release_org_existing")
	})
	t.Run("JSON with invalid UTF-8 is 400 and stores nothing", func(t *testing.T) {
		f := newRelFixture(t)
		f.do("POST", path, f.tok, "{\"version\": \"1.0\xff\", \"projects\": [\"web\"]}").
			expect(t, http.StatusBadRequest, `{"detail":"Cannot parse request body"}`)
		if n := f.count(`SELECT count(*) FROM releases`); n != 0 {
			t.Errorf("%d releases stored", n)
		}
	})
	t.Run("no project at all: 208 with the release when it exists, else 422", func(t *testing.T) {
		f := newRelFixture(t)
		f.do("POST", path, f.tok, `{"version": "1.0.0", "projects": ["web"]}`).expect(t, http.StatusCreated, nil)
		res := f.do("POST", path, f.tok, `{"version": "1.0.0", "projects": []}`)
		res.expect(t, http.StatusAlreadyReported, nil)
		if got := res.field(t, "projects").([]any); len(got) != 1 {
			t.Errorf("projects = %v, want web still", got)
		}
		f.do("POST", path, f.tok, `{"version": "2.0.0", "projects": []}`).expect(t, http.StatusUnprocessableEntity,
			`{"detail":[{"type":"value_error","loc":["body","projects"],"msg":"Require at least one valid project"}]}`)
	})
	t.Run("dateReleased is null until set; snake_case keys are accepted", func(t *testing.T) {
		f := newRelFixture(t)
		res := f.do("POST", path, f.tok, `{"version": "2.0", "projects": ["web"], "date_started": null}`)
		res.expect(t, http.StatusCreated, nil)
		res.golden(t, "release_org_minimal")
	})
	t.Run("a 200-character version is valid", func(t *testing.T) {
		f := newRelFixture(t)
		v := strings.Repeat("é", 200)
		res := f.do("POST", path, f.tok, map[string]any{"version": v, "projects": []string{"web"}})
		res.expect(t, http.StatusCreated, nil)
		if got := res.field(t, "version"); got != v {
			t.Errorf("version = %v", got)
		}
	})
	f := newRelFixture(t)
	badVersion := func(v string) string {
		b, _ := json.Marshal(map[string]any{"version": v, "projects": []string{"web"}})
		return string(b)
	}
	versionError := invalidBody("value_error", []string{"body", "version"}, "Invalid release version")
	for _, tc := range []struct {
		name, token, body string
		status            int
		want              string
	}{
		{"no valid project is 422", f.tok, `{"version": "1", "projects": ["nope", "site"]}`, 422, noValidProjectBody},
		{"an empty project list is 422", f.tok, `{"version": "1", "projects": []}`, 422, noValidProjectBody},
		{"missing projects is 422", f.tok, `{"version": "1"}`, 422,
			invalidBody("missing", []string{"body", "projects"}, "Field required")},
		{"missing version is 422", f.tok, `{"projects": ["web"]}`, 422,
			invalidBody("missing", []string{"body", "version"}, "Field required")},
		{"null version is 422", f.tok, `{"version": null, "projects": ["web"]}`, 422,
			invalidBody("type_error", []string{"body", "version"}, "Input should be a valid string")},
		{"empty version is 422", f.tok, badVersion(""), 422, versionError},
		{"blank version is 422", f.tok, badVersion("   "), 422, versionError},
		{"version . is 422", f.tok, badVersion("."), 422, versionError},
		{"version .. is 422", f.tok, badVersion(".."), 422, versionError},
		{"version latest is 422", f.tok, badVersion("latest"), 422, versionError},
		{"version LaTeSt is 422", f.tok, badVersion(" LaTeSt "), 422, versionError},
		{"version with a slash is 422", f.tok, badVersion("a/b"), 422, versionError},
		{"version with a backslash is 422", f.tok, badVersion(`a\b`), 422, versionError},
		{"version with a newline is 422", f.tok, badVersion("a\nb"), 422, versionError},
		{"version with a carriage return is 422", f.tok, badVersion("a\rb"), 422, versionError},
		{"version with a form feed is 422", f.tok, badVersion("a\fb"), 422, versionError},
		{"version with a tab is 422", f.tok, badVersion("a\tb"), 422, versionError},
		{"version with NUL is 422", f.tok, badVersion("a\x00b"), 422,
			invalidBody("value_error", []string{"body", "version"}, "Input should not contain NUL characters")},
		{"version of 201 characters is 422", f.tok, badVersion(strings.Repeat("v", 201)), 422, versionError},
		{"bad dateStarted is 422", f.tok, `{"version": "1", "projects": ["web"], "dateStarted": "yesterday"}`, 422,
			invalidBody("type_error", []string{"body", "dateStarted"}, "Input should be a valid datetime")},
		{"data that is not an object is 422", f.tok, `{"version": "1", "projects": ["web"], "data": [1]}`, 422, ""},
		{"data with NUL is 422", f.tok, `{"version": "1", "projects": ["web"], "data": {"a": "\u0000"}}`, 422,
			invalidBody("value_error", []string{"body", "data"}, "Input should not contain NUL characters")},
		{"ref with NUL is 422", f.tok, `{"version": "1", "projects": ["web"], "ref": "\u0000"}`, 422,
			invalidBody("value_error", []string{"body", "ref"}, "Input should not contain NUL characters")},
		{"projects of the wrong type is 422", f.tok, `{"version": "1", "projects": "web"}`, 422, ""},
		{"a body that does not parse is 400", f.tok, `{"version"`, 400, `{"detail": "Cannot parse request body"}`},
		{"a body over 1 MiB is 413", f.tok, `{"version": "1", "data": {"a": "` + strings.Repeat("x", 1<<20) + `"}}`, 413,
			`{"detail": "Request body too large"}`},
		{"foreign organization is 404", f.outside, `{"version": "1", "projects": ["web"]}`, 404, notFoundBody},
		{"no token is 401", "", `{"version": "1", "projects": ["web"]}`, 401, `{"detail": "Unauthorized"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want any
			if tc.want != "" {
				want = tc.want
			}
			f.do("POST", path, tc.token, tc.body).expect(t, tc.status, want)
		})
	}
	t.Run("unknown organization is 404 even without a valid project", func(t *testing.T) {
		f.do("POST", "/api/0/organizations/nope/releases/", f.tok, `{"version": "1", "projects": ["x"]}`).
			expect(t, 404, notFoundBody)
	})
	t.Run("foreign organization is 404 even with its own project", func(t *testing.T) {
		f.do("POST", "/api/0/organizations/other/releases/", f.tok, `{"version": "1", "projects": ["site"]}`).
			expect(t, 404, notFoundBody)
	})
	t.Run("nothing was created", func(t *testing.T) {
		f.do("GET", path, f.tok, nil).expect(t, http.StatusOK, `[]`)
	})
}

func TestReleaseCreateProject(t *testing.T) {
	t.Run("creates with 201, then links an existing release unchanged with 201", func(t *testing.T) {
		f := newRelFixture(t)
		res := f.do("POST", "/api/0/projects/acme/web/releases/", f.tok,
			`{"version": "my.app@1.2.3+build.7", "ref": "abc", "projects": ["ignored"], "dateReleased": "2026-02-03T04:05:06Z"}`)
		res.expect(t, http.StatusCreated, nil)
		res.golden(t, "release_project_created")
		res = f.do("POST", "/api/0/projects/acme/api/releases/", f.tok,
			`{"version": "my.app@1.2.3+build.7", "ref": "changed", "url": "https://x", "dateReleased": null}`)
		res.expect(t, http.StatusCreated, nil)
		res.golden(t, "release_project_existing")
		res = f.do("POST", "/api/0/projects/acme/api/releases/", f.tok, `{"version": "my.app@1.2.3+build.7"}`)
		res.expect(t, http.StatusCreated, nil)
		res.golden(t, "release_project_existing")
	})
	f := newRelFixture(t)
	for _, tc := range []struct {
		name, path, token, body string
		status                  int
		want                    string
	}{
		{"unknown project is 404", "/api/0/projects/acme/nope/releases/", f.tok, `{"version": "1"}`, 404, notFoundBody},
		{"unknown organization is 404", "/api/0/projects/nope/web/releases/", f.tok, `{"version": "1"}`, 404, notFoundBody},
		{"foreign organization is 404", "/api/0/projects/acme/web/releases/", f.outside, `{"version": "1"}`, 404, notFoundBody},
		{"foreign project is 404", "/api/0/projects/other/site/releases/", f.tok, `{"version": "1"}`, 404, notFoundBody},
		{"missing version is 422", "/api/0/projects/acme/web/releases/", f.tok, `{}`, 422,
			invalidBody("missing", []string{"body", "version"}, "Field required")},
		{"invalid version is 422", "/api/0/projects/acme/web/releases/", f.tok, `{"version": ".."}`, 422,
			invalidBody("value_error", []string{"body", "version"}, "Invalid release version")},
		{"a body that is not an object is 422", "/api/0/projects/acme/web/releases/", f.tok, `["1"]`, 422,
			invalidBody("type_error", []string{"body"}, "Input should be an object")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.do("POST", tc.path, tc.token, tc.body).expect(t, tc.status, tc.want)
		})
	}
}

func TestReleaseGet(t *testing.T) {
	f := newRelFixture(t)
	f.release(t, "1.0.0", "web")
	f.release(t, "my.app@1.2.3+build.7", "web", "api")
	for _, tc := range []struct {
		name, path, golden string
	}{
		{"organization route", "/api/0/organizations/acme/releases/1.0.0/", "release_get"},
		{"project route of a linked project", "/api/0/projects/acme/web/releases/1.0.0/", "release_get"},
		{"a version with @ and an encoded +", "/api/0/organizations/acme/releases/my.app@1.2.3%2Bbuild.7/", "release_get_semver"},
		{"a version with an encoded @ and +", "/api/0/projects/acme/api/releases/my.app%401.2.3%2Bbuild.7/", "release_get_semver"},
		{"a raw + in the path is a plus", "/api/0/organizations/acme/releases/my.app@1.2.3+build.7/", "release_get_semver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := f.do("GET", tc.path, f.tok, nil)
			res.expect(t, http.StatusOK, nil)
			res.golden(t, tc.golden)
		})
	}
	pathError := invalidBody("value_error", []string{"path", "version"}, "Invalid release version")
	for _, tc := range []struct {
		name, path, token string
		status            int
		want              string
	}{
		{"unknown version is 404", "/api/0/organizations/acme/releases/9.9.9/", f.tok, 404, notFoundBody},
		{"versions compare byte for byte", "/api/0/organizations/acme/releases/1.0.0%20/", f.tok, 404, notFoundBody},
		{"versions compare case-sensitively", "/api/0/organizations/acme/releases/MY.APP@1.2.3%2Bbuild.7/", f.tok, 404, notFoundBody},
		{"a space is not a plus", "/api/0/organizations/acme/releases/my.app@1.2.3%20build.7/", f.tok, 404, notFoundBody},
		{"release not linked to the project is 404", "/api/0/projects/acme/api/releases/1.0.0/", f.tok, 404, notFoundBody},
		{"unknown project is 404", "/api/0/projects/acme/nope/releases/1.0.0/", f.tok, 404, notFoundBody},
		{"unknown organization is 404", "/api/0/organizations/nope/releases/1.0.0/", f.tok, 404, notFoundBody},
		{"foreign organization is 404", "/api/0/organizations/acme/releases/1.0.0/", f.outside, 404, notFoundBody},
		{"foreign organization on the project route is 404", "/api/0/projects/acme/web/releases/1.0.0/", f.outside, 404, notFoundBody},
		{"an encoded slash is 422", "/api/0/organizations/acme/releases/a%2Fb/", f.tok, 422, pathError},
		{"latest is 422", "/api/0/organizations/acme/releases/latest/", f.tok, 422, pathError},
		{"an encoded newline is 422", "/api/0/organizations/acme/releases/a%0Ab/", f.tok, 422, pathError},
		{"invalid UTF-8 is 422", "/api/0/organizations/acme/releases/a%FFb/", f.tok, 422, pathError},
		{"201 characters is 422", "/api/0/organizations/acme/releases/" + strings.Repeat("v", 201) + "/", f.tok, 422, pathError},
		{"no project:releases is 403", "/api/0/organizations/acme/releases/1.0.0/",
			f.token("owner@acme.io", "project:read", "project:write", "project:admin", "org:admin"), 403, `{"detail": "Permission denied"}`},
		{"no token is 401", "/api/0/organizations/acme/releases/1.0.0/", "", 401, `{"detail": "Unauthorized"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.do("GET", tc.path, tc.token, nil).expect(t, tc.status, tc.want)
		})
	}
}

func TestReleaseList(t *testing.T) {
	f := newRelFixture(t)
	f.release(t, "1", "web")
	f.release(t, "2", "api")
	f.release(t, "3", "web", "api")
	versions := func(t *testing.T, res response) []any {
		t.Helper()
		var got []any
		for _, r := range res.json(t).([]any) {
			got = append(got, r.(map[string]any)["version"])
		}
		return got
	}
	t.Run("organization list, newest first", func(t *testing.T) {
		res := f.do("GET", "/api/0/organizations/acme/releases/", f.tok, nil)
		res.expect(t, http.StatusOK, nil)
		res.golden(t, "release_list_org")
		if got := res.header.Get("X-Hits"); got != "3" {
			t.Errorf("X-Hits = %q", got)
		}
	})
	t.Run("project list has only the releases linked to the project", func(t *testing.T) {
		res := f.do("GET", "/api/0/projects/acme/web/releases/", f.tok, nil)
		res.expect(t, http.StatusOK, nil)
		if diff := cmp.Diff([]any{"3", "1"}, versions(t, res)); diff != "" {
			t.Errorf("versions (-want +got):\n%s", diff)
		}
		if got := res.header.Get("X-Hits"); got != "2" {
			t.Errorf("X-Hits = %q", got)
		}
	})
	t.Run("pages follow the Link cursors", func(t *testing.T) {
		var got []any
		path := "/api/0/organizations/acme/releases/?limit=2"
		for range 3 {
			res := f.do("GET", path, f.tok, nil)
			res.expect(t, http.StatusOK, nil)
			got = append(got, versions(t, res)...)
			link := res.header.Get("Link")
			if !strings.Contains(link, `rel="next"; results="true"`) {
				break
			}
			next := link[strings.LastIndex(link, `cursor="`)+len(`cursor="`) : len(link)-1]
			path = "/api/0/organizations/acme/releases/?limit=2&cursor=" + next
		}
		if diff := cmp.Diff([]any{"3", "2", "1"}, got); diff != "" {
			t.Errorf("versions (-want +got):\n%s", diff)
		}
	})
	for _, tc := range []struct {
		name, path, token string
		status            int
		want              string
	}{
		{"unknown organization is 404", "/api/0/organizations/nope/releases/", f.tok, 404, notFoundBody},
		{"foreign organization is 404", "/api/0/organizations/acme/releases/", f.outside, 404, notFoundBody},
		{"unknown project is 404", "/api/0/projects/acme/nope/releases/", f.tok, 404, notFoundBody},
		{"foreign project is 404", "/api/0/projects/other/site/releases/", f.tok, 404, notFoundBody},
		{"bad limit is 422", "/api/0/organizations/acme/releases/?limit=x", f.tok, 422,
			invalidBody("type_error", []string{"query", "limit"}, "Input should be a valid integer")},
		{"no project:releases is 403", "/api/0/projects/acme/web/releases/", f.token("owner@acme.io", "project:admin"), 403,
			`{"detail": "Permission denied"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.do("GET", tc.path, tc.token, nil).expect(t, tc.status, tc.want)
		})
	}
	t.Run("the other organization sees only its own", func(t *testing.T) {
		f.do("POST", "/api/0/organizations/other/releases/", f.outside, `{"version": "1", "projects": ["site"]}`).
			expect(t, http.StatusCreated, nil)
		res := f.do("GET", "/api/0/organizations/other/releases/", f.outside, nil)
		res.expect(t, http.StatusOK, nil)
		if diff := cmp.Diff([]any{"1"}, versions(t, res)); diff != "" {
			t.Errorf("versions (-want +got):\n%s", diff)
		}
	})
}

func TestReleaseUpdate(t *testing.T) {
	t.Run("assigns only the keys present", func(t *testing.T) {
		f := newRelFixture(t)
		f.do("POST", "/api/0/organizations/acme/releases/", f.tok,
			`{"version": "1.0.0", "projects": ["web"], "ref": "r1", "url": "https://u1", "data": {"a": 1},
			"dateStarted": "2026-01-01T00:00:00Z"}`).expect(t, http.StatusCreated, nil)
		const path = "/api/0/organizations/acme/releases/1.0.0/"
		res := f.do("PUT", path, f.tok, `{"ref": "r2", "projects": ["api"], "version": "ignored"}`)
		res.expect(t, http.StatusOK, nil)
		res.golden(t, "release_update_ref")
		res = f.do("PUT", path, f.tok, `{"date_released": "2026-03-04T05:06:07.891Z", "url": null, "data": {"b": [true]}}`)
		res.expect(t, http.StatusOK, nil)
		res.golden(t, "release_update_released")
		res = f.do("PUT", "/api/0/projects/acme/web/releases/1.0.0/", f.tok, `{}`)
		res.expect(t, http.StatusOK, nil)
		res.golden(t, "release_update_released")
		res = f.do("PUT", "/api/0/projects/acme/web/releases/1.0.0/", f.tok, `{"dateReleased": null, "dateStarted": null, "ref": null, "data": null}`)
		res.expect(t, http.StatusOK, nil)
		res.golden(t, "release_update_cleared")
		f.do("GET", path, f.tok, nil).golden(t, "release_update_cleared")
	})
	f := newRelFixture(t)
	f.release(t, "1.0.0", "web")
	for _, tc := range []struct {
		name, path, token, body string
		status                  int
		want                    string
	}{
		{"unknown version is 404", "/api/0/organizations/acme/releases/2.0.0/", f.tok, `{"ref": "x"}`, 404, notFoundBody},
		{"unknown organization is 404", "/api/0/organizations/nope/releases/1.0.0/", f.tok, `{"ref": "x"}`, 404, notFoundBody},
		{"foreign organization is 404", "/api/0/organizations/acme/releases/1.0.0/", f.outside, `{"ref": "x"}`, 404, notFoundBody},
		{"unknown project is 404", "/api/0/projects/acme/nope/releases/1.0.0/", f.tok, `{"ref": "x"}`, 404, notFoundBody},
		{"unlinked project is 404", "/api/0/projects/acme/api/releases/1.0.0/", f.tok, `{"ref": "x"}`, 404, notFoundBody},
		{"invalid version is 422", "/api/0/organizations/acme/releases/..%2F/", f.tok, `{"ref": "x"}`, 422,
			invalidBody("value_error", []string{"path", "version"}, "Invalid release version")},
		{"bad dateReleased is 422", "/api/0/organizations/acme/releases/1.0.0/", f.tok, `{"dateReleased": 5}`, 422, ""},
		{"unparsable dateReleased is 422", "/api/0/organizations/acme/releases/1.0.0/", f.tok, `{"dateReleased": "2026-13-01"}`, 422,
			invalidBody("type_error", []string{"body", "dateReleased"}, "Input should be a valid datetime")},
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
		res := f.do("GET", "/api/0/organizations/acme/releases/1.0.0/", f.tok, nil)
		res.expect(t, http.StatusOK, nil)
		if got := res.field(t, "ref"); got != nil {
			t.Errorf("ref = %v, want null", got)
		}
	})
}

func TestReleaseDelete(t *testing.T) {
	t.Run("organization route deletes, then 404", func(t *testing.T) {
		f := newRelFixture(t)
		f.release(t, "1.0.0", "web")
		const path = "/api/0/organizations/acme/releases/1.0.0/"
		res := f.do("DELETE", path, f.tok, nil)
		res.expect(t, http.StatusNoContent, nil)
		if len(res.body) != 0 {
			t.Errorf("204 with body %q", res.body)
		}
		f.do("DELETE", path, f.tok, nil).expect(t, 404, notFoundBody)
		f.do("GET", path, f.tok, nil).expect(t, 404, notFoundBody)
	})
	t.Run("project route deletes the release itself", func(t *testing.T) {
		f := newRelFixture(t)
		f.release(t, "my.app@1.2.3+build.7", "web", "api")
		f.do("DELETE", "/api/0/projects/acme/web/releases/my.app@1.2.3%2Bbuild.7/", f.tok, nil).
			expect(t, http.StatusNoContent, nil)
		f.do("GET", "/api/0/organizations/acme/releases/my.app@1.2.3%2Bbuild.7/", f.tok, nil).expect(t, 404, notFoundBody)
		f.do("GET", "/api/0/projects/acme/api/releases/", f.tok, nil).expect(t, http.StatusOK, `[]`)
		f.do("DELETE", "/api/0/projects/acme/web/releases/my.app@1.2.3%2Bbuild.7/", f.tok, nil).expect(t, 404, notFoundBody)
	})
	f := newRelFixture(t)
	f.release(t, "1.0.0", "web")
	for _, tc := range []struct {
		name, path, token string
		status            int
		want              string
	}{
		{"unknown version is 404", "/api/0/organizations/acme/releases/2.0.0/", f.tok, 404, notFoundBody},
		{"unknown organization is 404", "/api/0/organizations/nope/releases/1.0.0/", f.tok, 404, notFoundBody},
		{"foreign organization is 404", "/api/0/organizations/acme/releases/1.0.0/", f.outside, 404, notFoundBody},
		{"foreign organization on the project route is 404", "/api/0/projects/acme/web/releases/1.0.0/", f.outside, 404, notFoundBody},
		{"unknown project is 404", "/api/0/projects/acme/nope/releases/1.0.0/", f.tok, 404, notFoundBody},
		{"unlinked project is 404", "/api/0/projects/acme/api/releases/1.0.0/", f.tok, 404, notFoundBody},
		{"invalid version is 422", "/api/0/organizations/acme/releases/%2E/", f.tok, 422,
			invalidBody("value_error", []string{"path", "version"}, "Invalid release version")},
		{"no project:releases is 403", "/api/0/organizations/acme/releases/1.0.0/", f.token("owner@acme.io", "org:admin", "project:admin"), 403,
			`{"detail": "Permission denied"}`},
		{"no token is 401", "/api/0/organizations/acme/releases/1.0.0/", "", 401, `{"detail": "Unauthorized"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.do("DELETE", tc.path, tc.token, nil).expect(t, tc.status, tc.want)
		})
	}
	t.Run("failed deletes removed nothing", func(t *testing.T) {
		f.do("GET", "/api/0/organizations/acme/releases/1.0.0/", f.tok, nil).expect(t, http.StatusOK, nil)
	})
}

// TestReleaseScopes checks every release and deploy route against a token
// that has every scope but project:releases, and one that has only it.
func TestReleaseScopes(t *testing.T) {
	f := newRelFixture(t)
	f.release(t, "1.0.0", "web")
	without := f.token("owner@acme.io", strings.Fields(`project:read project:write project:admin
		team:read team:write team:admin event:read event:write event:admin
		org:read org:write org:admin member:read member:write member:admin`)...)
	only := f.token("owner@acme.io", "project:releases")
	for _, rt := range []struct{ method, path, body string }{
		{"POST", "/api/0/organizations/acme/releases/", `{"version": "2", "projects": ["web"]}`},
		{"GET", "/api/0/organizations/acme/releases/", ""},
		{"GET", "/api/0/organizations/acme/releases/1.0.0/", ""},
		{"PUT", "/api/0/organizations/acme/releases/1.0.0/", `{}`},
		{"POST", "/api/0/projects/acme/web/releases/", `{"version": "3"}`},
		{"GET", "/api/0/projects/acme/web/releases/", ""},
		{"GET", "/api/0/projects/acme/web/releases/1.0.0/", ""},
		{"PUT", "/api/0/projects/acme/web/releases/1.0.0/", `{}`},
		{"POST", "/api/0/organizations/acme/releases/1.0.0/deploys/", `{"environment": "prod"}`},
		{"GET", "/api/0/organizations/acme/releases/1.0.0/deploys/", ""},
		{"DELETE", "/api/0/projects/acme/web/releases/1.0.0/", ""},
	} {
		var body any
		if rt.body != "" {
			body = rt.body
		}
		t.Run(rt.method+" "+rt.path+" without project:releases is 403", func(t *testing.T) {
			f.do(rt.method, rt.path, without, body).expect(t, http.StatusForbidden, `{"detail": "Permission denied"}`)
		})
		t.Run(rt.method+" "+rt.path+" with project:releases succeeds", func(t *testing.T) {
			res := f.do(rt.method, rt.path, only, body)
			if res.status >= 300 && res.status != http.StatusAlreadyReported {
				t.Fatalf("status %d: %s", res.status, res.body)
			}
		})
	}
	t.Run("scope is checked before input", func(t *testing.T) {
		f.do("POST", "/api/0/organizations/acme/releases/", without, `{"version": ".."}`).
			expect(t, http.StatusForbidden, `{"detail": "Permission denied"}`)
	})
}

// TestReleaseDates checks that timestamps are written in UTC with
// milliseconds, whatever zone they were sent in.
func TestReleaseDates(t *testing.T) {
	f := newRelFixture(t)
	res := f.do("POST", "/api/0/organizations/acme/releases/", f.tok,
		`{"version": "1", "projects": ["web"], "dateReleased": "2026-05-06T09:08:07.5+02:00"}`)
	res.expect(t, http.StatusCreated, nil)
	if got := res.field(t, "dateReleased"); got != "2026-05-06T07:08:07.500Z" {
		t.Errorf("dateReleased = %v", got)
	}
	created, err := time.Parse(time.RFC3339, res.field(t, "dateCreated").(string))
	if err != nil || time.Since(created) > time.Minute || time.Since(created) < -time.Minute {
		t.Errorf("dateCreated = %v (%v), want about now", created, err)
	}
}

// TestManyValuesAreRefusedBeforeDecoding: a 1 MiB body of empty objects
// would decode to tens of megabytes; it is refused after a scan, and an
// assemble body of many bad chunk names answers at most 100 errors.
func TestManyValuesAreRefusedBeforeDecoding(t *testing.T) {
	f := newRelFixture(t)
	var b strings.Builder
	b.WriteString(`{"version": "1.0", "projects": ["web"], "data": {`)
	for i := 0; b.Len() < 1<<20-100; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"%d":{}`, i)
	}
	b.WriteString("}}")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := f.do("POST", "/api/0/organizations/acme/releases/", f.tok, b.String())
	runtime.ReadMemStats(&after)
	res.expect(t, http.StatusUnprocessableEntity, `{"detail":[{"type":"value_error","loc":["body"],"msg":"The body has more than 20000 values"}]}`)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("the refused request allocated %.1f MB, want under 16 MiB (the body is 1 MiB)", float64(alloc)/1e6)
	} else {
		t.Logf("the refused request allocated %.1f MB", float64(alloc)/1e6)
	}

	chunks := make([]string, 15000)
	res = f.do("POST", "/api/0/organizations/acme/releases/1.0/assemble/", f.tok, map[string]any{"checksum": strings.Repeat("0", 40), "chunks": chunks})
	var body struct{ Detail []any }
	json.Unmarshal(res.body, &body)
	if res.status != http.StatusUnprocessableEntity || len(body.Detail) != 100 {
		t.Errorf("15 000 bad chunk names: %d with %d errors, want 422 with 100", res.status, len(body.Detail))
	}
}

func TestReleaseStatus(t *testing.T) {
	f := newRelFixture(t)
	const path = "/api/0/organizations/acme/releases/"
	f.do("POST", path, f.tok, `{"version": "1.0", "projects": ["web"], "status": "archived"}`).expect(t, http.StatusCreated, nil)
	f.do("POST", path, f.tok, `{"version": "2.0", "projects": ["web"], "status": "gone"}`).expect(t, http.StatusUnprocessableEntity,
		`{"detail":[{"type":"value_error","loc":["body","status"],"msg":"Input should be 'open' or 'archived'"}]}`)
	f.do("GET", path+"?status=bogus", f.tok, nil).expect(t, http.StatusUnprocessableEntity,
		`{"detail":[{"type":"value_error","loc":["query","status"],"msg":"Input should be 'open', 'archived' or 'all'"}]}`)
	for query, want := range map[string]int{"": 0, "?status=open": 0, "?status=archived": 1, "?status=all": 1} {
		var rels []any
		json.Unmarshal(f.do("GET", path+query, f.tok, nil).body, &rels)
		if len(rels) != want {
			t.Errorf("list%s: %d releases, want %d", query, len(rels), want)
		}
	}
	res := f.do("PUT", path+"1.0/", f.tok, `{"status": "open"}`)
	if res.expect(t, http.StatusOK, nil); res.field(t, "status") != "open" {
		t.Errorf("after the update: %v", res.field(t, "status"))
	}
}

// TestReleaseProjectsInSlugOrder: a release's projects come in slug order,
// each with its own id and name, on a get and in a list (api was created
// after web, so its id is the larger).
func TestReleaseProjectsInSlugOrder(t *testing.T) {
	f := newRelFixture(t)
	f.release(t, "1.0", "web", "api")
	decode := func(path string, v any) {
		t.Helper()
		res := f.do("GET", path, f.tok, nil)
		res.expect(t, http.StatusOK, nil)
		if err := json.Unmarshal(res.body, v); err != nil {
			t.Fatalf("%s: %v: %s", path, err, res.body)
		}
	}
	type project struct {
		ID   int64  `json:"id"`
		Slug string `json:"slug"`
		Name string `json:"name"`
	}
	var rel struct{ Projects []project }
	var list []struct{ Projects []project }
	decode("/api/0/organizations/acme/releases/1.0/", &rel)
	decode("/api/0/organizations/acme/releases/", &list)
	var want []project
	for _, slug := range []string{"api", "web"} {
		var p struct{ ID, Slug, Name string }
		decode("/api/0/projects/acme/"+slug+"/", &p)
		id, _ := strconv.ParseInt(p.ID, 10, 64)
		want = append(want, project{id, p.Slug, p.Name})
	}
	if len(list) != 1 || want[0].ID < want[1].ID {
		t.Fatalf("list %+v, projects %+v: want api's id after web's", list, want)
	}
	for name, got := range map[string][]project{"get": rel.Projects, "list": list[0].Projects} {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: projects (-want +got):\n%s", name, diff)
		}
	}
}

// TestReleaseOwner checks that the owner sent on create is stored and
// answered as Sentry's serializer writes a user, on both routes and in
// lists, and that only a member of the organization can own a release.
func TestReleaseOwner(t *testing.T) {
	f := newRelFixture(t)
	f.user("dev@acme.io")
	f.member("acme", "dev@acme.io", "member")
	devID := f.count(`SELECT id FROM users WHERE email = 'dev@acme.io'`)
	owner := func(t *testing.T, r response) map[string]any {
		t.Helper()
		o, _ := r.field(t, "owner").(map[string]any)
		return o
	}
	t.Run("stored and answered, the email in any case", func(t *testing.T) {
		res := f.do("POST", "/api/0/organizations/acme/releases/", f.tok,
			map[string]any{"version": "1.0", "projects": []string{"web"}, "owner": "DEV@acme.io"})
		res.expect(t, http.StatusCreated, nil)
		want := map[string]any{"id": strconv.Itoa(devID), "name": "dev", "username": "dev@acme.io", "email": "dev@acme.io",
			"dateJoined": "<time>", "lastLogin": nil, "isActive": true, "isSuperuser": false, "hasPasswordAuth": false}
		if diff := cmp.Diff(want, scrubTimes(owner(t, res))); diff != "" {
			t.Errorf("owner (-want +got):\n%s", diff)
		}
		if n := f.count(`SELECT count(*) FROM releases WHERE version = '1.0' AND owner_id = $1`, devID); n != 1 {
			t.Errorf("%d releases stored with the owner", n)
		}
		for _, path := range []string{"/api/0/organizations/acme/releases/1.0/", "/api/0/projects/acme/web/releases/1.0/"} {
			if diff := cmp.Diff(want, scrubTimes(owner(t, f.do("GET", path, f.tok, nil)))); diff != "" {
				t.Errorf("GET %s owner (-want +got):\n%s", path, diff)
			}
		}
		var list []map[string]any
		json.Unmarshal(f.do("GET", "/api/0/organizations/acme/releases/", f.tok, nil).body, &list)
		if len(list) != 1 || list[0]["owner"] == nil {
			t.Errorf("list: %v", list)
		}
	})
	t.Run("an existing release keeps its owner (208)", func(t *testing.T) {
		res := f.do("POST", "/api/0/organizations/acme/releases/", f.tok,
			map[string]any{"version": "1.0", "projects": []string{"api"}, "owner": "owner@acme.io"})
		res.expect(t, http.StatusAlreadyReported, nil)
		if o := owner(t, res); o == nil || o["email"] != "dev@acme.io" {
			t.Errorf("owner = %v", o)
		}
	})
	t.Run("the project route stores it too; empty and null are none", func(t *testing.T) {
		res := f.do("POST", "/api/0/projects/acme/web/releases/", f.tok, map[string]any{"version": "2.0", "owner": "dev@acme.io"})
		res.expect(t, http.StatusCreated, nil)
		if o := owner(t, res); o == nil || o["email"] != "dev@acme.io" {
			t.Errorf("owner = %v", o)
		}
		for _, v := range []any{"", nil} {
			res := f.do("POST", "/api/0/projects/acme/web/releases/", f.tok, map[string]any{"version": fmt.Sprint("3.0", v), "owner": v})
			res.expect(t, http.StatusCreated, nil)
			if o := res.field(t, "owner"); o != nil {
				t.Errorf("owner %v: %v", v, o)
			}
		}
	})
	t.Run("a user who is not a member, or no user, is 422 and stores nothing", func(t *testing.T) {
		for _, email := range []string{"owner@other.io", "nobody@acme.io"} {
			for _, path := range []string{"/api/0/organizations/acme/releases/", "/api/0/projects/acme/web/releases/"} {
				f.do("POST", path, f.tok, map[string]any{"version": "4.0", "projects": []string{"web"}, "owner": email}).
					expect(t, http.StatusUnprocessableEntity, invalidBody("value_error", []string{"body", "owner"},
						"Unable to find user: owner should be the email of a member of the organization"))
			}
		}
		if n := f.count(`SELECT count(*) FROM releases WHERE version = '4.0'`); n != 0 {
			t.Errorf("%d releases stored", n)
		}
	})
	t.Run("a user's removal leaves the release without owner", func(t *testing.T) {
		f.exec(`DELETE FROM memberships WHERE user_id = $1`, devID)
		f.exec(`DELETE FROM users WHERE id = $1`, devID)
		if o := f.do("GET", "/api/0/organizations/acme/releases/1.0/", f.tok, nil).field(t, "owner"); o != nil {
			t.Errorf("owner = %v", o)
		}
	})
}

// TestReleaseProjectsCarryTheirPlatform gives one of two projects a
// platform: a release of both names it for that project, null for the
// other, on the release, the list and the create answer alike.
func TestReleaseProjectsCarryTheirPlatform(t *testing.T) {
	a := newTestAPI(t)
	a.user("owner@example.com")
	a.org("acme", "owner@example.com")
	a.project("acme", "api")
	tok := a.token("owner@example.com")
	a.do("POST", "/api/0/organizations/acme/projects/", tok, map[string]any{"name": "Web", "slug": "web", "platform": "javascript"}).
		expect(t, http.StatusCreated, nil)
	type project struct {
		Slug     string  `json:"slug"`
		Platform *string `json:"platform"`
	}
	check := func(what string, body []byte, list bool) {
		t.Helper()
		var rels []struct{ Projects []project }
		if !list {
			body = append(append([]byte("["), body...), ']')
		}
		if err := json.Unmarshal(body, &rels); err != nil || len(rels) != 1 {
			t.Fatalf("%s: %s %v", what, body, err)
		}
		ps := rels[0].Projects
		if len(ps) != 2 || ps[0].Slug != "api" || ps[0].Platform != nil || ps[1].Slug != "web" || ps[1].Platform == nil || *ps[1].Platform != "javascript" {
			t.Errorf("%s: projects %s, want api without a platform and web with javascript", what, body)
		}
	}
	res := a.do("POST", "/api/0/organizations/acme/releases/", tok, map[string]any{"version": "1.0", "projects": []string{"web", "api"}})
	res.expect(t, http.StatusCreated, nil)
	check("create", res.body, false)
	res = a.do("GET", "/api/0/organizations/acme/releases/1.0/", tok, nil)
	res.expect(t, http.StatusOK, nil)
	check("get", res.body, false)
	res = a.do("GET", "/api/0/organizations/acme/releases/", tok, nil)
	res.expect(t, http.StatusOK, nil)
	check("list", res.body, true)
}
