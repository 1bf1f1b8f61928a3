package main

// The process-level benchmarks of ./dev.sh bench. They build the static
// binary, start it as a real process on the seeded benchmark database
// (testdata/bench/seed.sql) and measure it from outside: start-up, wrk
// load against pgbench on the same statements, and bundle assembly against
// sha1sum. Each runs its measurement once, whatever b.N (run them with
// -benchtime 1x), and prints a markdown table.

import (
	"archive/zip"
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha1"
	"debug/elf"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"errata/authn"
	"errata/handlers"
	"errata/store"
	"errata/store/storetest"
)

// releaseBuildFlags build the static release binary: no cgo, no local
// paths, no symbol table or DWARF (panics still print file:line).
var releaseBuildFlags = []string{"-trimpath", "-ldflags=-s -w"}

// benchBinary builds errata with flags, CGO_ENABLED=0, and returns its
// path, its size and whether it is static (no interpreter, no shared
// libraries).
func benchBinary(b *testing.B, flags ...string) (path string, size int64, static bool) {
	b.Helper()
	path = filepath.Join(b.TempDir(), "errata")
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", path, ".")...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	f, err := elf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	libs, _ := f.ImportedLibraries()
	static = len(libs) == 0 && !slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
	return path, fi.Size(), static
}

// benchServer is errata running as a process of its own.
type benchServer struct {
	base  string
	pid   int
	ready time.Duration // from start to the first 200 of /readyz
}

// benchStart starts bin serve on a free port with env added to the
// database's, waits for /readyz and stops it when b ends.
func benchStart(b *testing.B, bin, dbURL string, env ...string) *benchServer {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logFile, err := os.CreateTemp(b.TempDir(), "errata-log-*")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { logFile.Close() })
	cmd := exec.Command(bin, "serve")
	cmd.Env = append([]string{"DATABASE_URL=" + dbURL, "ADDR=" + addr, "SECRET_KEY=" + testSecretKey,
		"PUBLIC_URL=http://" + addr}, env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill() //nolint:errcheck
			<-exited
		}
	})
	s := &benchServer{base: "http://" + addr, pid: cmd.Process.Pid}
	client := &http.Client{Timeout: time.Second}
	for {
		res, err := client.Get(s.base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				s.ready = time.Since(start)
				return s
			}
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(logFile.Name())
			b.Fatalf("errata exited: %v\n%s", err, log)
		case <-time.After(time.Millisecond):
		}
		if time.Since(start) > 30*time.Second {
			b.Fatal("errata did not become ready in 30 s")
		}
	}
}

// memory returns a field of /proc/<pid>/status (VmRSS, VmHWM) in bytes.
func (s *benchServer) memory(b *testing.B, field string) int64 {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("%s: %v", field, err)
			}
			return kb << 10
		}
	}
	b.Fatalf("/proc/%d/status has no %s", s.pid, field)
	return 0
}

// cpu returns the CPU time the process used so far, user and system.
func (s *benchServer) cpu(b *testing.B) time.Duration {
	b.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which ends with the last ")";
	// utime and stime are the 14th and 15th of the line, in clock ticks
	// of 1/100 s on Linux.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", s.pid, stat)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// peakRSS runs f and returns the largest RSS of the process while f ran:
// the kernel's peak (VmHWM, started over from the current RSS) or the
// largest RSS sampled every 10 ms, whichever is larger, since the kernel
// may not record a peak that the Go runtime returned with madvise.
func (s *benchServer) peakRSS(b *testing.B, f func()) int64 {
	b.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.pid), []byte("5"), 0); err != nil {
		b.Fatalf("reset the peak RSS: %v", err)
	}
	sampled := sampleRSS(s.pid) // flood_signin_test.go
	f()
	return max(sampled(), s.memory(b, "VmHWM"))
}

// benchToken creates a token with every scope for the owner of the bench
// organization, removed when b ends.
func benchToken(b *testing.B, bench storetest.Bench) string {
	b.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{URL: bench.URL})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	tok, hash := authn.NewToken()
	if _, err := st.CreateToken(ctx, bench.Owner, hash, authn.Scopes, "bench"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		storetest.Exec(b, bench.URL, `DELETE FROM api_tokens WHERE token_hash = $1`, hash)
	})
	return tok
}

// benchGet sends GET path with the token and returns status and body.
func benchGet(b *testing.B, base, path, token string) (int, []byte) {
	b.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, body
}

const mib = 1 << 20

func passMiss(ok bool) string {
	if ok {
		return "pass"
	}
	return "**miss**"
}

