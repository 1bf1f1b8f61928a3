package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"errata/authn"
	"errata/store"
)

// withStore serves f's routes from a store on f's database opened with
// cfg (its URL set here), as run() opens it with the server's settings.
func (f assembleFixture) withStore(t *testing.T, cfg store.Config) *store.Store {
	t.Helper()
	cfg.URL = f.db
	st, err := store.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	d := Deps{Store: st, Auth: &authn.Authenticator{Store: st}, Log: f.lg, Now: time.Now, SecretKey: "test-secret"}
	srv := httptest.NewServer(New(d))
	t.Cleanup(srv.Close)
	f.testAPI.srv, f.testAPI.st = srv, st
	return st
}

// difBody is a difs/assemble body of one file per chunk, each named by its
// chunk's checksum.
func difBody(chunks ...string) map[string]any {
	body := map[string]any{}
	for _, c := range chunks {
		body[c] = map[string]any{"name": "hello.sym", "chunks": []string{c}}
	}
	return body
}

// TestOverTheJobLimitTheAPIAnswers503AndEnqueuesNothing: with
// ORG_JOB_LIMIT=3, a request that would take the organization past 3
// queued jobs is 503 with Retry-After and a detail naming the limit, and
// enqueues none of its jobs, not even those that would fit; a request that
// only asks about its queued jobs is answered; no answer is another 5xx.
func TestOverTheJobLimitTheAPIAnswers503AndEnqueuesNothing(t *testing.T) {
	f := newAssembleFixture(t)
	f.withStore(t, store.Config{OrgJobLimit: 3})
	var sums []string
	for i := range 5 {
		sums = append(sums, f.uploadChunk(t, breakpadFile(fmt.Sprintf("%032X1", i))))
	}
	jobs := func() int { return f.count(`SELECT count(*) FROM jobs WHERE state = 'queued'`) }
	check := func(res response, want int) {
		t.Helper()
		if res.status != want {
			t.Fatalf("status %d, want %d: %s", res.status, want, res.body)
		}
		if res.status >= 500 && res.status != http.StatusServiceUnavailable {
			t.Fatalf("a 5xx other than 503: %d %s", res.status, res.body)
		}
	}
	const difs = "/api/0/projects/acme/web/files/difs/assemble/"

	check(f.do("POST", difs, f.owner, difBody(sums[0], sums[1])), http.StatusOK)
	if n := jobs(); n != 2 {
		t.Fatalf("%d jobs queued, want 2", n)
	}
	res := f.do("POST", difs, f.owner, difBody(sums[2], sums[3]))
	check(res, http.StatusServiceUnavailable)
	if got := res.header.Get("Retry-After"); got != "30" {
		t.Errorf("Retry-After %q, want 30", got)
	}
	res.expect(t, http.StatusServiceUnavailable,
		`{"detail":"The organization has 3 background jobs queued or running, its limit: retry later"}`)
	if n := jobs(); n != 2 {
		t.Errorf("%d jobs queued after the refused request, want still 2: nothing half-written", n)
	}
	// Asking again about the queued files enqueues nothing: answered.
	check(f.do("POST", difs, f.owner, difBody(sums[0], sums[1])), http.StatusOK)
	// One more fits.
	check(f.do("POST", difs, f.owner, difBody(sums[2])), http.StatusOK)
	if n := jobs(); n != 3 {
		t.Errorf("%d jobs queued, want 3", n)
	}
	// At the limit, an artifact bundle's assembly is refused the same way.
	res = f.do("POST", "/api/0/organizations/acme/artifactbundle/assemble/", f.owner,
		map[string]any{"checksum": sums[4], "chunks": []string{sums[4]}, "projects": []string{"web"}, "version": "1.0"})
	check(res, http.StatusServiceUnavailable)
	if res.header.Get("Retry-After") == "" {
		t.Errorf("no Retry-After on the refused bundle assembly")
	}
	if n := jobs(); n != 3 {
		t.Errorf("%d jobs queued after the refused bundle, want 3", n)
	}
	// Another organization is not bound by acme's jobs.
	f.org("beta", "owner@example.com")
	f.project("beta", "api")
	other := f.uploadChunkTo(t, "beta", breakpadFile("ABCDEF00112233445566778899AABBCC1"))
	check(f.do("POST", "/api/0/projects/beta/api/files/difs/assemble/", f.owner, difBody(other)), http.StatusOK)
}

// uploadChunkTo posts data as one raw chunk to organization org.
func (f assembleFixture) uploadChunkTo(t *testing.T, org string, data []byte) string {
	t.Helper()
	sum := sha1Hex(data)
	body, ct := multipartBody(t, nil, []filePart{{"file", sum, data}})
	f.doMultipart("POST", "/api/0/organizations/"+org+"/chunk-upload/", f.owner, body, ct).expect(t, http.StatusOK, nil)
	return sum
}

