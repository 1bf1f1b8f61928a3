package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// auditMaxName is the longest name an answer's frame may carry
// (symbolication.MaxNameBytes, docs/resolution.md).
const auditMaxName = 1024

// auditAnswers are the audit's answers that repeat what a file says
// (docs/resolution.md, "Bounds of an answer"): a Breakpad file whose
// function and file are named by 60 KiB (a record's most) hit by 2,000
// frames, a source map whose name and source are 256 KiB hit by 600
// frames, and a ProGuard line shared by 200,000 methods hit by 8 frames.
// Each answers 200 with its names cut and its expansions capped, within
// the audit's memory and CPU.
func auditAnswers(_ *testing.T, a *auditServer) []auditFinding {
	return []auditFinding{
		{name: "native long name", maxCPU: 10 * time.Second, attack: func(t *testing.T) { auditNativeLongName(t, a) }},
		{name: "JS long name", maxCPU: 10 * time.Second, attack: func(t *testing.T) { auditJSLongName(t, a) }},
		{name: "ProGuard fan-out", maxCPU: 10 * time.Second, attack: func(t *testing.T) { auditProguardFanOut(t, a) }},
	}
}

// cut reports whether name, which came from a longer one, is cut to
// auditMaxName bytes (ending with ...), failing the test when not; the
// reproduction goes on, so that what it cost the server is measured.
func cut(t *testing.T, what, name string) bool {
	t.Helper()
	if len(name) > auditMaxName || !strings.HasSuffix(name, "...") {
		t.Errorf("%s of %d bytes (%.20q), want cut to %d", what, len(name), name, auditMaxName)
		return false
	}
	return true
}

// auditNativeLongName: a Breakpad file of one function and one file named
// by 60 KiB, zipped into less than 1 KB, and 2,000 frames at its address.
func auditNativeLongName(t *testing.T, a *auditServer) {
	long := strings.Repeat("f", 60<<10)
	sym := "MODULE Linux x86_64 B644071B511E55DBAC271EE28D84D9910 crash\n" +
		"FILE 0 /src/" + long + ".c\nFUNC 1000 100 0 " + long + "\n1000 100 10 0\n"
	upload := zipOf(t, "crash.sym", []byte(sym))
	t.Logf("upload of %d bytes", len(upload))
	if r := postDsyms(t, a.errataServer, upload); r.status != http.StatusCreated {
		t.Fatalf("files/dsyms/: %v", r)
	}
	var difs []e2eDif
	if status := a.getJSON(t, "/api/0/projects/acme/web/files/dsyms/", &difs); status != http.StatusOK || len(difs) != 1 {
		t.Fatalf("files/dsyms/: %d %+v, want the Breakpad file", status, difs)
	}
	frames := make([]map[string]any, 2000)
	for i := range frames {
		frames[i] = map[string]any{"instruction_addr": "0x1010", "addr_mode": "rel:0"}
	}
	var out symbolicated
	auditSymbolicate(t, a, "symbolicate", map[string]any{
		"modules":     []map[string]any{{"type": "elf", "debug_id": difs[0].DebugID, "image_addr": "0x0"}},
		"stacktraces": []map[string]any{{"frames": frames}},
	}, &out)
	if len(out.Stacktraces) != 1 || len(out.Stacktraces[0].Frames) != len(frames) {
		t.Errorf("%d stack traces, want 1 of %d frames", len(out.Stacktraces), len(frames))
		return
	}
	for _, f := range out.Stacktraces[0].Frames {
		if !cut(t, "function", f.Function) || !cut(t, "abs_path", f.AbsPath) {
			break
		}
	}
}

