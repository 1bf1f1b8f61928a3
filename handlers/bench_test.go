package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"errata/authn"
	"errata/store"
	"errata/store/storetest"
)

// The endpoint benchmarks run on the seeded database of ./dev.sh bench
// (testdata/bench/seed.sql). Each call is measured twice in the same run:
// as an endpoint, the whole handler from routing to the JSON body (served
// in process, without the TCP transport, which the wrk run of package main
// measures), and as its floor, the very statements that one call of the
// endpoint ran, recorded by a pgx tracer and replayed through a pgx pool
// with its statement cache, reading every row, with no HTTP and no JSON.

// benchEnv is errata's handler on the benchmark database, a twin whose
// store records its statements, and the floor's pool.
type benchEnv struct {
	storetest.Bench
	db    *pgxpool.Pool // the floor's driver; also reads fixtures
	h     http.Handler  // measured
	rec   *storetest.Recorder
	recH  http.Handler         // on the recording store
	auth  *authn.Authenticator // without a cache, measured
	recA  *authn.Authenticator // without a cache, on the recording store
	token string

	deepCursor string // the cursor of the page after row 25 000
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	ctx := context.Background()
	bench := storetest.BenchDatabase(b)
	e := &benchEnv{Bench: bench, rec: &storetest.Recorder{}}
	e.db = storetest.Pool(b, e.URL)
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	// Both handlers authenticate as the server does, with its token cache.
	open := func(cfg store.Config) (*store.Store, http.Handler) {
		st, err := store.Open(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(st.Close)
		auth := &authn.Authenticator{Store: st, CacheFor: authn.TokenCacheTime}
		return st, New(Deps{Store: st, Auth: auth, Log: log, SecretKey: "bench"})
	}
	st, h := open(store.Config{URL: e.URL})
	e.h = h
	recSt, recH := open(store.Config{URL: e.URL, OnStatement: e.rec.Hook})
	e.recH = recH
	// Token authentication is measured without the cache too.
	e.auth, e.recA = &authn.Authenticator{Store: st}, &authn.Authenticator{Store: recSt}

	tok, hash := authn.NewToken()
	if _, err := st.CreateToken(ctx, e.Owner, hash, authn.Scopes, "bench"); err != nil {
		b.Fatal(err)
	}
	e.token = tok
	b.Cleanup(func() {
		e.db.Exec(context.Background(), `DELETE FROM api_tokens WHERE token_hash = $1`, hash) //nolint:errcheck
	})

	e.deepCursor = encodeCursor(bench.Deep, false)
	e.deleteCreated(b)
	b.Cleanup(func() { e.deleteCreated(b) })
	return e
}

// createdPrefix starts the versions that the release-create benchmark
// makes; they are removed before and after it.
const createdPrefix = "bench-create-"

func (e *benchEnv) deleteCreated(b *testing.B) {
	b.Helper()
	if _, err := e.db.Exec(context.Background(), `
		DELETE FROM releases WHERE starts_with(version, $1)`, createdPrefix); err != nil {
		b.Fatal(err)
	}
}

// serve runs one request through h and returns the response.
func (e *benchEnv) serve(h http.Handler, method, target string, body []byte) *httptest.ResponseRecorder {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	req.Header.Set("Authorization", "Bearer "+e.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// discardWriter is a ResponseWriter that keeps the status and drops the
// body, as a network connection would take it, so that the benchmarks do
// not count a recorder's copy of each body.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *discardWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(b), nil
}

// measure runs one request through the measured handler and returns its
// status.
func (e *benchEnv) measure(method, target string, body []byte) int {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	req.Header.Set("Authorization", "Bearer "+e.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	w := &discardWriter{header: http.Header{}}
	e.h.ServeHTTP(w, req)
	return w.status
}

// benchCall is one call of the benchmarks.
type benchCall struct {
	name   string
	target float64 // the largest endpoint/floor ratio allowed; 0: none
	// endpoint makes call i on the measured handler; floor replays the
	// recorded statements for call i.
	endpoint func(b *testing.B, i int)
	floor    func(b *testing.B, i int) // nil: no statement to replay
	stmts    int                       // statements one call runs
}

// getCall measures GET target, which must answer 200, and checks the body
// once with check.
func (e *benchEnv) getCall(b *testing.B, name, target string, ratio float64, check func(body []byte) error) benchCall {
	b.Helper()
	e.serve(e.recH, "GET", target, nil) // touches the token, fills caches
	var w *httptest.ResponseRecorder
	stmts := e.rec.Record(func() { w = e.serve(e.recH, "GET", target, nil) })
	if w.Code != http.StatusOK {
		b.Fatalf("GET %s: %d %s", target, w.Code, w.Body)
	}
	if err := check(w.Body.Bytes()); err != nil {
		b.Fatalf("GET %s: %v", target, err)
	}
	return benchCall{
		name: name, target: ratio, stmts: len(stmts),
		endpoint: func(b *testing.B, _ int) {
			if status := e.measure("GET", target, nil); status != http.StatusOK {
				b.Fatalf("GET %s: %d", target, status)
			}
		},
		floor: func(b *testing.B, _ int) {
			if err := storetest.Replay(context.Background(), e.db, stmts, nil); err != nil {
				b.Fatal(err)
			}
		},
	}
}

// listLength checks that a list body has n items and returns the first.
func listLength(n int) func([]byte) error {
	return func(body []byte) error {
		var items []map[string]any
		if err := json.Unmarshal(body, &items); err != nil {
			return err
		}
		if len(items) != n {
			return fmt.Errorf("%d items, want %d", len(items), n)
		}
		return nil
	}
}

func (e *benchEnv) calls(b *testing.B) []benchCall {
	b.Helper()
	org := "/api/0/organizations/" + e.Org
	releasePath := org + "/releases/" + url.PathEscape(e.Release) + "/"
	authReq := func() *http.Request {
		r := httptest.NewRequest("GET", "/api/0/", nil)
		r.Header.Set("Authorization", "Bearer "+e.token)
		return r
	}
	if _, err := e.recA.Authenticate(authReq()); err != nil {
		b.Fatal(err)
	}
	authStmts := e.rec.Record(func() {
		if _, err := e.recA.Authenticate(authReq()); err != nil {
			b.Fatal(err)
		}
	})
	cached := &authn.Authenticator{Store: e.auth.Store, CacheFor: authn.TokenCacheTime}
	calls := []benchCall{{
		name: "token authentication, database", stmts: len(authStmts),
		endpoint: func(b *testing.B, _ int) {
			if _, err := e.auth.Authenticate(authReq()); err != nil {
				b.Fatal(err)
			}
		},
		floor: func(b *testing.B, _ int) {
			if err := storetest.Replay(context.Background(), e.db, authStmts, nil); err != nil {
				b.Fatal(err)
			}
		},
	}, {
		name: "token authentication, cached",
		endpoint: func(b *testing.B, _ int) {
			if _, err := cached.Authenticate(authReq()); err != nil {
				b.Fatal(err)
			}
		},
	}}
	calls = append(calls,
		e.getCall(b, "release list, page 1", org+"/releases/", 1/0.7, listLength(50)),
		e.getCall(b, "release list, page after row 25 000", org+"/releases/?cursor="+e.deepCursor, 1/0.7,
			func(body []byte) error {
				var items []struct{ ID int64 }
				if err := json.Unmarshal(body, &items); err != nil {
					return err
				}
				if len(items) != 50 || items[0].ID != e.DeepNext {
					return fmt.Errorf("%d items, first %d; want 50 from %d", len(items), items[0].ID, e.DeepNext)
				}
				return nil
			}),
		e.getCall(b, "release get", releasePath, 1/0.5, func(body []byte) error {
			var rel struct {
				Version    string
				Projects   []any
				LastDeploy any
			}
			if err := json.Unmarshal(body, &rel); err != nil {
				return err
			}
			if len(rel.Projects) != 2 || rel.LastDeploy == nil {
				return fmt.Errorf("release %s has %d projects and deploy %v", rel.Version, len(rel.Projects), rel.LastDeploy)
			}
			return nil
		}),
		e.getCall(b, "organization environments", org+"/environments/", 0, listLength(50)),
		e.getCall(b, "project environments", "/api/0/projects/"+e.Org+"/project-01/environments/", 0,
			func(body []byte) error {
				var items []environmentLinkOut
				if err := json.Unmarshal(body, &items); err != nil {
					return err
				}
				if len(items) < 10 {
					return fmt.Errorf("%d environments, want at least 10", len(items))
				}
				return nil
			}),
		e.getCall(b, "release files list", releasePath+"files/", 0, listLength(50)),
		e.createCall(b, org+"/releases/"),
	)
	return calls
}

// createCall measures POST releases/ with a new version each time. Its
// floor replays the recorded statements with the new version, and with the
// id the replayed insert returned in place of the recorded release's id.
func (e *benchEnv) createCall(b *testing.B, target string) benchCall {
	b.Helper()
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	body := func(version string) []byte {
		enc, _ := json.Marshal(map[string]any{
			"version": version, "projects": []string{"project-01"},
			"ref": "6ba09d5e8f6d4e0e9ad6f0c3b8d2e1f4a5b6c7d8", "dateReleased": "2025-06-01T12:00:00Z",
		})
		return enc
	}
	marker := createdPrefix + run + "-recorded"
	var w *httptest.ResponseRecorder
	stmts := e.rec.Record(func() { w = e.serve(e.recH, "POST", target, body(marker)) })
	if w.Code != http.StatusCreated {
		b.Fatalf("POST %s: %d %s", target, w.Code, w.Body)
	}
	var rel struct{ ID int64 }
	if err := json.Unmarshal(w.Body.Bytes(), &rel); err != nil {
		b.Fatal(err)
	}
	// Versions are numbered across the rounds: b.Loop's i starts over in
	// each.
	var made int
	return benchCall{
		name: "release create", stmts: len(stmts),
		endpoint: func(b *testing.B, _ int) {
			made++
			v := fmt.Sprintf("%s%s-e%d", createdPrefix, run, made)
			if status := e.measure("POST", target, body(v)); status != http.StatusCreated {
				b.Fatalf("POST %s: %d", target, status)
			}
		},
		floor: func(b *testing.B, _ int) {
			made++
			sub := &storetest.Substitution{Marker: marker, Fresh: fmt.Sprintf("%s%s-f%d", createdPrefix, run, made), ID: rel.ID}
			if err := storetest.Replay(context.Background(), e.db, stmts, sub); err != nil {
				b.Fatal(err)
			}
		},
	}
}

// BenchmarkEndpoints measures every call as endpoint and then as floor,
// and prints the table of their ratios, each figure the median of the runs
// that -count asks for.
func BenchmarkEndpoints(b *testing.B) {
	e := newBenchEnv(b)
	calls := e.calls(b)
	ns, cpu := map[string][]float64{}, map[string][]float64{}
	// Rounds (BENCH_COUNT) rather than -count, which runs each
	// sub-benchmark its times in a row: in a round, each endpoint is
	// measured right before its floor, so that both see the machine alike.
	for round := range benchRounds(b) {
		for _, c := range calls {
			for _, kind := range []string{"endpoint", "floor"} {
				f := c.endpoint
				if kind == "floor" {
					f = c.floor
				}
				if f == nil {
					continue
				}
				key := c.name + "/" + kind
				name := fmt.Sprintf("round%d/%s/%s", round+1, strings.ReplaceAll(c.name, " ", "_"), kind)
				b.Run(name, func(b *testing.B) {
					b.ReportAllocs()
					cpu0 := processCPU(b)
					for i := 0; b.Loop(); i++ {
						f(b, i)
					}
					perOp := float64((processCPU(b) - cpu0).Nanoseconds()) / float64(b.N)
					b.ReportMetric(perOp/1e3, "cpu-µs/op")
					ns[key] = append(ns[key], float64(b.Elapsed().Nanoseconds())/float64(b.N))
					cpu[key] = append(cpu[key], perOp)
				})
			}
		}
	}
	printEndpointTable(os.Stdout, calls, ns, cpu)
}

// benchRounds is BENCH_COUNT, 3 by default.
func benchRounds(b *testing.B) int {
	b.Helper()
	v := os.Getenv("BENCH_COUNT")
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("BENCH_COUNT: %q is not a positive number", v)
	}
	return n
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// pairedRatio is the median over the rounds of a's value over b's in the
// same round.
func pairedRatio(a, b []float64) float64 {
	var ratios []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			ratios = append(ratios, a[i]/b[i])
		}
	}
	return median(ratios)
}

// printEndpointTable writes the markdown table of the endpoint benchmarks.
func printEndpointTable(w io.Writer, calls []benchCall, ns, cpu map[string][]float64) {
	runs := 0
	for _, xs := range ns {
		runs = max(runs, len(xs))
	}
	if runs == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Endpoints against their floor (Go benchmarks, median of %d rounds)\n\n", runs)
	fmt.Fprintln(w, "| call | statements | endpoint µs/op | floor µs/op | endpoint/floor | target | | endpoint CPU µs/op | floor CPU µs/op |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---|---:|---:|")
	const page1, deep = "release list, page 1/endpoint", "release list, page after row 25 000/endpoint"
	for _, c := range calls {
		end, fl := median(ns[c.name+"/endpoint"]), median(ns[c.name+"/floor"])
		if end == 0 {
			continue
		}
		endCPU, flCPU := median(cpu[c.name+"/endpoint"]), median(cpu[c.name+"/floor"])
		if fl == 0 {
			fmt.Fprintf(w, "| %s | %d | %s | | | | | %s | |\n", c.name, c.stmts, micros(end), micros(endCPU))
			continue
		}
		ratio := pairedRatio(ns[c.name+"/endpoint"], ns[c.name+"/floor"])
		target, verdict := "", ""
		if c.target > 0 {
			target = fmt.Sprintf("≤ %.2f", c.target)
			verdict = passMiss(ratio <= c.target)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %.2f | %s | %s | %s | %s |\n",
			c.name, c.stmts, micros(end), micros(fl), ratio, target, verdict, micros(endCPU), micros(flCPU))
	}
	if len(ns[page1]) > 0 && len(ns[deep]) > 0 {
		ratio := pairedRatio(ns[deep], ns[page1])
		fmt.Fprintf(w, "| deep page / page 1 (endpoint) | | %s | %s | %.2f | ≤ 1.50 | %s | | |\n",
			micros(median(ns[deep])), micros(median(ns[page1])), ratio, passMiss(ratio <= 1.5))
	}
	fmt.Fprintln(w, "\nCPU µs/op is the benchmark process's CPU time (user and system) per call: errata's side of it, without PostgreSQL's. Times and CPU are medians over the rounds, a ratio the median of each round's own (in a round, each endpoint runs right before its floor).")
	fmt.Fprintln(w)
}

// micros writes ns nanoseconds in microseconds.
func micros(ns float64) string {
	if ns < 10e3 {
		return fmt.Sprintf("%.1f", ns/1e3)
	}
	return fmt.Sprintf("%.0f", ns/1e3)
}

func passMiss(ok bool) string {
	if ok {
		return "pass"
	}
	return "**miss**"
}