// TestOneChunkListIsHashedOnceWhateverTheChecksums: 999 made-up checksums
// and the true one, all naming one chunk list, make one assemble_dif job
// that runs once (one pass over the bytes): the true checksum is ok, each
// made-up one a checksum mismatch. Asked again with 1,000 other made-up
// checksums, the answers come from that job's result: no job, no run.
func TestOneChunkListIsHashedOnceWhateverTheChecksums(t *testing.T) {
	f := newAssembleFixture(t)
	f.startWorker()
	data := breakpadFile("77221100554477668899AABBCCDDEEFF1")
	chunk := f.uploadChunk(t, data)
	made := func(from, n int) map[string]any {
		body := map[string]any{}
		for i := range n {
			body[sha1Hex(fmt.Appendf(nil, "made-up %d", from+i))] = map[string]any{"name": "hello.sym", "chunks": []string{chunk}}
		}
		return body
	}
	body := made(0, 999)
	body[chunk] = map[string]any{"name": "hello.sym", "chunks": []string{chunk}}
	const difs = "/api/0/projects/acme/web/files/difs/assemble/"
	var out map[string]difState
	for pending := true; pending; {
		res := f.do("POST", difs, f.owner, body)
		res.expect(t, http.StatusOK, nil)
		out = nil
		if err := json.Unmarshal(res.body, &out); err != nil || len(out) != 1000 {
			t.Fatalf("%d answers: %v", len(out), err)
		}
		pending = false
		for _, st := range out {
			pending = pending || st.State == "created" || st.State == "assembling"
		}
	}
	for sum, st := range out {
		if sum == chunk {
			if st.State != "ok" {
				t.Errorf("the true checksum: %+v, want ok", st)
			}
			continue
		}
		want := "Checksum mismatch: the chunks hash to " + chunk + ", not " + sum
		if st.State != "error" || st.Detail == nil || *st.Detail != want {
			t.Fatalf("made-up checksum %s: %+v, want error %q", sum, st, want)
		}
	}
	runs := func() (jobs, attempts int) {
		return f.count(`SELECT count(*) FROM jobs WHERE kind = 'assemble_dif'`),
			f.count(`SELECT COALESCE(sum(attempts), 0) FROM jobs WHERE kind = 'assemble_dif'`)
	}
	if jobs, attempts := runs(); jobs != 1 || attempts != 1 {
		t.Errorf("%d assemble_dif jobs run %d times in all, want 1 job run once", jobs, attempts)
	}
	res := f.do("POST", difs, f.owner, made(1000, 1000))
	res.expect(t, http.StatusOK, nil)
	out = nil
	if err := json.Unmarshal(res.body, &out); err != nil || len(out) != 1000 {
		t.Fatalf("%d answers: %v", len(out), err)
	}
	for sum, st := range out {
		if st.State != "error" || st.Detail == nil || !strings.HasPrefix(*st.Detail, "Checksum mismatch") {
			t.Fatalf("made-up checksum %s asked after the run: %+v, want a mismatch at once", sum, st)
		}
	}
	if jobs, attempts := runs(); jobs != 1 || attempts != 1 {
		t.Errorf("after 1,000 more made-up checksums: %d jobs run %d times, want 1 run once", jobs, attempts)
	}
	if n := f.count(`SELECT count(*) FROM debug_files`); n != 1 {
		t.Errorf("%d debug files, want 1", n)
	}
}

// TestDifAssembleBoundsTheChunksOfOneRequest: 1,000 files of 5 chunk
// references each name 5,000 chunks, more than maxDifChunkRefs: 422
// before any statement.
func TestDifAssembleBoundsTheChunksOfOneRequest(t *testing.T) {
	f := newAssembleFixture(t)
	chunk := strings.Repeat("c", 40)
	body := map[string]any{}
	for i := range 1000 {
		body[sha1Hex(fmt.Appendf(nil, "%d", i))] = map[string]any{"name": "a", "chunks": []string{chunk, chunk, chunk, chunk, chunk}}
	}
	f.do("POST", "/api/0/projects/acme/web/files/difs/assemble/", f.owner, body).expect(t, http.StatusUnprocessableEntity,
		`{"detail":[{"type":"value_error","loc":["body"],"msg":"At most 4096 chunks at once, all files together"}]}`)
	if n := f.count(`SELECT count(*) FROM jobs`); n != 0 {
		t.Errorf("%d jobs", n)
	}
}

// TestAssembleDifsRunsAsManyStatementsForOneFileAsForHundreds: the
// statements of AssembleDifs do not grow with the files of the request.
func TestAssembleDifsRunsAsManyStatementsForOneFileAsForHundreds(t *testing.T) {
	f := newAssembleFixture(t)
	var statements atomic.Int64
	st := f.withStore(t, store.Config{OnStatement: func(string, []any) { statements.Add(1) }})
	var sums []string
	for i := range 300 {
		sums = append(sums, f.uploadChunk(t, fmt.Appendf(nil, "chunk %d", i)))
	}
	owner := int64(f.count(`SELECT id FROM users WHERE email = 'owner@example.com'`))
	sc := store.ProjectScope{UserID: owner, OrgSlug: "acme", ProjectSlug: "web"}
	cost := func(sums []string, extra []string) int64 {
		t.Helper()
		var reqs []store.DifRequest
		for _, s := range sums {
			reqs = append(reqs, store.DifRequest{Checksum: s, Name: "a", Chunks: []string{s}})
		}
		for _, s := range extra { // chunks nobody uploaded: not_found
			reqs = append(reqs, store.DifRequest{Checksum: s, Name: "a", Chunks: []string{s}})
		}
		before := statements.Load()
		if _, err := st.AssembleDifs(context.Background(), sc, reqs, false); err != nil {
			t.Fatal(err)
		}
		return statements.Load() - before
	}
	one := cost(sums[:1], nil)
	if one > 10 { // SECURITY.md: ten or fewer
		t.Errorf("AssembleDifs ran %d statements for 1 file, want at most 10", one)
	}
	many := cost(sums[1:], []string{strings.Repeat("d", 40), strings.Repeat("e", 40)})
	if many != one {
		t.Errorf("AssembleDifs ran %d statements for 1 file, %d for 301", one, many)
	}
	// Asked again: the jobs exist, so fewer writes, never more.
	if again := cost(sums, nil); again > one {
		t.Errorf("asked again about 300 files: %d statements, more than the first time's %d", again, one)
	}
}
