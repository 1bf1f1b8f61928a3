package main

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// This file tests what operating errata needs: the static binary that
// ./dev.sh test builds as the Dockerfile does, its version, the healthcheck
// command and the metrics listener.

// requireEnv returns the environment variable that ./dev.sh test sets, and
// fails the test without it.
func requireEnv(t *testing.T, name, what string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: run the tests with ./dev.sh test, which %s", name, what)
	}
	return v
}

func TestStaticBinary(t *testing.T) {
	t.Parallel()
	bin := requireEnv(t, "ERRATA_BIN", "builds the static binary")
	want := requireEnv(t, "ERRATA_VERSION", "stamps the static binary with it")

	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("errata version printed %q, want the stamp %q", got, want)
	}

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary has a %s program header: it is not static", p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary imports libraries %v (%v)", libs, err)
	}
	if fi, err := os.Stat(bin); err == nil {
		t.Logf("static binary: %d bytes (%.1f MiB)", fi.Size(), float64(fi.Size())/(1<<20))
	}

	// -trimpath: no path of the machine that built it.
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if bytes.Contains(data, []byte(wd+"/")) {
		t.Errorf("the binary holds the build folder %s: was it built with -trimpath?", wd)
	}
}

// buildCommand returns the go build command of a file's line that runs it,
// with its output path and version variable taken out, so that the
// Dockerfile's and dev.sh's can be compared.
func buildCommand(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for l := range strings.Lines(string(b)) {
		i := strings.Index(l, "CGO_ENABLED=0 go build")
		if i < 0 {
			continue
		}
		cmd := regexp.MustCompile(`-o \S+ `).ReplaceAllString(strings.TrimSpace(l[i:]), "-o OUT ")
		cmd = regexp.MustCompile(`\$\{?[A-Z_]+\}?`).ReplaceAllLiteralString(cmd, "$VERSION")
		found = append(found, cmd)
	}
	if len(found) != 1 {
		t.Fatalf("%s has %d static go build lines, want 1: %q", file, len(found), found)
	}
	return found[0]
}

func TestDockerfileBuildsAsDevShTest(t *testing.T) {
	t.Parallel()
	docker, dev := buildCommand(t, "Dockerfile"), buildCommand(t, "dev.sh")
	if docker != dev {
		t.Errorf("the Dockerfile builds with\n\t%s\nbut dev.sh test with\n\t%s", docker, dev)
	}
	for _, flag := range []string{"-trimpath", "-X main.version=$VERSION"} {
		if !strings.Contains(dev, flag) {
			t.Errorf("the static build lacks %s: %s", flag, dev)
		}
	}

	// The builder image is the Go release of go.mod's go line.
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	dockerfile, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	from := regexp.MustCompile(`(?m)^FROM golang:(\S+) AS build$`).FindSubmatch(dockerfile)
	if goLine == nil || from == nil || string(from[1]) != string(goLine[1]) {
		t.Errorf("the Dockerfile builds with golang:%s, go.mod says go %s", from, goLine)
	}
}

func TestVersionCommandPrintsTheBuildVersion(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, func(string) string { return "" }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), buildVersion()+"\n"; got != want {
		t.Errorf("errata version printed %q, want %q", got, want)
	}
}

