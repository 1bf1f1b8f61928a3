package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"errata/worker/dif/diftest"
)

// auditIndexes are the audit's work that grew with frames times file
// (docs/resolution.md, "Source context"): source context of 600
// JavaScript frames at the end of a source of 8 million lines, native
// source context over sources of 8 MiB of newlines, a source bundle of a
// large manifest shared by 40 modules, and 14,000 lookups in a line of 2
// million segments at one column. Each answers 200 with the frames
// resolved, within the audit's memory and CPU.
func auditIndexes(_ *testing.T, a *auditServer) []auditFinding {
	return []auditFinding{
		{name: "JS source context", maxCPU: 10 * time.Second, attack: func(t *testing.T) { auditJSSourceContext(t, a) }},
		{name: "native source context", maxCPU: 10 * time.Second, attack: func(t *testing.T) { auditNativeSourceContext(t, a) }},
		{name: "source bundle manifest", maxCPU: 10 * time.Second, attack: func(t *testing.T) { auditBundleManifest(t, a) }},
		{name: "equal columns", maxCPU: 10 * time.Second, attack: func(t *testing.T) { auditEqualColumns(t, a) }},
	}
}

// auditJSSourceContext: a map whose one source, carried in the map, is 8
// million empty lines and then a function, and 600 frames on that
// function: each frame's context was found by walking the source from its
// first line.
func auditJSSourceContext(t *testing.T, a *auditServer) {
	const blank = 8 << 20
	content := strings.Repeat("\n", blank) + "function hit() {\n  throw new Error('x');\n}\n"
	src, _ := json.Marshal([]string{content})
	mappings := diftest.AppendVLQ([]byte("AA"), blank+1)
	mappings = append(mappings, 'A')
	auditRelease(t, a, "audit-indexes-js", map[string]string{
		"~/ctx.min.js":     "function a(){throw new Error}a();\n//# sourceMappingURL=ctx.min.js.map\n",
		"~/ctx.min.js.map": `{"version":3,"sources":["src/ctx.js"],"sourcesContent":` + string(src) + `,"names":[],"mappings":"` + string(mappings) + `"}`,
	})
	out, ok := auditJSFrames(t, a, "audit-indexes-js", "https://app.example/ctx.min.js", 600)
	if !ok {
		t.FailNow()
	}
	for i, f := range out.Stacktraces[0].Frames {
		if f.Lineno == nil || *f.Lineno != blank+2 || f.ContextLine == nil || *f.ContextLine != "  throw new Error('x');" ||
			strings.Join(f.PreContext, "|") != "||||function hit() {" || strings.Join(f.PostContext, "|") != "}" {
			t.Fatalf("frame %d: %+v", i, f)
		}
	}
}

// sysbZip is a bundle as sentry-cli writes it (SYSB, a version, then a
// zip) of members (name to content) and manifest.json, manifest's JSON.
func sysbZip(t *testing.T, manifest any, members map[string]string) []byte {
	t.Helper()
	data, err := json.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	members["manifest.json"] = string(data)
	var buf bytes.Buffer
	buf.WriteString("SYSB\x02\x00\x00\x00")
	zw := zip.NewWriter(&buf)
	for name, content := range members {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, content)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// auditSourceBundle is a source bundle for debugID holding srcs (manifest
// path to content), whose manifest also names the members of listed
// (which the zip does not hold).
func auditSourceBundle(t *testing.T, debugID string, srcs map[string]string, listed map[string]any) []byte {
	t.Helper()
	files := map[string]any{}
	for member, f := range listed {
		files[member] = f
	}
	members := map[string]string{}
	for p, content := range srcs {
		members["files/_"+p] = content
		files["files/_"+p] = map[string]any{"type": "source", "path": p}
	}
	return sysbZip(t, map[string]any{"debug_id": debugID, "object_name": "crash", "arch": "x86_64", "files": files}, members)
}

// auditUploadNative uploads a Breakpad file and a source bundle through
// chunks and difs/assemble.
func auditUploadNative(t *testing.T, a *auditServer, sym string, bundle []byte) {
	t.Helper()
	t.Logf("uploads of %d and %d bytes", len(sym), len(bundle))
	for name, data := range map[string][]byte{"crash.sym": []byte(sym), "crash.src.zip": bundle} {
		if state, detail := assembleDif(t, a.errataServer, name, data); state != "ok" {
			t.Fatalf("difs/assemble of %s: %s %s", name, state, detail)
		}
	}
}

// auditNativeSourceContext: a Breakpad file whose four lines are the last
// of four sources of 8 MiB of newlines, in its source bundle, and two
// requests at once over a frame of each: each source was split into its
// lines.
func auditNativeSourceContext(t *testing.T, a *auditServer) {
	const (
		id      = "c1a8e2f0-4d6b-4b1e-9a51-0d2c7e3f9b11"
		breakID = "C1A8E2F04D6B4B1E9A510D2C7E3F9B110"
		lines   = 8<<20 - 200
	)
	sym := "MODULE Linux x86_64 " + breakID + " crash\n"
	srcs := map[string]string{}
	for i := range 4 {
		p := fmt.Sprintf("/src/big%d.c", i)
		sym += fmt.Sprintf("FILE %d %s\n", i, p)
		srcs[p] = strings.Repeat("\n", lines) + strings.Repeat("x\n", 63)
	}
	sym += "FUNC 1000 400 0 main\n"
	for i := range 4 {
		sym += fmt.Sprintf("%x 100 %d %d\n", 0x1000+0x100*i, lines+10, i)
	}
	auditUploadNative(t, a, sym, auditSourceBundle(t, id, srcs, nil))
	frames := make([]map[string]any, 4)
	for i := range frames {
		frames[i] = map[string]any{"instruction_addr": fmt.Sprintf("0x%x", 0x1010+0x100*i), "addr_mode": "rel:0"}
	}
	body := map[string]any{
		"modules":     []map[string]any{{"type": "elf", "debug_id": id, "image_addr": "0x0"}},
		"stacktraces": []map[string]any{{"frames": frames}},
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			var out symbolicated
			if !auditSymbolicate(t, a, "symbolicate", body, &out) {
				return
			}
			if len(out.Stacktraces) != 1 || len(out.Stacktraces[0].Frames) != len(frames) {
				t.Errorf("%d stack traces, want 1 of %d frames", len(out.Stacktraces), len(frames))
				return
			}
			with := 0
			for i, f := range out.Stacktraces[0].Frames {
				if f.Lineno != lines+10 || f.AbsPath != fmt.Sprintf("/src/big%d.c", i) {
					t.Errorf("frame %d: %+v", i, f)
				}
				if f.ContextLine != nil {
					with++
					if *f.ContextLine != "x" || len(f.PreContext) != 5 || len(f.PostContext) != 5 {
						t.Errorf("frame %d: context %q %q %q", i, f.PreContext, *f.ContextLine, f.PostContext)
					}
				}
			}
			if with < 3 {
				t.Errorf("%d frames with context, want those of the sources within the request's 32 MiB", with)
			}
		})
	}
	wg.Wait()
}

