package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// r8Mapping is a mapping written in R8's documented mapping format, with
// R8's metadata of every kind, one part per case of TestR8Metadata. R8
// itself cannot be installed here: each part is the mapping of a case of
// R8's retrace test suite (src/test/java/com/android/tools/r8/retrace/
// stacktraces/ in the R8 repository) or of Sentry's symbolicator tests,
// named above it, its classes renamed where two cases share a name. Its
// comments are as R8 writes them (JSON) and as R8's documentation and its
// tests do (gson's lenient form); three of them cannot be read or are not
// known, and change nothing.
const r8Mapping = `# {"id":"com.android.tools.r8.mapping","version":"2.2"}
# sourceFile: R8's retrace documentation (Source File); R8 ColonInFileNameStackTrace.
some.Fruit -> f.a:
# {"id":"sourceFile","fileName":
# {'id':'com.android.tools.r8.unknown','data':[1,{}]}
# {"id":"sourceFile","fileName":"Fruits.kt"}
    1:3:int strawberry(int):99:101 -> s
    int passionFruit(float):121:121 -> t
# NameKt classes: Sentry's symbolicator test_compose_stacktrace_group_keys.
ComposeStackTrace -> $$compose:
  1:1:androidx.compose.runtime.State androidx.compose.animation.core.AnimateAsStateKt.animateFloatAsState(float,androidx.compose.animation.core.AnimationSpec,float,java.lang.String,kotlin.jvm.functions.Function1,androidx.compose.runtime.Composer,int,int):71:71 -> m$1125598679
# synthesized: R8 SyntheticLambdaMethodWithInliningStackTrace, SyntheticLambdaMethodStackTrace.
example.Main -> example.Main:
  1:1:void main(java.lang.String[]):123 -> main
example.Foo -> y.a:
  3:3:void runIt():218 -> b
  2:2:void main():223 -> c
example.Foo$$ExternalSyntheticLambda0 -> y.b:
  4:4:void example.Foo.lambda$main$0():225 -> a
  4:4:void run(example.Foo):0 -> a
    # {'id':'com.android.tools.r8.synthesized'}
example.Bar$$ExternalSyntheticLambda0 -> y.c:
# {"id":"com.android.tools.r8.synthesized"}
    void run(example.Bar) -> a
# rewriteFrame: R8 NpeInlineRetraceStackTrace.
npe.Class -> n.a:
  4:4:void other.Class():23:23 -> a
  4:4:void caller(other.Class):7 -> a
  # { id: 'com.android.tools.r8.rewriteFrame', conditions: ['throws(Ljava/lang/NullPointerException;)'],  actions: ['removeInnerFrames(1)'] }
  5:5:void main():11:11 -> b
# outline, outlineCallsite: R8 OutlineSimpleStackTrace.
outline.Class -> o.a:
  1:2:int outline() -> a
# { 'id':'com.android.tools.r8.outline' }
some.Class -> o.b:
  1:1:void foo.bar.Baz.qux():42:42 -> s
  4:4:int outlineCaller(int):98:98 -> s
  27:27:int outlineCaller(int):0:0 -> s
# { 'id':'com.android.tools.r8.outlineCallsite', 'positions': { '1': 4, '2': 5 } }
  30:30:void main():9:9 -> t
# Method lines without a range: R8 NoObfuscationRangeMappingWithStackTrace; Sentry's symbolicator test_no_line_info_mapping.
com.android.tools.r8.naming.retrace.Main -> foo:
    void foo(long):1:1 -> a
    void bar(int):3 -> b
    void baz():0:0 -> c
    void main(java.lang.String[]):0 -> d
com.google.protobuf.AbstractParser -> yy.xv:
    com.google.protobuf.ExtensionRegistryLite EMPTY_REGISTRY -> Xc
    com.google.protobuf.MessageLite com.google.protobuf.AbstractParser.checkMessageInitialized(com.google.protobuf.MessageLite) -> kc
`

