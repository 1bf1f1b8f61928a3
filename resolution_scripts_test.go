package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// scriptsApp is the esbuild build of the sourcemap package's test app: its
// script names its map app.min.js.map, whose sources are ../src/*.js with
// their sourcesContent. Column 88 of its line 1 is discount.js:10:11.
func scriptsApp(t *testing.T) (script, sourceMap []byte) {
	t.Helper()
	script, err := os.ReadFile("worker/dif/sourcemap/testdata/app.min.js")
	if err != nil {
		t.Fatal(err)
	}
	sourceMap, err = os.ReadFile("worker/dif/sourcemap/testdata/app.min.js.map")
	if err != nil {
		t.Fatal(err)
	}
	return script, sourceMap
}

// releaseFile is a file to store in a release: its name, dist ("" for
// none) and content.
type releaseFile struct {
	name, dist string
	data       []byte
}

// storeRelease creates release version of acme/web and stores files in it
// through the release files route (sentry-cli 1's releases files upload).
func storeRelease(t *testing.T, s *errataServer, version string, files ...releaseFile) {
	t.Helper()
	if status, b := s.api(t, "POST", "/api/0/organizations/acme/releases/", map[string]any{"version": version, "projects": []string{"web"}}); status != http.StatusCreated {
		t.Fatalf("create release %s: %d %s", version, status, b)
	}
	for _, f := range files {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		mw.WriteField("name", f.name)
		if f.dist != "" {
			mw.WriteField("dist", f.dist)
		}
		w, _ := mw.CreateFormFile("file", filepath.Base(f.name))
		w.Write(f.data)
		mw.Close()
		if r := send(http.DefaultClient, s, "POST", "/api/0/projects/acme/web/releases/"+version+"/files/", mw.FormDataContentType(), &body); r.status != http.StatusCreated {
			t.Fatalf("store %s (dist %q) in %s: %v", f.name, f.dist, version, r)
		}
	}
}

// scriptFrame is what a test reads of a frame of an answer, and of the
// errors: "abs_path type".
type scriptFrame struct {
	Function, Filename, AbsPath string
	Lineno, Colno               int
	Symbolicated                bool
	Sourcemap                   string
}

// resolveScripts asks symbolicate-js for frames (abs_path, line, column;
// a column of 0 is none) of release and dist ("" for none), each in a
// stack trace of its own (no caller names it), and returns the frames and
// errors of the answer, and the answer.
func resolveScripts(t *testing.T, s *errataServer, release, dist string, frames [][3]any) ([]scriptFrame, []string, jsResolved) {
	t.Helper()
	body := map[string]any{"release": release}
	if dist != "" {
		body["dist"] = dist
	}
	return resolveScriptsIn(t, s, body, frames)
}

// resolveScriptsIn is resolveScripts with the rest of the request in body.
func resolveScriptsIn(t *testing.T, s *errataServer, body map[string]any, frames [][3]any) ([]scriptFrame, []string, jsResolved) {
	t.Helper()
	var sent []map[string]any
	for _, f := range frames {
		fr := map[string]any{"abs_path": f[0], "lineno": f[1], "function": "min"}
		if f[2] != 0 {
			fr["colno"] = f[2]
		}
		sent = append(sent, fr)
	}
	got, _ := symbolicateEachJS(t, s, body, sent)
	var out []scriptFrame
	for _, st := range got.Stacktraces {
		f := st.Frames[0]
		out = append(out, scriptFrame{valueOr(f.Function, "-"), valueOr(f.Filename, "-"), valueOr(f.AbsPath, "-"),
			valueOr(f.Lineno, 0), valueOr(f.Colno, 0), f.Data.Symbolicated, valueOr(f.Data.Sourcemap, "-")})
	}
	var errs []string
	for _, e := range got.Errors {
		errs = append(errs, e.AbsPath+" "+e.Type)
	}
	return out, errs, got
}

