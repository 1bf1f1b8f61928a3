package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// jsApp is a small app of three modules whose discount lookup throws.
var jsApp = map[string]string{
	"src/package.json": `{"type":"module"}` + "\n",
	"src/discount.js": `const table = { SAVE10: 0.1, SAVE20: 0.2 };

export function discountFor(code) {
  const rate = lookupRate(code);
  return rate;
}

function lookupRate(code) {
  if (!(code in table)) {
    throw new Error("unknown discount code " + code);
  }
  return table[code];
}
`,
	"src/cart.js": `import { discountFor } from "./discount.js";

export class Cart {
  constructor(items) {
    this.items = items;
  }

  total() {
    let sum = 0;
    for (const item of this.items) {
      sum += item.price * item.quantity;
    }
    return sum;
  }

  applyDiscount(code) {
    const rate = discountFor(code);
    return this.total() * (1 - rate);
  }
}
`,
	"src/main.js": `import { Cart } from "./cart.js";

function checkout(code) {
  const cart = new Cart([{ price: 10, quantity: 2 }, { price: 5, quantity: 1 }]);
  return cart.applyDiscount(code);
}

function main() {
  try {
    console.log(checkout("SAVE10"));
    console.log(checkout("BOGUS"));
  } catch (e) {
    console.log(e.stack);
  }
}

main();
`,
}

// jsOracle resolves positions of a map with npm source-map and
// @jridgewell/trace-mapping, fails where they disagree, and names each
// frame as errata must: by the name at its caller's position (frames are
// callee first, as Node prints them).
const jsOracle = `
const fs = require("fs");
const { SourceMapConsumer } = require(process.env.NODE_SOURCE_MAP);
const { AnyMap, originalPositionFor } = require(process.env.NODE_TRACE_MAPPING);
(async () => {
  const raw = fs.readFileSync(process.argv[2], "utf8");
  const frames = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
  const tm = new AnyMap(raw);
  const out = await SourceMapConsumer.with(raw, null, (c) => frames.map((f) => {
    const a = c.originalPositionFor({ line: f.line, column: f.column - 1 });
    const b = originalPositionFor(tm, { line: f.line, column: f.column - 1 });
    if (a.source !== b.source || a.line !== b.line || a.column !== b.column || a.name !== b.name) {
      console.error("source-map and trace-mapping disagree at", f, a, b);
      process.exit(1);
    }
    return b;
  }));
  const named = out.map((p, i) => ({ ...p, caller_name: i + 1 < out.length ? out[i + 1].name : null }));
  process.stdout.write(JSON.stringify(named));
})();
`

// nodeFrame is a frame of a stack Node printed.
type nodeFrame struct {
	Function string `json:"function"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
}

var nodeFrameRE = regexp.MustCompile(`^\s+at (?:(.+?) \()?(?:file://)?(/[^():]+):(\d+):(\d+)\)?$`)

// runNode runs script with node and returns the frames of the stack it
// prints that lie in files under dir, callee first.
func runNode(t *testing.T, dir, script string) []nodeFrame {
	t.Helper()
	out, err := exec.Command("node", script).CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, out)
	}
	var frames []nodeFrame
	for _, line := range strings.Split(string(out), "\n") {
		m := nodeFrameRE.FindStringSubmatch(line)
		if m == nil || !strings.HasPrefix(m[2], dir) {
			continue
		}
		l, _ := strconv.Atoi(m[3])
		c, _ := strconv.Atoi(m[4])
		frames = append(frames, nodeFrame{Function: m[1], File: m[2], Line: l, Column: c})
	}
	if len(frames) < 5 {
		t.Fatalf("node %s printed %d frames of the app:\n%s", script, len(frames), out)
	}
	return frames
}

// oraclePosition is what the npm libraries give for a frame.
type oraclePosition struct {
	Source     string  `json:"source"`
	Line       int     `json:"line"`
	Column     int     `json:"column"`
	Name       *string `json:"name"`
	CallerName *string `json:"caller_name"`
}

func runOracle(t *testing.T, dir, mapPath string, frames []nodeFrame) []oraclePosition {
	t.Helper()
	script := filepath.Join(dir, "oracle.cjs")
	framesPath := filepath.Join(dir, "frames.json")
	b, _ := json.Marshal(frames)
	if err := os.WriteFile(script, []byte(jsOracle), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(framesPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script, mapPath, framesPath)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	var got []oraclePosition
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("oracle: %v: %s", err, out)
	}
	return got
}

// toolEnv returns the path the environment variable env names; the test
// fails without it, as dev.sh test installs it.
func toolEnv(t *testing.T, env string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		t.Fatalf("%s is not set: run the tests with ./dev.sh test, which installs it", env)
	}
	return v
}