// BenchmarkStartup measures the static binary: its size, the time from
// exec to the first 200 of /readyz against a running database (median of
// five starts) and its RSS when idle.
func BenchmarkStartup(b *testing.B) {
	bench := storetest.BenchDatabase(b)
	bin, size, static := benchBinary(b, releaseBuildFlags...)
	_, plainSize, _ := benchBinary(b, "-trimpath")
	var times []time.Duration
	var idle, idleAnon, idleFile int64
	for i := range 5 {
		s := benchStart(b, bin, bench.URL)
		times = append(times, s.ready)
		if i == 4 {
			time.Sleep(2 * time.Second)
			idle, idleAnon, idleFile = s.memory(b, "VmRSS"), s.memory(b, "RssAnon"), s.memory(b, "RssFile")
		}
	}
	slices.Sort(times)
	ready := times[len(times)/2]
	b.ReportMetric(float64(size)/mib, "MiB")
	b.ReportMetric(float64(ready.Microseconds())/1e3, "ms-to-ready")
	b.ReportMetric(float64(idle)/mib, "MiB-idle-RSS")

	fmt.Printf("\n### Binary and start-up (CGO_ENABLED=0 go build %s)\n\n", strings.Join(releaseBuildFlags, " "))
	fmt.Println("| measure | value | target | |")
	fmt.Println("|---|---:|---:|---|")
	fmt.Printf("| binary size (static: %t) | %.1f MB | < 20 MB | %s |\n", static, float64(size)/1e6, passMiss(static && size < 20e6))
	fmt.Printf("| binary size with symbols (-trimpath only) | %.1f MB | | |\n", float64(plainSize)/1e6)
	fmt.Printf("| exec to first 200 of /readyz (median of 5) | %.0f ms | ≤ 200 ms | %s |\n",
		float64(ready.Microseconds())/1e3, passMiss(ready <= 200*time.Millisecond))
	fmt.Printf("| idle RSS (anonymous %.1f MB, mapped from the binary %.1f MB) | %.1f MB | < 15 MB | %s |\n\n",
		float64(idleAnon)/1e6, float64(idleFile)/1e6, float64(idle)/1e6, passMiss(idle < 15e6))
}

// benchDuration is the length of each load run: 20 s, or BENCH_DURATION.
func benchDuration(b *testing.B) time.Duration {
	b.Helper()
	if v := os.Getenv("BENCH_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("BENCH_DURATION: %v", err)
		}
		return d
	}
	return 20 * time.Second
}

// loadConnections is the number of connections of wrk and clients of
// pgbench.
const loadConnections = 64

// loadResult is what one load run measured.
type loadResult struct {
	perSecond        float64
	seconds          float64 // the run's length
	p50, p99, mean   time.Duration
	errors, requests int64
	peakRSS          int64         // errata's; 0 for pgbench
	cpu              time.Duration // errata's; 0 for pgbench
	cpuPerRequest    time.Duration // errata's; 0 for pgbench
	tail             float64       // p99/mean of the run, or of its worst turn
}

// add returns the result of r and s together, as one run: throughput over
// both lengths, the mean over both runs' requests, and the larger of the
// two for the percentiles, the tail (p99/mean, each run's own) and the
// peak RSS.
func (r loadResult) add(s loadResult) loadResult {
	n := r.requests + s.requests
	out := loadResult{
		seconds: r.seconds + s.seconds, requests: n, errors: r.errors + s.errors,
		p50: max(r.p50, s.p50), p99: max(r.p99, s.p99),
		peakRSS: max(r.peakRSS, s.peakRSS), cpu: r.cpu + s.cpu,
		tail: max(r.tail, s.tail),
	}
	if n > 0 {
		out.mean = time.Duration((float64(r.mean)*float64(r.requests) + float64(s.mean)*float64(s.requests)) / float64(n))
	}
	if out.seconds > 0 {
		out.perSecond = float64(n) / out.seconds
	}
	return out
}

// benchTurns is the number of turns a load of length d is cut into
// (BENCH_TURNS, 4 by default), each at least a second long.
func benchTurns(b *testing.B, d time.Duration) int {
	b.Helper()
	n := 4
	if v := os.Getenv("BENCH_TURNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("BENCH_TURNS: %q is not a positive number", v)
		}
	}
	return max(1, min(n, int(d/time.Second)))
}

// benchTool finds a program: in the environment variable env, on PATH,
// or (pgbench) among PostgreSQL's programs.
func benchTool(b *testing.B, name, env string) string {
	b.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) > 0 {
		slices.Sort(matches)
		return matches[len(matches)-1]
	}
	b.Fatalf("%s is not installed: run ./dev.sh bench, which installs it (or set %s)", name, env)
	return ""
}

// runWrk loads url for d with wrk and reads the JSON line that
// testdata/bench/wrk.lua prints.
func runWrk(b *testing.B, wrk, target, token string, d time.Duration) loadResult {
	b.Helper()
	cmd := exec.Command(wrk, "-t2", fmt.Sprintf("-c%d", loadConnections), fmt.Sprintf("-d%ds", int(d.Seconds())),
		"--timeout", "10s", "-s", filepath.Join("testdata", "bench", "wrk.lua"),
		"-H", "Authorization: Bearer "+token, target)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("wrk: %v\n%s", err, out)
	}
	var r struct {
		Requests, Errors           int64
		DurationUS, P50US, P99US   float64
		MeanUS                     float64
		StatusErrors, SocketErrors int64
	}
	i := bytes.LastIndex(out, []byte("\n{"))
	if i < 0 {
		b.Fatalf("wrk printed no summary:\n%s", out)
	}
	if err := json.Unmarshal(bytes.TrimSpace(out[i:]), &r); err != nil {
		b.Fatalf("wrk summary: %v\n%s", err, out)
	}
	us := func(f float64) time.Duration { return time.Duration(f * 1e3) }
	return loadResult{
		perSecond: float64(r.Requests) / (r.DurationUS / 1e6), seconds: r.DurationUS / 1e6, requests: r.Requests,
		p50: us(r.P50US), p99: us(r.P99US), mean: us(r.MeanUS), errors: r.Errors, tail: r.P99US / r.MeanUS,
	}
}

