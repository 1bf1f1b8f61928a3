package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"errata/store/s3/s3test"
	"errata/store/storetest"
)

// BenchmarkDebuginfod loads errata's debuginfod route and the elfutils
// reference server (`debuginfod -F DIR`, C++ reading local files) with
// the same requests in one run, with wrk: a debuginfo of 1 MiB, and an
// unknown build id; errata keeping its blobs in PostgreSQL, then in an
// S3 store (versitygw). The two servers take turns (BENCH_TURNS). It
// prints requests per second, errata's ratio to the reference, and the
// CPU time each server spent per request (less swayed than throughput
// by what else the machine runs).
func BenchmarkDebuginfod(b *testing.B) {
	wrk := benchTool(b, "wrk", "WRK")
	for _, tool := range []string{"gcc", "objcopy", "debuginfod"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Fatalf("%s is needed: ./dev.sh test installs it", tool)
		}
	}
	d := benchDuration(b) / 4
	turns := benchTurns(b, d)
	turn := max(time.Second, (d / time.Duration(turns)).Truncate(time.Second)) // wrk counts whole seconds
	bin, _, _ := benchBinary(b, releaseBuildFlags...)

	// A debug companion of 1 MiB: a program's DWARF, padded with a
	// section of random bytes.
	dir := b.TempDir()
	src := filepath.Join(dir, "crash.c")
	os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o644)
	exe := filepath.Join(dir, "crash")
	if out, err := exec.Command("gcc", "-g", "-Wl,--build-id", "-o", exe, src).CombinedOutput(); err != nil {
		b.Fatalf("gcc: %v\n%s", err, out)
	}
	pad := filepath.Join(dir, "pad")
	junk := make([]byte, mib-16<<10)
	rand.Read(junk)
	os.WriteFile(pad, junk, 0o644)
	served := filepath.Join(dir, "served")
	os.MkdirAll(served, 0o755)
	dbg := filepath.Join(served, "crash.debug")
	if out, err := exec.Command("objcopy", "--only-keep-debug", "--add-section", ".debug_pad="+pad, exe, dbg).CombinedOutput(); err != nil {
		b.Fatalf("objcopy: %v\n%s", err, out)
	}
	content, _ := os.ReadFile(dbg)
	out, _ := exec.Command("readelf", "-n", dbg).Output()
	_, id, _ := strings.Cut(string(out), "Build ID: ")
	id = strings.Fields(id)[0]
	const unknown = "00112233445566778899aabbccddeeff00112233"

	// The reference server, scanning the directory.
	port := freePortB(b)
	ref := fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "debuginfod", "-F", served, "-p", fmt.Sprint(port), "-d", filepath.Join(dir, "db.sqlite"))
	cmd.Env = append(os.Environ(), "DEBUGINFOD_URLS=")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cancel(); cmd.Wait() })
	waitStatus(b, ref+"/buildid/"+id+"/debuginfo", "", http.StatusOK)
	refServer := &benchServer{base: ref, pid: cmd.Process.Pid}

	srv := s3test.Start(b)
	srv.Client("bench")
	type row struct {
		what                  string
		errata, elfutil       float64 // requests per second
		errataCPU, elfutilCPU float64 // µs of CPU time per request
	}
	var rows []row
	for _, where := range []string{"postgres", "s3"} {
		db := storetest.NewDatabase(b)
		env := []string{"LOG_LEVEL=warn"}
		if where == "s3" {
			env = append(env, "BLOB_STORE=s3://bench/debuginfod", "S3_ENDPOINT="+srv.Endpoint(),
				"S3_ACCESS_KEY_ID="+srv.Key, "S3_SECRET_ACCESS_KEY="+srv.Secret)
		}
		getenv := func(k string) string {
			for _, kv := range append([]string{"DATABASE_URL=" + db}, env...) {
				if v, ok := strings.CutPrefix(kv, k+"="); ok {
					return v
				}
			}
			return ""
		}
		admin := func(args ...string) string {
			var out strings.Builder
			if err := run(context.Background(), append([]string{"admin"}, args...), getenv, &out, io.Discard); err != nil {
				b.Fatalf("admin %v: %v", args, err)
			}
			return strings.TrimSpace(out.String())
		}
		admin("create-user", "--email", "bench@errata.localhost")
		admin("create-org", "--slug", "bench", "--owner", "bench@errata.localhost")
		admin("create-project", "--org", "bench", "--slug", "app")
		token := admin("create-token", "--email", "bench@errata.localhost", "--scopes", "project:read,project:write")
		s := benchStart(b, bin, db, env...)
		uploadDebugFile(b, s.base, token, "crash.debug", content)
		base := s.base + "/debuginfod/bench"
		waitStatus(b, base+"/buildid/"+id+"/debuginfo", token, http.StatusOK)
		waitStatus(b, base+"/buildid/"+unknown+"/debuginfo", token, http.StatusNotFound)
		for _, c := range []struct{ what, path string }{
			{"debuginfo of 1 MiB", "/buildid/" + id + "/debuginfo"},
			{"unknown build id (404)", "/buildid/" + unknown + "/debuginfo"},
		} {
			// The two servers take turns, in alternating order, so that
			// what else the machine does weighs on both alike.
			// Each server's CPU time is counted over its own turns.
			var e, r loadResult
			load := func(srv *benchServer, url string, into *loadResult) {
				cpu := srv.cpu(b)
				l := runWrk(b, wrk, url, token, turn)
				l.cpu = srv.cpu(b) - cpu
				*into = into.add(l)
			}
			for i := range turns {
				if i%2 == 0 {
					load(s, base+c.path, &e)
				}
				load(refServer, ref+c.path, &r)
				if i%2 == 1 {
					load(s, base+c.path, &e)
				}
			}
			perRequest := func(l loadResult) float64 { return float64(l.cpu.Microseconds()) / float64(max(l.requests, 1)) }
			rows = append(rows, row{c.what + ", blobs in " + where, e.perSecond, r.perSecond, perRequest(e), perRequest(r)})
		}
	}
	fmt.Printf("\n### debuginfod: errata against elfutils' debuginfod -F (wrk, %d connections, %d turns of %s for each server, alternating)\n\n", loadConnections, turns, turn)
	fmt.Println("| request | errata req/s | elfutils debuginfod req/s | errata / elfutils | errata CPU µs/req | elfutils CPU µs/req |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Printf("| %s | %.0f | %.0f | %.2f | %.0f | %.0f |\n", r.what, r.errata, r.elfutil, r.errata/r.elfutil, r.errataCPU, r.elfutilCPU)
	}
}

// freePortB is a TCP port of 127.0.0.1 that was free a moment ago.
func freePortB(b *testing.B) int {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// uploadDebugFile uploads content as a debug file named name of project
// app of bench, as sentry-cli 2.x does without chunks (a zip posted to
// files/dsyms/).
func uploadDebugFile(b *testing.B, base, token, name string, content []byte) {
	b.Helper()
	var z bytes.Buffer
	zw := zip.NewWriter(&z)
	w, _ := zw.Create(name)
	w.Write(content)
	zw.Close()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "debug-files.zip")
	fw.Write(z.Bytes())
	mw.Close()
	req, _ := http.NewRequest("POST", base+"/api/0/projects/bench/app/files/dsyms/", &body)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusCreated {
		b.Fatalf("upload of %s: %d %s", name, res.StatusCode, out)
	}
}

// waitStatus waits up to 30 s for GET url (with the token when not empty)
// to answer status.
func waitStatus(b *testing.B, url, token string, status int) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequest("GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == status {
				return
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("GET %s did not answer %d in 30 s (last: %v %v)", url, status, res, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
