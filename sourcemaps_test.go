package main

import (
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
	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	s.token = s.user(t, "dev@example.com", "project:releases,project:read,project:write,org:read")
	s.cli(t, "admin", "create-org", "--slug", "acme", "--owner", "dev@example.com")
	s.cli(t, "admin", "create-project", "--org", "acme", "--slug", "web")
	cli2 := newSentryCLI(t, "SENTRY_CLI_2", s, "acme")
	cli3 := newSentryCLI(t, "SENTRY_CLI_3", s, "acme")
	want := []string{"~/app.min.js", "~/app.min.js.map"}

	t.Run("sentry-cli 2 uploads through the release assemble and lists and deletes files", func(t *testing.T) {
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