// TestR8Metadata uploads r8Mapping with sentry-cli and resolves, through
// symbolicate-jvm/, the obfuscated stack trace of each case in both frame
// orders: the answer is what R8's retrace prints for it (its test suite's
// expected stack trace, or Sentry's symbolicator's snapshot where the
// case comes from there), read in the order asked, each frame with the
// index of the input frame it comes from.
func TestR8Metadata(t *testing.T) {
	t.Parallel()
	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	setupAcme(t, s)
	dir := t.TempDir()
	mapping := filepath.Join(dir, "mapping.txt")
	if err := os.WriteFile(mapping, []byte(r8Mapping), 0o644); err != nil {
		t.Fatal(err)
	}
	uuid := proguardUUID(t, mapping)
	newSentryCLI(t, "SENTRY_CLI_3", s, "acme").in(dir).run(t, "proguard", "upload", mapping).expect(t, 0)
	difOfType(t, s, "acme", uuid, "proguard")

	// Each case's stack traces, callee first: the obfuscated frames as
	// "class.method:line" (":" alone for a frame without a line), the
	// exception each threw ("" for none), and the frames R8's retrace
	// gives, "index class.method(file:line)", "(file)" for a frame the
	// mapping gives no line, " synthesized" after a synthesized method's.
	type trace struct {
		exception string
		in, want  []string
	}
	for _, tc := range []struct {
		name   string
		traces []trace
		// exceptions sends the exceptions in the request's exceptions
		// only, not in each stack trace's.
		exceptions bool
	}{
		{name: "sourceFile names the file", traces: []trace{{
			in: []string{"f.a.s:1", "f.a.t:", "$$compose.m$1125598679:1"},
			want: []string{
				"0 some.Fruit.strawberry(Fruits.kt:99)",
				"1 some.Fruit.passionFruit(Fruits.kt:121)",
				// Sentry's rule where no sourceFile is given: NameKt is Name.kt.
				"2 androidx.compose.animation.core.AnimateAsStateKt.animateFloatAsState(AnimateAsState.kt:71)",
			},
		}}},
		{name: "synthesized frames are left out", traces: []trace{{
			exception: "java.lang.NullPointerException",
			in:        []string{"y.b.a:4", "y.a.b:3", "y.a.c:2", "example.Main.main:1"},
			want: []string{
				"0 example.Foo.lambda$main$0(Foo.java:225)",
				"1 example.Foo.runIt(Foo.java:218)",
				"2 example.Foo.main(Foo.java:223)",
				"3 example.Main.main(Main.java:123)",
			},
		}, {
			// A frame without a line keeps its synthesized method, marked,
			// as Sentry's symbolicator does.
			in:   []string{"y.c.a:", "y.a.b:3"},
			want: []string{"0 example.Bar$$ExternalSyntheticLambda0.run(Bar.java:0) synthesized", "1 example.Foo.runIt(Foo.java:218)"},
		}}},
		{name: "rewriteFrame applies under the exception it names", traces: []trace{{
			exception: "java.lang.NullPointerException",
			in:        []string{"n.a.a:4", "n.a.b:5"},
			want:      []string{"0 npe.Class.caller(Class.java:7)", "1 npe.Class.main(Class.java:11)"},
		}, {
			exception: "java.lang.IllegalStateException",
			in:        []string{"n.a.a:4", "n.a.b:5"},
			want:      []string{"0 other.Class(other.java:23)", "0 npe.Class.caller(Class.java:7)", "1 npe.Class.main(Class.java:11)"},
		}, {
			in:   []string{"n.a.a:4"},
			want: []string{"0 other.Class(other.java:23)", "0 npe.Class.caller(Class.java:7)"},
		}}},
		{name: "rewriteFrame reads the request's exceptions", exceptions: true, traces: []trace{{
			exception: "java.lang.NullPointerException",
			in:        []string{"n.a.a:4", "n.a.b:5"},
			want:      []string{"0 npe.Class.caller(Class.java:7)", "1 npe.Class.main(Class.java:11)"},
		}}},
		{name: "an outline becomes its call site", traces: []trace{{
			exception: "java.io.IOException",
			in:        []string{"o.a.a:1", "o.b.s:27", "o.b.t:30"},
			want:      []string{"1 some.Class.outlineCaller(Class.java:98)", "2 some.Class.main(Class.java:9)"},
		}}},
		{name: "method lines without a range", traces: []trace{{
			in: []string{"foo.a:0", "foo.b:2", "foo.c:8", "foo.d:7", "yy.xv.kc:42"},
			want: []string{
				"0 com.android.tools.r8.naming.retrace.Main.foo(Main.java:1)",
				"1 com.android.tools.r8.naming.retrace.Main.bar(Main.java:3)",
				"2 com.android.tools.r8.naming.retrace.Main.baz(Main.java)",
				"3 com.android.tools.r8.naming.retrace.Main.main(Main.java)",
				"4 com.google.protobuf.AbstractParser.checkMessageInitialized(AbstractParser.java:42)",
			},
		}}},
	} {
		for _, order := range []string{"callee_first", "caller_first"} {
			t.Run(tc.name+"/"+order, func(t *testing.T) {
				t.Parallel()
				var stacktraces, exceptions []any
				var want [][]string
				for _, tr := range tc.traces {
					frames, w := r8Frames(t, tr.in, tr.want, order == "caller_first")
					st := map[string]any{"frames": frames}
					if tr.exception != "" {
						module, typ := splitJavaClass(tr.exception)
						ex := map[string]any{"type": typ, "module": module}
						if tc.exceptions {
							exceptions = append(exceptions, ex)
						} else {
							st["exception"] = ex
						}
					}
					stacktraces = append(stacktraces, st)
					want = append(want, w)
				}
				body := map[string]any{
					"exceptions": exceptions, "stacktraces": stacktraces,
					"modules": []any{map[string]any{"type": "proguard", "uuid": uuid}},
					"options": map[string]any{"frame_order": order},
				}
				var got struct {
					Stacktraces []struct {
						Frames []struct {
							Function          string `json:"function"`
							Module            string `json:"module"`
							Filename          string `json:"filename"`
							Lineno            *int   `json:"lineno"`
							OriginalIndex     int    `json:"original_index"`
							MethodSynthesized bool   `json:"method_synthesized"`
						} `json:"frames"`
					} `json:"stacktraces"`
					Errors []any `json:"errors"`
				}
				res := symbolicateJVM(t, s, body, &got)
				if len(got.Stacktraces) != len(want) || len(got.Errors) != 0 {
					t.Fatalf("%d stack traces, errors %v; want %d, none:\n%s", len(got.Stacktraces), got.Errors, len(want), res)
				}
				for i, st := range got.Stacktraces {
					var frames []string
					for _, f := range st.Frames {
						s := fmt.Sprintf("%d %s.%s(%s)", f.OriginalIndex, f.Module, f.Function, f.Filename)
						if f.Lineno != nil {
							s = fmt.Sprintf("%d %s.%s(%s:%d)", f.OriginalIndex, f.Module, f.Function, f.Filename, *f.Lineno)
						}
						if f.MethodSynthesized {
							s += " synthesized"
						}
						frames = append(frames, s)
					}
					if diff := cmp.Diff(want[i], frames); diff != "" {
						t.Errorf("stack trace %d (-R8's retrace +errata):\n%s", i, diff)
					}
				}
			})
		}
	}
}

