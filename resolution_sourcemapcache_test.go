package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestSourcemapcache resolves the frames of symbolic's sourcemapcache
// tests (symbolic-sourcemapcache/tests/integration.rs) through the route
// symbolicate-js/, their scripts and maps stored in a release as the
// fixtures lay them out (symbolic-testutils/fixtures/sourcemapcache), and
// holds each frame to the file, line and column the Rust test asserts (its
// 0-based positions are 1-based here, in and out), and to the line's text
// where it asserts that, and to the scope name it asserts (each frame is a
// stack trace of its own, so no caller names it: a NamedScope is the
// frame's function, an anonymous or unknown scope leaves the name sent).
// One difference: metro_scope_lookup's scopes, which symbolic reads from
// Metro's own function map (x_facebook_sources: "foo", "<global>"), are
// read from the minified file here ("e.foo", none). hermes_scope_lookup
// and missing_source_contents read maps the suite does not hold.
func TestSourcemapcache(t *testing.T) {
	t.Parallel()
	fixtures := suitePath(t, "symbolic/symbolic-testutils/fixtures/sourcemapcache")
	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	setupAcme(t, s)
	var files []releaseFile
	for _, name := range []string{
		"inlining/module.js", "inlining/module.js.map", "simple/minified.js", "simple/minified.js.map",
		"preact.module.js", "preact.module.js.map", "nofiles.js", "nofiles.js.map",
		"hermes-metro/react-native-metro.js", "hermes-metro/react-native-metro.js.map",
		"webpack/bundle.js", "webpack/bundle.js.map",
	} {
		data, err := os.ReadFile(filepath.Join(fixtures, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "simple/minified.js" {
			// The Rust test hands the map to the writer; the script names
			// none, so it is stored naming it after its one line.
			data = append(data, "\n//# sourceMappingURL=minified.js.map\n"...)
		}
		files = append(files, releaseFile{"~/" + name, "", data})
	}
	storeRelease(t, s, "symbolic@1", files...)
	const host = "https://fixtures.example/"
	// resolved is a frame the map resolved to source at line:col, named as
	// Sentry names it: abs (the source resolved against the map's URL),
	// filename (the map's name of it), the map's URL.
	resolved := func(filename, abs string, line, col int, mapURL string) scriptFrame {
		return scriptFrame{"min", filename, abs, line, col, true, host + mapURL}
	}
	// named is f named after its scope.
	named := func(name string, f scriptFrame) scriptFrame {
		f.Function = name
		return f
	}
	for _, tc := range []struct {
		name    string
		frames  [][3]any
		want    []scriptFrame
		context []string // the context line of each frame, "-" for none asserted
		errs    []string
	}{
		{
			name: "resolves_inlined_function",
			frames: [][3]any{
				{host + "inlining/module.js", 1, 63}, {host + "inlining/module.js", 1, 47},
				{host + "inlining/module.js", 1, 34}, {host + "inlining/module.js", 2, 18},
			},
			want: []scriptFrame{
				named("buttonCallback", resolved("../src/app.js", host+"src/app.js", 3, 30, "inlining/module.js.map")),
				named("bar", resolved("../src/bar.js", host+"src/bar.js", 4, 3, "inlining/module.js.map")),
				resolved("../src/foo.js", host+"src/foo.js", 2, 9, "inlining/module.js.map"),
				// There are no mappings for line 2 in the map.
				{"min", "/inlining/module.js", host + "inlining/module.js", 2, 18, false, host + "inlining/module.js.map"},
			},
			context: []string{"-", "-", "-", "-"},
			errs:    []string{host + "inlining/module.js invalid_location"},
		},
		{
			name:    "writes_simple_cache",
			frames:  [][3]any{{host + "simple/minified.js", 1, 11}},
			want:    []scriptFrame{named("abcd", resolved("tests/fixtures/simple/original.js", host+"simple/tests/fixtures/simple/original.js", 2, 10, "simple/minified.js.map"))},
			context: []string{"function abcd() {}"},
		},
		{
			name: "resolves_location_from_cache",
			frames: [][3]any{
				{host + "preact.module.js", 1, 50}, {host + "preact.module.js", 1, 133}, {host + "preact.module.js", 1, 482},
				{host + "preact.module.js", 1, 9780}, {host + "preact.module.js", 1, 9795},
			},
			want: []scriptFrame{
				resolved("../src/constants.js", "https://fixtures.example/src/constants.js", 3, 35, "preact.module.js.map"),
				named("assign", resolved("../src/util.js", "https://fixtures.example/src/util.js", 12, 23, "preact.module.js.map")),
				named("createElement", resolved("../src/create-element.js", "https://fixtures.example/src/create-element.js", 40, 9, "preact.module.js.map")),
				resolved("../src/component.js", "https://fixtures.example/src/component.js", 182, 5, "preact.module.js.map"),
				resolved("../src/create-context.js", "https://fixtures.example/src/create-context.js", 3, 12, "preact.module.js.map"),
			},
			context: []string{"-", "-", "-", "-", "-"},
		},
		{
			// Its sources have no names (null): the frame keeps its own,
			// and its context is the first source's.
			name:    "missing_source_names",
			frames:  [][3]any{{host + "nofiles.js", 1, 39}},
			want:    []scriptFrame{{"add", "/nofiles.js", host + "nofiles.js", 3, 9, true, host + "nofiles.js.map"}},
			context: []string{"\treturn a + b; // fôo"},
		},
		{
			name:   "metro_scope_lookup",
			frames: [][3]any{{host + "hermes-metro/react-native-metro.js", 7, 101}, {host + "hermes-metro/react-native-metro.js", 6, 44}},
			want: []scriptFrame{
				named("e.foo", resolved("module.js", host+"hermes-metro/module.js", 2, 11, "hermes-metro/react-native-metro.js.map")),
				resolved("input.js", host+"hermes-metro/input.js", 3, 1, "hermes-metro/react-native-metro.js.map"),
			},
			context: []string{`    throw new Error("lets throw!");`, "foo();"},
		},
		{
			name:   "webpack_scope_lookup",
			frames: [][3]any{{host + "webpack/bundle.js", 1, 85}, {host + "webpack/bundle.js", 1, 44}},
			want: []scriptFrame{
				named("module.exports", resolved("./foo.js", "webpack:///./foo.js", 2, 9, "webpack/bundle.js.map")),
				named("module.exports", resolved("./bar.js", "webpack:///./bar.js", 2, 3, "webpack/bundle.js.map")),
			},
			context: []string{`  throw new Error("wat");`, "  f();"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, errs, ans := resolveScripts(t, s, "symbolic@1", "", tc.frames)
			expectScripts(t, tc.want, got, tc.errs, errs)
			for i, want := range tc.context {
				if line := ans.Stacktraces[i].Frames[0].ContextLine; want != "-" && (line == nil || *line != want) {
					t.Errorf("frame %d: context line %v, want %q", i, valueOr(line, "-"), want)
				}
			}
		})
	}

	// resolves_inlined_function: the call at 0-based 0:46 names foo, which
	// names the frame it calls.
	t.Run("resolves_inlined_function names the callee", func(t *testing.T) {
		t.Parallel()
		frames := []any{
			map[string]any{"abs_path": host + "inlining/module.js", "lineno": 1, "colno": 47, "function": "min"},
			map[string]any{"abs_path": host + "inlining/module.js", "lineno": 1, "colno": 34, "function": "min"},
		}
		var got jsResolved
		status, b := s.api(t, "POST", "/api/0/projects/acme/web/symbolicate-js/",
			map[string]any{"stacktraces": []any{map[string]any{"frames": frames}}, "release": "symbolic@1"})
		if status != http.StatusOK || json.Unmarshal(b, &got) != nil || len(got.Stacktraces) != 1 || len(got.Stacktraces[0].Frames) != 2 {
			t.Fatalf("%d %s", status, b)
		}
		if f := got.Stacktraces[0].Frames[1].Function; f == nil || *f != "foo" {
			t.Errorf("the callee of the call at 1:47 is %v, want foo", valueOr(f, "-"))
		}
	})
}
