package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/authn"
	"errata/handlers/symbolication"
	"errata/store"
	"errata/store/storetest"
	"errata/worker"
	"errata/worker/dif"
	"errata/worker/dif/diftest"
)

// metricsAPI serves New with metrics on a database of the test's own; every
// request is counted as taking 3 ms.
func metricsAPI(t *testing.T, jobs *worker.Worker) (*Metrics, *httptest.Server, *store.Store) {
	t.Helper()
	st := storetest.New(t)
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	m := NewMetrics("v1.2.3-test", st, jobs, log)
	m.elapsed = func(time.Time) time.Duration { return 3 * time.Millisecond }
	h := New(Deps{Store: st, Auth: &authn.Authenticator{Store: st}, Log: log, SecretKey: "test-secret", Metrics: m})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return m, srv, st
}

// scrape returns what GET /metrics answers.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	if got, want := rec.Header().Get("Content-Type"), "text/plain; version=0.0.4; charset=utf-8"; got != want {
		t.Errorf("Content-Type %q, want %q", got, want)
	}
	return rec.Body.String()
}

// family returns the lines of the metric name: its HELP and TYPE lines and
// its samples (for a histogram, those of name_bucket, _sum and _count).
func family(text, name string) string {
	var b strings.Builder
	for l := range strings.Lines(text) {
		rest, ok := strings.CutPrefix(l, "# HELP ")
		if !ok {
			rest, ok = strings.CutPrefix(l, "# TYPE ")
		}
		if !ok {
			rest = l
		}
		metric, _, _ := strings.Cut(rest, " ")
		metric, _, _ = strings.Cut(metric, "{")
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			if metric == name+suffix && (suffix == "" || !strings.HasPrefix(l, "#")) {
				b.WriteString(l)
				break
			}
		}
	}
	return b.String()
}

// histogramLines is the histogram of n requests of 3 ms each, as the
// exposition writes it.
func histogramLines(labels string, n int) string {
	var b strings.Builder
	const name = "errata_http_request_duration_seconds"
	for _, le := range []string{"0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"} {
		c := n
		if le == "0.001" || le == "0.0025" {
			c = 0
		}
		fmt.Fprintf(&b, "%s_bucket{%s,le=%q} %d\n", name, labels, le, c)
	}
	fmt.Fprintf(&b, "%s_sum{%s} %s\n", name, labels, strconv.FormatFloat(float64(n)*0.003, 'g', -1, 64))
	fmt.Fprintf(&b, "%s_count{%s} %d\n", name, labels, n)
	return b.String()
}

