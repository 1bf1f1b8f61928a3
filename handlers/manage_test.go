package handlers

// Tests of the operations of issue 23 that errata did not serve: renaming
// a release file, one environment of a project, the commits of a
// repository, and the management of organizations and projects.

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"errata/store"
)

// manageFixture is acme (owned by ann, project web and api) and rival
// (owned by ben, project web), each with release 1.0.0 linked to its web.
type manageFixture struct {
	*testAPI
	annID, benID int64
	ann, ben     string // tokens of every scope
}

func newManageFixture(t *testing.T) *manageFixture {
	t.Helper()
	a := newTestAPI(t)
	f := &manageFixture{testAPI: a, annID: a.user("ann@acme.example"), benID: a.user("ben@rival.example")}
	a.org("acme", "ann@acme.example")
	a.org("rival", "ben@rival.example")
	a.project("acme", "web")
	a.project("acme", "api")
	a.project("rival", "web")
	for org, owner := range map[string]int64{"acme": f.annID, "rival": f.benID} {
		if _, _, err := a.st.CreateRelease(context.Background(), owner, org, store.ReleaseInput{Version: "1.0.0"}, []string{"web"}); err != nil {
			t.Fatal(err)
		}
	}
	f.ann, f.ben = a.token("ann@acme.example"), a.token("ben@rival.example")
	return f
}

// releaseFile stores a file name (with dist, "" for none) in release 1.0.0
// of org and returns its id.
func (f *manageFixture) releaseFile(t *testing.T, org, name, dist string) string {
	t.Helper()
	owner := f.annID
	if org == "rival" {
		owner = f.benID
	}
	nf := store.NewReleaseFile{Name: name}
	if dist != "" {
		nf.Dist = &dist
	}
	rf, err := f.st.CreateReleaseFile(context.Background(), store.ReleaseFileScope{UserID: owner, OrgSlug: org, Version: "1.0.0"},
		nf, strings.NewReader("x()"))
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatInt(rf.ID, 10)
}

