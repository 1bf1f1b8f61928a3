package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"errata/store/storetest"
)

// uploadServer is the real program serving on a free local port.
type uploadServer struct {
	url   string
	token string
}

// startE2EServer migrates a fresh database, bootstraps a user, an
// organization "acme", a project "web" and a token with the admin CLI, and
// serves the API until the test ends.
func startE2EServer(t *testing.T) uploadServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	base := "http://" + addr
	dbURL := storetest.NewDatabase(t)
	env := map[string]string{
		"DATABASE_URL": dbURL,
		"ADDR":         addr,
		"PUBLIC_URL":   base,
		"SECRET_KEY":   "e2e-secret",
		"LOG_LEVEL":    "warn",
	}
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()
	admin := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(ctx, args, getenv, &out, &errOut); err != nil {
			t.Fatalf("errata %s: %v: %s", strings.Join(args, " "), err, errOut.String())
		}
		return strings.TrimSpace(out.String())
	}
	admin("migrate")
	admin("admin", "create-user", "--email", "dev@example.com", "--name", "Dev")
	admin("admin", "create-org", "--slug", "acme", "--owner", "dev@example.com")
	admin("admin", "create-project", "--org", "acme", "--slug", "web")
	token := admin("admin", "create-token", "--email", "dev@example.com",
		"--scopes", "project:releases,project:read,project:write,org:read")

	serveCtx, stop := context.WithCancel(ctx)
	logs := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(serveCtx, []string{"serve"}, getenv, logs, logs) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		res, err := http.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not come up: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return uploadServer{url: base, token: token}
}

// sentryCLIBinary returns the binary the environment variable env names; the
// test fails without it.
func sentryCLIBinary(t *testing.T, env string) string {
	t.Helper()
	bin := os.Getenv(env)
	if bin == "" {
		t.Fatalf("%s is not set: run the tests with ./dev.sh test, which installs sentry-cli", env)
	}
	return bin
}

// cli runs sentry-cli against s in dir and returns its standard output.
func (s uploadServer) cli(t *testing.T, bin, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{
		"HOME=" + dir,
		"PATH=" + os.Getenv("PATH"),
		"SENTRY_URL=" + s.url,
		"SENTRY_AUTH_TOKEN=" + s.token,
		"SENTRY_ORG=acme",
		"SENTRY_PROJECT=web",
		"SENTRY_LOG_LEVEL=debug",
		"SENTRY_DISABLE_UPDATE_CHECK=true",
		"SENTRYCLI_SKIP_DOWNLOAD=1",
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sentry-cli %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	if testing.Verbose() {
		t.Logf("sentry-cli %s:\n%s", strings.Join(args, " "), stderr.String())
	}
	return stdout.String()
}

// get fetches path from the API as JSON into v.
func (s uploadServer) get(t *testing.T, path string, v any) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, res.Status)
	}
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

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
func (s uploadServer) waitForFiles(t *testing.T, version string, want []string) []e2eFile {
	t.Helper()
	var files []e2eFile
	for deadline := time.Now().Add(20 * time.Second); ; {
		files = nil
		s.get(t, "/api/0/organizations/acme/releases/"+version+"/files/", &files)
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
	cli2 := sentryCLIBinary(t, "SENTRY_CLI_2")
	cli3 := sentryCLIBinary(t, "SENTRY_CLI_3")
	s := startE2EServer(t)
	want := []string{"~/app.min.js", "~/app.min.js.map"}

	t.Run("sentry-cli 2 uploads through the release assemble and lists and deletes files", func(t *testing.T) {
		dir := t.TempDir()
		writeApp(t, dir)
		s.cli(t, cli2, dir, "sourcemaps", "upload", "--release", "1.0.0", ".")
		files := s.waitForFiles(t, "1.0.0", want)
		for _, f := range files {
			if f.Name == "~/app.min.js" && header(f.Headers, "Sourcemap") != "app.min.js.map" {
				t.Errorf("headers of %s = %v, want Sourcemap: app.min.js.map", f.Name, f.Headers)
			}
		}

		out := s.cli(t, cli2, dir, "releases", "files", "1.0.0", "list")
		checkFileTable(t, out)

		s.cli(t, cli2, dir, "releases", "files", "1.0.0", "delete", "~/app.min.js.map")
		s.waitForFiles(t, "1.0.0", []string{"~/app.min.js"})
	})

	t.Run("sentry-cli 3 uploads an artifact bundle whose files appear in the release", func(t *testing.T) {
		dir := t.TempDir()
		writeApp(t, dir)
		s.cli(t, cli3, dir, "sourcemaps", "upload", "--release", "2.0.0", "--wait", ".")
		files := s.waitForFiles(t, "2.0.0", want)
		for _, f := range files {
			if f.Name == "~/app.min.js" && header(f.Headers, "Sourcemap") != "app.min.js.map" {
				t.Errorf("headers of %s = %v, want a Sourcemap header", f.Name, f.Headers)
			}
		}
		out := s.cli(t, cli2, dir, "releases", "files", "2.0.0", "list")
		checkFileTable(t, out)
	})
}
