package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"errata/authn"
	"errata/store"
	"errata/store/storetest"
)

// largeJSApp writes an app of n modules of ten functions each, and its
// entry main.js, under dir/src.
func largeJSApp(b *testing.B, dir string, n int) {
	b.Helper()
	var main strings.Builder
	for i := range n {
		var m strings.Builder
		for j := range 10 {
			fmt.Fprintf(&m, `export function step%[1]d_%[2]d(items, factor) {
  let total = 0;
  for (let k = 0; k < items.length; k++) {
    const item = items[k];
    total += item.price * item.quantity * factor + %[1]d;
  }
  if (total > %[2]d * 1000) {
    return { total, label: "module %[1]d step %[2]d", discounted: total * 0.9 };
  }
  return { total, label: "small", discounted: total };
}
`, i, j)
		}
		os.WriteFile(filepath.Join(dir, "src", fmt.Sprintf("m%d.js", i)), []byte(m.String()), 0o644)
		fmt.Fprintf(&main, "import * as m%d from \"./m%d.js\";\n", i, i)
	}
	main.WriteString("const all = [")
	for i := range n {
		fmt.Fprintf(&main, "m%d, ", i)
	}
	main.WriteString("];\nfor (const m of all) for (const f of Object.values(m)) console.log(f([{ price: 1, quantity: 2 }], 3).label);\n")
	os.WriteFile(filepath.Join(dir, "src", "main.js"), []byte(main.String()), 0o644)
}

// benchUploadReleaseFile stores data as file name of release version of
// acme/web.
func benchUploadReleaseFile(b *testing.B, base, token, version, name string, data []byte) {
	b.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("name", name)
	w, _ := mw.CreateFormFile("file", filepath.Base(name))
	w.Write(data)
	mw.Close()
	req, _ := http.NewRequest("POST", base+"/api/0/projects/acme/web/releases/"+version+"/files/", &buf)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		b.Fatalf("upload %s: %d %s", name, res.StatusCode, body)
	}
}

func benchPost(b *testing.B, client *http.Client, url, token string, body []byte) []byte {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		b.Error(err)
		return nil
	}
	out, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b.Errorf("POST %s: %d %s", url, res.StatusCode, out)
	}
	return out
}

// nodeSymbolicate is the peer: Node doing symbolicate-js's work in process
// with @jridgewell/trace-mapping. Warm: parse each request's JSON, resolve
// every frame, build the output frames and write the answer's JSON, for a
// few seconds. Cold: read, parse and first lookup of the map.
const nodeSymbolicate = `
const fs = require("fs");
const { TraceMap, originalPositionFor } = require(process.env.NODE_TRACE_MAPPING);
const [mapPath, bodyPath, seconds] = process.argv.slice(2);
let t0 = process.hrtime.bigint();
const tm = new TraceMap(fs.readFileSync(mapPath, "utf8"));
originalPositionFor(tm, { line: 1, column: 0 });
const coldMs = Number(process.hrtime.bigint() - t0) / 1e6;
const body = fs.readFileSync(bodyPath, "utf8");
let frames = 0, resolved = 0;
const end = Date.now() + Number(seconds) * 1000;
t0 = process.hrtime.bigint();
while (Date.now() < end) {
  const req = JSON.parse(body);
  const out = { stacktraces: [], raw_stacktraces: req.stacktraces, errors: [] };
  for (const st of req.stacktraces) {
    const fr = [];
    st.frames.forEach((f, i) => {
      const p = originalPositionFor(tm, { line: f.lineno, column: f.colno - 1 });
      if (p.source != null) resolved++;
      fr.push({ function: p.name || f.function, filename: p.source, abs_path: p.source, lineno: p.line, colno: p.column + 1,
        pre_context: [], context_line: null, post_context: [], original_index: i,
        data: { symbolicated: p.source != null, resolved_with: "release", sourcemap: "~/static/large.min.js.map" } });
    });
    out.stacktraces.push({ frames: fr });
    frames += st.frames.length;
  }
  JSON.stringify(out);
}
const secs = Number(process.hrtime.bigint() - t0) / 1e9;
process.stdout.write(JSON.stringify({ coldMs, framesPerSecond: frames / secs, resolved }));
`

