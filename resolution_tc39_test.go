package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// tc39Case is a case of TC39's source-map-spec-tests.json: a minified
// file, its map, whether the specification calls the map valid, and the
// positions to check in it (0-based lines and columns).
type tc39Case struct {
	Name             string       `json:"name"`
	BaseFile         string       `json:"baseFile"`
	SourceMapFile    string       `json:"sourceMapFile"`
	SourceMapIsValid bool         `json:"sourceMapIsValid"`
	TestActions      []tc39Action `json:"testActions"`
}

// tc39Action is a checkMapping, checkMappingTransitive or checkIgnoreList
// of a case. A null OriginalLine says the position maps to nothing.
type tc39Action struct {
	ActionType       string   `json:"actionType"`
	GeneratedLine    int      `json:"generatedLine"`
	GeneratedColumn  int      `json:"generatedColumn"`
	OriginalSource   *string  `json:"originalSource"`
	OriginalLine     *int     `json:"originalLine"`
	OriginalColumn   *int     `json:"originalColumn"`
	MappedName       *string  `json:"mappedName"`
	IntermediateMaps []string `json:"intermediateMaps"`
	Present          []string `json:"present"`
}

// tc39Origin is the URL the minified files of the suite are served from.
const tc39Origin = "https://app.example/tc39/"

