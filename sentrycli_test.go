package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSentryCLI drives sentry-cli 2.x and 3.x against the real program:
// releases, deploys and the environments a deploy brings into being.
func TestSentryCLI(t *testing.T) {
	t.Parallel()
	bins := []struct{ env, name string }{{"SENTRY_CLI_2", "2.58.6"}, {"SENTRY_CLI_3", "3.8.0"}}
	for _, b := range bins {
		if os.Getenv(b.env) == "" {
			t.Fatalf("%s is not set: run the tests with ./dev.sh test, which installs sentry-cli %s and sets it", b.env, b.name)
		}
	}
	srv := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	srv.token = srv.user(t, "owner@e2e.io", "project:releases,project:read,org:read")
	for i, b := range bins {
		t.Run(b.name, func(t *testing.T) {
			c := newSentryCLI(t, b.env, srv, fmt.Sprintf("cli%d", i+2))
			if out := c.run(t, "--version"); !strings.Contains(out.stdout, b.name) {
				t.Fatalf("%s is not sentry-cli %s: %q", c.bin, b.name, out.stdout)
			}
			srv.cli(t, "admin", "create-org", "--slug", c.org, "--owner", "owner@e2e.io")
			srv.cli(t, "admin", "create-project", "--org", c.org, "--slug", "web", "--name", "Web")
			for _, path := range []string{
				"/api/0/organizations/" + c.org + "/environments/?visibility=all",
				"/api/0/projects/" + c.org + "/web/environments/?visibility=all",
			} {
				var envs []any
				if status := srv.getJSON(t, path, &envs); status != http.StatusOK || len(envs) != 0 {
					t.Fatalf("GET %s before any deploy: %d %v, want []", path, status, envs)
				}
			}
			for _, version := range []string{"1.0." + fmt.Sprint(i), "my.app@1.2.3+build." + fmt.Sprint(i)} {
				t.Run(version, func(t *testing.T) { driveRelease(t, c, srv, version) })
			}
		})
	}
}

// driveRelease runs one release through its life with sentry-cli.
func driveRelease(t *testing.T, c sentryCLI, srv *errataServer, version string) {
	encoded := strings.ReplaceAll(version, "+", "%2B")
	releasePath := "/api/0/organizations/" + c.org + "/releases/" + encoded + "/"

	c.run(t, "releases", "new", version).expect(t, 0, "Created release "+version)
	c.run(t, "releases", "new", version).expect(t, 0, "Created release "+version)
	var got map[string]any
	if status := srv.getJSON(t, releasePath, &got); status != http.StatusOK {
		t.Fatalf("GET release: %d", status)
	}
	if got["version"] != version || got["dateReleased"] != nil {
		t.Errorf("after new: version %v, dateReleased %v", got["version"], got["dateReleased"])
	}
	if diff := cmp.Diff([]any{map[string]any{"id": got["projects"].([]any)[0].(map[string]any)["id"], "slug": "web", "name": "Web",
		"newGroups": 0.0, "platform": nil, "platforms": []any{}, "hasHealthData": false}}, got["projects"]); diff != "" {
		t.Errorf("projects (-want +got):\n%s", diff)
	}

	list := c.run(t, "releases", "list")
	list.expect(t, 0, "Released", "Version")
	if l := list.line(t, version); !strings.Contains(l, "(unreleased)") {
		t.Errorf("list before finalize: %q, want (unreleased)", l)
	}
	c.run(t, "releases", "info", version).expect(t, 0, version, "Date created")

	c.run(t, "releases", "finalize", version).expect(t, 0, "Finalized release "+version)
	var rel map[string]any
	if srv.getJSON(t, releasePath, &rel); rel["dateReleased"] == nil {
		t.Errorf("dateReleased is null after finalize: %v", rel)
	}
	if l := c.run(t, "releases", "list").line(t, version); strings.Contains(l, "(unreleased)") {
		t.Errorf("list after finalize: %q", l)
	}

	c.run(t, "deploys", "new", "-r", version, "-e", "production").
		expect(t, 0, "Created new deploy unnamed for 'production'")
	deploys := c.run(t, "deploys", "list", "-r", version)
	deploys.expect(t, 0, "Environment")
	if l := deploys.line(t, "production"); !strings.Contains(l, "unnamed") {
		t.Errorf("deploys list: %q", l)
	}
	if srv.getJSON(t, releasePath, &rel); rel["deployCount"] != float64(1) {
		t.Errorf("deployCount after deploy: %v", rel)
	}
	for _, path := range []string{
		"/api/0/organizations/" + c.org + "/environments/",
		"/api/0/projects/" + c.org + "/web/environments/",
	} {
		var envs []map[string]any
		if status := srv.getJSON(t, path, &envs); status != http.StatusOK || len(envs) != 1 || envs[0]["name"] != "production" {
			t.Errorf("GET %s after deploy: %d %v, want production once", path, status, envs)
		}
	}

	c.run(t, "releases", "delete", version).expect(t, 0, "Deleted release "+version+"!")
	// sentry-cli treats a 404 on delete as success with a notice.
	c.run(t, "releases", "delete", version).
		expect(t, 0, "Did nothing. Release with this version ("+version+") does not exist.")
	if status, _ := srv.api(t, "GET", releasePath, nil); status != http.StatusNotFound {
		t.Errorf("GET deleted release: %d", status)
	}
	if res := c.run(t, "releases", "info", version); res.code == 0 {
		t.Errorf("releases info of a deleted release exited 0:\n%s", res.stdout)
	}
}