func runToolIn(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// jsResolved is the part of a symbolicate-js answer the test reads.
type jsResolved struct {
	Stacktraces []struct {
		Frames []struct {
			Function    *string  `json:"function"`
			Filename    *string  `json:"filename"`
			AbsPath     *string  `json:"abs_path"`
			Lineno      *int     `json:"lineno"`
			Colno       *int     `json:"colno"`
			PreContext  []string `json:"pre_context"`
			ContextLine *string  `json:"context_line"`
			PostContext []string `json:"post_context"`
			Data        struct {
				Symbolicated bool    `json:"symbolicated"`
				ResolvedWith *string `json:"resolved_with"`
				Sourcemap    *string `json:"sourcemap"`
			} `json:"data"`
		} `json:"frames"`
	} `json:"stacktraces"`
	RawStacktraces json.RawMessage `json:"raw_stacktraces"`
	Errors         []struct {
		AbsPath string `json:"abs_path"`
		Type    string `json:"type"`
	} `json:"errors"`
}

// TestSymbolicateJSEndToEnd bundles and minifies an app with esbuild (and
// minifies that again with terser), runs the minified script under node,
// uploads it with sentry-cli both ways (sourcemaps inject and upload
// without a release; upload with --release), and asks errata to resolve
// the frames node printed. The answer must be what npm source-map and
// @jridgewell/trace-mapping give, and the file, line and column of the
// same frames in a run of the unminified app.
func TestSymbolicateJSEndToEnd(t *testing.T) {
	t.Parallel()
	esbuild, terser := toolEnv(t, "ESBUILD"), toolEnv(t, "TERSER")
	toolEnv(t, "NODE_SOURCE_MAP")
	toolEnv(t, "NODE_TRACE_MAPPING")
	work := t.TempDir()
	writeFiles(t, work, jsApp)
	original := runNode(t, work, filepath.Join(work, "src/main.js"))

	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	setupAcme(t, s)

	for _, variant := range []struct {
		name  string
		build func(t *testing.T, out string)
	}{
		{"esbuild", func(t *testing.T, out string) {
			runToolIn(t, work, esbuild, "src/main.js", "--bundle", "--minify", "--sourcemap", "--platform=node",
				"--outfile="+filepath.Join(out, "app.min.js"))
		}},
		{"terser", func(t *testing.T, out string) {
			tmp := t.TempDir()
			runToolIn(t, work, esbuild, "src/main.js", "--bundle", "--sourcemap", "--platform=node",
				"--outfile="+filepath.Join(tmp, "app.js"))
			runToolIn(t, tmp, terser, "app.js", "--compress", "--mangle", "--source-map",
				"content=app.js.map,url=app.min.js.map,includeSources", "-o", filepath.Join(out, "app.min.js"))
		}},
	} {
		for _, how := range []string{"debug id", "release"} {
			t.Run(variant.name+" by "+how, func(t *testing.T) {
				dir := t.TempDir()
				variant.build(t, dir)
				cli := newSentryCLI(t, "SENTRY_CLI_2", s, "acme").in(dir)
				var modules []map[string]string
				var release string
				const absPath = "https://app.example/static/app.min.js?v=3"
				if how == "debug id" {
					cli.run(t, "sourcemaps", "inject", ".").expect(t, 0)
					debugID := debugIDOf(t, filepath.Join(dir, "app.min.js"))
					cli.run(t, "sourcemaps", "upload", "--project", "web", "--wait", ".").expect(t, 0)
					modules = []map[string]string{{"type": "sourcemap", "code_file": absPath, "debug_id": debugID}}
				} else {
					release = "web@" + variant.name
					cli = newSentryCLI(t, "SENTRY_CLI_3", s, "acme").in(dir)
					cli.run(t, "sourcemaps", "upload", "--release", release, "--url-prefix", "~/static", "--wait", ".").expect(t, 0)
				}
				minified := runNode(t, dir, filepath.Join(dir, "app.min.js"))
				if len(minified) != len(original) {
					t.Fatalf("the minified run printed %d frames, the original %d", len(minified), len(original))
				}
				want := runOracle(t, dir, filepath.Join(dir, "app.min.js.map"), minified)

				// Caller first, as Sentry stores events and as the route
				// reads frames by default.
				var frames []map[string]any
				for _, f := range slices.Backward(minified) {
					frames = append(frames, map[string]any{"abs_path": absPath, "lineno": f.Line, "colno": f.Column, "function": f.Function})
				}
				body := map[string]any{"stacktraces": []any{map[string]any{"frames": frames}}, "modules": modules}
				if release != "" {
					body["release"] = release
				}
				status, resBody := s.api(t, "POST", "/api/0/projects/acme/web/symbolicate-js/", body)
				if status != http.StatusOK {
					t.Fatalf("symbolicate-js: %d %s", status, resBody)
				}
				var got jsResolved
				if err := json.Unmarshal(resBody, &got); err != nil {
					t.Fatal(err)
				}
				if len(got.Errors) != 0 || len(got.Stacktraces) != 1 || len(got.Stacktraces[0].Frames) != len(frames) {
					t.Fatalf("answer: %s", resBody)
				}
				wantWith := map[string]string{"debug id": "debug-id", "release": "release"}[how]
				for i, f := range got.Stacktraces[0].Frames {
					k := len(minified) - 1 - i // the same frame, callee first
					w, o := want[k], original[k]
					if !f.Data.Symbolicated || f.Data.ResolvedWith == nil || *f.Data.ResolvedWith != wantWith || f.Lineno == nil || f.Colno == nil || f.AbsPath == nil || f.Filename == nil {
						t.Fatalf("frame %d: %s", i, resBody)
					}
					if *f.Lineno != w.Line || *f.Colno != w.Column+1 || !strings.HasSuffix(*f.AbsPath, strings.TrimLeft(w.Source, "./")) {
						t.Errorf("frame %d: %s:%d:%d, the npm libraries give %s:%d:%d", i, *f.AbsPath, *f.Lineno, *f.Colno, w.Source, w.Line, w.Column+1)
					}
					if filepath.Base(*f.Filename) != filepath.Base(o.File) || *f.Lineno != o.Line || *f.Colno != o.Column {
						t.Errorf("frame %d: %s:%d:%d, the unminified run printed %s:%d:%d", i, *f.Filename, *f.Lineno, *f.Colno, o.File, o.Line, o.Column)
					}
					wantName := minified[k].Function
					if w.CallerName != nil {
						wantName = *w.CallerName
						// The unminified run names it too (Cart.applyDiscount
						// is applyDiscount at the call site).
						if !strings.HasSuffix(o.Function, wantName) {
							t.Errorf("frame %d: the map names it %q, the unminified run %q", i, wantName, o.Function)
						}
					} else if o.Function != "" {
						// No caller names it: the function around it in
						// the minified file does, as the unminified run.
						wantName = o.Function
					}
					if f.Function == nil || *f.Function != wantName {
						t.Errorf("frame %d: function %v, want %q", i, f.Function, wantName)
					}
					src, err := os.ReadFile(filepath.Join(work, "src", filepath.Base(o.File)))
					if err != nil {
						t.Fatal(err)
					}
					lines := strings.Split(strings.TrimSuffix(string(src), "\n"), "\n")
					if f.ContextLine == nil || *f.ContextLine != lines[o.Line-1] ||
						!slices.Equal(f.PreContext, lines[max(o.Line-6, 0):o.Line-1]) ||
						!slices.Equal(f.PostContext, lines[o.Line:min(o.Line+5, len(lines))]) {
						t.Errorf("frame %d: context %q / %v / %q around line %d of %s", i, f.PreContext, f.ContextLine, f.PostContext, o.Line, o.File)
					}
				}
				var raw struct {
					Frames []map[string]any `json:"frames"`
				}
				var raws []json.RawMessage
				if err := json.Unmarshal(got.RawStacktraces, &raws); err != nil || len(raws) != 1 || json.Unmarshal(raws[0], &raw) != nil || len(raw.Frames) != len(frames) {
					t.Errorf("raw_stacktraces = %s", got.RawStacktraces)
				}
			})
		}
	}
}