var pgbenchFailed = regexp.MustCompile(`(?m)^number of failed transactions: ([0-9]+)`)

// pgbenchWarmUp is how long pgbench runs before its transactions count:
// its clients connect and prepare their statements anew on every run, and
// PostgreSQL plans each of their first five executions for its values,
// while errata's pool stays connected and prepared from one turn to the
// next. (Seen in pgbench's log: the first half second of a run at about
// 85 % of the rate of the rest.)
const pgbenchWarmUp = time.Second

// runPgbench runs stmts as one transaction of a pgbench script, prepared,
// with as many clients as wrk has connections, for pgbenchWarmUp, d and a
// second more (in whole seconds, rounded up, which is what -T takes), and
// reads its per-transaction log: the throughput and
// latencies are those of the transactions that ended during d, away from
// both ends of the run.
func runPgbench(b *testing.B, pgbench, dbURL string, stmts []storetest.Statement, d time.Duration) loadResult {
	b.Helper()
	script, defs, err := storetest.PgbenchScript(stmts)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	scriptPath := filepath.Join(dir, "floor.sql")
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		b.Fatal(err)
	}
	args := []string{"-n", "-M", "prepared", "-c", strconv.Itoa(loadConnections), "-j", "2",
		"-T", strconv.Itoa(int(math.Ceil((pgbenchWarmUp + d + time.Second).Seconds()))), "-f", scriptPath, "-l", "--log-prefix", filepath.Join(dir, "tx")}
	for _, def := range defs {
		args = append(args, "-D", def)
	}
	start := time.Now()
	out, err := exec.Command(pgbench, append(args, dbURL)...).CombinedOutput()
	if err != nil {
		b.Fatalf("pgbench: %v\n%s\nscript:\n%s", err, out, script)
	}
	var r loadResult
	if m := pgbenchFailed.FindSubmatch(out); m != nil {
		r.errors, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	// The transactions' ends, and their latencies.
	type tx struct{ end, latency time.Duration }
	var txs []tx
	logs, _ := filepath.Glob(filepath.Join(dir, "tx.*"))
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			b.Fatal(err)
		}
		for line := range strings.Lines(string(data)) {
			// client_id transaction_no time script_no time_epoch time_us
			f := strings.Fields(line)
			if len(f) < 6 {
				continue
			}
			us, err1 := strconv.ParseInt(f[2], 10, 64)
			sec, err2 := strconv.ParseInt(f[4], 10, 64)
			usec, err3 := strconv.ParseInt(f[5], 10, 64)
			if err1 != nil || err2 != nil || err3 != nil {
				continue // a failed transaction
			}
			end := time.Unix(sec, usec*1000).Sub(start)
			txs = append(txs, tx{end, time.Duration(us) * time.Microsecond})
		}
	}
	if len(txs) == 0 {
		b.Fatalf("pgbench logged no transaction:\n%s\nscript:\n%s", out, script)
	}
	// The window starts pgbenchWarmUp after the first transaction ended
	// (the clients have connected by then).
	from := slices.MinFunc(txs, func(a, b tx) int { return cmp.Compare(a.end, b.end) }).end + pgbenchWarmUp
	var lat []time.Duration
	var sum time.Duration
	for _, t := range txs {
		if t.end >= from && t.end < from+d {
			lat = append(lat, t.latency)
			sum += t.latency
		}
	}
	if len(lat) == 0 {
		b.Fatalf("pgbench ended no transaction after its warm-up:\n%s", out)
	}
	slices.Sort(lat)
	r.requests = int64(len(lat))
	r.seconds = d.Seconds()
	r.perSecond = float64(r.requests) / r.seconds
	r.p50, r.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	r.mean = sum / time.Duration(len(lat))
	r.tail = float64(r.p99) / float64(r.mean)
	return r
}

// recordCall serves GET target once in process on a store that records,
// after a first call that touches and caches the token, as the server
// does, and returns the statements of the second.
func recordCall(b *testing.B, dbURL, token, target string) []storetest.Statement {
	b.Helper()
	rec := &storetest.Recorder{}
	st, err := store.Open(context.Background(), store.Config{URL: dbURL, OnStatement: rec.Hook})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	h := handlers.New(handlers.Deps{Store: st, Auth: &authn.Authenticator{Store: st, CacheFor: authn.TokenCacheTime},
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), SecretKey: "bench"})
	call := func() {
		req := httptest.NewRequest("GET", target, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %s", target, w.Code, w.Body)
		}
	}
	call()
	return rec.Record(call)
}

