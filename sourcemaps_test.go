package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeApp writes a minified script and its source map into dir.
func writeApp(t *testing.T, dir string) {
	t.Helper()
	js := "function hello(n){console.log(\"hello \"+n)}hello(\"world\");\n//# sourceMappingURL=app.min.js.map\n"
	sourceMap := `{"version":3,"file":"app.min.js","sources":["app.js"],` +
		`"sourcesContent":["function hello(name) {\n  console.log('hello ' + name);\n}\nhello('world');\n"],` +
		`"names":["hello","name","console","log"],"mappings":"AAAA,SAASA,MAAMC,GACbC,QAAQC,IAAI,SAAWF,GAEzBD,MAAM"}`
	for name, content := range map[string]string{"app.min.js": js, "app.min.js.map": sourceMap} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type e2eFile struct {
	ID      string            `json:"id"`
	Name    string            `json:"name"`
	Headers map[string]string `json:"headers"`
}

// waitForFiles polls the release's file list until it has want names.
func waitForFiles(t *testing.T, s *errataServer, version string, want []string) []e2eFile {
	t.Helper()
	var files []e2eFile
	for deadline := time.Now().Add(20 * time.Second); ; {
		files = nil
		if status := s.getJSON(t, "/api/0/organizations/acme/releases/"+version+"/files/", &files); status != http.StatusOK {
			t.Fatalf("GET files of %s: %d", version, status)
		}
		var names []string
		for _, f := range files {
			names = append(names, f.Name)
		}
		slices.Sort(names)
		if slices.Equal(names, want) {
			return files
		}
		if time.Now().After(deadline) {
			t.Fatalf("release %s has files %q, want %q", version, names, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// header returns the value of the header name, in any case.
func header(headers map[string]string, name string) string {
	for k, v := range headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// fileTableRows are the rows that `releases files V list` must print: both
// files, the script with its source map in the Source Map column.
var fileTableRows = []*regexp.Regexp{
	regexp.MustCompile(`(?m)^\|\s*Name\s*\|\s*Distribution\s*\|\s*Source Map\s*\|`),
	regexp.MustCompile(`(?m)^\|\s*~/app\.min\.js\s*\|\s*\|\s*app\.min\.js\.map\s*\|`),
	regexp.MustCompile(`(?m)^\|\s*~/app\.min\.js\.map\s*\|`),
}

func checkFileTable(t *testing.T, out string) {
	t.Helper()
	for _, re := range fileTableRows {
		if !re.MatchString(out) {
			t.Errorf("releases files list has no line matching %s:\n%s", re, out)
		}
	}
}

func TestSourcemapsEndToEnd(t *testing.T) {
	t.Parallel()
	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	s.token = s.user(t, "dev@example.com", "project:releases,project:read,project:write,org:read")
	s.cli(t, "admin", "create-org", "--slug", "acme", "--owner", "dev@example.com")
	s.cli(t, "admin", "create-project", "--org", "acme", "--slug", "web")
	cli2 := newSentryCLI(t, "SENTRY_CLI_2", s, "acme")
	cli3 := newSentryCLI(t, "SENTRY_CLI_3", s, "acme")
	want := []string{"~/app.min.js", "~/app.min.js.map"}

	t.Run("sentry-cli 2 uploads an artifact bundle of a release and lists and deletes files", func(t *testing.T) {
		cli2 := cli2.in(t.TempDir())
		writeApp(t, cli2.home)
		cli2.run(t, "sourcemaps", "upload", "--release", "1.0.0", ".").expect(t, 0)
		files := waitForFiles(t, s, "1.0.0", want)
		for _, f := range files {
			if f.Name == "~/app.min.js" && header(f.Headers, "Sourcemap") != "app.min.js.map" {
				t.Errorf("headers of %s = %v, want Sourcemap: app.min.js.map", f.Name, f.Headers)
			}
		}

		out := cli2.run(t, "releases", "files", "1.0.0", "list")
		out.expect(t, 0)
		checkFileTable(t, out.stdout)

		cli2.run(t, "releases", "files", "1.0.0", "delete", "~/app.min.js.map").expect(t, 0)
		waitForFiles(t, s, "1.0.0", []string{"~/app.min.js"})

		// delete --all, with a project and without one.
		cli2.run(t, "releases", "files", "1.0.0", "delete", "--all").expect(t, 0, "All files deleted.")
		waitForFiles(t, s, "1.0.0", []string{})
		cli2.run(t, "sourcemaps", "upload", "--release", "1.0.0", ".").expect(t, 0)
		waitForFiles(t, s, "1.0.0", want)
		cli2.withoutProject().run(t, "releases", "files", "1.0.0", "delete", "--all").expect(t, 0, "All files deleted.")
		waitForFiles(t, s, "1.0.0", []string{})
	})

	t.Run("sentry-cli 3 uploads an artifact bundle whose files appear in the release", func(t *testing.T) {
		cli3 := cli3.in(t.TempDir())
		writeApp(t, cli3.home)
		cli3.run(t, "sourcemaps", "upload", "--release", "2.0.0", "--wait", ".").expect(t, 0)
		files := waitForFiles(t, s, "2.0.0", want)
		for _, f := range files {
			if f.Name == "~/app.min.js" && header(f.Headers, "Sourcemap") != "app.min.js.map" {
				t.Errorf("headers of %s = %v, want a Sourcemap header", f.Name, f.Headers)
			}
		}
		out := cli2.run(t, "releases", "files", "2.0.0", "list")
		out.expect(t, 0)
		checkFileTable(t, out.stdout)
	})
}

// debugIDOf returns the debug id that `sentry-cli sourcemaps inject` wrote
// into a script.
func debugIDOf(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^//# debugId=([0-9a-fA-F-]{36})`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no debugId comment:\n%s", path, b)
	}
	return strings.ToLower(string(m[1]))
}

// lookupEntry is an answer of artifact-lookup.
type lookupEntry struct {
	ID       string `json:"id"`
	URL      string `json:"url"`
	AbsPath  string `json:"abs_path"`
	BundleID string `json:"bundleId"`
	DebugID  string `json:"debugId"`
	SHA1     string `json:"sha1"`
}

// TestDebugIDSourcemapsEndToEnd runs Sentry's recommended flow with the real
// sentry-cli 2.x and 3.x: sourcemaps inject, then sourcemaps upload without
// a release. The files must be findable by their debug id, download as
// they were injected, and a second upload of the same files must send no
// chunk and store nothing.
func TestDebugIDSourcemapsEndToEnd(t *testing.T) {
	t.Parallel()
	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	s.token = s.user(t, "dev@example.com", "project:releases,project:read,project:write,org:read")
	for _, tc := range []struct{ env, org string }{{"SENTRY_CLI_2", "acme2"}, {"SENTRY_CLI_3", "acme3"}} {
		t.Run(tc.env, func(t *testing.T) {
			s.cli(t, "admin", "create-org", "--slug", tc.org, "--owner", "dev@example.com")
			s.cli(t, "admin", "create-project", "--org", tc.org, "--slug", "web")
			cli := newSentryCLI(t, tc.env, s, tc.org).in(t.TempDir())
			writeApp(t, cli.home)
			cli.run(t, "sourcemaps", "inject", ".").expect(t, 0)
			debugID := debugIDOf(t, filepath.Join(cli.home, "app.min.js"))

			cli.run(t, "sourcemaps", "upload", "--project", "web", "--wait", ".").expect(t, 0)
			var found []lookupEntry
			lookup := "/api/0/projects/" + tc.org + "/web/artifact-lookup/?debug_id=" + debugID
			if status := s.getJSON(t, lookup, &found); status != http.StatusOK || len(found) != 2 {
				t.Fatalf("artifact-lookup: %d %+v, want the script and its map", status, found)
			}
			for _, f := range found {
				local, err := os.ReadFile(filepath.Join(cli.home, filepath.Base(strings.TrimPrefix(f.AbsPath, "~/"))))
				if err != nil {
					t.Fatalf("%s: %v", f.AbsPath, err)
				}
				req, _ := http.NewRequest("GET", f.URL, nil)
				req.Header.Set("Authorization", "Bearer "+s.token)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK || !bytes.Equal(body, local) {
					t.Errorf("download %s: %d %q, want the injected file %q", f.AbsPath, res.StatusCode, body, local)
				}
			}
			var bundles []struct {
				BundleID  string `json:"bundleId"`
				FileCount int    `json:"fileCount"`
			}
			if status := s.getJSON(t, "/api/0/projects/"+tc.org+"/web/files/artifact-bundles/?query="+debugID, &bundles); status != http.StatusOK ||
				len(bundles) != 1 || bundles[0].BundleID != found[0].BundleID {
				t.Errorf("artifact bundles with debug id %s: %d %+v", debugID, status, bundles)
			}

			// The same files again: sentry-cli asks which chunks are
			// missing, sends none, and nothing new is stored.
			blobs := s.count(t, `SELECT count(*) FROM blobs`)
			out := cli.run(t, "sourcemaps", "upload", "--project", "web", "--wait", ".")
			out.expect(t, 0)
			if !strings.Contains(out.stdout+out.stderr, "Nothing to upload") {
				t.Errorf("second upload sent chunks:\n%s\n%s", out.stdout, out.stderr)
			}
			if n := s.count(t, `SELECT count(*) FROM blobs`); n != blobs {
				t.Errorf("%d blobs after the second upload, want %d", n, blobs)
			}
		})
	}
}

// TestSentryCLI1UsesTheReleaseAssemble uploads files with sentry-cli
// 1.77.2 and no project: then it assembles through the spec's
// releases/{version}/assemble/, as every client before artifact bundles.
// With a project, 1.77.2 too uploads artifact bundles.
func TestSentryCLI1UsesTheReleaseAssemble(t *testing.T) {
	t.Parallel()
	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	s.token = s.user(t, "dev@example.com", "project:releases,project:read,project:write,org:read")
	s.cli(t, "admin", "create-org", "--slug", "acme", "--owner", "dev@example.com")
	s.cli(t, "admin", "create-project", "--org", "acme", "--slug", "web")
	cli := newSentryCLI(t, "SENTRY_CLI_1", s, "acme").in(t.TempDir())
	if out := cli.run(t, "--version"); !strings.Contains(out.stdout, "1.77.2") {
		t.Fatalf("%s is not sentry-cli 1.77.2: %q", cli.bin, out.stdout)
	}
	writeApp(t, cli.home)
	releaseAssemblies := func() int {
		return s.count(t, `SELECT count(*) FROM jobs WHERE kind = 'assemble' AND payload->>'waitForChunks' = 'true'`)
	}
	download := func(t *testing.T, version string, files []e2eFile) {
		t.Helper()
		for _, f := range files {
			local, _ := os.ReadFile(filepath.Join(cli.home, strings.TrimPrefix(f.Name, "~/")))
			status, body := s.api(t, "GET", "/api/0/organizations/acme/releases/"+version+"/files/"+f.ID+"/?download=1", nil)
			if status != http.StatusOK || !bytes.Equal(body, local) {
				t.Errorf("download %s: %d %q, want %q", f.Name, status, body, local)
			}
		}
	}

	t.Run("without a project through the release assemble", func(t *testing.T) {
		cli.run(t, "releases", "new", "3.0.0").expect(t, 0)
		cli.withoutProject().run(t, "releases", "files", "3.0.0", "upload", "--wait", ".").expect(t, 0)
		if n := releaseAssemblies(); n != 1 {
			t.Errorf("%d assemblies through the release endpoint, want 1", n)
		}
		download(t, "3.0.0", waitForFiles(t, s, "3.0.0", []string{"~/app.min.js", "~/app.min.js.map"}))
	})
	t.Run("with a project as an artifact bundle", func(t *testing.T) {
		cli.run(t, "releases", "new", "3.0.1").expect(t, 0)
		cli.run(t, "releases", "files", "3.0.1", "upload-sourcemaps", "--wait", ".").expect(t, 0)
		if n := releaseAssemblies(); n != 1 {
			t.Errorf("%d assemblies through the release endpoint, want still 1", n)
		}
		download(t, "3.0.1", waitForFiles(t, s, "3.0.1", []string{"~/app.min.js", "~/app.min.js.map"}))
		out := cli.run(t, "releases", "files", "3.0.1", "list")
		out.expect(t, 0)
		checkFileTable(t, out.stdout)
	})
}