// BenchmarkSymbolicateJS measures symbolicate-js over HTTP with a Go client
// against Node doing the same work in process with trace-mapping: warm
// frames per second (1,000 frames a request, no context, 4 clients), and
// the first request over a bundle whose map is several MB against
// trace-mapping's read, parse and first lookup of it, with errata's RSS
// growth meanwhile.
func BenchmarkSymbolicateJS(b *testing.B) {
	esbuild := benchTool(b, "esbuild", "ESBUILD")
	if os.Getenv("NODE_TRACE_MAPPING") == "" {
		b.Fatal("NODE_TRACE_MAPPING is not set: run ./dev.sh bench, which installs it")
	}
	st, dbURL := storetest.NewWithURL(b)
	ctx := context.Background()
	st.CreateUser(ctx, "bench@example.com", "Bench")
	st.CreateOrganization(ctx, "acme", "Acme", "bench@example.com")
	st.CreateProject(ctx, store.Operator, "acme", store.NewProject{Slug: "web", Name: "Web"})
	token, hash := authn.NewToken()
	if _, err := st.CreateToken(ctx, "bench@example.com", hash, authn.Scopes, "bench"); err != nil {
		b.Fatal(err)
	}
	bin, _, _ := benchBinary(b, releaseBuildFlags...)
	s := benchStart(b, bin, dbURL)

	dir := b.TempDir()
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	largeJSApp(b, dir, 1500)
	cmd := exec.Command(esbuild, "src/main.js", "--bundle", "--minify", "--sourcemap", "--platform=node", "--outfile=dist/large.min.js")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("esbuild: %v\n%s", err, out)
	}
	js, _ := os.ReadFile(filepath.Join(dir, "dist/large.min.js"))
	mapPath := filepath.Join(dir, "dist/large.min.js.map")
	sourceMap, _ := os.ReadFile(mapPath)

	// 1,000 frames spread over the minified code's first line.
	line := js[:bytes.IndexByte(js, '\n')]
	var frames []map[string]any
	for i := range 1000 {
		frames = append(frames, map[string]any{"abs_path": "https://app.example/static/large.min.js",
			"lineno": 1, "colno": 1 + i*(len(line)-1)/1000, "function": "f"})
	}
	request := func(version string) []byte {
		body, _ := json.Marshal(map[string]any{"stacktraces": []any{map[string]any{"frames": frames}},
			"release": version, "options": map[string]any{"apply_source_context": false}})
		return body
	}
	bodyPath := filepath.Join(dir, "request.json")
	os.WriteFile(bodyPath, request("1.0"), 0o644)

	st.Close()
	http.DefaultClient.Timeout = time.Minute
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: time.Minute}
	url := s.base + "/api/0/projects/acme/web/symbolicate-js/"
	create := func(version string) {
		body, _ := json.Marshal(map[string]any{"version": version})
		req, _ := http.NewRequest("POST", s.base+"/api/0/projects/acme/web/releases/", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != http.StatusCreated {
			b.Fatalf("create release %s: %v %v", version, err, res)
		}
		res.Body.Close()
		benchUploadReleaseFile(b, s.base, token, version, "~/static/large.min.js", js)
		benchUploadReleaseFile(b, s.base, token, version, "~/static/large.min.js.map", sourceMap)
	}

	// Cold: the first request over the bundle parses its map.
	create("1.0")
	time.Sleep(time.Second)
	before := s.memory(b, "VmRSS")
	var cold time.Duration
	var answer []byte
	peak := s.peakRSS(b, func() {
		start := time.Now()
		answer = benchPost(b, client, url, token, request("1.0"))
		cold = time.Since(start)
	})
	resolved := strings.Count(string(answer), `"symbolicated":true`)
	if resolved < 900 {
		b.Fatalf("%d of 1000 frames resolved: %.300s", resolved, answer)
	}

	// Warm: 4 clients for 5 s.
	const clients, seconds = 4, 5
	body := request("1.0")
	var total atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < seconds*time.Second {
				benchPost(b, client, url, token, body)
				total.Add(int64(len(frames)))
			}
		}()
	}
	wg.Wait()
	warm := float64(total.Load()) / time.Since(start).Seconds()

	script := filepath.Join(dir, "symbolicate.cjs")
	os.WriteFile(script, []byte(nodeSymbolicate), 0o644)
	node := exec.Command("node", script, mapPath, bodyPath, strconv.Itoa(seconds))
	node.Env = os.Environ()
	out, err := node.Output()
	if err != nil {
		b.Fatalf("node: %v", err)
	}
	var peer struct {
		ColdMs          float64 `json:"coldMs"`
		FramesPerSecond float64 `json:"framesPerSecond"`
		Resolved        int     `json:"resolved"`
	}
	if err := json.Unmarshal(out, &peer); err != nil {
		b.Fatalf("node: %v: %s", err, out)
	}

	growth := peak - before
	fmt.Printf("\n### symbolicate-js against Node with @jridgewell/trace-mapping in process (map of %.1f MB, 1,000 frames a request, no context)\n\n", float64(len(sourceMap))/1e6)
	fmt.Println("| measure | errata (HTTP, Go client) | Node in process | ratio | target |")
	fmt.Println("|---|---:|---:|---:|---|")
	fmt.Printf("| warm frames/s (%d clients) | %.0f | %.0f | %.2f | ≥ Node: %s |\n", clients, warm, peer.FramesPerSecond, warm/peer.FramesPerSecond, passMiss(warm >= peer.FramesPerSecond))
	fmt.Printf("| cold first request | %.0f ms | %.0f ms | %.2f | ≤ 1.5× Node: %s |\n", float64(cold.Microseconds())/1e3, peer.ColdMs, float64(cold.Microseconds())/1e3/peer.ColdMs, passMiss(float64(cold.Microseconds())/1e3 <= 1.5*peer.ColdMs))
	fmt.Printf("| RSS growth while parsing | %.1f MB | | %.2f× the map | < 4× the map: %s |\n", float64(growth)/1e6, float64(growth)/float64(len(sourceMap)), passMiss(growth < 4*int64(len(sourceMap))))
	fmt.Println()
	b.ReportMetric(warm, "frames/s")
}