// The ideal floor: the statements a perfect server would run for each
// call, written here by hand rather than recorded, one round trip each
// under pgbench -M prepared. Every call starts with the token lookup
// (api_token joined to its active user, by hash); then a release get is
// ONE statement that checks membership and reads the release with its
// projects aggregated (json_agg in a correlated subquery), its deploy
// count and its last deploy joined in; a list page is the capped count
// and ONE keyset-page statement with membership in its WHERE, projects
// aggregated, last deploy joined and LIMIT 51.
const (
	idealToken = `SELECT t.id, t.user_id, t.scopes, t.last_used
		FROM api_tokens t JOIN users u ON u.id = t.user_id
		WHERE t.token_hash = $1 AND u.is_active`
	idealRelease = `SELECT r.id, r.version, r.ref, r.url, r.data, r.date_created,
			r.date_released, r.date_started,
			(SELECT json_agg(json_build_object('id', p.id, 'slug', p.slug, 'name', p.name) ORDER BY p.slug, p.id)
				FROM release_projects rp JOIN projects p ON p.id = rp.project_id
				WHERE rp.release_id = r.id),
			ld.deploy_count, ld.id, (SELECT e.name FROM environments e WHERE e.id = ld.environment_id), ld.name, ld.url, ld.date_started, ld.date_finished, ld.date_created
		FROM releases r
		LEFT JOIN LATERAL (
			SELECT count(*) OVER () AS deploy_count, d.*
			FROM deploys d
			WHERE d.release_id = r.id
			ORDER BY d.date_created DESC, d.id DESC LIMIT 1) ld ON true`
	idealMember = `r.organization_id = (SELECT o.id FROM organizations o
		JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
		WHERE o.slug = $2)`
	idealGet = idealRelease + `
		JOIN organizations o ON o.id = r.organization_id
		JOIN memberships m ON m.organization_id = o.id AND m.user_id = $1
		WHERE o.slug = $2 AND r.version = $3`
	idealCount = `SELECT count(*) FROM (SELECT 1 FROM releases r WHERE ` + idealMember + ` LIMIT 1000) hits`
	idealPage1 = idealRelease + ` WHERE ` + idealMember + `
		ORDER BY r.date_created DESC, r.id DESC LIMIT 51`
	idealPageAfter = idealRelease + ` WHERE ` + idealMember + ` AND (r.date_created, r.id) < ($3, $4)
		ORDER BY r.date_created DESC, r.id DESC LIMIT 51`
)

// idealCalls returns the ideal statements of the release get, the list's
// page 1 and its page after bench.Deep, in the order of BenchmarkLoad's
// calls, for the owner of bench.Org with token.
func idealCalls(b *testing.B, bench storetest.Bench, token string) [][]storetest.Statement {
	b.Helper()
	user := int64(storetest.Count(b, bench.URL, `SELECT id FROM users WHERE email = $1`, bench.Owner))
	auth := storetest.Statement{SQL: idealToken, Args: []any{authn.Hash(token)}}
	count := storetest.Statement{SQL: idealCount, Args: []any{user, bench.Org}}
	return [][]storetest.Statement{
		{auth, {SQL: idealGet, Args: []any{user, bench.Org, bench.Release}}},
		{auth, count, {SQL: idealPage1, Args: []any{user, bench.Org}}},
		{auth, count, {SQL: idealPageAfter, Args: []any{user, bench.Org, bench.Deep.Created, bench.Deep.ID}}},
	}
}