// auditBundleManifest: a source bundle whose manifest lists 250,000 files
// (it holds one), for one debug id, and a request over 40 modules of that
// debug id, a frame in each: each module decoded the manifest again.
func auditBundleManifest(t *testing.T, a *auditServer) {
	const (
		id      = "d2b9f3a1-5e7c-4c2f-8b62-1e3d8f4a0c22"
		breakID = "D2B9F3A15E7C4C2F8B621E3D8F4A0C220"
	)
	listed := map[string]any{}
	for i := range 250_000 {
		listed[fmt.Sprintf("files/_/l/%06d", i)] = map[string]any{"type": "source", "path": fmt.Sprintf("/l/%06d", i)}
	}
	sym := "MODULE Linux x86_64 " + breakID + " crash\nFILE 0 /src/main.c\nFUNC 1000 100 0 main\n1000 100 7 0\n"
	src := "int\nmain\n(void)\n{\n  int *p = 0;\n  return\n    *p;\n}\n"
	auditUploadNative(t, a, sym, auditSourceBundle(t, id, map[string]string{"/src/main.c": src}, listed))
	var modules, frames []map[string]any
	for i := range 40 {
		base := 0x100000 * (i + 1)
		modules = append(modules, map[string]any{"type": "elf", "debug_id": id, "image_addr": fmt.Sprintf("0x%x", base), "image_size": 0x100000})
		frames = append(frames, map[string]any{"instruction_addr": fmt.Sprintf("0x%x", base+0x1010)})
	}
	var out symbolicated
	auditSymbolicate(t, a, "symbolicate", map[string]any{
		"modules":     modules,
		"stacktraces": []map[string]any{{"frames": frames}},
	}, &out)
	if len(out.Stacktraces) != 1 || len(out.Stacktraces[0].Frames) != len(frames) {
		t.Fatalf("%d stack traces, want 1 of %d frames", len(out.Stacktraces), len(frames))
	}
	for i, f := range out.Stacktraces[0].Frames {
		if f.Lineno != 7 || f.ContextLine == nil || *f.ContextLine != "    *p;" || len(f.PreContext) != 5 || len(f.PostContext) != 1 {
			t.Fatalf("frame %d: %+v", i, f)
		}
	}
}

// auditEqualColumns: a map of one line of 2 million segments all at column
// 0, and five requests of 2,800 frames there: each lookup stepped back
// over every segment to the first of them.
func auditEqualColumns(t *testing.T, a *auditServer) {
	const segments = 2 << 20
	mappings := "AAAA" + strings.Repeat(",A", segments-1)
	auditRelease(t, a, "audit-indexes-columns", map[string]string{
		"~/eq.min.js":     "function a(){throw new Error}a();\n//# sourceMappingURL=eq.min.js.map\n",
		"~/eq.min.js.map": `{"version":3,"sources":["src/eq.js"],"names":[],"mappings":"` + mappings + `"}`,
	})
	// About as many frames as a body of 20,000 JSON values carries.
	frames := make([]map[string]any, 2800)
	for i := range frames {
		frames[i] = map[string]any{"abs_path": "https://app.example/eq.min.js", "lineno": 1, "colno": 1 + i%30}
	}
	for range 5 {
		var out jsResolved
		if !auditSymbolicate(t, a, "symbolicate-js", map[string]any{
			"stacktraces": []map[string]any{{"frames": frames}},
			"release":     "audit-indexes-columns",
			"options":     map[string]any{"apply_source_context": false},
		}, &out) {
			return
		}
		if len(out.Stacktraces) != 1 || len(out.Stacktraces[0].Frames) != len(frames) {
			t.Fatalf("%d stack traces, want 1 of %d frames", len(out.Stacktraces), len(frames))
		}
		for i, f := range out.Stacktraces[0].Frames {
			if !f.Data.Symbolicated || f.Lineno == nil || *f.Lineno != 1 || f.Colno == nil || *f.Colno != 1 {
				t.Fatalf("frame %d: %+v", i, f)
			}
		}
	}
}
