package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// uploadChunksTo uploads chunks to organization org's chunk upload, in one
// request, and returns their names.
func uploadChunksTo(t *testing.T, s *errataServer, org string, chunks [][]byte) []string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	var names []string
	for _, c := range chunks {
		names = append(names, sha1Hex(c))
		w, err := mw.CreateFormFile("file", sha1Hex(c))
		if err != nil {
			t.Fatal(err)
		}
		w.Write(c)
	}
	mw.Close()
	r := send(http.DefaultClient, s, "POST", "/api/0/organizations/"+org+"/chunk-upload/", mw.FormDataContentType(), &body)
	if r.err != nil || r.status != http.StatusOK {
		t.Fatalf("chunk upload: %s", r)
	}
	return names
}

// smallBundle is an artifact bundle of release version of organization
// org with one small file.
func smallBundle(t *testing.T, org, version string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("files/_/_/app.js")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("console.log('globex')\n"))
	m, _ := json.Marshal(map[string]any{"org": org, "release": version, "files": map[string]any{
		"files/_/_/app.js": map[string]any{"url": "~/app.js", "type": "minified_source", "headers": map[string]string{}}}})
	w, err = zw.Create("manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(m)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestAFloodOfDebugFileAssembliesDoesNotHoldBackAnotherOrganization
// replays the audit's flood: four clients of organization acme post
// difs/assemble without pause, each request 1,000 made-up checksums over
// chunk lists of acme's (every list distinct, so that each is a job of its
// own that hashes 16 MiB). Meanwhile organization globex assembles an
// artifact bundle and lists its releases. globex's job is claimed before
// acme's backlog drains (asserted on the order: acme still has jobs queued
// when globex's bundle is ok), acme's requests are 200 or 503 with
// Retry-After, and globex's are all answered 200.
func TestAFloodOfDebugFileAssembliesDoesNotHoldBackAnotherOrganization(t *testing.T) {
	t.Parallel()
	s := newErrata(t, map[string]string{"LOG_LEVEL": "error"})
	s.spawn(t)
	setupAcme(t, s)
	attacker := s.token
	victim := s.user(t, "victim@globex.example", "project:releases,project:read,org:read")
	s.cli(t, "admin", "create-org", "--slug", "globex", "--owner", "victim@globex.example")
	s.cli(t, "admin", "create-project", "--org", "globex", "--slug", "web")

	// acme's chunks: eight of 4 MiB, any four of which make a file.
	rng := rand.New(rand.NewPCG(3, 4))
	var chunks [][]byte
	for range 8 {
		c := make([]byte, 4<<20)
		for i := range c {
			c[i] = byte(rng.Uint32())
		}
		chunks = append(chunks, c)
	}
	names := uploadChunksTo(t, s, "acme", chunks[:4])
	names = append(names, uploadChunksTo(t, s, "acme", chunks[4:])...)

	var mu sync.Mutex
	statuses := map[int]int{}
	var badRetry int
	// The flood's clients send with a copy of s made now: the test's own
	// queries set s's connection later.
	flood := *s
	flood.token = attacker
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for client := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(client), 5))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body := map[string]any{}
				for f := range 1000 {
					list := []string{names[rng.IntN(8)], names[rng.IntN(8)], names[rng.IntN(8)], names[rng.IntN(8)]}
					sum := sha1Hex(fmt.Appendf(nil, "made-up %d %d %d", client, i, f))
					body[sum] = map[string]any{"name": "app.sym", "chunks": list}
				}
				r := sendJSON(http.DefaultClient, &flood, "POST", "/api/0/projects/acme/web/files/difs/assemble/", body)
				mu.Lock()
				statuses[r.status]++
				if r.status == http.StatusServiceUnavailable && r.header.Get("Retry-After") == "" {
					badRetry++
				}
				mu.Unlock()
				if r.status == http.StatusServiceUnavailable {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()
	waitFor(t, 30*time.Second, "acme's backlog", func() bool {
		return s.count(t, `SELECT count(*) FROM jobs j JOIN organizations o ON o.id = j.organization_id
			WHERE o.slug = 'acme' AND j.state = 'queued'`) >= 500
	})
	time.Sleep(3 * time.Second) // the flood goes on

	// globex, during the flood.
	g := *s
	g.token = victim
	bundle := smallBundle(t, "globex", "1.0")
	bundleChunks := uploadChunksTo(t, &g, "globex", [][]byte{bundle})
	assemble := map[string]any{"checksum": sha1Hex(bundle), "chunks": bundleChunks, "projects": []string{"web"}, "version": "1.0"}
	start := time.Now()
	var slowestList time.Duration
	var state struct{ State, Detail string }
	for {
		r := sendJSON(http.DefaultClient, &g, "POST", "/api/0/organizations/globex/artifactbundle/assemble/", assemble)
		if r.status != http.StatusOK {
			t.Fatalf("globex's assembly: %s", r)
		}
		json.Unmarshal(r.body, &state)
		if state.State != "created" && state.State != "assembling" {
			break
		}
		l := send(http.DefaultClient, &g, "GET", "/api/0/organizations/globex/releases/?limit=10", "", nil)
		if l.status != http.StatusOK {
			t.Fatalf("globex's list: %s", l)
		}
		slowestList = max(slowestList, l.latency())
		if time.Since(start) > 90*time.Second {
			t.Fatalf("globex's bundle still %s after %s", state.State, time.Since(start).Round(time.Second))
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(start)
	backlog := s.count(t, `SELECT count(*) FROM jobs j JOIN organizations o ON o.id = j.organization_id
		WHERE o.slug = 'acme' AND j.state = 'queued'`)
	close(stop)
	wg.Wait()
	t.Logf("globex's bundle %s after %s, its slowest list %s; acme's queue then: %d jobs; acme's answers %v",
		state.State, took.Round(time.Millisecond), slowestList.Round(time.Millisecond), backlog, statuses)
	if state.State != "ok" {
		t.Errorf("globex's bundle ended %s (%s), want ok", state.State, state.Detail)
	}
	if backlog == 0 {
		t.Errorf("acme's backlog drained before globex's bundle was assembled: its job waited behind the flood")
	}
	for status, n := range statuses {
		if status != http.StatusOK && status != http.StatusServiceUnavailable {
			t.Errorf("%d of acme's requests answered %d, want only 200 or 503", n, status)
		}
	}
	if badRetry > 0 {
		t.Errorf("%d of acme's 503 answers without Retry-After", badRetry)
	}
	if statuses[http.StatusServiceUnavailable] == 0 {
		t.Errorf("acme never reached its job limit: the flood was too small to test it")
	}
}

// TestOrgJobLimitIsASetting: ORG_JOB_LIMIT reaches the server (a request of
// two jobs over a limit of one is 503 naming it), and a value that is not a
// positive number stops it at start.
func TestOrgJobLimitIsASetting(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"0", "-3", "many"} {
		env := map[string]string{"DATABASE_URL": "postgres://unused", "SECRET_KEY": testSecretKey,
			"PUBLIC_URL": "http://errata.test", "ORG_JOB_LIMIT": v}
		err := run(t.Context(), []string{"serve"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "ORG_JOB_LIMIT") {
			t.Errorf("ORG_JOB_LIMIT=%s: err = %v, want one that names ORG_JOB_LIMIT", v, err)
		}
	}
	s := newErrata(t, map[string]string{"LOG_LEVEL": "error", "ORG_JOB_LIMIT": "1"})
	s.serve(t)
	setupAcme(t, s)
	names := uploadChunksTo(t, s, "acme", [][]byte{[]byte("one"), []byte("two")})
	body := map[string]any{}
	for _, n := range names {
		body[n] = map[string]any{"name": "a.sym", "chunks": []string{n}}
	}
	r := sendJSON(http.DefaultClient, s, "POST", "/api/0/projects/acme/web/files/difs/assemble/", body)
	want := `{"detail":"The organization has 1 background jobs queued or running, its limit: retry later"}` + "\n"
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || string(r.body) != want {
		t.Errorf("two jobs over ORG_JOB_LIMIT=1: %s %q, want 503 with Retry-After and %s", r, r.header.Get("Retry-After"), want)
	}
	if n := s.count(t, `SELECT count(*) FROM jobs WHERE kind = 'assemble_dif'`); n != 0 {
		t.Errorf("%d jobs enqueued by the refused request", n)
	}
}