func TestVersionOf(t *testing.T) {
	t.Parallel()
	vcs := func(kv ...string) *debug.BuildInfo {
		info := &debug.BuildInfo{Main: debug.Module{Path: "errata", Version: "(devel)"}}
		for i := 0; i < len(kv); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return info
	}
	for _, tc := range []struct {
		name  string
		stamp string
		info  *debug.BuildInfo
		want  string
	}{
		{"the stamp wins", "v1.4.0-3-gabc1234", vcs("vcs.revision", "0123abcd"), "v1.4.0-3-gabc1234"},
		{"unstamped takes the revision", "", vcs("vcs.revision", "0123abcd", "vcs.modified", "false"), "0123abcd"},
		{"unstamped and modified is dirty", "", vcs("vcs.revision", "0123abcd", "vcs.modified", "true"), "0123abcd-dirty"},
		{"no revision takes the module version", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"nothing known is devel", "", vcs(), "devel"},
		{"no build info is devel", "", nil, "devel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionOf(tc.stamp, tc.info); got != tc.want {
				t.Errorf("versionOf = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestHealthcheck(t *testing.T) {
	t.Parallel()
	s := startErrata(t, nil)
	_, port, _ := strings.Cut(s.env["ADDR"], ":")
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer unavailable.Close()
	healthcheck := func(env map[string]string, args ...string) error {
		return run(context.Background(), append([]string{"healthcheck"}, args...),
			func(k string) string { return env[k] }, io.Discard, io.Discard)
	}

	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string
	}{
		{"a serving ADDR succeeds", map[string]string{"ADDR": s.env["ADDR"]}, nil, ""},
		{"an ADDR of every interface asks the loopback one", map[string]string{"ADDR": ":" + port}, nil, ""},
		{"an ADDR of every IPv4 address asks the loopback one", map[string]string{"ADDR": "0.0.0.0:" + port}, nil, ""},
		{"the flag wins over ADDR", map[string]string{"ADDR": "127.0.0.1:1"}, []string{"--addr", s.env["ADDR"]}, ""},
		{"a closed port fails", map[string]string{"ADDR": fmt.Sprintf("127.0.0.1:%d", freePort(t))}, nil, "connection refused"},
		{"an answer other than 200 fails", map[string]string{"ADDR": strings.TrimPrefix(unavailable.URL, "http://")}, nil, "503 Service Unavailable"},
		{"a bad ADDR fails", map[string]string{"ADDR": "nonsense"}, nil, `ADDR "nonsense"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := healthcheck(tc.env, tc.args...)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("healthcheck: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("healthcheck: %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

// get returns the status and body of a GET of url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

func TestMetricsListener(t *testing.T) {
	t.Parallel()
	promtool := requireEnv(t, "PROMTOOL", "extracts promtool from Debian's prometheus package")
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", freePort(t))
	s := startErrata(t, map[string]string{"METRICS_ADDR": strings.TrimSuffix(strings.TrimPrefix(metricsURL, "http://"), "/metrics")})
	s.token = s.user(t, "ops@example.com", "org:read")

	// An email address queues a confirmation mail: a job of kind mail.
	if status, body := s.api(t, "POST", "/api/0/users/me/emails/", map[string]any{"email": "second@example.com"}); status != http.StatusCreated {
		t.Fatalf("add an email address: %d %s", status, body)
	}
	if status, _ := s.api(t, "GET", "/api/0/organizations/private-org-slug/environments/", nil); status != http.StatusNotFound {
		t.Fatalf("an unknown organization: %d, want 404", status)
	}

	var text string
	waitFor(t, 10*time.Second, "the mail job's outcome in the metrics", func() bool {
		_, text = get(t, metricsURL)
		return strings.Contains(text, `errata_job_outcomes_total{kind="mail",outcome="done"} 1`+"\n")
	})
	for _, want := range []string{
		`errata_http_requests_total{route="POST /api/0/users/{user_id}/emails/{$}",method="POST",status="201"} 1` + "\n",
		`errata_http_requests_total{route="GET /api/0/organizations/{organization_slug}/environments/{$}",method="GET",status="404"} 1` + "\n",
		`errata_jobs{kind="mail",state="queued"} 0` + "\n",
		`errata_jobs{kind="assemble",state="running"} 0` + "\n",
		`errata_build_info{version="` + buildVersion() + `",goversion="`,
		"errata_db_pool_max_connections ",
		"go_goroutines ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the metrics lack %q", want)
		}
	}
	for _, secret := range []string{s.token, "ops@example.com", "second@example.com", "private-org-slug"} {
		if strings.Contains(text, secret) {
			t.Errorf("the metrics show %q", secret)
		}
	}

	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("promtool check metrics: %v\n%s\nmetrics:\n%s", err, out, text)
	}

	t.Run("only on the metrics address", func(t *testing.T) {
		if status, body := get(t, s.url+"/metrics"); status != http.StatusNotFound {
			t.Errorf("GET /metrics on the API address: %d %s, want 404", status, body)
		}
		base := strings.TrimSuffix(metricsURL, "/metrics")
		if status, _ := get(t, base+"/healthz"); status != http.StatusNotFound {
			t.Errorf("GET /healthz on the metrics address: %d, want 404", status)
		}
		if status, _ := get(t, base+"/api/0/"); status != http.StatusNotFound {
			t.Errorf("GET /api/0/ on the metrics address: %d, want 404", status)
		}
	})
}

func TestNoMetricsWithoutMetricsAddr(t *testing.T) {
	t.Parallel()
	s := startErrata(t, nil)
	status, body := get(t, s.url+"/metrics")
	var got map[string]string
	if err := json.Unmarshal([]byte(body), &got); status != http.StatusNotFound || err != nil || got["detail"] != "Not Found" {
		t.Errorf("GET /metrics: %d %s, want the API's 404", status, body)
	}
	if strings.Contains(s.logs.String(), "serving metrics") {
		t.Errorf("the server started a metrics listener:\n%s", s.logs.String())
	}
}