// TestSentryCLIListsOrganizationsAndProjects runs `organizations list` and
// `projects list` of sentry-cli 2.x and 3.x: each prints the caller's
// organizations, and the organization's projects, and nothing of another.
func TestSentryCLIListsOrganizationsAndProjects(t *testing.T) {
	t.Parallel()
	srv := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	srv.token = srv.user(t, "owner@lists.io", "project:releases,project:read,org:read")
	srv.cli(t, "admin", "create-org", "--slug", "lists-acme", "--name", "Acme Lists", "--owner", "owner@lists.io")
	srv.cli(t, "admin", "create-project", "--org", "lists-acme", "--slug", "web", "--name", "Web")
	srv.cli(t, "admin", "create-project", "--org", "lists-acme", "--slug", "mobile", "--name", "Mobile")
	srv.user(t, "other@lists.io", "org:read")
	srv.cli(t, "admin", "create-org", "--slug", "lists-other", "--owner", "other@lists.io")
	for _, b := range []string{"SENTRY_CLI_2", "SENTRY_CLI_3"} {
		t.Run(b, func(t *testing.T) {
			c := newSentryCLI(t, b, srv, "lists-acme")
			out := c.run(t, "organizations", "list")
			out.expect(t, 0, "Acme Lists", "lists-acme")
			if strings.Contains(out.stdout, "lists-other") {
				t.Errorf("organizations list shows another organization:\n%s", out.stdout)
			}
			out = c.run(t, "projects", "list")
			out.expect(t, 0, "web", "mobile")
		})
	}
}

// TestSentryCLIArchivesAndRestoresReleases runs `releases archive` and
// `releases restore` of sentry-cli 2.x and 3.x and checks the release's
// status, and which list shows it, through the API.
func TestSentryCLIArchivesAndRestoresReleases(t *testing.T) {
	t.Parallel()
	srv := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	srv.token = srv.user(t, "owner@archive.io", "project:releases,project:read,org:read")
	srv.cli(t, "admin", "create-org", "--slug", "archive-acme", "--owner", "owner@archive.io")
	srv.cli(t, "admin", "create-project", "--org", "archive-acme", "--slug", "web")
	status := func(t *testing.T, version string) string {
		t.Helper()
		var rel struct{ Status string }
		if code := srv.getJSON(t, "/api/0/organizations/archive-acme/releases/"+version+"/", &rel); code != http.StatusOK {
			t.Fatalf("GET release %s: %d", version, code)
		}
		return rel.Status
	}
	listed := func(t *testing.T, query, version string) bool {
		t.Helper()
		var rels []struct{ Version string }
		if code := srv.getJSON(t, "/api/0/organizations/archive-acme/releases/"+query, &rels); code != http.StatusOK {
			t.Fatalf("list %s: %d", query, code)
		}
		for _, r := range rels {
			if r.Version == version {
				return true
			}
		}
		return false
	}
	for i, b := range []string{"SENTRY_CLI_2", "SENTRY_CLI_3"} {
		t.Run(b, func(t *testing.T) {
			c := newSentryCLI(t, b, srv, "archive-acme")
			version := fmt.Sprintf("4.0.%d", i)
			c.run(t, "releases", "new", version).expect(t, 0)
			if got := status(t, version); got != "open" {
				t.Fatalf("a new release is %q, want open", got)
			}
			c.run(t, "releases", "archive", version).expect(t, 0)
			if got := status(t, version); got != "archived" {
				t.Errorf("after archive: %q, want archived", got)
			}
			if listed(t, "", version) || !listed(t, "?status=archived", version) {
				t.Errorf("an archived release is listed by default, or not with ?status=archived")
			}
			c.run(t, "releases", "restore", version).expect(t, 0)
			if got := status(t, version); got != "open" {
				t.Errorf("after restore: %q, want open", got)
			}
			if !listed(t, "", version) {
				t.Errorf("a restored release is not listed")
			}
		})
	}
}

