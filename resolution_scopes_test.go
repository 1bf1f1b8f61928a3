package main

import (
	"os"
	"path/filepath"
	"testing"
)

// scopesApp is a small app whose frames are each in another kind of
// function: a declaration, a static method, an arrow function passed to
// a call, a method of a class assigned to a constant, an arrow function
// assigned to a constant, and the top level.
var scopesApp = map[string]string{
	"src/package.json": `{"type":"module"}` + "\n",
	"src/stock.js": `const levels = new Map([["apple", 3]]);

export class Stock {
  static reserve(sku, count) {
    return takeFrom(sku, count);
  }
}

function takeFrom(sku, count) {
  const have = levels.get(sku) ?? 0;
  if (have < count) {
    throw new RangeError(` + "`only ${have} of ${sku} left`" + `);
  }
  levels.set(sku, have - count);
  return have - count;
}
`,
	"src/main.js": `import { Stock } from "./stock.js";

const Order = class {
  lines = [];

  add(sku, count) {
    this.lines.push({ sku, count });
    return this;
  }

  place() {
    return this.lines.map((line) => Stock.reserve(line.sku, line.count));
  }
};

const submit = (order) => order.place();

function run() {
  const order = new Order().add("apple", 2).add("apple", 5);
  try {
    submit(order);
  } catch (err) {
    console.log(err.stack);
  }
}

run();
`,
}