// auditJSLongName: a release whose minified file's map names its one
// name and source by 256 KiB, and 600 frames there.
func auditJSLongName(t *testing.T, a *auditServer) {
	long := strings.Repeat("n", 256<<10)
	const version = "audit-answers"
	auditRelease(t, a, version, map[string]string{
		"~/app.min.js":     "function a(){throw new Error}a();\n//# sourceMappingURL=app.min.js.map\n",
		"~/app.min.js.map": `{"version":3,"sources":["` + long + `.js"],"names":["` + long + `"],"mappings":"AAAAA"}`,
	})
	out, ok := auditJSFrames(t, a, version, "https://app.example/app.min.js", 600)
	if !ok {
		return
	}
	for i, f := range out.Stacktraces[0].Frames {
		if !f.Data.Symbolicated || f.AbsPath == nil || f.Function == nil && i > 0 {
			t.Errorf("frame %d not resolved: %+v", i, f)
			break
		}
		if !cut(t, "abs_path", *f.AbsPath) || i > 0 && !cut(t, "function", *f.Function) {
			break
		}
	}
}

// auditProguardFanOut: a ProGuard mapping whose line 1 of a.a is shared
// by 200,000 methods, and 8 frames there.
func auditProguardFanOut(t *testing.T, a *auditServer) {
	var mapping strings.Builder
	mapping.WriteString("com.shop.Cart -> a:\n")
	const methods = 200_000
	for i := range methods {
		fmt.Fprintf(&mapping, "    1:1:void m%d():1:1 -> a\n", i)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "mapping.txt")
	if err := os.WriteFile(path, []byte(mapping.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	uuid := proguardUUID(t, path)
	newSentryCLI(t, "SENTRY_CLI_3", a.errataServer, "acme").in(dir).run(t, "proguard", "upload", path).expect(t, 0)
	frames := make([]map[string]any, 8)
	for i := range frames {
		frames[i] = map[string]any{"module": "a", "function": "a", "lineno": 1}
	}
	var out struct {
		Stacktraces []struct {
			Frames []struct {
				Function      string `json:"function"`
				OriginalIndex int    `json:"original_index"`
				FramesOmitted int    `json:"frames_omitted"`
			} `json:"frames"`
		} `json:"stacktraces"`
	}
	auditSymbolicate(t, a, "symbolicate-jvm", map[string]any{
		"stacktraces": []map[string]any{{"frames": frames}},
		"modules":     []map[string]any{{"type": "proguard", "uuid": uuid}},
		"options":     map[string]any{"frame_order": "callee_first"},
	}, &out)
	const kept = 64 // symbolication.MaxFrameExpansion
	if len(out.Stacktraces) != 1 || len(out.Stacktraces[0].Frames) != len(frames)*kept {
		t.Errorf("%d stack traces, want 1 of %d frames", len(out.Stacktraces), len(frames)*kept)
		return
	}
	for i, f := range out.Stacktraces[0].Frames {
		omitted := 0
		if i%kept == kept-1 {
			omitted = methods - kept
		}
		if f.OriginalIndex != i/kept || f.FramesOmitted != omitted || f.Function != fmt.Sprintf("m%d", i%kept) {
			t.Errorf("frame %d: %+v, want m%d of input frame %d, %d omitted", i, f, i%kept, i/kept, omitted)
			break
		}
	}
}

// auditJSFrames asks symbolicate-js for one stack trace of n frames, all
// at line 1, column 1 of absPath in release, and returns the answer; it
// is false, the test failed, unless the answer is one stack trace of n
// frames.
func auditJSFrames(t *testing.T, a *auditServer, release, absPath string, n int) (jsResolved, bool) {
	t.Helper()
	frames := make([]map[string]any, n)
	for i := range frames {
		frames[i] = map[string]any{"abs_path": absPath, "lineno": 1, "colno": 1}
	}
	var out jsResolved
	auditSymbolicate(t, a, "symbolicate-js", map[string]any{
		"stacktraces": []map[string]any{{"frames": frames}},
		"release":     release,
	}, &out)
	if len(out.Stacktraces) != 1 || len(out.Stacktraces[0].Frames) != n {
		t.Errorf("%d stack traces, want 1 of %d frames", len(out.Stacktraces), n)
		return out, false
	}
	return out, true
}