// TestSentryCLINamesByID runs `releases new -p <project id>` and
// `releases list -o <organization id>` of sentry-cli 2.x and 3.x: Sentry
// takes an id wherever it takes a slug, and so does errata.
func TestSentryCLINamesByID(t *testing.T) {
	t.Parallel()
	srv := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	srv.token = srv.user(t, "owner@ids.io", "project:releases,project:read,org:read")
	orgID := srv.cli(t, "admin", "create-org", "--slug", "ids-acme", "--owner", "owner@ids.io")
	projectID := srv.cli(t, "admin", "create-project", "--org", "ids-acme", "--slug", "web")
	for i, b := range []string{"SENTRY_CLI_2", "SENTRY_CLI_3"} {
		t.Run(b, func(t *testing.T) {
			c := newSentryCLI(t, b, srv, "ids-acme")
			c.project = ""
			version := fmt.Sprintf("5.0.%d", i)
			c.run(t, "releases", "new", "-p", projectID, version).expect(t, 0)
			var rel struct {
				Projects []struct{ Slug string }
			}
			if code := srv.getJSON(t, "/api/0/organizations/ids-acme/releases/"+version+"/", &rel); code != http.StatusOK ||
				len(rel.Projects) != 1 || rel.Projects[0].Slug != "web" {
				t.Errorf("release %s after new -p %s: %d %+v, want linked to web", version, projectID, code, rel)
			}
			c.org = orgID
			c.run(t, "releases", "list", "-o", orgID).expect(t, 0, version)
		})
	}
}