// TestScopesNameFramesWithoutCaller sends frames that no caller names,
// each a stack trace of its own, so that errata must name them after the
// function around their position in the minified file (docs/resolution.md):
// the assertions of symbolic's sourcemapcache tests
// (symbolic-sourcemapcache/tests/integration.rs) on its fixtures, and an
// app minified here by esbuild and by terser, whose frames must be named
// as node names the same frames in a run of the unminified app. A frame
// in no named function keeps the name it came with.
func TestScopesNameFramesWithoutCaller(t *testing.T) {
	t.Parallel()
	esbuild, terser := toolEnv(t, "ESBUILD"), toolEnv(t, "TERSER")
	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	setupAcme(t, s)

	// resolve sends each frame as a stack trace of its own and returns the
	// function of each answer.
	resolve := func(t *testing.T, body map[string]any, frames []map[string]any) []*string {
		t.Helper()
		got, resBody := symbolicateEachJS(t, s, body, frames)
		if len(got.Errors) != 0 {
			t.Fatalf("answer: %s", resBody)
		}
		var out []*string
		for i, st := range got.Stacktraces {
			if !st.Frames[0].Data.Symbolicated {
				t.Fatalf("frame %d is not resolved: %s", i, resBody)
			}
			out = append(out, st.Frames[0].Function)
		}
		return out
	}

	t.Run("symbolic fixtures", func(t *testing.T) {
		t.Parallel()
		fixtures := suitePath(t, "symbolic/symbolic-testutils/fixtures/sourcemapcache")
		dir := t.TempDir()
		files := map[string]string{}
		for _, name := range []string{"inlining/module.js", "simple/minified.js", "preact.module.js", "nofiles.js", "webpack/bundle.js"} {
			for _, f := range []string{name, name + ".map"} {
				data, err := os.ReadFile(filepath.Join(fixtures, f))
				if err != nil {
					t.Fatal(err)
				}
				files[f] = string(data)
			}
		}
		writeFiles(t, dir, files)
		cli := newSentryCLI(t, "SENTRY_CLI_3", s, "acme").in(dir)
		cli.run(t, "sourcemaps", "upload", "--release", "symbolic", "--url-prefix", "~/", "--wait", ".").expect(t, 0)

		const given = "given"
		// The positions of integration.rs (0-based there, 1-based here)
		// whose scope it asserts; "" is its Unknown or AnonymousScope.
		cases := []struct {
			file         string
			line, column int
			want         string
		}{
			{"inlining/module.js", 1, 63, "buttonCallback"},
			{"inlining/module.js", 1, 47, "bar"},
			{"inlining/module.js", 1, 34, ""},
			{"simple/minified.js", 1, 11, "abcd"},
			{"preact.module.js", 1, 50, ""},
			{"preact.module.js", 1, 133, "assign"},
			{"preact.module.js", 1, 482, "createElement"},
			{"preact.module.js", 1, 9780, ""},
			{"preact.module.js", 1, 9795, ""},
			{"nofiles.js", 1, 39, "add"},
			{"webpack/bundle.js", 1, 85, "module.exports"},
			{"webpack/bundle.js", 1, 44, "module.exports"},
		}
		var frames []map[string]any
		for _, c := range cases {
			frames = append(frames, map[string]any{"abs_path": "https://example.com/" + c.file, "lineno": c.line, "colno": c.column, "function": given})
		}
		got := resolve(t, map[string]any{"release": "symbolic"}, frames)
		for i, c := range cases {
			want := c.want
			if want == "" {
				want = given
			}
			if got[i] == nil || *got[i] != want {
				t.Errorf("%s:%d:%d: function %v, want %q", c.file, c.line, c.column, deref(got[i]), want)
			}
		}
	})

	work := t.TempDir()
	writeFiles(t, work, scopesApp)
	original := runNode(t, work, filepath.Join(work, "src/main.js"))
	for _, variant := range []struct {
		name, how string
		build     func(t *testing.T, out string)
	}{
		{"esbuild", "debug id", func(t *testing.T, out string) {
			runToolIn(t, work, esbuild, "src/main.js", "--bundle", "--minify", "--sourcemap", "--platform=node",
				"--outfile="+filepath.Join(out, "app.min.js"))
		}},
		{"terser", "release", func(t *testing.T, out string) {
			tmp := t.TempDir()
			runToolIn(t, work, esbuild, "src/main.js", "--bundle", "--sourcemap", "--platform=node",
				"--outfile="+filepath.Join(tmp, "app.js"))
			runToolIn(t, tmp, terser, "app.js", "--mangle", "--toplevel", "--source-map",
				"content=app.js.map,url=app.min.js.map,includeSources", "-o", filepath.Join(out, "app.min.js"))
		}},
	} {
		t.Run(variant.name+" by "+variant.how, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			variant.build(t, dir)
			const absPath = "https://app.example/static/app.min.js"
			body := map[string]any{}
			if variant.how == "debug id" {
				cli := newSentryCLI(t, "SENTRY_CLI_2", s, "acme").in(dir)
				cli.run(t, "sourcemaps", "inject", ".").expect(t, 0)
				cli.run(t, "sourcemaps", "upload", "--project", "web", "--wait", ".").expect(t, 0)
				body["modules"] = []map[string]string{{"type": "sourcemap", "code_file": absPath, "debug_id": debugIDOf(t, filepath.Join(dir, "app.min.js"))}}
			} else {
				body["release"] = "web@" + variant.name
				cli := newSentryCLI(t, "SENTRY_CLI_3", s, "acme").in(dir)
				cli.run(t, "sourcemaps", "upload", "--release", "web@"+variant.name, "--url-prefix", "~/static", "--wait", ".").expect(t, 0)
			}
			minified := runNode(t, dir, filepath.Join(dir, "app.min.js"))
			if len(minified) != len(original) {
				t.Fatalf("the minified run printed %d frames, the original %d", len(minified), len(original))
			}
			var frames []map[string]any
			for _, f := range minified {
				frames = append(frames, map[string]any{"abs_path": absPath, "lineno": f.Line, "colno": f.Column, "function": f.Function})
			}
			got := resolve(t, body, frames)
			named := 0
			for i, o := range original {
				want := o.Function // as node names it in the unminified run
				if want == "" {
					want = minified[i].Function // the top level: no function around it
				} else {
					named++
				}
				if deref(got[i]) != want {
					t.Errorf("frame %d (%s:%d:%d, %q in the minified run): function %q, the unminified run names it %q",
						i, absPath, minified[i].Line, minified[i].Column, minified[i].Function, deref(got[i]), want)
				}
			}
			if named < 5 {
				t.Errorf("the unminified run named %d frames: %v", named, original)
			}
		})
	}
}

// writeFiles writes files (their contents by path) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