// r8Frames returns the request's frames of the obfuscated frames in
// ("class.method:line", callee first) and the frames to expect of want
// ("index class.method(...)", callee first), both in the order asked: the
// indexes of want become those of the frames as sent.
func r8Frames(t *testing.T, in, want []string, callerFirst bool) ([]any, []string) {
	t.Helper()
	var frames []any
	for _, f := range in {
		at, line, _ := strings.Cut(f, ":")
		module, function := splitJavaClass(at)
		frame := map[string]any{"module": module, "function": function, "filename": "SourceFile"}
		if line != "" {
			var n int
			if _, err := fmt.Sscan(line, &n); err != nil {
				t.Fatalf("frame %q: %v", f, err)
			}
			frame["lineno"] = n
		}
		frames = append(frames, frame)
	}
	want = slices.Clone(want)
	if callerFirst {
		slices.Reverse(frames)
		slices.Reverse(want)
		for i, w := range want {
			var index int
			if _, err := fmt.Sscan(w, &index); err != nil {
				t.Fatalf("expected frame %q: %v", w, err)
			}
			_, rest, _ := strings.Cut(w, " ")
			want[i] = fmt.Sprintf("%d %s", len(in)-1-index, rest)
		}
	}
	return frames, want
}

// symbolicateJVM posts body to project acme/web's symbolicate-jvm/,
// decodes its 200 answer into got and returns it.
func symbolicateJVM(t *testing.T, s *errataServer, body, got any) []byte {
	t.Helper()
	status, res := s.api(t, "POST", "/api/0/projects/acme/web/symbolicate-jvm/", body)
	if status != http.StatusOK {
		t.Fatalf("symbolicate-jvm: %d %s", status, res)
	}
	if err := json.Unmarshal(res, got); err != nil {
		t.Fatal(err)
	}
	return res
}
