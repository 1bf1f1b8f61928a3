package main

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"errata/worker/dif/diftest"
)

// auditCharges uploads the files of the audit's findings of bounds that
// counted the wrong thing (docs/resolution.md, docs/symbol-server.md) and
// returns their reproductions:
//   - a source map that parses to 24 times its size, larger than the map
//     cache takes, which every request parsed again (three requests at
//     once, two after): refused once, its refusal kept by SHA-1;
//   - a native request of twelve modules whose parsed files it held all,
//     past the debug-file cache's bound: its budget of held bytes stops it
//     (the audit's five modules of DWARF held 739 MB; twelve Breakpad
//     files of 21 MB each once parsed stand for them, each parse small
//     enough that the server's collector keeps one within the bound);
//   - twelve debuginfod source/ requests at once, each inflating a 64 MiB
//     source whole: each is checked in a slot (one per organization) and
//     sent as it is inflated, holding flate's window.
//
// The files are uploaded first, and the server left until what the
// uploads used is returned (its forced collection, every two minutes), so
// that each finding measures its requests.
func auditCharges(t *testing.T, a *auditServer) []auditFinding {
	t.Helper()
	// 16 MB of line separators: 16 million lines of no segment, 390 MB
	// once parsed.
	auditRelease(t, a, "1.0", map[string]string{
		"~/static/big.js":     "f()\n//# sourceMappingURL=big.js.map\n",
		"~/static/big.js.map": `{"version":3,"sources":["a.js"],"names":[],"mappings":"AAAA` + strings.Repeat(";", 16_000_000) + `"}`,
	})
	jsBody := map[string]any{"release": "1.0", "stacktraces": []any{map[string]any{"frames": []any{
		map[string]any{"abs_path": "https://app.example/static/big.js", "lineno": 1, "colno": 1, "function": "f"}}}}}

	// Twelve Breakpad files of a million records, 16 MB each (a zip of
	// 2 MB), each 21 MB once parsed (49 MB as the cache counts it). They
	// differ in their MODULE record (a module of no records) only, and are
	// deflated at the fastest level: under the race detector, writing
	// each from its first byte took minutes.
	first, _ := diftest.BreakpadModule(0, 0)
	records, _ := diftest.BreakpadModule(0, 1_000_000)
	records = records[len(first):]
	var modules, frames []any
	for i := range 12 {
		sym, debugID := diftest.BreakpadModule(i, 0)
		upload := zipAt(t, flate.BestSpeed, fmt.Sprintf("m%d.sym", i), append(sym, records...))
		if r := postDsyms(t, a.errataServer, upload); r.err != nil || r.status != http.StatusCreated {
			t.Fatalf("upload of module %d (a zip of %d bytes): %v %d %s", i, len(upload), r.err, r.status, r.body)
		}
		base := uint64(0x10000000 * (i + 1))
		modules = append(modules, map[string]any{"type": "elf", "debug_id": debugID, "code_file": fmt.Sprintf("m%d", i),
			"image_addr": fmt.Sprintf("0x%x", base), "image_size": 0x10000000})
		frames = append(frames, map[string]any{"instruction_addr": fmt.Sprintf("0x%x", base+0x1000)})
	}
	nativeBody := map[string]any{"modules": modules, "stacktraces": []any{map[string]any{"frames": frames}}}

	// A source bundle whose one source inflates to 64 MiB (a zip of
	// 130 KB).
	const buildID = "2b0744b61e51db55ac271ee28d84d991a2cfc6fa"
	var zb bytes.Buffer
	zb.WriteString("SYSB\x02\x00\x00\x00")
	zw := zip.NewWriter(&zb)
	w, _ := zw.Create("files/_/src/main.c")
	line := []byte("int main(void) { return 0; }\n")
	source := bytes.Repeat(line, (64<<20)/len(line)) // written at once: line by line took twice as long
	sourceSize := int64(len(source))
	w.Write(source)
	w, _ = zw.Create("manifest.json")
	fmt.Fprintf(w, `{"debug_id": "b644072b-511e-55db-ac27-1ee28d84d991", "code_id": "%s",
		"files": {"files/_/src/main.c": {"type": "source", "path": "/src/main.c"}}}`, buildID)
	zw.Close()
	upload := zipOf(t, "big.src.zip", zb.Bytes())
	if r := postDsyms(t, a.errataServer, upload); r.err != nil || r.status != http.StatusCreated {
		t.Fatalf("upload of the source bundle (a zip of %d bytes): %v %d %s", len(upload), r.err, r.status, r.body)
	}
	a.settle(t)
	return []auditFinding{
		{name: "a source map larger than the cache", maxCPU: 10 * time.Second, attack: func(t *testing.T) {
			check := func(r result) {
				if r.err != nil || r.status != http.StatusOK || !strings.Contains(string(r.body), "malformed_sourcemap") {
					t.Errorf("a resolution over the map: %v %d %.300s, want 200 with the map malformed", r.err, r.status, r.body)
				}
			}
			for _, r := range auditAtOnce(3, func() result {
				return sendJSON(http.DefaultClient, a.errataServer, "POST", "/api/0/projects/acme/web/symbolicate-js/", jsBody)
			}) {
				check(r)
			}
			for range 2 {
				check(sendJSON(http.DefaultClient, a.errataServer, "POST", "/api/0/projects/acme/web/symbolicate-js/", jsBody))
			}
		}},
		{name: "a request holding every module's parsed file", maxCPU: 10 * time.Second, attack: func(t *testing.T) {
			r := sendJSON(http.DefaultClient, a.errataServer, "POST", "/api/0/projects/acme/web/symbolicate/", nativeBody)
			if r.err != nil || r.status >= 500 {
				t.Fatalf("the resolution of twelve modules: %v %d %.300s, want no 5xx", r.err, r.status, r.body)
			}
			var out struct {
				Modules []struct {
					DebugStatus string `json:"debug_status"`
				} `json:"modules"`
			}
			json.Unmarshal(r.body, &out)
			t.Logf("%d, modules %+v", r.status, out.Modules)
		}},
		{name: "source/ inflating 64 MiB twelve times at once", maxCPU: 10 * time.Second, attack: func(t *testing.T) {
			got := auditAtOnce(12, func() auditGetResult {
				return auditGet(a, "/debuginfod/acme/buildid/"+buildID+"/source/src/main.c")
			})
			served := 0
			for _, r := range got {
				switch {
				case r.err == nil && r.status == http.StatusOK && r.size == sourceSize:
					served++
				case r.err != nil || r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "":
					t.Errorf("source/: %v %d, want 200 with the source or 503 with Retry-After", r.err, r.status)
				}
			}
			t.Logf("%d of 12 served", served)
		}},
	}
}

// auditAtOnce runs n requests at once and returns their results.
func auditAtOnce[R any](n int, req func() R) []R {
	out := make([]R, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i] = req() })
	}
	wg.Wait()
	return out
}

// auditGetResult is a GET's answer, its body counted and dropped.
type auditGetResult struct {
	status int
	header http.Header
	size   int64
	err    error
}

// auditGet sends a GET with a's token and counts the answer's bytes.
func auditGet(a *auditServer, path string) auditGetResult {
	req, _ := http.NewRequest("GET", a.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+a.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return auditGetResult{err: err}
	}
	defer res.Body.Close()
	n, err := io.Copy(io.Discard, res.Body)
	return auditGetResult{status: res.StatusCode, header: res.Header, size: n, err: err}
}