// symbolicateEachJS asks acme/web's symbolicate-js for frames, each in a
// stack trace of its own (no caller names it), with the rest of the
// request in body, and returns the answer, which has one stack trace of
// one frame for each frame sent, and its body.
func symbolicateEachJS(t *testing.T, s *errataServer, body map[string]any, frames []map[string]any) (jsResolved, []byte) {
	t.Helper()
	var traces []any
	for _, f := range frames {
		traces = append(traces, map[string]any{"frames": []any{f}})
	}
	body["stacktraces"] = traces
	status, b := s.api(t, "POST", "/api/0/projects/acme/web/symbolicate-js/", body)
	if status != http.StatusOK {
		t.Fatalf("symbolicate-js: %d %s", status, b)
	}
	var got jsResolved
	if err := json.Unmarshal(b, &got); err != nil || len(got.Stacktraces) != len(frames) {
		t.Fatalf("answer %s: %v", b, err)
	}
	for _, st := range got.Stacktraces {
		if len(st.Frames) != 1 {
			t.Fatalf("answer %s", b)
		}
	}
	return got, b
}

// expectScripts compares the frames and errors of an answer with those
// wanted.
func expectScripts(t *testing.T, want, got []scriptFrame, wantErrs, errs []string) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantErrs, errs); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// valueOr is *p, or none for nil.
func valueOr[T any](p *T, none T) T {
	if p == nil {
		return none
	}
	return *p
}