// BenchmarkLoad loads the release get, the release list and its page after
// row 25 000 with wrk at 64 connections, and runs the statements of each
// with pgbench -M prepared at 64 clients as its floor.
func BenchmarkLoad(b *testing.B) {
	wrk := benchTool(b, "wrk", "WRK")
	pgbench := benchTool(b, "pgbench", "PGBENCH")
	bench := storetest.BenchDatabase(b)
	d := benchDuration(b)
	bin, _, _ := benchBinary(b, releaseBuildFlags...)
	token := benchToken(b, bench)
	s := benchStart(b, bin, bench.URL)

	org := "/api/0/organizations/" + bench.Org
	// The cursor format of handlers/page.go; the check below fails if it
	// changes.
	cursor := base64.RawURLEncoding.EncodeToString(
		fmt.Appendf(nil, "v1:n:%d:%d", bench.Deep.Created.UnixMicro(), bench.Deep.ID))
	calls := []struct {
		name, path string
		atLeast    float64 // of the floor's throughput
		items      int
	}{
		{"release get", org + "/releases/" + url.PathEscape(bench.Release) + "/", 0.5, 0},
		{"release list, page 1", org + "/releases/", 0.7, 50},
		{"release list, page after row 25 000", org + "/releases/?cursor=" + cursor, 0.7, 50},
	}
	for _, c := range calls {
		status, body := benchGet(b, s.base, c.path, token)
		if status != http.StatusOK {
			b.Fatalf("GET %s: %d %s", c.path, status, body)
		}
		if c.items > 0 {
			var items []struct{ ID int64 }
			if err := json.Unmarshal(body, &items); err != nil || len(items) != c.items {
				b.Fatalf("GET %s: %d items (%v), want %d", c.path, len(items), err, c.items)
			}
			if strings.Contains(c.path, "cursor=") && items[0].ID != bench.DeepNext {
				b.Fatalf("GET %s starts at release %d, want %d", c.path, items[0].ID, bench.DeepNext)
			}
		}
	}

	// Each call's three loads run in turns, slice by slice (errata, its own
	// statements, the ideal ones), so that what else the machine does
	// weighs on the three alike: the ratios are of loads measured within
	// seconds of each other, not minutes apart.
	turns := benchTurns(b, d)
	idealStmts := idealCalls(b, bench, token)
	errata := make([]loadResult, len(calls))
	floor := make([]loadResult, len(calls))
	ideal := make([]loadResult, len(calls))
	for i, c := range calls {
		own := recordCall(b, bench.URL, token, c.path)
		for range turns {
			cpu := s.cpu(b)
			var e loadResult
			e.peakRSS = s.peakRSS(b, func() { e = runWrk(b, wrk, s.base+c.path, token, d/time.Duration(turns)) })
			e.cpu = s.cpu(b) - cpu
			errata[i] = errata[i].add(e)
			floor[i] = floor[i].add(runPgbench(b, pgbench, bench.URL, own, d/time.Duration(turns)))
			ideal[i] = ideal[i].add(runPgbench(b, pgbench, bench.URL, idealStmts[i], d/time.Duration(turns)))
		}
		errata[i].cpuPerRequest = errata[i].cpu / time.Duration(max(errata[i].requests, 1))
	}

	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1e3) }
	fmt.Printf("\n### Load: %d connections for %s in %d turns (errata under wrk; floor: the same statements under pgbench -M prepared)\n\n",
		loadConnections, d, turns)
	fmt.Println("| call | | req/s | p50 ms | p99 ms | mean ms | p99/mean | errors | peak RSS | CPU/req | errata/floor | targets |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for i, c := range calls {
		e, f := errata[i], floor[i]
		ratio := e.perSecond / f.perSecond
		var misses []string
		if ratio < c.atLeast {
			misses = append(misses, fmt.Sprintf("throughput < %.0f %%", c.atLeast*100))
		}
		if e.tail > 3 {
			misses = append(misses, "p99 > 3× mean")
		}
		if e.errors > 0 {
			misses = append(misses, "errors")
		}
		if e.peakRSS >= 40e6 {
			misses = append(misses, "RSS ≥ 40 MB")
		}
		verdict := "pass"
		if len(misses) > 0 {
			verdict = "**miss**: " + strings.Join(misses, ", ")
		}
		fmt.Printf("| %s | errata | %.0f | %s | %s | %s | %.1f | %d | %.1f MB | %.0f µs | %.2f | %s |\n",
			c.name, e.perSecond, ms(e.p50), ms(e.p99), ms(e.mean), e.tail, e.errors,
			float64(e.peakRSS)/1e6, float64(e.cpuPerRequest.Nanoseconds())/1e3, ratio, verdict)
		fmt.Printf("| | floor | %.0f | %s | %s | %s | %.1f | %d | | | | |\n",
			f.perSecond, ms(f.p50), ms(f.p99), ms(f.mean), f.tail, f.errors)
		b.ReportMetric(e.perSecond, strings.NewReplacer(" ", "-", ",", "").Replace(c.name)+"-req/s")
	}
	fmt.Printf("\nTargets: throughput at least %.0f %% (release get) or %.0f %% (lists) of the floor's, p99 ≤ 3× mean, no errors, peak RSS < 40 MB. CPU/req is the server's CPU time (user and system) per request. Each call's three loads ran in turns of %s (errata, floor, ideal, then again); p50 and p99 are the slowest turn's, p99/mean the worst turn's own.\n\n",
		calls[0].atLeast*100, calls[1].atLeast*100, d/time.Duration(turns))

	fmt.Printf("\n### Load against the ideal floor: %d connections for %s in %d turns (the statements a perfect server would run, under pgbench -M prepared)\n\n",
		loadConnections, d, turns)
	fmt.Println("| call | errata req/s | own floor req/s | ideal req/s | errata/own floor | errata/ideal | ideal statements | targets |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---|")
	for i, c := range calls {
		e, f, id := errata[i], floor[i], ideal[i]
		ratio := e.perSecond / id.perSecond
		var misses []string
		if ratio < c.atLeast {
			misses = append(misses, fmt.Sprintf("throughput < %.0f %% of the ideal", c.atLeast*100))
		}
		if e.tail > 3 {
			misses = append(misses, "p99 > 3× mean")
		}
		if e.errors > 0 || id.errors > 0 {
			misses = append(misses, "errors")
		}
		if e.peakRSS >= 40e6 {
			misses = append(misses, "RSS ≥ 40 MB")
		}
		verdict := "pass"
		if len(misses) > 0 {
			verdict = "**miss**: " + strings.Join(misses, ", ")
		}
		fmt.Printf("| %s | %.0f | %.0f | %.0f | %.2f | %.2f | %d | %s |\n",
			c.name, e.perSecond, f.perSecond, id.perSecond, e.perSecond/f.perSecond, ratio, len(idealStmts[i]), verdict)
		b.ReportMetric(ratio, strings.NewReplacer(" ", "-", ",", "").Replace(c.name)+"-of-ideal")
	}
	// A request's cost is the inverse of the throughput at the same load.
	deep := errata[1].perSecond / errata[2].perSecond
	fmt.Printf("| deep page / page 1 cost (errata) | | | | | %.2f | | %s |\n", deep, passMiss(deep <= 1.5))
	fmt.Printf("\nTargets against the ideal: release get ≥ 0.50, lists ≥ 0.70, deep page / page 1 cost ≤ 1.5, with the targets of the table above (p99, errors, RSS).\n\n")
}

