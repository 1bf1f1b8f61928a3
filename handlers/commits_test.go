package handlers

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// commitsOf returns the ids of a commit list's body, in order.
func commitsOf(t *testing.T, r response) []string {
	t.Helper()
	var list []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatalf("commits: %v: %s", err, r.body)
	}
	ids := []string{}
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	return ids
}

// releaseCommitFields are the commit fields of a release body.
type releaseCommitFields struct {
	CommitCount int `json:"commitCount"`
	LastCommit  *struct {
		ID      string  `json:"id"`
		Message *string `json:"message"`
		Author  *struct {
			Name  *string `json:"name"`
			Email string  `json:"email"`
		} `json:"author"`
		Repository struct {
			Name     string `json:"name"`
			Provider struct {
				ID string `json:"id"`
			} `json:"provider"`
		} `json:"repository"`
	} `json:"lastCommit"`
	Authors []struct {
		Name  *string `json:"name"`
		Email string  `json:"email"`
	} `json:"authors"`
}

func commitFields(t *testing.T, r response) releaseCommitFields {
	t.Helper()
	var f releaseCommitFields
	if err := json.Unmarshal(r.body, &f); err != nil {
		t.Fatalf("release: %v: %s", err, r.body)
	}
	return f
}

// TestReleaseSetCommits stores commits as sentry-cli's set-commits --local
// sends them and reads them back through the release, its commit list
// (both routes) and the repositories they created.
func TestReleaseSetCommits(t *testing.T) {
	f := newRelFixture(t)
	f.release(t, "1.0", "web")
	const path = "/api/0/organizations/acme/releases/1.0/"
	body := `{"commits": [
		{"id": "c1", "repository": "acme/web", "message": "first", "author_name": "Ann", "author_email": "ann@acme.io",
		 "timestamp": "2026-11-01T10:00:00+01:00", "patch_set": [{"path": "a.go", "type": "A"}]},
		{"id": "c3", "repository": "acme/web", "message": "third", "author_name": "Bob Smith",
		 "timestamp": "2026-11-03T10:00:00Z", "patch_set": [{"path": "a.go", "type": "M"}, {"path": "b.go", "type": "D"}]},
		{"id": "c2", "repository": "acme/lib", "message": "second", "author_name": "Ann", "author_email": "ann@acme.io",
		 "timestamp": "2026-11-02T10:00:00Z", "patch_set": []}
	]}`
	res := f.do("PUT", path, f.tok, body)
	res.expect(t, http.StatusOK, nil)
	got := commitFields(t, res)
	if got.CommitCount != 3 || got.LastCommit == nil || got.LastCommit.ID != "c3" ||
		got.LastCommit.Author == nil || got.LastCommit.Author.Email != "bobsmith@localhost" ||
		got.LastCommit.Repository.Name != "acme/web" || got.LastCommit.Repository.Provider.ID != "unknown" {
		t.Fatalf("after set-commits: %s", res.body)
	}
	var emails []string
	for _, a := range got.Authors {
		emails = append(emails, a.Email)
	}
	if diff := cmp.Diff([]string{"ann@acme.io", "bobsmith@localhost"}, emails); diff != "" {
		t.Errorf("authors (-want +got):\n%s", diff)
	}
	// The release reads the same on a get and in the list.
	if again := commitFields(t, f.do("GET", path, f.tok, nil)); !cmp.Equal(got, again) {
		t.Errorf("get differs from the update's answer: %+v vs %+v", again, got)
	}
	for _, p := range []string{path + "commits/", "/api/0/projects/acme/web/releases/1.0/commits/"} {
		res := f.do("GET", p, f.tok, nil)
		res.expect(t, http.StatusOK, nil)
		if diff := cmp.Diff([]string{"c3", "c2", "c1"}, commitsOf(t, res)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", p, diff)
		}
		if res.header.Get("X-Hits") != "3" {
			t.Errorf("%s: X-Hits %q", p, res.header.Get("X-Hits"))
		}
	}
	// The files the commits changed, newest commit first.
	var changes []struct {
		Filename      string  `json:"filename"`
		Type          string  `json:"type"`
		CommitMessage *string `json:"commitMessage"`
		RepoName      string  `json:"repoName"`
		Author        *struct {
			Email string `json:"email"`
		} `json:"author"`
	}
	res = f.do("GET", path+"commitfiles/", f.tok, nil)
	res.expect(t, http.StatusOK, nil)
	if err := json.Unmarshal(res.body, &changes); err != nil {
		t.Fatalf("commitfiles: %v: %s", err, res.body)
	}
	var files []string
	for _, c := range changes {
		files = append(files, c.Type+" "+c.Filename+" "+*c.CommitMessage+" "+c.RepoName+" "+c.Author.Email)
	}
	want := []string{"D b.go third acme/web bobsmith@localhost", "M a.go third acme/web bobsmith@localhost",
		"A a.go first acme/web ann@acme.io"}
	if diff := cmp.Diff(want, files); diff != "" || res.header.Get("X-Hits") != "3" {
		t.Errorf("commitfiles (-want +got):\n%s\nX-Hits %q", diff, res.header.Get("X-Hits"))
	}
	if res := f.do("GET", path+"commitfiles/?repo_name=acme/lib", f.tok, nil); res.header.Get("X-Hits") != "0" {
		t.Errorf("commitfiles of acme/lib: %s", res.body)
	}
	if res := f.do("GET", path+"commitfiles/?repo_name=acme/lib&repo_name=acme/web", f.tok, nil); res.header.Get("X-Hits") != "3" {
		t.Errorf("commitfiles of acme/lib and acme/web: X-Hits %q", res.header.Get("X-Hits"))
	}
	f.do("GET", "/api/0/organizations/acme/releases/9.9/commitfiles/", f.tok, nil).expect(t, http.StatusNotFound, nil)
	f.do("GET", path+"commitfiles/?repo_name="+strings.Repeat("r", maxRepositoryName+1), f.tok, nil).expect(t, http.StatusUnprocessableEntity,
		`{"detail":[{"type":"value_error","loc":["query","repo_name"],"msg":"Expected a repository name of at most 200 characters"}]}`)
	for _, name := range []string{"%00", "%FF"} { // text PostgreSQL cannot hold: refused on every route
		f.do("GET", path+"commitfiles/?repo_name="+name, f.tok, nil).expect(t, http.StatusUnprocessableEntity,
			`{"detail":[{"type":"value_error","loc":["query","repo_name"],"msg":"Input should be text: UTF-8 without NUL characters"}]}`)
		f.do("GET", "/api/0/organizations/acme/repos/?query="+name, f.tok, nil).expect(t, http.StatusUnprocessableEntity,
			`{"detail":[{"type":"value_error","loc":["query","query"],"msg":"Input should be text: UTF-8 without NUL characters"}]}`)
	}
	f.do("GET", path+"commitfiles/", f.outside, nil).expect(t, http.StatusNotFound, nil)
	// The release is not linked to api: its commits are not there.
	f.do("GET", "/api/0/projects/acme/api/releases/1.0/commits/", f.tok, nil).expect(t, http.StatusNotFound, nil)

	var repos []struct {
		Name     string `json:"name"`
		Provider struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"provider"`
	}
	res = f.do("GET", "/api/0/organizations/acme/repos/", f.tok, nil)
	res.expect(t, http.StatusOK, nil)
	json.Unmarshal(res.body, &repos)
	if len(repos) != 2 || repos[0].Provider.ID != "unknown" {
		t.Errorf("repositories: %s", res.body)
	}

	// Setting commits again replaces them; a commit sent again keeps its
	// row and takes the new message.
	res = f.do("PUT", path, f.tok, `{"commits": [{"id": "c1", "repository": "acme/web", "message": "first, amended"}]}`)
	res.expect(t, http.StatusOK, nil)
	got = commitFields(t, res)
	if got.CommitCount != 1 || got.LastCommit.ID != "c1" || *got.LastCommit.Message != "first, amended" ||
		got.LastCommit.Author.Email != "ann@acme.io" {
		t.Errorf("after the second set-commits: %s", res.body)
	}

	// An empty list clears them (set-commits --clear sends "refs": []).
	res = f.do("PUT", path, f.tok, `{"refs": []}`)
	res.expect(t, http.StatusOK, nil)
	if got := commitFields(t, res); got.CommitCount != 0 || got.LastCommit != nil || len(got.Authors) != 0 {
		t.Errorf("after clearing: %s", res.body)
	}
	if ids := commitsOf(t, f.do("GET", path+"commits/", f.tok, nil)); len(ids) != 0 {
		t.Errorf("commits after clearing: %v", ids)
	}
}

// TestReleaseRefs: refs (set-commits --commit and --auto) name head commits
// of known repositories; errata fetches nothing from providers, so the
// head commits are the release's commits.
func TestReleaseRefs(t *testing.T) {
	f := newRelFixture(t)
	f.release(t, "1.0", "web")
	const path = "/api/0/organizations/acme/releases/1.0/"
	f.do("PUT", path, f.tok, `{"refs": [{"repository": "acme/web", "commit": "abc"}]}`).expect(t, http.StatusUnprocessableEntity,
		`{"detail":[{"type":"value_error","loc":["body","refs"],"msg":"Invalid repository names: acme/web"}]}`)
	f.do("POST", "/api/0/organizations/acme/repos/", f.tok,
		`{"name": "acme/web", "url": "https://github.com/acme/web", "provider": "integrations:github"}`).expect(t, http.StatusCreated, nil)
	res := f.do("PUT", path, f.tok, `{"refs": [{"repository": "acme/web", "commit": "0123..4567"}]}`)
	res.expect(t, http.StatusOK, nil)
	got := commitFields(t, res)
	if got.CommitCount != 1 || got.LastCommit == nil || got.LastCommit.ID != "4567" ||
		got.LastCommit.Repository.Provider.ID != "integrations:github" {
		t.Errorf("after refs: %s", res.body)
	}
	// The legacy headCommits say the same.
	res = f.do("PUT", path, f.tok, `{"headCommits": [{"repository": "acme/web", "currentId": "89ab", "previousId": "4567"}]}`)
	res.expect(t, http.StatusOK, nil)
	if got := commitFields(t, res); got.CommitCount != 1 || got.LastCommit.ID != "89ab" {
		t.Errorf("after headCommits: %s", res.body)
	}
	// Commits and refs together: the commits are the list, the refs set
	// the heads.
	res = f.do("PUT", path, f.tok, `{"commits": [{"id": "c1", "repository": "acme/web"}, {"id": "c2", "repository": "acme/web"}],
		"refs": [{"repository": "acme/web", "commit": "c2"}]}`)
	res.expect(t, http.StatusOK, nil)
	if got := commitFields(t, res); got.CommitCount != 2 {
		t.Errorf("after commits and refs: %s", res.body)
	}
}

// TestReleaseCreateWithCommits: both create routes take commits, as
// Sentry's do; none is dropped.
func TestReleaseCreateWithCommits(t *testing.T) {
	f := newRelFixture(t)
	res := f.do("POST", "/api/0/organizations/acme/releases/", f.tok,
		`{"version": "1.0", "projects": ["web"], "commits": [{"id": "a1", "repository": "acme/web"}]}`)
	res.expect(t, http.StatusCreated, nil)
	if got := commitFields(t, res); got.CommitCount != 1 {
		t.Errorf("organization create: %s", res.body)
	}
	res = f.do("POST", "/api/0/projects/acme/api/releases/", f.tok,
		`{"version": "2.0", "commits": [{"id": "b1"}, {"id": "b2"}]}`)
	res.expect(t, http.StatusCreated, nil)
	if got := commitFields(t, res); got.CommitCount != 2 || got.LastCommit.Repository.Name != "organization-1" {
		t.Errorf("project create: %s", res.body)
	}
}

func TestPreviousReleaseWithCommits(t *testing.T) {
	f := newRelFixture(t)
	f.release(t, "1.0", "web")
	f.release(t, "2.0", "web")
	f.release(t, "3.0", "api")
	const prev = "/api/0/organizations/acme/releases/%s/previous-with-commits/"
	f.do("GET", strings.Replace(prev, "%s", "2.0", 1), f.tok, nil).expect(t, http.StatusOK, `{}`)
	f.do("PUT", "/api/0/organizations/acme/releases/1.0/", f.tok, `{"commits": [{"id": "a1", "repository": "r"}]}`).expect(t, http.StatusOK, nil)
	res := f.do("GET", strings.Replace(prev, "%s", "2.0", 1), f.tok, nil)
	res.expect(t, http.StatusOK, nil)
	if res.field(t, "version") != "1.0" || commitFields(t, res).LastCommit.ID != "a1" {
		t.Errorf("previous of 2.0: %s", res.body)
	}
	// 3.0 shares no project with 1.0; 1.0 is not its own previous.
	f.do("GET", strings.Replace(prev, "%s", "3.0", 1), f.tok, nil).expect(t, http.StatusOK, `{}`)
	f.do("GET", strings.Replace(prev, "%s", "1.0", 1), f.tok, nil).expect(t, http.StatusOK, `{}`)
	f.do("GET", strings.Replace(prev, "%s", "9.9", 1), f.tok, nil).expect(t, http.StatusNotFound, nil)
	f.do("GET", "/api/0/organizations/acme/releases/2.0/previous-with-commits/", f.outside, nil).expect(t, http.StatusNotFound, nil)
}

func TestReleaseCommitsValidation(t *testing.T) {
	f := newRelFixture(t)
	f.release(t, "1.0", "web")
	const path = "/api/0/organizations/acme/releases/1.0/"
	for body, want := range map[string]string{
		`{"commits": {}}`:         `{"detail":[{"type":"type_error","loc":["body","commits"],"msg":"Input should be a valid array"}]}`,
		`{"commits": [1]}`:        `{"detail":[{"type":"type_error","loc":["body","commits",0],"msg":"Input should be an object"}]}`,
		`{"commits": [{}]}`:       `{"detail":[{"type":"missing","loc":["body","commits",0,"id"],"msg":"Field required"}]}`,
		`{"commits": [{"id":1}]}`: `{"detail":[{"type":"type_error","loc":["body","commits",0,"id"],"msg":"Input should be a valid string"}]}`,
		`{"commits": [{"id": "` + strings.Repeat("a", 65) + `"}]}`:              `{"detail":[{"type":"value_error","loc":["body","commits",0,"id"],"msg":"String should have at most 64 characters"}]}`,
		`{"commits": [{"id": "a", "timestamp": "yesterday"}]}`:                  `{"detail":[{"type":"type_error","loc":["body","commits",0,"timestamp"],"msg":"Input should be a valid datetime"}]}`,
		`{"commits": [{"id": "a", "patch_set": [{"path": "x", "type": "X"}]}]}`: `{"detail":[{"type":"value_error","loc":["body","commits",0,"patch_set",0,"type"],"msg":"Input should be 'A', 'M' or 'D'"}]}`,
		`{"commits": [{"id": "a", "patch_set": [{"type": "A"}]}]}`:              `{"detail":[{"type":"missing","loc":["body","commits",0,"patch_set",0,"path"],"msg":"Field required"}]}`,
		`{"commits": [{"id": "a", "message": "x\u0000y"}]}`:                     `{"detail":[{"type":"value_error","loc":["body","commits",0,"message"],"msg":"Input should not contain NUL characters"}]}`,
		`{"refs": [{"commit": "a"}]}`:                                           `{"detail":[{"type":"missing","loc":["body","refs",0,"repository"],"msg":"Field required"}]}`,
		`{"refs": [{"repository": "r", "commit": ".."}]}`:                       `{"detail":[{"type":"value_error","loc":["body","refs",0,"commit"],"msg":"Input should be a commit of 1 to 64 characters"}]}`,
	} {
		f.do("PUT", path, f.tok, body).expect(t, http.StatusUnprocessableEntity, want)
	}
	// Nothing was stored by the refused bodies.
	if got := commitFields(t, f.do("GET", path, f.tok, nil)); got.CommitCount != 0 {
		t.Errorf("commit count after refused bodies: %d", got.CommitCount)
	}
}

func TestRepositories(t *testing.T) {
	f := newRelFixture(t)
	const path = "/api/0/organizations/acme/repos/"
	f.do("GET", path, f.tok, nil).expect(t, http.StatusOK, `[]`)
	res := f.do("POST", path, f.tok, `{"name": "acme/web", "url": "git@github.com:acme/web.git", "provider": "github"}`)
	res.expect(t, http.StatusCreated, nil)
	if res.field(t, "provider").(map[string]any)["name"] != "GitHub" || res.field(t, "status") != "active" {
		t.Errorf("created: %s", res.body)
	}
	f.do("POST", path, f.tok, `{"name": "acme/web"}`).expect(t, http.StatusConflict,
		`{"detail": "A repository with that name already exists"}`)
	f.do("POST", path, f.tok, `{"name": "acme/app", "provider": "svn"}`).expect(t, http.StatusUnprocessableEntity, nil)
	f.do("POST", path, f.tok, `{"name": "acme/app", "url": "file:///etc"}`).expect(t, http.StatusUnprocessableEntity, nil)
	f.do("POST", path, f.tok, `{"url": "https://x.io/a"}`).expect(t, http.StatusUnprocessableEntity,
		`{"detail":[{"type":"missing","loc":["body","name"],"msg":"Field required"}]}`)
	f.do("POST", path, f.tok, `{"name": "acme/app"}`).expect(t, http.StatusCreated, nil)
	if ids := commitsOf(t, f.do("GET", path+"?query=WEB", f.tok, nil)); len(ids) != 1 {
		t.Errorf("?query=WEB: %d repositories", len(ids))
	}
	if ids := commitsOf(t, f.do("GET", path+"?status=deleted", f.tok, nil)); len(ids) != 0 {
		t.Errorf("?status=deleted: %d repositories", len(ids))
	}
	f.do("GET", path+"?status=bogus", f.tok, nil).expect(t, http.StatusUnprocessableEntity, nil)
	// Another organization's member sees none of them.
	f.do("GET", path, f.outside, nil).expect(t, http.StatusNotFound, nil)
	f.do("GET", "/api/0/organizations/other/repos/", f.outside, nil).expect(t, http.StatusOK, `[]`)
	// A release token (project:releases) lists them: set-commits reads
	// them first. Creating one takes org:write.
	releases := f.token("owner@acme.io", "project:releases")
	f.do("GET", path, releases, nil).expect(t, http.StatusOK, nil)
	f.do("POST", path, releases, `{"name": "acme/x"}`).expect(t, http.StatusForbidden, nil)
}

// TestConcurrentSetCommits: releases of one organization set commits of
// the same authors, listed in different orders, at once; each gets them
// all (without the organization's lock, their writes deadlock).
func TestConcurrentSetCommits(t *testing.T) {
	f := newRelFixture(t)
	const n = 8
	commits := func(release int) []map[string]any {
		var list []map[string]any
		for i := range 20 {
			list = append(list, map[string]any{"id": fmt.Sprintf("c%02d", i), "repository": fmt.Sprintf("repo-%d", release),
				"author_email": fmt.Sprintf("dev%d@acme.io", i%10), "message": "m", "patch_set": []map[string]string{{"path": "f", "type": "M"}}})
		}
		return list
	}
	for i := range n {
		f.release(t, fmt.Sprintf("%d.0", i), "web")
	}
	var wg sync.WaitGroup
	results := make([]response, n)
	for i := range n {
		body := commits(i)
		rand.New(rand.NewPCG(uint64(i), 1)).Shuffle(len(body), func(a, b int) { body[a], body[b] = body[b], body[a] })
		wg.Go(func() {
			results[i] = f.do("PUT", fmt.Sprintf("/api/0/organizations/acme/releases/%d.0/", i), f.tok, map[string]any{"commits": body})
		})
	}
	wg.Wait()
	for i, res := range results {
		if res.status != http.StatusOK || commitFields(t, res).CommitCount != 20 || len(commitFields(t, res).Authors) != 10 {
			t.Errorf("release %d.0: %d %s", i, res.status, res.body)
		}
	}
}

// TestReleaseCommitsShape checks the fields Sentry's commit lists add: the
// releases that hold each commit (newest first, from errata's own
// records), no pull request and no suspect commit type.
func TestReleaseCommitsShape(t *testing.T) {
	f := newRelFixture(t)
	f.do("POST", "/api/0/organizations/acme/releases/", f.tok,
		`{"version": "1.0", "projects": ["web"], "ref": "v1", "commits": [{"id": "a1", "repository": "acme/web"}]}`).expect(t, http.StatusCreated, nil)
	f.do("POST", "/api/0/organizations/acme/releases/", f.tok,
		`{"version": "2.0", "projects": ["web"], "url": "https://example.com/2", "dateReleased": "2026-11-01T00:00:00Z",
		"commits": [{"id": "a1", "repository": "acme/web"}, {"id": "b2", "repository": "acme/web"}]}`).expect(t, http.StatusCreated, nil)
	f.do("POST", "/api/0/organizations/other/releases/", f.outside,
		`{"version": "9.0", "projects": ["site"], "commits": [{"id": "a1", "repository": "acme/web"}]}`).expect(t, http.StatusCreated, nil)
	type release struct {
		Version, ShortVersion, DateCreated string
		Ref, URL, DateReleased             *string
	}
	var commits []struct {
		ID                string
		PullRequest       *struct{}
		Releases          []release
		SuspectCommitType *string
	}
	for _, path := range []string{"/api/0/organizations/acme/releases/2.0/commits/", "/api/0/projects/acme/web/releases/2.0/commits/"} {
		res := f.do("GET", path, f.tok, nil)
		res.expect(t, http.StatusOK, nil)
		var raw []map[string]any
		json.Unmarshal(res.body, &raw)
		json.Unmarshal(res.body, &commits)
		if len(commits) != 2 || len(raw) != 2 {
			t.Fatalf("%s: %s", path, res.body)
		}
		got := map[string][]string{}
		for i, c := range commits {
			if v, ok := raw[i]["pullRequest"]; !ok || v != nil {
				t.Errorf("%s: commit %s pullRequest = %v (present %t)", path, c.ID, v, ok)
			}
			if c.SuspectCommitType == nil || *c.SuspectCommitType != "" {
				t.Errorf("%s: commit %s suspectCommitType = %v", path, c.ID, c.SuspectCommitType)
			}
			for _, r := range c.Releases {
				got[c.ID] = append(got[c.ID], r.Version)
				if r.ShortVersion != r.Version || r.DateCreated == "" {
					t.Errorf("%s: release %+v", path, r)
				}
				if r.Version == "2.0" && (r.URL == nil || *r.URL != "https://example.com/2" || r.DateReleased == nil || r.Ref != nil) {
					t.Errorf("%s: release %+v", path, r)
				}
			}
		}
		// Newest first; the other organization's release of a commit of
		// the same id is not this commit's.
		want := map[string][]string{"a1": {"2.0", "1.0"}, "b2": {"2.0"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: releases of each commit (-want +got):\n%s", path, diff)
		}
	}
}