// TestTC39SourceMapSpec runs TC39's source-map conformance suite
// (tc39/source-map-tests, read from the resolution suites beside the
// repository) through symbolicate-js/: every file of the suite is stored
// twice, as release files (each map found by its file's
// sourceMappingURL) and in an artifact bundle where each case's file and
// map share a debug id; then each case is asked both ways. Every
// checkMapping and checkMappingTransitive position of a valid map must
// resolve to its original source, line and column (and a mapped name
// names the callee of that position, as docs/resolution.md says names are
// used); every invalid map is answered 200, malformed_sourcemap, its
// frames left as they came.
func TestTC39SourceMapSpec(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(suitePath(t, "tc39-source-map-tests/source-map-spec-tests.json"))
	if err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Tests []tc39Case `json:"tests"`
	}
	if err := json.Unmarshal(data, &suite); err != nil {
		t.Fatal(err)
	}
	if len(suite.Tests) < 99 {
		t.Fatalf("the suite has %d cases, want its 99", len(suite.Tests))
	}
	resources := suitePath(t, "tc39-source-map-tests/resources")
	entries, err := os.ReadDir(resources)
	if err != nil {
		t.Fatal(err)
	}

	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	setupAcme(t, s)
	// One release bundle of every file, and one bundle of debug ids where
	// each case's file and map share the case's.
	debugID := map[string]string{}
	for i, c := range suite.Tests {
		id := fmt.Sprintf("7c39%04x-0000-4000-8000-%012x", i, i)
		debugID[c.BaseFile], debugID[c.SourceMapFile] = id, id
	}
	releaseFiles, debugFiles := map[string]any{}, map[string]any{}
	releaseMembers, debugMembers := map[string]string{}, map[string]string{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		content, err := os.ReadFile(filepath.Join(resources, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		member, typ := "files/_/_/tc39/"+e.Name(), "minified_source"
		if strings.HasSuffix(e.Name(), ".map") {
			typ = "source_map"
		}
		releaseFiles[member] = map[string]any{"url": "~/tc39/" + e.Name(), "type": typ, "headers": map[string]string{}}
		releaseMembers[member] = string(content)
		headers := map[string]string{}
		if id, ok := debugID[e.Name()]; ok {
			headers["debug-id"] = id
		}
		debugFiles[member] = map[string]any{"url": "~/tc39/" + e.Name(), "type": typ, "headers": headers}
		debugMembers[member] = string(content)
	}
	// Two files whose maps point into each other: a chain of maps that
	// loops, followed until it would read a map a second time.
	for name, content := range map[string]string{
		"a.js": "a()\n//# sourceMappingURL=a.js.map\n", "a.js.map": `{"version":3,"sources":["b.js"],"names":[],"mappings":"AAAA"}`,
		"b.js": "b()\n//# sourceMappingURL=b.js.map\n", "b.js.map": `{"version":3,"sources":["a.js"],"names":[],"mappings":"AACA"}`,
	} {
		releaseFiles["files/_/_/loop/"+name] = map[string]any{"url": "~/loop/" + name, "type": "minified_source", "headers": map[string]string{}}
		releaseMembers["files/_/_/loop/"+name] = content
	}
	// A map whose ignoreList names its second source, as checkIgnoreList
	// reads it (the suite's own map of it maps no position).
	for name, content := range map[string]string{
		"lib.js":     "a();b()\n//# sourceMappingURL=lib.js.map\n",
		"lib.js.map": `{"version":3,"sources":["app.js","vendor.js"],"names":[],"mappings":"AAAA,CCAA","ignoreList":[1]}`,
	} {
		releaseFiles["files/_/_/ignore/"+name] = map[string]any{"url": "~/ignore/" + name, "type": "minified_source", "headers": map[string]string{}}
		releaseMembers["files/_/_/ignore/"+name] = content
	}
	const release = "tc39@1"
	assembleBundle(t, s, bundle{data: sysbZip(t, map[string]any{"org": "acme", "release": release, "files": releaseFiles}, releaseMembers)}, release)
	assembleBundle(t, s, bundle{data: sysbZip(t, map[string]any{"org": "acme", "files": debugFiles}, debugMembers)}, "")

	var validPassed, invalidUnresolved, valid, invalid atomic.Int64
	t.Run("cases", func(t *testing.T) {
		for _, c := range suite.Tests {
			if c.SourceMapIsValid {
				valid.Add(1)
			} else {
				invalid.Add(1)
			}
			t.Run(c.Name, func(t *testing.T) {
				t.Parallel()
				absPath := tc39Origin + c.BaseFile
				byID := []map[string]string{{"type": "sourcemap", "code_file": absPath, "debug_id": debugID[c.BaseFile]}}
				for _, how := range []string{"release", "debug-id"} {
					body := map[string]any{"stacktraces": tc39Traces(c, absPath)}
					if how == "release" {
						body["release"] = release
					} else {
						body["modules"] = byID
					}
					status, out := s.api(t, "POST", "/api/0/projects/acme/web/symbolicate-js/", body)
					if status != http.StatusOK {
						t.Fatalf("by %s: %d %s", how, status, out)
					}
					var got jsResolved
					if err := json.Unmarshal(out, &got); err != nil {
						t.Fatalf("by %s: %v\n%s", how, err, out)
					}
					checkTC39Answer(t, how, c, absPath, &got, out)
				}
				if t.Failed() {
					return
				}
				if c.SourceMapIsValid {
					validPassed.Add(1)
				} else {
					invalidUnresolved.Add(1)
				}
			})
		}
	})
	t.Run("a chain of maps that loops", func(t *testing.T) {
		status, out := s.api(t, "POST", "/api/0/projects/acme/web/symbolicate-js/", map[string]any{"release": release,
			"stacktraces": []any{map[string]any{"frames": []any{map[string]any{"abs_path": "https://app.example/loop/a.js", "lineno": 1, "colno": 1}}}}})
		var got jsResolved
		if status != http.StatusOK || json.Unmarshal(out, &got) != nil || len(got.Stacktraces) != 1 || len(got.Stacktraces[0].Frames) != 1 {
			t.Fatalf("%d %s", status, out)
		}
		// a.js 1:1 is b.js 1:1, which is a.js 2:1: a.js's map again.
		if f := got.Stacktraces[0].Frames[0]; !f.Data.Symbolicated || f.Filename == nil || *f.Filename != "a.js" || f.AbsPath == nil || *f.AbsPath != "https://app.example/loop/a.js" || f.Lineno == nil || *f.Lineno != 2 || f.Colno == nil || *f.Colno != 1 {
			t.Errorf("the loop is answered %s", out)
		}
	})
	t.Run("a source of the ignoreList is not in the app", func(t *testing.T) {
		frame := func(col int) map[string]any {
			return map[string]any{"abs_path": "https://app.example/ignore/lib.js", "lineno": 1, "colno": col}
		}
		status, out := s.api(t, "POST", "/api/0/projects/acme/web/symbolicate-js/", map[string]any{"release": release,
			"stacktraces": []any{map[string]any{"frames": []any{frame(1), frame(2)}}}})
		var got struct {
			Stacktraces []struct {
				Frames []struct {
					Filename string `json:"filename"`
					AbsPath  string `json:"abs_path"`
					InApp    *bool  `json:"in_app"`
				} `json:"frames"`
			} `json:"stacktraces"`
		}
		if status != http.StatusOK || json.Unmarshal(out, &got) != nil || len(got.Stacktraces) != 1 || len(got.Stacktraces[0].Frames) != 2 {
			t.Fatalf("%d %s", status, out)
		}
		app, vendor := got.Stacktraces[0].Frames[0], got.Stacktraces[0].Frames[1]
		if app.AbsPath != "https://app.example/ignore/app.js" || app.InApp != nil || vendor.AbsPath != "https://app.example/ignore/vendor.js" || vendor.InApp == nil || *vendor.InApp {
			t.Errorf("app.js should be as it came, vendor.js in_app false: %s", out)
		}
	})
	t.Logf("TC39 source-map tests through symbolicate-js/, by release and by debug id: %d of %d valid cases pass, %d of %d invalid maps unresolved",
		validPassed.Load(), valid.Load(), invalidUnresolved.Load(), invalid.Load())
}

// tc39Traces are the stack traces of a request for case c: for each
// mapping to check, its position twice, caller first (the second frame,
// the callee, is named by the map's name at the first); for a map without
// positions to check, the start of its file and a column further.
func tc39Traces(c tc39Case, absPath string) []any {
	var traces []any
	frame := func(line, col int) map[string]any {
		return map[string]any{"abs_path": absPath, "lineno": line + 1, "colno": col + 1, "function": "minified"}
	}
	for _, a := range c.TestActions {
		if a.ActionType == "checkMapping" || a.ActionType == "checkMappingTransitive" {
			f := frame(a.GeneratedLine, a.GeneratedColumn)
			traces = append(traces, map[string]any{"frames": []any{f, f}})
		}
	}
	if len(traces) == 0 || !c.SourceMapIsValid {
		traces = append(traces, map[string]any{"frames": []any{frame(0, 0), frame(0, 9)}})
	}
	return traces
}

// checkTC39Answer checks the answer got (raw: out) for case c, asked by
// how (release or debug-id).
func checkTC39Answer(t *testing.T, how string, c tc39Case, absPath string, got *jsResolved, out []byte) {
	t.Helper()
	traces := tc39Traces(c, absPath)
	if len(got.Stacktraces) != len(traces) {
		t.Fatalf("by %s: %d stack traces for %d: %s", how, len(got.Stacktraces), len(traces), out)
	}
	malformed := false
	for _, e := range got.Errors {
		malformed = malformed || e.AbsPath == absPath && e.Type == "malformed_sourcemap"
	}
	if !c.SourceMapIsValid {
		if !malformed {
			t.Errorf("by %s: the invalid map is not malformed_sourcemap: %s", how, out)
		}
		for _, st := range got.Stacktraces {
			for _, f := range st.Frames {
				if f.Data.Symbolicated || f.AbsPath == nil || *f.AbsPath != absPath || f.Lineno == nil || *f.Lineno != 1 || f.Colno == nil || (*f.Colno != 1 && *f.Colno != 10) {
					t.Errorf("by %s: a frame of the invalid map changed: %s", how, out)
				}
			}
		}
		return
	}
	if malformed {
		t.Errorf("by %s: the valid map is malformed_sourcemap: %s", how, out)
	}
	k := 0
	for _, a := range c.TestActions {
		if a.ActionType != "checkMapping" && a.ActionType != "checkMappingTransitive" {
			continue
		}
		st := got.Stacktraces[k]
		k++
		at := fmt.Sprintf("by %s, %d:%d", how, a.GeneratedLine, a.GeneratedColumn)
		if len(st.Frames) != 2 {
			t.Errorf("%s: %d frames: %s", at, len(st.Frames), out)
			continue
		}
		f := st.Frames[0]
		if a.OriginalLine == nil {
			if f.Data.Symbolicated || f.Lineno == nil || *f.Lineno != a.GeneratedLine+1 || f.Colno == nil || *f.Colno != a.GeneratedColumn+1 {
				t.Errorf("%s maps to nothing; the answer resolved it: %s", at, out)
			}
			continue
		}
		if !f.Data.Symbolicated || f.Data.ResolvedWith == nil || *f.Data.ResolvedWith != how || f.Lineno == nil || f.Colno == nil || f.AbsPath == nil || f.Filename == nil {
			t.Errorf("%s: not resolved %s: %s", at, how, out)
			continue
		}
		if *f.Lineno != *a.OriginalLine+1 || *f.Colno != *a.OriginalColumn+1 {
			t.Errorf("%s: line %d column %d, want %d %d (1-based)", at, *f.Lineno, *f.Colno, *a.OriginalLine+1, *a.OriginalColumn+1)
		}
		if a.OriginalSource != nil {
			// abs_path is the source as the map names it resolved against
			// the map's URL; filename the map's name of it (with its
			// sourceRoot, as the suite writes it).
			want := tc39SourcePath(t, c, a)
			if *f.Filename != *a.OriginalSource || *f.AbsPath != want {
				t.Errorf("%s: source %s (filename %s), want %s (%s in the map)", at, *f.AbsPath, *f.Filename, want, *a.OriginalSource)
			}
		} else if *f.AbsPath != absPath {
			// A null source names nothing: the frame keeps its file's.
			t.Errorf("%s: the null source is named %s", at, *f.AbsPath)
		}
		// The callee of a call site is named by the map's name there.
		if callee := st.Frames[1]; a.MappedName != nil && (callee.Function == nil || *callee.Function != *a.MappedName) {
			t.Errorf("%s: the callee of the call site named %q is named %v", at, *a.MappedName, deref(callee.Function))
		}
	}
}

// tc39SourcePath is the path of the original source of action a of case c
// once resolved against the URL of the map that names it: the case's map,
// or the last of its intermediate maps.
func tc39SourcePath(t *testing.T, c tc39Case, a tc39Action) string {
	t.Helper()
	mapFile := c.SourceMapFile
	if n := len(a.IntermediateMaps); n > 0 {
		mapFile = a.IntermediateMaps[n-1]
	}
	base, err := url.Parse(tc39Origin + mapFile)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := url.Parse(*a.OriginalSource)
	if err != nil {
		t.Fatal(err)
	}
	return base.ResolveReference(ref).String()
}