// TestScripts holds the route symbolicate-js/ to Sentry's rules for finding
// a script and for what the answer says of it (docs/resolution.md), each
// rule a subtest over one server.
func TestScripts(t *testing.T) {
	t.Parallel()
	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	setupAcme(t, s)
	script, sourceMap := scriptsApp(t)
	// discount is the app's frame at discount.js:10:11 through a map found
	// at mapURL, named as Sentry names it: no caller names it, so it is
	// the function around it in the minified script, as the unminified
	// app printed it.
	discount := func(abs, mapURL string) scriptFrame {
		return scriptFrame{"lookupRate", "../src/discount.js", abs, 10, 11, true, mapURL}
	}
	unresolved := func(abs, filename string, line, col int) scriptFrame {
		return scriptFrame{"min", filename, abs, line, col, false, "-"}
	}

	t.Run("app:/// is served by the file stored as ~/ and its path", func(t *testing.T) {
		t.Parallel()
		storeRelease(t, s, "rn@1", releaseFile{"~/main.js", "", bytes.Replace(script, []byte("app.min.js.map"), []byte("main.js.map"), 1)},
			releaseFile{"~/main.js.map", "", sourceMap})
		got, errs, _ := resolveScripts(t, s, "rn@1", "", [][3]any{
			{"app:///main.js", 1, 88},
			{"app:///main.js?platform=ios#x", 1, 88},
			{"app:///index.js", 1, 88},
		})
		want := []scriptFrame{
			discount("app:///src/discount.js", "app:///main.js.map"),
			discount("app:///src/discount.js", "app:///main.js.map"),
			unresolved("app:///index.js", "/index.js", 1, 88),
		}
		expectScripts(t, want, got, []string{"app:///index.js missing_source"}, errs)
	})

	t.Run("candidates in Sentry's order, matched whole", func(t *testing.T) {
		t.Parallel()
		noRef := []byte("function f(){throw new Error}f();\n")
		storeRelease(t, s, "order@1",
			// The full URL is tried before ~/path: its script has no
			// map, where ~/app.js has one.
			releaseFile{"https://cdn.example/app.js", "", noRef},
			releaseFile{"~/app.js", "", bytes.Replace(script, []byte("app.min.js.map"), []byte("app.js.map"), 1)},
			releaseFile{"~/app.js.map", "", sourceMap},
			// A name with a query serves that query only, before the
			// name without.
			releaseFile{"~/q.js?v=2", "", noRef},
			releaseFile{"~/q.js", "", bytes.Replace(script, []byte("app.min.js.map"), []byte("app.js.map"), 1)},
			releaseFile{"~/static/a.js", "", bytes.Replace(script, []byte("app.min.js.map"), []byte("a.js.map"), 1)},
			releaseFile{"~/static/a.js.map", "", sourceMap})
		got, errs, _ := resolveScripts(t, s, "order@1", "", [][3]any{
			{"https://cdn.example/app.js", 1, 88},
			{"https://other.example/app.js", 1, 88},
			{"https://cdn.example/q.js?v=2", 1, 88},
			{"https://cdn.example/q.js?v=3", 1, 88},
			{"https://cdn.example/static/a.js", 1, 88},
			{"https://cdn.example/assets/static/a.js", 1, 88},
			{"https://cdn.example/a.js", 1, 88},
		})
		want := []scriptFrame{
			unresolved("https://cdn.example/app.js", "/app.js", 1, 88),
			discount("https://other.example/src/discount.js", "https://other.example/app.js.map"),
			unresolved("https://cdn.example/q.js?v=2", "/q.js", 1, 88),
			discount("https://cdn.example/src/discount.js", "https://cdn.example/app.js.map"),
			discount("https://cdn.example/src/discount.js", "https://cdn.example/static/a.js.map"),
			unresolved("https://cdn.example/assets/static/a.js", "/assets/static/a.js", 1, 88),
			unresolved("https://cdn.example/a.js", "/a.js", 1, 88),
		}
		expectScripts(t, want, got, []string{
			"https://cdn.example/app.js missing_sourcemap",
			"https://cdn.example/q.js?v=2 missing_sourcemap",
			"https://cdn.example/assets/static/a.js missing_source",
			"https://cdn.example/a.js missing_source",
		}, errs)
	})

	t.Run("a dist finds its files, and a dist the release does not know those without", func(t *testing.T) {
		t.Parallel()
		noRef := []byte("function f(){throw new Error}f();\n")
		storeRelease(t, s, "dist@1",
			releaseFile{"~/app.js", "ios", bytes.Replace(script, []byte("app.min.js.map"), []byte("app.js.map"), 1)},
			releaseFile{"~/app.js.map", "ios", sourceMap},
			releaseFile{"~/app.js", "", noRef},
			releaseFile{"~/plain.js", "", bytes.Replace(script, []byte("app.min.js.map"), []byte("plain.js.map"), 1)},
			releaseFile{"~/plain.js.map", "", sourceMap})
		const app, plain = "https://app.example/app.js", "https://app.example/plain.js"
		for _, tc := range []struct {
			dist string
			want []scriptFrame
			errs []string
		}{
			{"ios", []scriptFrame{discount("https://app.example/src/discount.js", "https://app.example/app.js.map"), unresolved(plain, "/plain.js", 1, 88)},
				[]string{plain + " missing_source"}},
			{"", []scriptFrame{unresolved(app, "/app.js", 1, 88), discount("https://app.example/src/discount.js", "https://app.example/plain.js.map")},
				[]string{app + " missing_sourcemap"}},
			{"android", []scriptFrame{unresolved(app, "/app.js", 1, 88), discount("https://app.example/src/discount.js", "https://app.example/plain.js.map")},
				[]string{app + " missing_sourcemap"}},
		} {
			t.Run("dist "+tc.dist, func(t *testing.T) {
				got, errs, _ := resolveScripts(t, s, "dist@1", tc.dist, [][3]any{{app, 1, 88}, {plain, 1, 88}})
				expectScripts(t, tc.want, got, tc.errs, errs)
			})
		}
	})

	t.Run("decorations are read off abs_path", func(t *testing.T) {
		t.Parallel()
		storeRelease(t, s, "decorated@1", releaseFile{"~/static/app.min.js", "", script}, releaseFile{"~/static/app.min.js.map", "", sourceMap})
		const app = "https://app.example/static/app.min.js"
		got, errs, _ := resolveScripts(t, s, "decorated@1", "", [][3]any{
			{"async " + app, 1, 88},
			{"address at " + app, 1, 88},
			{"eval at lookup (" + app + ":1:88), <anonymous>:1:5", 1, 5},
			{"global code@" + app, 1, 88},
			{app + " line 1 > eval", 3, 9},
		})
		resolved := discount("https://app.example/src/discount.js", "https://app.example/static/app.min.js.map")
		want := []scriptFrame{resolved, resolved, resolved, resolved, unresolved(app, "/static/app.min.js", 1, 0)}
		expectScripts(t, want, got, []string{app + " no_column"}, errs)
	})

	t.Run("a map found by debug id names sources after abs_path", func(t *testing.T) {
		t.Parallel()
		// sentry-cli injects a debug id and uploads an artifact bundle
		// whose files are named ~/static/...; the frames' URLs are not.
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "static"), 0o755)
		os.WriteFile(filepath.Join(dir, "static/app.min.js"), script, 0o644)
		os.WriteFile(filepath.Join(dir, "static/app.min.js.map"), sourceMap, 0o644)
		cli := newSentryCLI(t, "SENTRY_CLI_2", s, "acme").in(dir)
		cli.run(t, "sourcemaps", "inject", ".").expect(t, 0)
		cli.run(t, "sourcemaps", "upload", "--project", "web", "--wait", ".").expect(t, 0)
		injected, err := os.ReadFile(filepath.Join(dir, "static/app.min.js"))
		if err != nil {
			t.Fatal(err)
		}
		// The injection puts lines before the script's first.
		first := bytes.Index(injected, script[:bytes.IndexByte(script, '\n')])
		line := 1 + bytes.Count(injected[:max(first, 0)], []byte("\n"))
		debugID := debugIDOf(t, filepath.Join(dir, "static/app.min.js"))
		const web, native = "https://app.example/static/app.min.js", "app:///bundle/main.jsbundle"
		body := map[string]any{"modules": []map[string]string{
			{"type": "sourcemap", "code_file": web, "debug_id": debugID},
			{"type": "sourcemap", "code_file": native, "debug_id": debugID},
		}}
		got, errs, ans := resolveScriptsIn(t, s, body, [][3]any{{web, line, 88}, {native, line, 88}})
		want := []scriptFrame{
			discount("https://app.example/src/discount.js", "https://app.example/static/app.min.js.map"),
			discount("app:///src/discount.js", "app:///bundle/app.min.js.map"),
		}
		expectScripts(t, want, got, nil, errs)
		for _, st := range ans.Stacktraces {
			if with := st.Frames[0].Data.ResolvedWith; with == nil || *with != "debug-id" {
				t.Errorf("resolved with %v, want debug-id", valueOr(with, "-"))
			}
		}
	})

	t.Run("a debug id no file has leaves the lookup to the release", func(t *testing.T) {
		t.Parallel()
		storeRelease(t, s, "fallback@1", releaseFile{"~/static/app.min.js", "", script}, releaseFile{"~/static/app.min.js.map", "", sourceMap})
		const app = "https://app.example/static/app.min.js"
		body := map[string]any{"release": "fallback@1", "modules": []map[string]string{
			{"type": "sourcemap", "code_file": app, "debug_id": "5f0c8a8e-7e4b-4a34-9a51-1d2f3c4b5a69"}}}
		got, errs, ans := resolveScriptsIn(t, s, body, [][3]any{{app, 1, 88}})
		expectScripts(t, []scriptFrame{discount("https://app.example/src/discount.js", app+".map")}, got, nil, errs)
		if with := ans.Stacktraces[0].Frames[0].Data.ResolvedWith; with == nil || *with != "release" {
			t.Errorf("resolved with %v, want release", valueOr(with, "-"))
		}
	})

	t.Run("abs_path is the source resolved against the map's URL", func(t *testing.T) {
		t.Parallel()
		webpack := `{"version":3,"sources":["webpack:///./src/a.js","webpack://shop/./src/b.js"],"names":[],"mappings":"AAAA,ICAA",` +
			`"sourcesContent":["a()\n","b()\n"]}`
		rooted := `{"version":3,"sourceRoot":"lib","sources":["x/a.js"],"names":[],"mappings":"AAAA","sourcesContent":["a()\n"]}`
		storeRelease(t, s, "names@1",
			releaseFile{"~/static/app.min.js", "", script}, releaseFile{"~/static/app.min.js.map", "", sourceMap},
			releaseFile{"~/static/wp.js", "", []byte("a();b();\n//# sourceMappingURL=maps/wp.js.map\n")},
			releaseFile{"~/static/maps/wp.js.map", "", []byte(webpack)},
			releaseFile{"~/static/rooted.js", "", []byte("a();\n//# sourceMappingURL=rooted.js.map\n")},
			releaseFile{"~/static/rooted.js.map", "", []byte(rooted)})
		got, errs, _ := resolveScripts(t, s, "names@1", "", [][3]any{
			{"https://app.example/static/app.min.js", 1, 88},
			{"http://localhost:8080/static/app.min.js?v=1", 1, 88},
			{"https://app.example/static/wp.js", 1, 1},
			{"https://app.example/static/wp.js", 1, 5},
			{"https://app.example/static/rooted.js", 1, 1},
		})
		want := []scriptFrame{
			discount("https://app.example/src/discount.js", "https://app.example/static/app.min.js.map"),
			discount("http://localhost:8080/src/discount.js", "http://localhost:8080/static/app.min.js.map"),
			{"min", "./src/a.js", "webpack:///./src/a.js", 1, 1, true, "https://app.example/static/maps/wp.js.map"},
			{"min", "./src/b.js", "webpack://shop/./src/b.js", 1, 1, true, "https://app.example/static/maps/wp.js.map"},
			{"min", "lib/x/a.js", "https://app.example/static/lib/x/a.js", 1, 1, true, "https://app.example/static/rooted.js.map"},
		}
		expectScripts(t, want, got, nil, errs)
	})

	t.Run("a script without its map shows its own lines", func(t *testing.T) {
		t.Parallel()
		var lines []string
		for i := 1; i <= 20; i++ {
			lines = append(lines, fmt.Sprintf("line%d();", i))
		}
		long := "var x=" + strings.Repeat("a+", 400) + "b;"
		lines[11] = long // line 12
		text := strings.Join(lines, "\n") + "\n"
		storeRelease(t, s, "nomap@1",
			releaseFile{"~/nomap.js", "", []byte(text)},
			releaseFile{"~/lost.js", "", []byte(text + "//# sourceMappingURL=lost.js.map\n")})
		_, errs, ans := resolveScripts(t, s, "nomap@1", "", [][3]any{
			{"https://app.example/nomap.js", 8, 3},
			{"https://app.example/nomap.js", 12, 400},
			{"https://app.example/nomap.js", 20, 1},
			{"https://app.example/lost.js", 2, 1},
			{"https://app.example/nomap.js", 99, 1},
			{"https://app.example/nomap.js", 21, 1}, // past the newline that ends the file
		})
		type context struct {
			Pre  []string
			Line *string
			Post []string
		}
		var got []context
		for _, st := range ans.Stacktraces {
			f := st.Frames[0]
			if f.Data.Symbolicated {
				t.Errorf("a frame of a script without its map is resolved: %+v", f)
			}
			got = append(got, context{f.PreContext, f.ContextLine, f.PostContext})
		}
		ptr := func(s string) *string { return &s }
		cut := "{snip} " + long[400-1-60:400-1-60+140] + " {snip}"
		want := []context{
			{lines[2:7], ptr("line8();"), []string{"line9();", "line10();", "line11();", trimmed(long, 2), "line13();"}},
			{lines[6:11], ptr(cut), lines[12:17]},
			{lines[14:19], ptr("line20();"), []string{}}, // the newline that ends the file starts no line
			{lines[0:1], ptr("line2();"), lines[2:7]},
			{[]string{}, nil, []string{}},
			{[]string{}, nil, []string{}},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("context (-want +got):\n%s", diff)
		}
		wantErrs := []string{"https://app.example/nomap.js missing_sourcemap", "https://app.example/nomap.js missing_sourcemap",
			"https://app.example/nomap.js missing_sourcemap", "https://app.example/lost.js missing_sourcemap", "https://app.example/nomap.js missing_sourcemap",
			"https://app.example/nomap.js missing_sourcemap"}
		if diff := cmp.Diff(wantErrs, errs); diff != "" {
			t.Errorf("errors (-want +got):\n%s", diff)
		}
	})

	t.Run("context ends with the file's last line", func(t *testing.T) {
		t.Parallel()
		storeRelease(t, s, "end@1", releaseFile{"~/static/app.min.js", "", script}, releaseFile{"~/static/app.min.js.map", "", sourceMap})
		_, _, ans := resolveScripts(t, s, "end@1", "", [][3]any{{"https://app.example/static/app.min.js", 1, 88}})
		// discount.js:10 is 3 lines before the end of a file that ends
		// with a newline.
		f := ans.Stacktraces[0].Frames[0]
		if diff := cmp.Diff([]string{"  }", "  return table[code];", "}"}, f.PostContext); diff != "" {
			t.Errorf("post_context (-want +got):\n%s", diff)
		}
	})
}

// trimmed is a long line as a frame on another line shows it in its
// context: cut at column 0-based col, the frame's.
func trimmed(line string, col int) string {
	if col < 65 {
		return line[:140] + " {snip}"
	}
	return "{snip} " + line[col-60:col+80] + " {snip}"
}