func TestMetricsCountRequestsByRoutePatternMethodAndStatus(t *testing.T) {
	m, srv, _ := metricsAPI(t, nil)
	const secretPath = "/secret-user-path-4f2a/"
	const badToken = "sntryu_" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, req := range []struct {
		method, path, token string
		status              int
	}{
		{"GET", "/healthz", "", 200},
		{"GET", "/healthz", "", 200},
		{"GET", "/api/0/", "", 200},
		{"GET", "/api/0/", badToken, 401},
		{"GET", "/api/0/organizations/acme/environments/", "", 401},
		{"GET", secretPath, "", 404},
		{"BREW", "/healthz", "", 405},
	} {
		r, err := http.NewRequest(req.method, srv.URL+req.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if req.token != "" {
			r.Header.Set("Authorization", "Bearer "+req.token)
		}
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != req.status {
			t.Fatalf("%s %s: %d, want %d", req.method, req.path, res.StatusCode, req.status)
		}
	}
	text := scrape(t, m)

	wantCounts := `# HELP errata_http_requests_total Requests answered, by route pattern, method and status.
# TYPE errata_http_requests_total counter
errata_http_requests_total{route="GET /api/0/organizations/{organization_slug}/environments/{$}",method="GET",status="401"} 1
errata_http_requests_total{route="GET /api/0/{$}",method="GET",status="200"} 1
errata_http_requests_total{route="GET /api/0/{$}",method="GET",status="401"} 1
errata_http_requests_total{route="GET /healthz",method="GET",status="200"} 2
errata_http_requests_total{route="unmatched",method="GET",status="404"} 1
errata_http_requests_total{route="unmatched",method="other",status="405"} 1
`
	if diff := cmp.Diff(wantCounts, family(text, "errata_http_requests_total")); diff != "" {
		t.Errorf("request counter (-want +got):\n%s", diff)
	}
	wantHistogram := `# HELP errata_http_request_duration_seconds Time from reading a request to its answer, by route pattern, method and status.
# TYPE errata_http_request_duration_seconds histogram
` + histogramLines(`route="GET /api/0/organizations/{organization_slug}/environments/{$}",method="GET",status="401"`, 1) +
		histogramLines(`route="GET /api/0/{$}",method="GET",status="200"`, 1) +
		histogramLines(`route="GET /api/0/{$}",method="GET",status="401"`, 1) +
		histogramLines(`route="GET /healthz",method="GET",status="200"`, 2) +
		histogramLines(`route="unmatched",method="GET",status="404"`, 1) +
		histogramLines(`route="unmatched",method="other",status="405"`, 1)
	if diff := cmp.Diff(wantHistogram, family(text, "errata_http_request_duration_seconds")); diff != "" {
		t.Errorf("latency histogram (-want +got):\n%s", diff)
	}
	for _, secret := range []string{"secret-user-path", badToken, "acme", "BREW"} {
		if strings.Contains(text, secret) {
			t.Errorf("the metrics show %q from a request", secret)
		}
	}
	if diff := cmp.Diff("# HELP errata_build_info Always 1; the labels name the running build.\n# TYPE errata_build_info gauge\n"+
		`errata_build_info{version="v1.2.3-test",goversion="`+goVersion(t, text)+`"} 1`+"\n", family(text, "errata_build_info")); diff != "" {
		t.Errorf("build info (-want +got):\n%s", diff)
	}
}

// goVersion returns the goversion label of the build info, which the test
// checks apart.
func goVersion(t *testing.T, text string) string {
	t.Helper()
	m := regexp.MustCompile(`goversion="(go[0-9][^"]*)"`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no goversion label:\n%s", text)
	}
	return m[1]
}

func TestMetricsOfJobsCountTheQueueAndTheOutcomes(t *testing.T) {
	st := storetest.New(t)
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	w := worker.New(st, log, worker.Config{Concurrency: 2, PollInterval: 20 * time.Millisecond, BaseBackoff: time.Millisecond})
	hanging, release := make(chan struct{}), make(chan struct{})
	w.Handle("ok", func(context.Context, json.RawMessage) error { return nil })
	w.Handle("flaky", func(context.Context, json.RawMessage) error { return errors.New("always down") })
	w.Handle("hang", func(context.Context, json.RawMessage) error {
		close(hanging)
		<-release
		return nil
	})
	w.Handle("idle", func(context.Context, json.RawMessage) error { return nil })
	ctx := context.Background()
	for _, j := range []struct {
		kind        string
		maxAttempts int
	}{{"ok", 1}, {"flaky", 2}, {"hang", 1}, {"orphan", 1}} {
		if _, err := st.EnqueueJob(ctx, j.kind, "", nil, j.maxAttempts); err != nil {
			t.Fatal(err)
		}
	}
	w.Start()
	t.Cleanup(func() {
		close(release)
		if err := w.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	m := NewMetrics("test", st, w, log)
	<-hanging
	deadline := time.Now().Add(10 * time.Second)
	for {
		o := w.Outcomes()
		if o[0].Done == 1 && o[1].Retried == 1 && o[1].Failed == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("outcomes did not arrive: %+v", o)
		}
		time.Sleep(10 * time.Millisecond)
	}
	text := scrape(t, m)

	want := `# HELP errata_jobs Jobs queued or running, by kind and state, in the database (all processes).
# TYPE errata_jobs gauge
errata_jobs{kind="flaky",state="queued"} 0
errata_jobs{kind="flaky",state="running"} 0
errata_jobs{kind="hang",state="queued"} 0
errata_jobs{kind="hang",state="running"} 1
errata_jobs{kind="idle",state="queued"} 0
errata_jobs{kind="idle",state="running"} 0
errata_jobs{kind="ok",state="queued"} 0
errata_jobs{kind="ok",state="running"} 0
errata_jobs{kind="orphan",state="queued"} 1
errata_jobs{kind="orphan",state="running"} 0
`
	if diff := cmp.Diff(want, family(text, "errata_jobs")); diff != "" {
		t.Errorf("queue (-want +got):\n%s", diff)
	}
	want = `# HELP errata_job_outcomes_total Job runs of this process, by kind and outcome: done, retried or failed.
# TYPE errata_job_outcomes_total counter
errata_job_outcomes_total{kind="flaky",outcome="done"} 0
errata_job_outcomes_total{kind="flaky",outcome="retried"} 1
errata_job_outcomes_total{kind="flaky",outcome="failed"} 1
errata_job_outcomes_total{kind="hang",outcome="done"} 0
errata_job_outcomes_total{kind="hang",outcome="retried"} 0
errata_job_outcomes_total{kind="hang",outcome="failed"} 0
errata_job_outcomes_total{kind="idle",outcome="done"} 0
errata_job_outcomes_total{kind="idle",outcome="retried"} 0
errata_job_outcomes_total{kind="idle",outcome="failed"} 0
errata_job_outcomes_total{kind="ok",outcome="done"} 1
errata_job_outcomes_total{kind="ok",outcome="retried"} 0
errata_job_outcomes_total{kind="ok",outcome="failed"} 0
`
	if diff := cmp.Diff(want, family(text, "errata_job_outcomes_total")); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}

	// Only the orphan job is due and waiting; its age is not known exactly.
	oldest := family(text, "errata_jobs_oldest_due_seconds")
	match := regexp.MustCompile(`(?m)^errata_jobs_oldest_due_seconds\{kind="orphan"\} (\S+)$`).FindStringSubmatch(oldest)
	if match == nil {
		t.Fatalf("no oldest due job of kind orphan:\n%s", oldest)
	}
	if age, err := strconv.ParseFloat(match[1], 64); err != nil || age <= 0 || age > 60 {
		t.Errorf("the orphan job waited %q seconds, want a positive number below a minute", match[1])
	}
	want = `# HELP errata_jobs_oldest_due_seconds How long the oldest due queued job of a kind has waited; 0 when none is due.
# TYPE errata_jobs_oldest_due_seconds gauge
errata_jobs_oldest_due_seconds{kind="flaky"} 0
errata_jobs_oldest_due_seconds{kind="hang"} 0
errata_jobs_oldest_due_seconds{kind="idle"} 0
errata_jobs_oldest_due_seconds{kind="ok"} 0
errata_jobs_oldest_due_seconds{kind="orphan"} ` + match[1] + "\n"
	if diff := cmp.Diff(want, oldest); diff != "" {
		t.Errorf("oldest due job (-want +got):\n%s", diff)
	}
}

func TestMetricsOfThePoolAndTheRuntime(t *testing.T) {
	m, srv, st := metricsAPI(t, nil)
	res, err := http.Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	text := scrape(t, m)
	pool := st.PoolStats()
	for _, tc := range []struct {
		name, kind string
		check      func(v float64) bool
	}{
		{"errata_db_pool_acquired_connections", "gauge", func(v float64) bool { return v >= 0 }},
		{"errata_db_pool_idle_connections", "gauge", func(v float64) bool { return v >= 1 }},
		{"errata_db_pool_constructing_connections", "gauge", func(v float64) bool { return v >= 0 }},
		{"errata_db_pool_total_connections", "gauge", func(v float64) bool { return v >= 1 }},
		{"errata_db_pool_max_connections", "gauge", func(v float64) bool { return v == float64(pool.MaxConns) }},
		{"errata_db_pool_acquires_total", "counter", func(v float64) bool { return v >= 1 }},
		{"errata_db_pool_empty_acquires_total", "counter", func(v float64) bool { return v >= 1 }},
		{"errata_db_pool_canceled_acquires_total", "counter", func(v float64) bool { return v == 0 }},
		{"errata_db_pool_acquire_seconds_total", "counter", func(v float64) bool { return v > 0 }},
		{"go_goroutines", "gauge", func(v float64) bool { return v >= 1 }},
		{"go_memory_classes_total_bytes", "gauge", func(v float64) bool { return v > 0 }},
		{"go_memory_classes_heap_objects_bytes", "gauge", func(v float64) bool { return v > 0 }},
	} {
		t.Run(tc.name+" is reported", func(t *testing.T) {
			lines := strings.Split(strings.TrimSuffix(family(text, tc.name), "\n"), "\n")
			if len(lines) != 3 || !strings.HasPrefix(lines[0], "# HELP "+tc.name+" ") ||
				lines[1] != "# TYPE "+tc.name+" "+tc.kind || !strings.HasPrefix(lines[2], tc.name+" ") {
				t.Fatalf("want HELP, TYPE %s and one sample, got:\n%s", tc.kind, strings.Join(lines, "\n"))
			}
			v, err := strconv.ParseFloat(strings.TrimPrefix(lines[2], tc.name+" "), 64)
			if err != nil || !tc.check(v) {
				t.Errorf("implausible value: %s", lines[2])
			}
		})
	}
}

// TestMetricsOfTheServedFileCache: the disk cache of the files that the
// symbol routes served reports its bytes and its files under names of its
// own, none of the caches of parsed files.
func TestMetricsOfTheServedFileCache(t *testing.T) {
	db := storetest.NewDatabase(t)
	st, err := store.Open(context.Background(), store.Config{URL: db, SymbolCacheSize: 1 << 20, SymbolCacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	f := symbolFixtureOf(t, serveTestAPI(t, st, db))
	m := NewMetrics("test", st, nil, f.lg)
	want := func(bytes, entries int) string {
		return fmt.Sprintf(`# HELP errata_served_file_cache_bytes Bytes of files the symbol routes served that this process keeps on disk (SYMBOL_CACHE_SIZE bounds them).
# TYPE errata_served_file_cache_bytes gauge
errata_served_file_cache_bytes %d
# HELP errata_served_file_cache_entries Files the symbol routes served that this process keeps on disk.
# TYPE errata_served_file_cache_entries gauge
errata_served_file_cache_entries %d
`, bytes, entries)
	}
	got := func() string {
		text := scrape(t, m)
		return family(text, "errata_served_file_cache_bytes") + family(text, "errata_served_file_cache_entries")
	}
	if diff := cmp.Diff(want(0, 0), got()); diff != "" {
		t.Errorf("before a file is served (-want +got):\n%s", diff)
	}
	exe := "/debuginfod/acme/buildid/" + tinyBuildID + "/executable"
	for range 2 {
		if r := f.get("GET", exe, bearer(f.token)); r.status != http.StatusOK || len(r.body) != len(f.elf) {
			t.Fatalf("GET executable: %d, %d bytes", r.status, len(r.body))
		}
		if diff := cmp.Diff(want(len(f.elf), 1), got()); diff != "" {
			t.Errorf("after tiny.elf was served (-want +got):\n%s", diff)
		}
	}
}

func TestMetricsOffByDefault(t *testing.T) {
	a := newTestAPI(t)
	if r := a.do("GET", "/metrics", "", nil); r.status != http.StatusNotFound {
		t.Errorf("GET /metrics on the API: %d, want 404", r.status)
	}
}

func TestObservingARequestDoesNotAllocate(t *testing.T) {
	m := NewMetrics("test", nil, nil, nil)
	m.track([]route{{pattern: "GET /healthz"}})
	start := time.Now()
	m.observe("GET /healthz", "GET", 200, start) // the first one adds the series
	m.observe("", "BREW", 405, start)
	if n := testing.AllocsPerRun(100, func() {
		m.observe("GET /healthz", "GET", 200, start)
		m.observe("", "BREW", 405, start)
	}); n != 0 {
		t.Errorf("observe allocates %v times per request, want 0", n)
	}
}

func TestExpositionEscapesLabelValuesAndHelp(t *testing.T) {
	var e exposition
	e.family("m", "gauge", `a \ and a`+"\nnewline")
	e.sample("m", "1", "a", `quote " backslash \ newline`+"\n", "b", "plain")
	e.sample("m", "2")
	want := `# HELP m a \\ and a\nnewline
# TYPE m gauge
m{a="quote \" backslash \\ newline\n",b="plain"} 1
m 2
`
	if diff := cmp.Diff(want, e.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestFormatFloat(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0"}, {0.0025, "0.0025"}, {10, "10"}, {1.5e21, "1.5e+21"},
		{(2500 * time.Microsecond).Seconds(), "0.0025"},
		{math.Inf(1), "+Inf"}, {math.Inf(-1), "-Inf"}, {math.NaN(), "NaN"},
	} {
		if got := formatFloat(tc.in); got != tc.want {
			t.Errorf("formatFloat(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestMetricsOfTheDebugFileCache: /metrics reports the bytes and entries of
// the parsed debug files New's cache holds, under the cache's names and
// under the deprecated ones of the release before, and the bytes, entries
// and hits of its map cache.
func TestMetricsOfTheDebugFileCache(t *testing.T) {
	st := storetest.New(t)
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	m := NewMetrics("v1.2.3-test", st, nil, log)
	c := symbolication.NewDebugFileCache(symbolication.DefaultDebugFileCacheBytes)
	maps := symbolication.NewMapCache(symbolication.DefaultMapCacheBytes)
	New(Deps{Store: st, Auth: &authn.Authenticator{Store: st}, Log: log, SecretKey: "test-secret", Metrics: m, DebugFileCache: c, MapCache: maps})
	res, err := dif.ReadBreakpadSymbols(bytes.NewReader(diftest.Breakpad(10)))
	if err != nil {
		t.Fatal(err)
	}
	c.Get(context.Background(), 1, "a", func() (*dif.Resolver, error) { return res, nil })
	text := scrape(t, m)
	for name, want := range map[string]string{
		"errata_symbol_cache_bytes":       strconv.FormatInt(res.Size()+symbolication.EntryOverhead, 10),
		"errata_symbol_cache_entries":     "1",
		"errata_debug_file_cache_bytes":   strconv.FormatInt(res.Size()+symbolication.EntryOverhead, 10),
		"errata_debug_file_cache_entries": "1",
	} {
		lines := strings.Split(strings.TrimSuffix(family(text, name), "\n"), "\n")
		if len(lines) != 3 || lines[1] != "# TYPE "+name+" gauge" || lines[2] != name+" "+want {
			t.Errorf("%s: want a gauge of %s, got:\n%s", name, want, strings.Join(lines, "\n"))
		}
	}
	for _, name := range []string{"errata_symbol_cache_bytes", "errata_symbol_cache_entries"} {
		if help := strings.SplitN(family(text, name), "\n", 2)[0]; !strings.Contains(help, "Deprecated alias of errata_debug_file_cache_") || !strings.Contains(help, "removed in the next release") {
			t.Errorf("%s: %q, want it said a deprecated alias", name, help)
		}
	}

	maps.Put("a", "x", 100)
	maps.Get("a")
	maps.Get("a")
	text = scrape(t, m)
	var got []string
	for _, name := range []string{"errata_map_cache_bytes", "errata_map_cache_entries", "errata_map_cache_hits_total"} {
		got = append(got, strings.Split(strings.TrimSuffix(family(text, name), "\n"), "\n")[1:]...)
	}
	want := []string{
		"# TYPE errata_map_cache_bytes gauge", "errata_map_cache_bytes 100",
		"# TYPE errata_map_cache_entries gauge", "errata_map_cache_entries 1",
		"# TYPE errata_map_cache_hits_total counter", "errata_map_cache_hits_total 2",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the map cache's families (-want +got):\n%s", diff)
	}
}