// benchBundle writes an artifact bundle of about size bytes to path: the
// SYSB header and a zip of a manifest and 2 MiB members of random bytes,
// stored uncompressed, for release version of org. It returns its SHA-1.
func benchBundle(b *testing.B, path, org, version string, size int64) string {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	h := sha1.New()
	bw := bufio.NewWriterSize(io.MultiWriter(f, h), mib)
	bw.WriteString("SYSB\x02\x00\x00\x00")
	zw := zip.NewWriter(bw)
	const member = 2 * mib
	files := map[string]any{}
	for i := range size / member {
		files[fmt.Sprintf("files/_/_/bundle-%04d.js", i)] = map[string]any{
			"url": fmt.Sprintf("~/static/bundle-%04d.js", i), "type": "minified_source",
			"headers": map[string]string{"Content-Type": "application/javascript"},
		}
	}
	manifest, _ := json.Marshal(map[string]any{"org": org, "release": version, "files": files})
	if version == "" {
		manifest, _ = json.Marshal(map[string]any{"org": org, "files": files})
	}
	w, err := zw.Create("manifest.json")
	if err != nil {
		b.Fatal(err)
	}
	w.Write(manifest)
	rng := rand.NewChaCha8([32]byte{1})
	buf := make([]byte, member)
	for i := range size / member {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("files/_/_/bundle-%04d.js", i), Method: zip.Store})
		if err != nil {
			b.Fatal(err)
		}
		rng.Read(buf)
		if _, err := w.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		b.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// benchUpload sends the file at path as 8 MiB chunks through chunk-upload,
// three to a request, and returns the chunks' SHA-1s in order.
func benchUpload(b *testing.B, base, org, token, path string) []string {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	const chunkSize, perRequest = 8 * mib, 3
	var names []string
	chunk := make([]byte, chunkSize)
	for done := false; !done; {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		for range perRequest {
			n, err := io.ReadFull(f, chunk)
			if n == 0 {
				done = true
				break
			}
			if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
				b.Fatal(err)
			}
			sum := sha1.Sum(chunk[:n])
			name := hex.EncodeToString(sum[:])
			names = append(names, name)
			pw, _ := mw.CreateFormFile("file", name)
			pw.Write(chunk[:n])
			if n < chunkSize {
				done = true
				break
			}
		}
		mw.Close()
		req, _ := http.NewRequest("POST", base+"/api/0/organizations/"+org+"/chunk-upload/", &body)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("chunk upload: %d %s", res.StatusCode, out)
		}
	}
	return names
}