func TestReleaseFileRename(t *testing.T) {
	f := newManageFixture(t)
	a := f.releaseFile(t, "acme", "~/a.js", "")
	f.releaseFile(t, "acme", "~/b.js", "")
	withDist := f.releaseFile(t, "acme", "~/a.js", "ios")
	theirs := f.releaseFile(t, "rival", "~/a.js", "")
	orgPath := func(org, id string) string {
		return "/api/0/organizations/" + org + "/releases/1.0.0/files/" + id + "/"
	}
	projectPath := func(project, id string) string {
		return "/api/0/projects/acme/" + project + "/releases/1.0.0/files/" + id + "/"
	}
	name := func(id string) string {
		return f.do("GET", orgPath("acme", id), f.ann, nil).field(t, "name").(string)
	}

	t.Run("the organization route renames the file and keeps its dist", func(t *testing.T) {
		res := f.do("PUT", orgPath("acme", withDist), f.ann, map[string]any{"name": "~/c.js"})
		res.expect(t, http.StatusOK, nil)
		if res.field(t, "id") != withDist || res.field(t, "name") != "~/c.js" || res.field(t, "dist") != "ios" {
			t.Errorf("answer %s", res.body)
		}
		if got := name(withDist); got != "~/c.js" {
			t.Errorf("the file is called %q afterwards", got)
		}
	})
	t.Run("the project route renames a file of a release linked to the project", func(t *testing.T) {
		f.do("PUT", projectPath("web", a), f.ann, map[string]any{"name": "~/d.js"}).expect(t, http.StatusOK, nil)
		if got := name(a); got != "~/d.js" {
			t.Errorf("the file is called %q afterwards", got)
		}
	})
	t.Run("a project the release is not linked to has no such file", func(t *testing.T) {
		f.do("PUT", projectPath("api", a), f.ann, map[string]any{"name": "~/e.js"}).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
	})
	t.Run("the name of another file of the same dist is a conflict", func(t *testing.T) {
		f.do("PUT", orgPath("acme", a), f.ann, map[string]any{"name": "~/b.js"}).
			expect(t, http.StatusConflict, `{"detail": "A file with that name already exists"}`)
		if got := name(a); got != "~/d.js" {
			t.Errorf("the file is called %q afterwards", got)
		}
	})
	t.Run("the name of a file of another dist is free", func(t *testing.T) {
		f.do("PUT", orgPath("acme", withDist), f.ann, map[string]any{"name": "~/b.js"}).expect(t, http.StatusOK, nil)
	})
	for _, tc := range []struct {
		what, id string
		body     any
		want     string
	}{
		{"a missing name", a, map[string]any{}, invalidBody(missing, []string{"body", "name"}, "Field required")},
		{"a null name", a, map[string]any{"name": nil}, invalidBody(typeError, []string{"body", "name"}, "Input should be a valid string")},
		{"a name that is not a string", a, map[string]any{"name": 7}, invalidBody(typeError, []string{"body", "name"}, "Input should be a valid string")},
		{"an empty name", a, map[string]any{"name": ""}, invalidBody(valueErr, []string{"body", "name"}, "A name of 1 to 200 characters is required")},
		{"a name over 200 characters", a, map[string]any{"name": strings.Repeat("x", 201)}, invalidBody(valueErr, []string{"body", "name"}, "A name of 1 to 200 characters is required")},
		{"a file id that is not a number", "one", map[string]any{"name": "~/f.js"}, invalidBody(typeError, []string{"path", "file_id"}, "Input should be a valid integer")},
	} {
		t.Run(tc.what+" is 422", func(t *testing.T) {
			f.do("PUT", orgPath("acme", tc.id), f.ann, tc.body).expect(t, http.StatusUnprocessableEntity, tc.want)
		})
	}
	t.Run("another organization's file is not found", func(t *testing.T) {
		for _, path := range []string{orgPath("acme", a), orgPath("rival", a)} {
			f.do("PUT", path, f.ben, map[string]any{"name": "~/stolen.js"}).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
		}
		f.do("PUT", orgPath("acme", theirs), f.ann, map[string]any{"name": "~/stolen.js"}).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
		if got := name(a); got != "~/d.js" {
			t.Errorf("acme's file is called %q afterwards", got)
		}
		if n := f.count(`SELECT count(*) FROM release_files WHERE name = '~/stolen.js'`); n != 0 {
			t.Errorf("%d files were renamed", n)
		}
	})
}

func TestProjectEnvironmentGet(t *testing.T) {
	f := newManageFixture(t)
	ctx := context.Background()
	for _, e := range []struct {
		org, name, project string
		hidden             bool
	}{{"acme", "production", "web", false}, {"acme", "staging", "web", true}, {"acme", "qa", "api", false}, {"rival", "preview", "web", false}} {
		if _, err := f.st.CreateEnvironment(ctx, e.org, e.name, e.project, e.hidden); err != nil {
			t.Fatal(err)
		}
	}
	path := func(org, name string) string { return "/api/0/projects/" + org + "/web/environments/" + name + "/" }
	id := func(name string) int {
		return f.count(`SELECT ep.id FROM environment_projects ep JOIN environments e ON e.id = ep.environment_id WHERE e.name = $1`, name)
	}

	t.Run("a visible environment is the list's entry", func(t *testing.T) {
		res := f.do("GET", path("acme", "production"), f.ann, nil)
		res.expect(t, http.StatusOK, map[string]any{"id": id("production"), "name": "production", "isHidden": false})
		list := f.do("GET", "/api/0/projects/acme/web/environments/", f.ann, nil)
		list.expect(t, http.StatusOK, []any{map[string]any{"id": id("production"), "name": "production", "isHidden": false}})
	})
	t.Run("a hidden environment is found too", func(t *testing.T) {
		f.do("GET", path("acme", "staging"), f.ann, nil).
			expect(t, http.StatusOK, map[string]any{"id": id("staging"), "name": "staging", "isHidden": true})
	})
	t.Run("an environment of another project is not found", func(t *testing.T) {
		f.do("GET", path("acme", "qa"), f.ann, nil).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
	})
	t.Run("an invalid name is 422", func(t *testing.T) {
		f.do("GET", path("acme", strings.Repeat("x", 65)), f.ann, nil).
			expect(t, http.StatusUnprocessableEntity, invalidBody(valueErr, []string{"path", "name"}, "Invalid environment name"))
	})
	t.Run("another organization's environment is not found", func(t *testing.T) {
		f.do("GET", path("acme", "production"), f.ben, nil).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
		f.do("GET", path("rival", "production"), f.ben, nil).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
		f.do("GET", path("acme", "preview"), f.ann, nil).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
	})
}