// TestSentryCLISetsCommits runs sentry-cli's commit commands as CI
// pipelines do, in a git repository whose origin is a GitHub URL, and
// checks through the API what each stored: --auto with the repository
// registered (a ref to HEAD), --local (the commits since the previous
// release's last one), --commit with a range, --clear, repos list and
// releases info --show-commits.
func TestSentryCLISetsCommits(t *testing.T) {
	t.Parallel()
	srv := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	for i, b := range []string{"SENTRY_CLI_1", "SENTRY_CLI_2", "SENTRY_CLI_3"} {
		t.Run(b, func(t *testing.T) {
			org := fmt.Sprintf("commits-%d", i)
			owner := fmt.Sprintf("owner@%s.io", org)
			srv.token = srv.user(t, owner, "project:releases,project:read,org:read,org:write")
			srv.cli(t, "admin", "create-org", "--slug", org, "--owner", owner)
			srv.cli(t, "admin", "create-project", "--org", org, "--slug", "web")
			c := newSentryCLI(t, b, srv, org).in(t.TempDir())
			git := func(args ...string) string {
				t.Helper()
				cmd := exec.Command("git", args...)
				cmd.Dir = c.home
				cmd.Env = append(os.Environ(), "HOME="+c.home, "GIT_AUTHOR_DATE=2026-11-20T10:00:00Z")
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("git %v: %v %s", args, err, out)
				}
				return strings.TrimSpace(string(out))
			}
			commit := func(file, message string) string {
				t.Helper()
				os.WriteFile(filepath.Join(c.home, file), []byte(message), 0o644)
				git("add", file)
				git("commit", "-q", "-m", message)
				return git("rev-parse", "HEAD")
			}
			git("init", "-q")
			git("config", "user.email", "dev@commits.io")
			git("config", "user.name", "Dev Eloper")
			git("remote", "add", "origin", "https://github.com/acme/web.git")
			first := commit("a.txt", "first")

			type releaseCommits struct {
				CommitCount int `json:"commitCount"`
				LastCommit  *struct {
					ID string `json:"id"`
				} `json:"lastCommit"`
			}
			read := func(version string) (releaseCommits, []string) {
				t.Helper()
				var rel releaseCommits
				if status := srv.getJSON(t, "/api/0/organizations/"+org+"/releases/"+version+"/", &rel); status != http.StatusOK {
					t.Fatalf("get %s: %d", version, status)
				}
				var list []struct {
					ID      string `json:"id"`
					Message string `json:"message"`
					Author  struct {
						Email string `json:"email"`
					} `json:"author"`
				}
				if status := srv.getJSON(t, "/api/0/organizations/"+org+"/releases/"+version+"/commits/", &list); status != http.StatusOK {
					t.Fatalf("commits of %s: %d", version, status)
				}
				var ids []string
				for _, c := range list {
					ids = append(ids, c.ID)
					if c.Author.Email != "dev@commits.io" && c.Message != "" {
						t.Errorf("commit %s of %s: author %q", c.ID, version, c.Author.Email)
					}
				}
				return rel, ids
			}

			// --auto with the repository registered: a ref to HEAD.
			status, body := srv.api(t, "POST", "/api/0/organizations/"+org+"/repos/",
				map[string]any{"name": "acme/web", "url": "https://github.com/acme/web", "provider": "integrations:github"})
			if status != http.StatusCreated {
				t.Fatalf("create the repository: %d %s", status, body)
			}
			c.run(t, "repos", "list").expect(t, 0, "acme/web")
			c.run(t, "releases", "new", "1.0").expect(t, 0)
			c.run(t, "releases", "set-commits", "1.0", "--auto").expect(t, 0)
			if rel, ids := read("1.0"); rel.CommitCount != 1 || rel.LastCommit == nil || rel.LastCommit.ID != first ||
				!slices.Equal(ids, []string{first}) {
				t.Errorf("after --auto: %+v %v, want HEAD %s", rel, ids, first)
			}

			// --local: the commits since 1.0's last commit.
			second := commit("b.txt", "second")
			third := commit("a.txt", "third")
			c.run(t, "releases", "new", "2.0").expect(t, 0)
			c.run(t, "releases", "set-commits", "2.0", "--local").expect(t, 0, "Success")
			if rel, ids := read("2.0"); rel.CommitCount != 2 || !slices.Equal(ids, []string{third, second}) {
				t.Errorf("after --local: %+v %v, want %s and %s", rel, ids, third, second)
			}
			c.run(t, "releases", "info", "2.0", "--show-commits").expect(t, 0, third[:12], second[:12])
			var changes []struct {
				Filename string `json:"filename"`
				Type     string `json:"type"`
			}
			if status := srv.getJSON(t, "/api/0/organizations/"+org+"/releases/2.0/commitfiles/", &changes); status != http.StatusOK {
				t.Fatalf("commitfiles of 2.0: %d", status)
			}
			var files []string
			for _, fc := range changes {
				files = append(files, fc.Type+" "+fc.Filename)
			}
			slices.Sort(files) // the commits share a date: their order is not set
			if !slices.Equal(files, []string{"A b.txt", "M a.txt"}) {
				t.Errorf("commitfiles of 2.0: %v", files)
			}

			// --commit with a range names the head; --clear clears.
			c.run(t, "releases", "new", "3.0").expect(t, 0)
			c.run(t, "releases", "set-commits", "3.0", "--commit", "acme/web@"+first+".."+third).expect(t, 0)
			if rel, ids := read("3.0"); rel.CommitCount != 1 || !slices.Equal(ids, []string{third}) {
				t.Errorf("after --commit: %+v %v", rel, ids)
			}
			c.run(t, "releases", "set-commits", "3.0", "--clear").expect(t, 0)
			if rel, ids := read("3.0"); rel.CommitCount != 0 || rel.LastCommit != nil || len(ids) != 0 {
				t.Errorf("after --clear: %+v %v", rel, ids)
			}
			// A repository errata does not have fails loudly.
			if out := c.run(t, "releases", "set-commits", "3.0", "--commit", "acme/nope@"+third); out.code == 0 {
				t.Errorf("--commit with an unknown repository exited 0: %s %s", out.stdout, out.stderr)
			}
		})
	}
}