// benchAssemble asks for the assembly of the chunks and polls until it is
// done, returning how long it took from the first request.
func benchAssemble(b *testing.B, base, org, token, checksum string, chunks []string) time.Duration {
	b.Helper()
	body, _ := json.Marshal(map[string]any{"checksum": checksum, "chunks": chunks, "projects": []string{"project-01"}})
	start := time.Now()
	for {
		req, _ := http.NewRequest("POST", base+"/api/0/organizations/"+org+"/artifactbundle/assemble/", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var out struct {
			State  string
			Detail *string
		}
		err = json.NewDecoder(res.Body).Decode(&out)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			b.Fatalf("assemble: %d %v", res.StatusCode, err)
		}
		switch out.State {
		case "ok":
			return time.Since(start)
		case "error", "not_found":
			b.Fatalf("assemble: %s %v", out.State, out.Detail)
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatal("assembly did not end in 10 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sha1sumTime is the best of three runs of sha1sum over the file, which the
// page cache holds after the first.
func sha1sumTime(b *testing.B, path, want string) time.Duration {
	b.Helper()
	best := time.Duration(1<<63 - 1)
	for range 3 {
		start := time.Now()
		out, err := exec.Command("sha1sum", path).Output()
		elapsed := time.Since(start)
		if err != nil {
			b.Fatalf("sha1sum: %v", err)
		}
		if got, _, _ := strings.Cut(string(out), " "); got != want {
			b.Fatalf("sha1sum says %s, the bundle's SHA-1 is %s", got, want)
		}
		best = min(best, elapsed)
	}
	return best
}

// BenchmarkAssembly uploads bundles of 100 MiB and 256 MiB as 8 MiB chunks,
// then times their assembly by the worker of the server process against
// sha1sum over the same bytes, and records how much the server's RSS grows
// while it assembles.
func BenchmarkAssembly(b *testing.B) {
	bench := storetest.BenchDatabase(b)
	bin, _, _ := benchBinary(b, releaseBuildFlags...)
	token := benchToken(b, bench)
	s := benchStart(b, bin, bench.URL, fmt.Sprintf("MAX_BUNDLE_SIZE=%d", 512*mib))
	run := strconv.FormatInt(time.Now().UnixNano(), 36)

	type result struct {
		size                 int64
		upload, assemble, sh time.Duration
		base, peak           int64
	}
	var results []result
	for _, size := range []int64{100 * mib, 256 * mib} {
		version := fmt.Sprintf("bench-assemble-%s-%d", run, size/mib)
		path := filepath.Join(b.TempDir(), "bundle")
		checksum := benchBundle(b, path, bench.Org, version, size)
		fi, _ := os.Stat(path)
		start := time.Now()
		chunks := benchUpload(b, s.base, bench.Org, token, path)
		r := result{size: fi.Size(), upload: time.Since(start)}
		clean := func() {
			storetest.Exec(b, bench.URL, `
				WITH r AS (DELETE FROM releases WHERE version = $1 RETURNING id)
				DELETE FROM files WHERE id IN (
					SELECT file_id FROM release_files WHERE release_id IN (SELECT id FROM r))`, version)
			storetest.Exec(b, bench.URL, `DELETE FROM blob_owners WHERE sha1 = ANY($1)`, chunks)
			storetest.Exec(b, bench.URL, `DELETE FROM blob_data WHERE key = ANY($1)`, chunks)
			storetest.Exec(b, bench.URL, `DELETE FROM blobs WHERE sha1 = ANY($1)`, chunks)
			storetest.Exec(b, bench.URL, `DELETE FROM jobs WHERE payload ->> 'checksum' = $1`, checksum)
		}
		b.Cleanup(clean)
		// Let the server settle after the upload, so that its RSS before
		// the assembly is not the upload's.
		time.Sleep(3 * time.Second)
		r.base = s.memory(b, "VmRSS")
		r.peak = s.peakRSS(b, func() { r.assemble = benchAssemble(b, s.base, bench.Org, token, checksum, chunks) })
		r.sh = sha1sumTime(b, path, checksum)
		os.Remove(path)
		clean()
		results = append(results, r)
	}

	fmt.Printf("\n### Assembly of an artifact bundle uploaded as 8 MiB chunks\n\n")
	fmt.Println("| bundle | upload | assembly | assembly MiB/s | sha1sum MiB/s | assembly/sha1sum | RSS before | peak RSS | RSS growth | targets |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range results {
		mbps := func(d time.Duration) float64 { return float64(r.size) / mib / d.Seconds() }
		ratio := mbps(r.assemble) / mbps(r.sh)
		growth := r.peak - r.base
		var verdict string
		switch r.size < 200*mib {
		case true:
			verdict = "assembly ≥ 50 % of sha1sum: " + passMiss(ratio >= 0.5)
		default:
			verdict = "RSS growth < 64 MB: " + passMiss(growth < 64e6)
		}
		fmt.Printf("| %.0f MiB | %.1f s | %.2f s | %.0f | %.0f | %.2f | %.1f MB | %.1f MB | %.1f MB | %s |\n",
			float64(r.size)/mib, r.upload.Seconds(), r.assemble.Seconds(), mbps(r.assemble), mbps(r.sh), ratio,
			float64(r.base)/1e6, float64(r.peak)/1e6, float64(growth)/1e6, verdict)
		b.ReportMetric(mbps(r.assemble), fmt.Sprintf("MiB/s-%.0fMiB", float64(r.size)/mib))
	}
	fmt.Println()
}

// dedupBundle is a 64 MiB bundle of 32 stored members of 2 MiB of random
// bytes, without a release; member 5 differs with variant. It returns the
// bundle and its 8 MiB chunks' SHA-1s.
func dedupBundle(b *testing.B, org string, variant int) ([]byte, string, []string) {
	b.Helper()
	var buf bytes.Buffer
	buf.WriteString("SYSB\x02\x00\x00\x00")
	zw := zip.NewWriter(&buf)
	const member, members = 2 * mib, 32
	files := map[string]any{}
	for i := range members {
		files[fmt.Sprintf("files/_/_/chunk-%02d.js", i)] = map[string]any{"url": fmt.Sprintf("~/static/chunk-%02d.js", i)}
	}
	manifest, _ := json.Marshal(map[string]any{"org": org, "files": files})
	w, _ := zw.Create("manifest.json")
	w.Write(manifest)
	content := make([]byte, member)
	for i := range members {
		seed := [32]byte{byte(i)}
		if i == 5 {
			seed[1] = byte(variant + 1)
		}
		rand.NewChaCha8(seed).Read(content)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("files/_/_/chunk-%02d.js", i), Method: zip.Store})
		if err != nil {
			b.Fatal(err)
		}
		w.Write(content)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	var chunks []string
	for rest := data; len(rest) > 0; {
		n := min(8*mib, len(rest))
		sum := sha1.Sum(rest[:n])
		chunks = append(chunks, hex.EncodeToString(sum[:]))
		rest = rest[n:]
	}
	sum := sha1.Sum(data)
	return data, hex.EncodeToString(sum[:]), chunks
}

// BenchmarkStorageDedup assembles bundles for eleven releases of one
// organization the way sentry-cli 2.x does with artifact_bundles_v2: it asks
// which chunks are missing, uploads only those, then waits for the
// assembly. The first two releases get the same bundle; the next nine each
// change one member. It prints, per release, the chunks uploaded and how
// much the tables of the blob model grew.
func BenchmarkStorageDedup(b *testing.B) {
	bench := storetest.BenchDatabase(b)
	bin, _, _ := benchBinary(b, releaseBuildFlags...)
	token := benchToken(b, bench)
	s := benchStart(b, bin, bench.URL)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	conn := storetest.Pool(b, bench.URL)
	storage := func() int64 {
		var n int64
		err := conn.QueryRow(context.Background(), `
			SELECT sum(pg_total_relation_size(t::regclass))::bigint FROM unnest($1::text[]) AS t`,
			[]string{"blob_data", "blobs", "blob_owners", "files", "file_blobs", "release_files", "releases", "release_projects"}).Scan(&n)
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	ask := func(version, checksum string, chunks []string) (string, []string) {
		body, _ := json.Marshal(map[string]any{"checksum": checksum, "chunks": chunks,
			"projects": []string{"project-01"}, "version": version})
		req, _ := http.NewRequest("POST", s.base+"/api/0/organizations/"+bench.Org+"/artifactbundle/assemble/", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		var out struct {
			State         string
			MissingChunks []string
			Detail        *string
		}
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusOK {
			b.Fatalf("assemble: %d %v", res.StatusCode, err)
		}
		if out.State == "error" {
			b.Fatalf("assemble: %v", *out.Detail)
		}
		return out.State, out.MissingChunks
	}
	upload := func(data []byte, chunks, missing []string) int64 {
		var sent int64
		for len(missing) > 0 {
			batch := missing[:min(3, len(missing))] // 24 MiB, under maxRequestSize
			missing = missing[len(batch):]
			var body bytes.Buffer
			mw := multipart.NewWriter(&body)
			for i, c := range chunks {
				if !slices.Contains(batch, c) {
					continue
				}
				part := data[i*8*mib : min((i+1)*8*mib, len(data))]
				pw, _ := mw.CreateFormFile("file", c)
				pw.Write(part)
				sent += int64(len(part))
			}
			mw.Close()
			req, _ := http.NewRequest("POST", s.base+"/api/0/organizations/"+bench.Org+"/chunk-upload/", &body)
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", mw.FormDataContentType())
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				b.Fatalf("chunk upload: %d", res.StatusCode)
			}
		}
		return sent
	}

	fmt.Printf("\n### Storage of eleven releases' bundles (64 MiB, 8 chunks each)\n\n")
	fmt.Println("| release | bundle | chunks uploaded | bytes uploaded | storage growth | growth / bytes uploaded | assembly | targets |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---|")
	var versions []string
	b.Cleanup(func() {
		storetest.Exec(b, bench.URL, `DELETE FROM releases WHERE version = ANY($1)`, versions)
	})
	for i := range 11 {
		variant := max(i-1, 0) // releases 0 and 1 share a bundle
		data, checksum, chunks := dedupBundle(b, bench.Org, variant)
		version := fmt.Sprintf("bench-dedup-%s-%02d", run, i)
		versions = append(versions, version)
		before := storage()
		start := time.Now()
		_, missing := ask(version, checksum, chunks)
		sent := upload(data, chunks, missing)
		for state := ""; state != "ok"; {
			state, _ = ask(version, checksum, chunks)
			if time.Since(start) > 5*time.Minute {
				b.Fatal("assembly did not end in 5 minutes")
			}
			if state != "ok" {
				time.Sleep(20 * time.Millisecond)
			}
		}
		took := time.Since(start)
		growth := storage() - before
		ratio, verdict := "-", ""
		if sent > 0 {
			ratio = fmt.Sprintf("%.2f", float64(growth)/float64(sent))
			// TOAST stores bytea in pages of 2 KB chunks with a header
			// each: about 4 % over the bytes.
			verdict = "growth ≤ uploaded chunks +5 % +1 MiB: " + passMiss(growth <= sent*105/100+mib)
		} else {
			verdict = "0 chunks and growth < 1 MiB: " + passMiss(len(missing) == 0 && growth < mib)
		}
		fmt.Printf("| %d | variant %d | %d of %d | %.1f MiB | %.2f MiB | %s | %.2f s | %s |\n",
			i, variant, len(missing), len(chunks), float64(sent)/mib, float64(growth)/mib, ratio, took.Seconds(), verdict)
	}
	fmt.Println()
}