func TestRepositoryCommits(t *testing.T) {
	f := newManageFixture(t)
	ctx := context.Background()
	repo := func(owner int64, org, name string) int64 {
		r, err := f.st.CreateRepository(ctx, owner, org, store.RepositoryInput{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	web, other := repo(f.annID, "acme", "acme/web"), repo(f.annID, "acme", "acme/other")
	theirs := repo(f.benID, "rival", "rival/web")
	base := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	commit := func(id, repo string, hours int) store.CommitInput {
		at := base.Add(time.Duration(hours) * time.Hour)
		msg, email := "commit "+id, "dev@acme.example"
		return store.CommitInput{ID: id, Repository: repo, Message: &msg, AuthorEmail: &email, Timestamp: &at}
	}
	commits := []store.CommitInput{commit("aaa1", "acme/web", 1), commit("aaa3", "acme/web", 3), commit("aaa2", "acme/web", 2), commit("bbb1", "acme/other", 5)}
	if _, err := f.st.UpdateRelease(ctx, f.annID, "acme", "", "1.0.0", store.ReleaseUpdate{Commits: store.ReleaseCommitsInput{Commits: &commits}}); err != nil {
		t.Fatal(err)
	}
	rivals := []store.CommitInput{commit("ccc1", "rival/web", 9)}
	if _, err := f.st.UpdateRelease(ctx, f.benID, "rival", "", "1.0.0", store.ReleaseUpdate{Commits: store.ReleaseCommitsInput{Commits: &rivals}}); err != nil {
		t.Fatal(err)
	}
	path := func(org string, id int64) string {
		return "/api/0/organizations/" + org + "/repos/" + strconv.FormatInt(id, 10) + "/commits/"
	}
	ids := func(res response) []string {
		var out []string
		for _, c := range res.json(t).([]any) {
			out = append(out, c.(map[string]any)["id"].(string))
		}
		return out
	}

	t.Run("lists the repository's commits newest first, in Sentry's shape", func(t *testing.T) {
		res := f.do("GET", path("acme", web), f.ann, nil)
		res.expect(t, http.StatusOK, nil)
		if got := strings.Join(ids(res), " "); got != "aaa3 aaa2 aaa1" {
			t.Errorf("commits %s", got)
		}
		first := res.json(t).([]any)[0].(map[string]any)
		if first["message"] != "commit aaa3" || first["dateCreated"] != "2026-11-20T15:00:00.000Z" ||
			first["author"].(map[string]any)["email"] != "dev@acme.example" ||
			first["repository"].(map[string]any)["name"] != "acme/web" {
			t.Errorf("first commit %v", first)
		}
		if res.header.Get("X-Hits") != "3" {
			t.Errorf("X-Hits %q", res.header.Get("X-Hits"))
		}
	})
	t.Run("pages with the cursor of the Link header", func(t *testing.T) {
		res := f.do("GET", path("acme", web)+"?limit=2", f.ann, nil)
		res.expect(t, http.StatusOK, nil)
		if got := strings.Join(ids(res), " "); got != "aaa3 aaa2" {
			t.Fatalf("page 1: %s", got)
		}
		cursor := nextCursor(t, res)
		res = f.do("GET", path("acme", web)+"?limit=2&cursor="+cursor, f.ann, nil)
		res.expect(t, http.StatusOK, nil)
		if got := strings.Join(ids(res), " "); got != "aaa1" {
			t.Errorf("page 2: %s", got)
		}
	})
	t.Run("another repository's commits are its own", func(t *testing.T) {
		res := f.do("GET", path("acme", other), f.ann, nil)
		res.expect(t, http.StatusOK, nil)
		if got := strings.Join(ids(res), " "); got != "bbb1" {
			t.Errorf("commits %s", got)
		}
	})
	t.Run("a repository id that is not a number is 422", func(t *testing.T) {
		f.do("GET", "/api/0/organizations/acme/repos/web/commits/", f.ann, nil).
			expect(t, http.StatusUnprocessableEntity, invalidBody(typeError, []string{"path", "repo_id"}, "Input should be a valid integer"))
		f.do("GET", path("acme", web)+"?cursor=nope", f.ann, nil).expect(t, http.StatusUnprocessableEntity, nil)
	})
	t.Run("a repository of another organization is not found", func(t *testing.T) {
		f.do("GET", path("acme", web), f.ben, nil).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
		f.do("GET", path("rival", web), f.ben, nil).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
		f.do("GET", path("acme", theirs), f.ann, nil).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
		f.do("GET", path("acme", 999999), f.ann, nil).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
	})
}

// nextCursor returns the cursor of the next page of a list's Link header.
func nextCursor(t *testing.T, res response) string {
	t.Helper()
	link := res.header.Get("Link")
	_, next, ok := strings.Cut(link, `rel="next"; results="true"; cursor="`)
	if !ok {
		t.Fatalf("no next page in Link %q", link)
	}
	cursor, _, _ := strings.Cut(next, `"`)
	return cursor
}

func TestOrganizationUpdate(t *testing.T) {
	f := newManageFixture(t)
	put := func(org, token string, body any) response {
		return f.do("PUT", "/api/0/organizations/"+org+"/", token, body)
	}

	t.Run("renames the organization", func(t *testing.T) {
		res := put("acme", f.ann, map[string]any{"name": "Acme Corp", "unknownKey": 1})
		res.expect(t, http.StatusOK, nil)
		if res.field(t, "name") != "Acme Corp" || res.field(t, "slug") != "acme" {
			t.Errorf("answer %s", res.body)
		}
		if got := f.do("GET", "/api/0/organizations/acme/", f.ann, nil).field(t, "name"); got != "Acme Corp" {
			t.Errorf("GET names it %v", got)
		}
	})
	t.Run("a new slug moves the organization", func(t *testing.T) {
		put("acme", f.ann, map[string]any{"slug": "acme-corp"}).expect(t, http.StatusOK, nil)
		f.do("GET", "/api/0/organizations/acme/", f.ann, nil).expect(t, http.StatusNotFound, nil)
		f.do("GET", "/api/0/organizations/acme-corp/projects/", f.ann, nil).expect(t, http.StatusOK, nil)
		put("acme-corp", f.ann, map[string]any{"slug": "acme"}).expect(t, http.StatusOK, nil)
	})
	t.Run("another organization's slug is a conflict", func(t *testing.T) {
		f.org("globex", "ann@acme.example")
		put("acme", f.ann, map[string]any{"slug": "globex"}).
			expect(t, http.StatusConflict, `{"detail": "An organization with this slug already exists"}`)
	})
	slugMsg := "Enter a slug of at most 50 lowercase letters, numbers, underscores or hyphens, not only numbers"
	for _, tc := range []struct {
		what string
		body any
		want string
	}{
		{"an uppercase slug", map[string]any{"slug": "Acme"}, invalidBody(valueErr, []string{"body", "slug"}, slugMsg)},
		{"a slug of digits", map[string]any{"slug": "123"}, invalidBody(valueErr, []string{"body", "slug"}, slugMsg)},
		{"a slug over 50 characters", map[string]any{"slug": strings.Repeat("a", 51)}, invalidBody(valueErr, []string{"body", "slug"}, slugMsg)},
		{"a null slug", map[string]any{"slug": nil}, invalidBody(typeError, []string{"body", "slug"}, "Input should be a valid string")},
		{"a blank name", map[string]any{"name": "  "}, invalidBody(valueErr, []string{"body", "name"}, "Enter a name of 1 to 64 characters")},
		{"a name over 64 characters", map[string]any{"name": strings.Repeat("n", 65)}, invalidBody(valueErr, []string{"body", "name"}, "Enter a name of 1 to 64 characters")},
		{"a name that is not a string", map[string]any{"name": true}, invalidBody(typeError, []string{"body", "name"}, "Input should be a valid string")},
		{"settings errata does not store", map[string]any{"name": "X", "isEarlyAdopter": false, "openMembership": true, "defaultRole": "member"},
			`{"detail": [
				{"type": "value_error", "loc": ["body", "isEarlyAdopter"], "msg": "errata does not store this setting"},
				{"type": "value_error", "loc": ["body", "defaultRole"], "msg": "errata does not store this setting"},
				{"type": "value_error", "loc": ["body", "openMembership"], "msg": "errata does not store this setting"}]}`},
		{"a null require2FA", map[string]any{"require2FA": nil}, invalidBody(typeError, []string{"body", "require2FA"}, "Input should be a valid boolean")},
	} {
		t.Run(tc.what+" is 422 and changes nothing", func(t *testing.T) {
			put("acme", f.ann, tc.body).expect(t, http.StatusUnprocessableEntity, tc.want)
			if n := f.count(`SELECT count(*) FROM organizations WHERE slug = 'acme' AND name = 'Acme Corp'`); n != 1 {
				t.Error("the organization changed")
			}
		})
	}
	t.Run("another organization is not found", func(t *testing.T) {
		put("acme", f.ben, map[string]any{"name": "Owned"}).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
		put("acme", f.ben, map[string]any{"slug": "rival"}).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
		if n := f.count(`SELECT count(*) FROM organizations WHERE name = 'Owned'`); n != 0 {
			t.Error("the intruder renamed an organization")
		}
	})
}

func TestProjectCreate(t *testing.T) {
	f := newManageFixture(t)
	post := func(org, token string, body any) response {
		return f.do("POST", "/api/0/organizations/"+org+"/projects/", token, body)
	}

	t.Run("creates a project, its slug made from its name", func(t *testing.T) {
		res := post("acme", f.ann, map[string]any{"name": "Mobile App!", "platform": "react-native", "default_rules": false})
		res.expect(t, http.StatusCreated, nil)
		if res.field(t, "slug") != "mobile-app" || res.field(t, "name") != "Mobile App!" || res.field(t, "platform") != "react-native" {
			t.Errorf("answer %s", res.body)
		}
		got := f.do("GET", "/api/0/projects/acme/mobile-app/", f.ann, nil)
		got.expect(t, http.StatusOK, nil)
		if got.field(t, "platform") != "react-native" {
			t.Errorf("GET: %s", got.body)
		}
	})
	t.Run("takes the slug sent", func(t *testing.T) {
		res := post("acme", f.ann, map[string]any{"name": "Backend", "slug": "backend_1", "platform": nil})
		res.expect(t, http.StatusCreated, nil)
		if res.field(t, "slug") != "backend_1" || res.field(t, "platform") != nil {
			t.Errorf("answer %s", res.body)
		}
	})
	t.Run("a slug the organization has is a conflict", func(t *testing.T) {
		post("acme", f.ann, map[string]any{"name": "Web", "slug": "web"}).
			expect(t, http.StatusConflict, `{"detail": "A project with this slug already exists"}`)
		post("acme", f.ann, map[string]any{"name": "API"}).
			expect(t, http.StatusConflict, `{"detail": "A project with this slug already exists"}`)
	})
	t.Run("another organization's slug is free", func(t *testing.T) {
		post("rival", f.ben, map[string]any{"name": "Backend", "slug": "backend_1"}).expect(t, http.StatusCreated, nil)
	})
	slugMsg := "Enter a slug of at most 100 lowercase letters, numbers, underscores or hyphens, not only numbers"
	for _, tc := range []struct {
		what string
		body any
		want string
	}{
		{"a missing name", map[string]any{"slug": "x"}, invalidBody(missing, []string{"body", "name"}, "Field required")},
		{"a name over 50 characters", map[string]any{"name": strings.Repeat("n", 51)}, invalidBody(valueErr, []string{"body", "name"}, "Enter a name of 1 to 50 characters")},
		{"a bad slug", map[string]any{"name": "X", "slug": "Bad Slug"}, invalidBody(valueErr, []string{"body", "slug"}, slugMsg)},
		{"a slug of digits", map[string]any{"name": "X", "slug": "42"}, invalidBody(valueErr, []string{"body", "slug"}, slugMsg)},
		{"a name that makes no slug", map[string]any{"name": "!!!"}, invalidBody(valueErr, []string{"body", "slug"}, slugMsg)},
		{"a bad platform", map[string]any{"name": "X", "platform": "Java Script"}, invalidBody(valueErr, []string{"body", "platform"}, "Invalid platform")},
		{"default alert rules", map[string]any{"name": "X", "default_rules": true},
			invalidBody(valueErr, []string{"body", "default_rules"}, "errata has no alert rules: only false is accepted")},
	} {
		t.Run(tc.what+" is 422", func(t *testing.T) {
			before := f.count(`SELECT count(*) FROM projects`)
			post("acme", f.ann, tc.body).expect(t, http.StatusUnprocessableEntity, tc.want)
			if after := f.count(`SELECT count(*) FROM projects`); after != before {
				t.Errorf("%d projects, then %d", before, after)
			}
		})
	}
	t.Run("another organization is not found", func(t *testing.T) {
		before := f.count(`SELECT count(*) FROM projects`)
		post("acme", f.ben, map[string]any{"name": "Planted"}).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
		if after := f.count(`SELECT count(*) FROM projects`); after != before {
			t.Errorf("%d projects, then %d", before, after)
		}
	})
}

func TestProjectUpdate(t *testing.T) {
	f := newManageFixture(t)
	put := func(org, project, token string, body any) response {
		return f.do("PUT", "/api/0/projects/"+org+"/"+project+"/", token, body)
	}

	t.Run("renames the project, moves its slug and sets its platform", func(t *testing.T) {
		res := put("acme", "web", f.ann, map[string]any{"name": "Website", "slug": "website", "platform": "javascript"})
		res.expect(t, http.StatusOK, nil)
		if res.field(t, "slug") != "website" || res.field(t, "name") != "Website" || res.field(t, "platform") != "javascript" {
			t.Errorf("answer %s", res.body)
		}
		f.do("GET", "/api/0/projects/acme/web/", f.ann, nil).expect(t, http.StatusNotFound, nil)
		if got := f.do("GET", "/api/0/projects/acme/website/", f.ann, nil).field(t, "platform"); got != "javascript" {
			t.Errorf("GET: platform %v", got)
		}
		f.do("GET", "/api/0/projects/acme/website/releases/1.0.0/", f.ann, nil).expect(t, http.StatusOK, nil)
	})
	t.Run("keys not sent are kept; a null platform clears it", func(t *testing.T) {
		res := put("acme", "website", f.ann, map[string]any{"platform": nil})
		res.expect(t, http.StatusOK, nil)
		if res.field(t, "name") != "Website" || res.field(t, "platform") != nil {
			t.Errorf("answer %s", res.body)
		}
	})
	t.Run("another project's slug is a conflict", func(t *testing.T) {
		put("acme", "website", f.ann, map[string]any{"slug": "api"}).
			expect(t, http.StatusConflict, `{"detail": "A project with this slug already exists"}`)
	})
	for _, tc := range []struct {
		what string
		body any
		want string
	}{
		{"a name over 200 characters", map[string]any{"name": strings.Repeat("n", 201)}, invalidBody(valueErr, []string{"body", "name"}, "Enter a name of 1 to 200 characters")},
		{"a bad slug", map[string]any{"slug": "-web"}, invalidBody(valueErr, []string{"body", "slug"},
			"Enter a slug of at most 100 lowercase letters, numbers, underscores or hyphens, not only numbers")},
		{"a bad platform", map[string]any{"platform": 3}, invalidBody(typeError, []string{"body", "platform"}, "Input should be a valid string")},
		{"a setting errata does not store", map[string]any{"name": "X", "isBookmarked": true},
			invalidBody(valueErr, []string{"body", "isBookmarked"}, "errata does not store this setting")},
	} {
		t.Run(tc.what+" is 422", func(t *testing.T) {
			put("acme", "website", f.ann, tc.body).expect(t, http.StatusUnprocessableEntity, tc.want)
			if n := f.count(`SELECT count(*) FROM projects WHERE slug = 'website' AND name = 'Website'`); n != 1 {
				t.Error("the project changed")
			}
		})
	}
	t.Run("another organization's project is not found", func(t *testing.T) {
		put("acme", "website", f.ben, map[string]any{"name": "Owned"}).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
		put("rival", "website", f.ben, map[string]any{"name": "Owned"}).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
		if n := f.count(`SELECT count(*) FROM projects WHERE name = 'Owned'`); n != 0 {
			t.Error("the intruder renamed a project")
		}
	})
}

func TestProjectDelete(t *testing.T) {
	f := newManageFixture(t)
	ctx := context.Background()
	// web has: release 1.0.0 (also linked to api) and 2.0.0 (web alone),
	// environment production, a debug file and a debug-id bundle.
	if _, _, err := f.st.CreateRelease(ctx, f.annID, "acme", store.ReleaseInput{Version: "1.0.0"}, []string{"api"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.st.CreateRelease(ctx, f.annID, "acme", store.ReleaseInput{Version: "2.0.0"}, []string{"web"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.CreateEnvironment(ctx, "acme", "production", "web", false); err != nil {
		t.Fatal(err)
	}
	web := store.ProjectScope{UserID: f.annID, OrgSlug: "acme", ProjectSlug: "web"}
	if _, err := f.st.CreateDebugFiles(ctx, web, []store.DebugUpload{{Content: strings.NewReader(docDifContent), Objects: []store.DebugFileObject{{
		DebugID: matrixDifDebugID, ObjectName: "hello", CPUName: "x86_64", FileFormat: "breakpad", Type: "dbg"}}}}, true); err != nil {
		t.Fatal(err)
	}
	f.debugIDBundle(t, f.annID, "acme", matrixBundleID, matrixDebugID)
	// A second bundle that api has too survives, linked to api alone.
	f.debugIDBundle(t, f.annID, "acme", doomedBundleID, doomedDebugID)
	f.exec(`INSERT INTO artifact_bundle_projects (artifact_bundle_id, project_id)
		SELECT ab.id, p.id FROM artifact_bundles ab, projects p
		WHERE ab.bundle_id = $1 AND p.slug = 'api' AND p.organization_id = ab.organization_id`, doomedBundleID)
	// rival's web, of the same names, must not be touched.
	if _, err := f.st.CreateEnvironment(ctx, "rival", "production", "web", false); err != nil {
		t.Fatal(err)
	}
	rivalRows := func() int {
		return f.count(`SELECT (SELECT count(*) FROM release_projects rp JOIN projects p ON p.id = rp.project_id
			JOIN organizations o ON o.id = p.organization_id WHERE o.slug = 'rival')
			+ (SELECT count(*) FROM environment_projects ep JOIN projects p ON p.id = ep.project_id
			JOIN organizations o ON o.id = p.organization_id WHERE o.slug = 'rival')
			+ (SELECT count(*) FROM projects p JOIN organizations o ON o.id = p.organization_id WHERE o.slug = 'rival')`)
	}
	rivalBefore := rivalRows()
	webID := f.count(`SELECT p.id FROM projects p JOIN organizations o ON o.id = p.organization_id WHERE o.slug = 'acme' AND p.slug = 'web'`)
	linked := func() int {
		return f.count(`SELECT (SELECT count(*) FROM release_projects WHERE project_id = $1)
			+ (SELECT count(*) FROM environment_projects WHERE project_id = $1)
			+ (SELECT count(*) FROM debug_files WHERE project_id = $1)
			+ (SELECT count(*) FROM artifact_bundle_projects WHERE project_id = $1)`, webID)
	}
	if n := linked(); n != 6 {
		t.Fatalf("web has %d links before, want 6", n)
	}

	t.Run("another organization's project is not found", func(t *testing.T) {
		f.do("DELETE", "/api/0/projects/acme/web/", f.ben, nil).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
		f.do("DELETE", "/api/0/projects/rival/api/", f.ben, nil).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
		if n := linked(); n != 6 {
			t.Errorf("web has %d links after, want 6", n)
		}
	})
	t.Run("an invalid slug is 422", func(t *testing.T) {
		f.do("DELETE", "/api/0/projects/acme/-web/", f.ann, nil).
			expect(t, http.StatusUnprocessableEntity, invalidBody(valueErr, []string{"path", "project_slug"}, "Invalid slug"))
	})
	t.Run("removes the project and what only it had, keeps the organization's", func(t *testing.T) {
		f.do("DELETE", "/api/0/projects/acme/web/", f.ann, nil).expect(t, http.StatusNoContent, nil)
		f.do("GET", "/api/0/projects/acme/web/", f.ann, nil).expect(t, http.StatusNotFound, nil)
		if n := linked(); n != 0 {
			t.Errorf("%d rows still name the project", n)
		}
		if n := f.count(`SELECT count(*) FROM artifact_bundles WHERE bundle_id = $1`, matrixBundleID); n != 0 {
			t.Errorf("%d artifact bundles of no project are left", n)
		}
		shared := f.do("GET", "/api/0/projects/acme/api/artifact-bundles/"+doomedBundleID+"/files/", f.ann, nil)
		shared.expect(t, http.StatusOK, nil)
		rel := f.do("GET", "/api/0/organizations/acme/releases/1.0.0/", f.ann, nil)
		rel.expect(t, http.StatusOK, nil)
		projects := rel.field(t, "projects").([]any)
		if len(projects) != 1 || projects[0].(map[string]any)["slug"] != "api" {
			t.Errorf("release 1.0.0 is linked to %v", projects)
		}
		f.do("GET", "/api/0/organizations/acme/releases/2.0.0/", f.ann, nil).expect(t, http.StatusOK, nil)
		if n := f.count(`SELECT count(*) FROM environments WHERE name = 'production'`); n != 2 {
			t.Errorf("%d environments production, want both organizations'", n)
		}
		if n := rivalRows(); n != rivalBefore {
			t.Errorf("rival has %d rows, had %d", n, rivalBefore)
		}
		f.do("DELETE", "/api/0/projects/acme/web/", f.ann, nil).expect(t, http.StatusNotFound, `{"detail": "Not Found"}`)
	})
	t.Run("the collector takes the stored files that went with it", func(t *testing.T) {
		files := f.count(`SELECT count(*) FROM files`)
		stats, err := f.st.Collect(ctx, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if stats.Files != 2 || f.count(`SELECT count(*) FROM files`) != files-2 {
			t.Errorf("collected %+v of %d files", stats, files)
		}
	})
}

// TestHandlersNeverActAsOperator holds SECURITY.md's claim that only the
// admin CLI reaches past memberships: no handler source names
// store.Operator.
func TestHandlersNeverActAsOperator(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("handler sources: %v %v", files, err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(src), "store.Operator") {
			t.Errorf("%s names store.Operator: a handler acts as a member of the caller's organizations only", name)
		}
	}
}
