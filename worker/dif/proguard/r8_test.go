package proguard

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var (
	obfuscatedFrameRE = regexp.MustCompile(`^(.+)\.([^.]+):(\d*)$`)
	retracedFrameRE   = regexp.MustCompile(`^(.+)\.([^.(]+)\(([^:)]*)(?::(\d+))?\)( synthesized)?$`)
)

// retrace remaps a stack trace read callee first, the frames written
// "class.method:line" (no line after the colon for a frame without one),
// as the JVM route does with one mapping: the exception thrown goes with
// the top frame, an outline's position with the frame below it, and
// synthesized methods are left out of frames that have a line. The frames
// come back as R8's retrace prints them, "class.method(File:line)",
// "class.method(File)" where the mapping gives no line, " synthesized"
// after a synthesized method's.
func retrace(t *testing.T, m *Mapping, thrown string, frames ...string) []string {
	t.Helper()
	var out []string
	outline := 0
	for _, s := range frames {
		p := obfuscatedFrameRE.FindStringSubmatch(s)
		if p == nil {
			t.Fatalf("cannot read the frame %q", s)
		}
		line, _ := strconv.Atoi(p[3])
		r, ok := m.RemapIn(Frame{Class: p[1], Method: p[2], Line: line}, Context{Thrown: thrown, Outline: outline, DropSynthesized: line > 0}, 64)
		outline = r.Outline
		if !ok {
			out = append(out, s)
			continue
		}
		if r.Outline == 0 || len(r.Frames) > 0 {
			thrown = ""
		}
		for _, f := range r.Frames {
			out = append(out, printFrame(f))
		}
	}
	return out
}

func printFrame(f Frame) string {
	s := fmt.Sprintf("%s.%s(%s:%d)", f.Class, f.Method, f.File, f.Line)
	if f.NoLine {
		s = fmt.Sprintf("%s.%s(%s)", f.Class, f.Method, f.File)
	}
	if f.Synthesized {
		s += " synthesized"
	}
	return s
}

// TestR8Retrace holds the remapping to R8's retrace on the stack traces
// of R8's own retrace test suite (src/test/java/com/android/tools/r8/
// retrace/stacktraces/ in the R8 repository, as Sentry's rust-proguard
// ports them to its tests/r8-*.rs), of R8's retrace documentation
// (doc/retrace.md), and of Sentry's symbolicator and rust-proguard tests
// where a case names them. Each case says where its mapping and its
// expected frames come from. R8's retrace prints alternatives with "<OR>";
// these list them one after the other, as rust-proguard does.
func TestR8Retrace(t *testing.T) {
	for _, tc := range []struct {
		name, source string
		mapping      string
		thrown       string
		in, want     []string
	}{
		{
			name: "method lines without an obfuscated range", source: "R8 NoObfuscationRangeMappingWithStackTrace",
			mapping: `com.android.tools.r8.naming.retrace.Main -> foo:
    void foo(long):1:1 -> a
    void bar(int):3 -> b
    void baz():0:0 -> c
    void main(java.lang.String[]):0 -> d
`,
			in: []string{"foo.a:0", "foo.b:2", "foo.c:8", "foo.d:7"},
			want: []string{
				"com.android.tools.r8.naming.retrace.Main.foo(Main.java:1)",
				"com.android.tools.r8.naming.retrace.Main.bar(Main.java:3)",
				"com.android.tools.r8.naming.retrace.Main.baz(Main.java)",
				"com.android.tools.r8.naming.retrace.Main.main(Main.java)",
			},
		},
		{
			name: "a line outside every range keeps the obfuscated method", source: "R8 OutsideLineRangeStackTraceTest",
			mapping: `some.other.Class -> a:
    void method1():42:42 -> a
some.Class -> b:
    1:3:void method2():11:13 -> a
    4:4:void method2():10:10 -> a
`,
			in: []string{"a.a:2", "a.a:", "b.a:27", "b.a:"},
			want: []string{
				"some.other.Class.method1(Class.java:42)",
				"some.other.Class.method1(Class.java:42)",
				"some.Class.a(Class.java:27)",
				"some.Class.method2(Class.java:0)",
			},
		},
		{
			name: "a frame without a line in a method of lines", source: "R8 PreambleLineNumberStackTrace",
			mapping: `kotlin.ResultKt -> kotlin.t:
    1:1:void createFailure(java.lang.Throwable):122:122 -> a
    2:2:void createFailure(java.lang.Throwable):124:124 -> a
`,
			in: []string{"kotlin.t.a:", "kotlin.t.a:1", "kotlin.t.a:2"},
			want: []string{
				"kotlin.ResultKt.createFailure(Result.kt:0)",
				"kotlin.ResultKt.createFailure(Result.kt:122)",
				"kotlin.ResultKt.createFailure(Result.kt:124)",
			},
		},
		{
			name: "one position for several original lines", source: "R8 DifferentLineNumberSpanStackTrace",
			mapping: `com.android.tools.r8.naming.retrace.Main -> a:
    void method1(java.lang.String):42:44 -> a
`,
			in: []string{"a.a:1"},
			want: []string{
				"com.android.tools.r8.naming.retrace.Main.method1(Main.java:42)",
				"com.android.tools.r8.naming.retrace.Main.method1(Main.java:43)",
				"com.android.tools.r8.naming.retrace.Main.method1(Main.java:44)",
			},
		},
		{
			name: "0:0 ranges and methods without a range, no line", source: "R8 SingleLineNoLineNumberStackTrace",
			mapping: `com.android.tools.r8.naming.retrace.Main -> foo.a:
    0:0:void method1(java.lang.String):42:42 -> a
    0:0:void main(java.lang.String[]):28 -> a
    0:0:void method2(java.lang.String):42:44 -> b
    0:0:void main2(java.lang.String[]):29 -> b
    void method3(java.lang.String):72:72 -> c
    void main3(java.lang.String[]):30 -> c
    void main4(java.lang.String[]):153 -> d
`,
			in: []string{"foo.a.a:", "foo.a.b:", "foo.a.c:", "foo.a.d:"},
			want: []string{
				"com.android.tools.r8.naming.retrace.Main.method1(Main.java:42)",
				"com.android.tools.r8.naming.retrace.Main.main(Main.java:28)",
				"com.android.tools.r8.naming.retrace.Main.method2(Main.java:0)",
				"com.android.tools.r8.naming.retrace.Main.main2(Main.java:0)",
				"com.android.tools.r8.naming.retrace.Main.main3(Main.java:0)",
				"com.android.tools.r8.naming.retrace.Main.method3(Main.java:0)",
				"com.android.tools.r8.naming.retrace.Main.main4(Main.java:153)",
			},
		},
		{
			name: "a 0:0 range before line ranges, no line", source: "R8 MultipleLinesNoLineNumberStackTrace",
			mapping: `com.android.tools.r8.naming.retrace.Main -> foo.a:
    0:0:void method1(java.lang.String):42:42 -> a
    0:0:void main(java.lang.String[]):28 -> a
    1:1:void main(java.lang.String[]):153 -> a
`,
			in: []string{"foo.a.a:"},
			want: []string{
				"com.android.tools.r8.naming.retrace.Main.method1(Main.java:42)",
				"com.android.tools.r8.naming.retrace.Main.main(Main.java:28)",
			},
		},
		{
			name: "inverted ranges", source: "R8 InvalidMinifiedRangeStackTrace, InvalidOriginalRangeStackTrace",
			mapping: `com.android.tools.r8.naming.retrace.Main -> com.android.tools.r8.naming.retrace.Main:
    5:3:void main(java.lang.String[]) -> main
com.android.tools.r8.naming.retrace.Other -> b:
    2:5:void main(java.lang.String[]):5:2 -> main
`,
			in: []string{"com.android.tools.r8.naming.retrace.Main.main:3", "b.main:3"},
			want: []string{
				"com.android.tools.r8.naming.retrace.Main.main(Main.java:3)",
				"com.android.tools.r8.naming.retrace.Other.main(Other.java:3)",
			},
		},
		{
			name: "sourceFile metadata", source: "R8 ColonInFileNameStackTrace; R8's retrace documentation, Source File",
			mapping: `some.Class -> a:
# {"id":"sourceFile","fileName":"Class.kt"}
    1:3:int strawberry(int):99:101 -> s
    4:5:int mango(float):121:122 -> s
    int passionFruit(float):121:121 -> t
`,
			in:   []string{"a.s:1", "a.t:"},
			want: []string{"some.Class.strawberry(Class.kt:99)", "some.Class.passionFruit(Class.kt:121)"},
		},
		{
			name: "a Kotlin file named after its NameKt class", source: "R8 SourceFileNameSynthesizeStackTrace",
			mapping: `android.support.v7.widget.ActionMenuView -> mapping:
    21:21:void invokeItem():624 -> a
android.support.v7.widget.ActionMenuViewKt -> mappingKotlin:
    21:21:void invokeItem():624 -> b
`,
			in: []string{"mapping.a:21", "mappingKotlin.b:21"},
			want: []string{
				"android.support.v7.widget.ActionMenuView.invokeItem(ActionMenuView.java:624)",
				"android.support.v7.widget.ActionMenuViewKt.invokeItem(ActionMenuView.kt:624)",
			},
		},
		{
			// Sentry's symbolicator test_compose_stacktrace_group_keys and
			// rust-proguard's test_remap_compose_stacktrace_group_keys.
			name: "an inlined method of a NameKt class", source: "Sentry symbolicator, compose_stacktrace_group_keys",
			mapping: `ComposeStackTrace -> $$compose:
  1:1:androidx.compose.runtime.State androidx.compose.animation.core.AnimateAsStateKt.animateFloatAsState(float,androidx.compose.animation.core.AnimationSpec,float,java.lang.String,kotlin.jvm.functions.Function1,androidx.compose.runtime.Composer,int,int):71:71 -> m$1125598679
  1:1:androidx.compose.runtime.State androidx.compose.animation.core.AnimateAsStateKt.animateFloatAsState(float,androidx.compose.animation.core.AnimationSpec,float,java.lang.String,kotlin.jvm.functions.Function1,androidx.compose.runtime.Composer,int,int):73:73 -> m$1125708605
`,
			in: []string{"$$compose.m$1125598679:1", "$$compose.m$1125708605:1"},
			want: []string{
				"androidx.compose.animation.core.AnimateAsStateKt.animateFloatAsState(AnimateAsState.kt:71)",
				"androidx.compose.animation.core.AnimateAsStateKt.animateFloatAsState(AnimateAsState.kt:73)",
			},
		},
		{
			name: "R8's synthetic class file name", source: "rust-proguard test_composable_singletons_inlined_lambda_stacktrace",
			mapping: `host.LocalKt$$ExternalSyntheticLambda0 -> a.b:
# {"id":"sourceFile","fileName":"R8$$SyntheticClass"}
    1:1:kotlin.Unit io.example.ComposableSingletons$MyScreenKt.lambda_1$lambda$2():42:42 -> a
    2:2:void run():7:7 -> a
`,
			in: []string{"a.b.a:1", "a.b.a:2"},
			want: []string{
				"io.example.ComposableSingletons$MyScreenKt.lambda_1$lambda$2(MyScreen.kt:42)",
				"host.LocalKt$$ExternalSyntheticLambda0.run(LocalKt:7)",
			},
		},
		{
			// Sentry's symbolicator test_no_line_info_mapping (its
			// no_line_info fixture, three of its lines): yy.xv.kc:42 is
			// checkMessageInitialized at line 42.
			name: "method lines qualified with their own class, no line ranges", source: "Sentry symbolicator, no_line_info",
			mapping: `# {'id':'com.android.tools.r8.mapping','version':'1.0'}
com.google.protobuf.AbstractParser -> yy.xv:
    com.google.protobuf.ExtensionRegistryLite EMPTY_REGISTRY -> Xc
    com.google.protobuf.MessageLite com.google.protobuf.AbstractParser.checkMessageInitialized(com.google.protobuf.MessageLite) -> kc
_COROUTINE.ArtificialStackFrames -> yy.zX:
    java.lang.StackTraceElement _COROUTINE.ArtificialStackFrames.coroutineBoundary() -> VF
`,
			in: []string{"yy.xv.kc:42", "yy.zX.VF:"},
			want: []string{
				"com.google.protobuf.AbstractParser.checkMessageInitialized(AbstractParser.java:42)",
				"_COROUTINE.ArtificialStackFrames.coroutineBoundary(ArtificialStackFrames.java:0)",
			},
		},
		{
			name: "a synthesized method of a frame with a line is left out", source: "R8 SyntheticLambdaMethodWithInliningStackTrace",
			mapping: `# {'id':'com.android.tools.r8.mapping','version':'experimental'}
example.Main -> example.Main:
  1:1:void main(java.lang.String[]):123 -> main
example.Foo -> a.a:
  3:3:void runIt():218 -> b
  2:2:void main():223 -> c
example.Foo$$ExternalSyntheticLambda0 -> a.b:
  4:4:void example.Foo.lambda$main$0():225 -> a
  4:4:void run(example.Foo):0 -> a
    # {'id':'com.android.tools.r8.synthesized'}
`,
			thrown: "java.lang.NullPointerException",
			in:     []string{"a.b.a:4", "a.a.b:3", "a.a.c:2", "example.Main.main:1"},
			want: []string{
				"example.Foo.lambda$main$0(Foo.java:225)",
				"example.Foo.runIt(Foo.java:218)",
				"example.Foo.main(Foo.java:223)",
				"example.Main.main(Main.java:123)",
			},
		},
		{
			// R8's retrace drops the synthesized frame; Sentry keeps it for
			// a frame without a line (symbolicator's map_stacktrace, "a
			// retrace quirk"), marked as synthesized.
			name: "a synthesized class's method of a frame without a line is kept", source: "R8 SyntheticLambdaMethodStackTrace, as Sentry's symbolicator reads it",
			mapping: `example.Foo -> a.a:
    5:5:void lambda$main$0():225 -> a
    3:3:void runIt():218 -> b
example.Foo$$ExternalSyntheticLambda0 -> a.b:
# {'id':'com.android.tools.r8.synthesized'}
    void run(example.Foo) -> a
`,
			in: []string{"a.a.a:5", "a.b.a:", "a.a.b:3"},
			want: []string{
				"example.Foo.lambda$main$0(Foo.java:225)",
				"example.Foo$$ExternalSyntheticLambda0.run(Foo.java:0) synthesized",
				"example.Foo.runIt(Foo.java:218)",
			},
		},
		{
			// The synthesized mark below one line of a method marks all of
			// its lines.
			name: "a synthesized mark applies to the whole method", source: "R8 MovedSynthetizedInfoStackTraceTest",
			mapping: `# {"id":"com.android.tools.r8.mapping","version":"2.2"}
com.android.tools.r8.BaseCommand$Builder -> foo.bar:
    1:1:void inlinee(java.util.Collection):0:0 -> inlinee$synthetic
    1:1:void inlinee$synthetic(java.util.Collection):0:0 -> inlinee$synthetic
    2:2:void inlinee(java.util.Collection):206:206 -> inlinee$synthetic
    2:2:void inlinee$synthetic(java.util.Collection):0:0 -> inlinee$synthetic
      # {"id":"com.android.tools.r8.synthesized"}
    4:4:void inlinee(java.util.Collection):208:208 -> inlinee$synthetic
    4:4:void inlinee$synthetic(java.util.Collection):0 -> inlinee$synthetic
`,
			in:   []string{"foo.bar.inlinee$synthetic:2", "foo.bar.inlinee$synthetic:4"},
			want: []string{"com.android.tools.r8.BaseCommand$Builder.inlinee(BaseCommand.java:206)", "com.android.tools.r8.BaseCommand$Builder.inlinee(BaseCommand.java:208)"},
		},
		{
			name: "an outline and its call site", source: "R8 OutlineSimpleStackTrace",
			mapping: `# { id: 'com.android.tools.r8.mapping', version: 'experimental' }
outline.Class -> a:
  1:2:int outline() -> a
# { 'id':'com.android.tools.r8.outline' }
some.Class -> b:
  1:1:void foo.bar.Baz.qux():42:42 -> s
  4:4:int outlineCaller(int):98:98 -> s
  27:27:int outlineCaller(int):0:0 -> s
# { 'id':'com.android.tools.r8.outlineCallsite', 'positions': { '1': 4, '2': 5 } }
`,
			thrown: "java.io.IOException",
			in:     []string{"a.a:1", "b.s:27"},
			want:   []string{"some.Class.outlineCaller(Class.java:98)"},
		},
		{
			name: "an outline called from inlined code", source: "R8 OutlineWithInliningStackTrace",
			mapping: `# { id: 'com.android.tools.r8.mapping', version: 'experimental' }
outline.Class -> a:
  1:2:int outline():0 -> a
# { 'id':'com.android.tools.r8.outline' }
some.Class -> b:
  1:1:void foo.bar.Baz.qux():42:42 -> s
  5:5:int foo.bar.baz.outlineCaller(int):98:98 -> s
  5:5:int outlineCaller(int):24 -> s
  27:27:int outlineCaller(int):0:0 -> s
# { 'id':'com.android.tools.r8.outlineCallsite', 'positions': { '1': 4, '2': 5 } }
`,
			in:   []string{"a.a:2", "b.s:27"},
			want: []string{"foo.bar.baz.outlineCaller(baz.java:98)", "some.Class.outlineCaller(Class.java:24)"},
		},
		{
			name: "an outline calling an outline", source: "R8 OutlineInOutlineStackTrace",
			mapping: `# { id: 'com.android.tools.r8.mapping', version: '2.0' }
outline1.Class -> a:
  4:4:int outline():0:0 -> a
# { 'id':'com.android.tools.r8.outline' }
outline2.Class -> b:
  6:6:int outline():0:0 -> a
# { 'id':'com.android.tools.r8.outlineCallsite', 'positions': { '4': 43 } }
  42:43:int outline():0:0 -> a
# { 'id':'com.android.tools.r8.outline' }
some.Class -> c:
  1:1:void foo.bar.Baz.qux():42:42 -> a
  10:11:int outlineCaller(int):98:98 -> a
  28:28:int outlineCaller(int):0:0 -> a
# { 'id':'com.android.tools.r8.outlineCallsite', 'positions': { '42': 10, '43': 11 } }
`,
			in:   []string{"a.a:4", "b.a:6", "c.a:28"},
			want: []string{"some.Class.outlineCaller(Class.java:98)"},
		},
		{
			name: "a method inlined into an outline", source: "R8 InlineInOutlineStackTrace",
			mapping: `# { id: 'com.android.tools.r8.mapping', version: '2.0' }
outline.Class -> a:
  1:2:int some.inlinee():75:76 -> a
  1:2:int outline():0 -> a
# { 'id':'com.android.tools.r8.outline' }
some.Class -> b:
  1:1:void foo.bar.Baz.qux():42:42 -> s
  5:5:int foo.bar.baz.outlineCaller(int):98:98 -> s
  5:5:int outlineCaller(int):24 -> s
  27:27:int outlineCaller(int):0:0 -> s
# { 'id':'com.android.tools.r8.outlineCallsite', 'positions': { '1': 4, '2': 5 } }
`,
			in:   []string{"a.a:2", "b.s:27"},
			want: []string{"some.inlinee(some.java:76)", "foo.bar.baz.outlineCaller(baz.java:98)", "some.Class.outlineCaller(Class.java:24)"},
		},
		{
			name: "rewriteFrame under the exception it names", source: "R8 NpeInlineRetraceStackTrace",
			mapping: `# { id: 'com.android.tools.r8.mapping', version: '2.0' }
some.Class -> a:
  4:4:void other.Class():23:23 -> a
  4:4:void caller(other.Class):7 -> a
  # { id: 'com.android.tools.r8.rewriteFrame', conditions: ['throws(Ljava/lang/NullPointerException;)'],  actions: ['removeInnerFrames(1)'] }
`,
			thrown: "java.lang.NullPointerException",
			in:     []string{"a.a:4"},
			want:   []string{"some.Class.caller(Class.java:7)"},
		},
		{
			name: "rewriteFrame of another exception", source: "R8 NpeInlineRetraceStackTrace, thrown another exception",
			mapping: `some.Class -> a:
  4:4:void other.Class():23:23 -> a
  4:4:void caller(other.Class):7 -> a
  # {"id":"com.android.tools.r8.rewriteFrame","conditions":["throws(Ljava/lang/NullPointerException;)"],"actions":["removeInnerFrames(1)"]}
`,
			thrown: "java.lang.IllegalStateException",
			in:     []string{"a.a:4", "a.a:4"},
			want:   []string{"other.Class(other.java:23)", "some.Class.caller(Class.java:7)", "other.Class(other.java:23)", "some.Class.caller(Class.java:7)"},
		},
		{
			// Only the top frame threw: the same line further down keeps
			// its frames.
			name: "rewriteFrame on the top frame only", source: "R8 InlineRemoveFrameJava17StackTrace",
			mapping: `# {'id':'com.android.tools.r8.mapping','version':'2.2'}
foo.Class -> A:
    1:5:void inlinable():90:90 -> a
    1:5:void caller():97 -> a
      # {'id':'com.android.tools.r8.rewriteFrame','conditions':['throws(Ljava/lang/NullPointerException;)'],'actions':['removeInnerFrames(1)']}
    1:5:void outerCaller():107 -> a
    1:1:void main():111:111 -> main
`,
			thrown: "java.lang.NullPointerException",
			in:     []string{"A.a:1", "A.a:1", "A.main:1"},
			want: []string{
				"foo.Class.caller(Class.java:97)",
				"foo.Class.outerCaller(Class.java:107)",
				"foo.Class.inlinable(Class.java:90)",
				"foo.Class.caller(Class.java:97)",
				"foo.Class.outerCaller(Class.java:107)",
				"foo.Class.main(Class.java:111)",
			},
		},
		{
			name: "metadata that cannot be read or is not known is a comment", source: "R8's retrace documentation: unknown information is a comment",
			mapping: `# {"id":"com.android.tools.r8.mapping","version":"99.0"}
some.Class -> a:
# {"id":"sourceFile","fileName":
# {"id":"com.android.tools.r8.synthesized"
# {'id':'com.android.tools.r8.unknown','data':[1,2,{}]}
# not json at all {
    1:1:void m():10:10 -> a
    # {"id":"com.android.tools.r8.rewriteFrame","conditions":["instanceOf(Lx;)"],"actions":["removeInnerFrames(1)"]}
    # {"id":"com.android.tools.r8.rewriteFrame","conditions":["throws(Ljava/lang/Error;)"],"actions":["removeInnerFrames(x)"]}
    # {"id":"com.android.tools.r8.outlineCallsite","positions":{"a":1,"2":-3,"3":99999999999}}
    # {"id":"com.android.tools.r8.outline"
    int field -> b
    # {"id":"com.android.tools.r8.synthesized"}
`,
			thrown: "java.lang.Error",
			in:     []string{"a.a:1"},
			want:   []string{"some.Class.m(Class.java:10)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse([]byte(tc.mapping))
			if err != nil {
				t.Fatal(err)
			}
			got := retrace(t, m, tc.thrown, tc.in...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-R8 +errata):\n%s", tc.source, diff)
			}
		})
	}
}

// TestRemapInCountsWhatItDrops: what a rewriteFrame rule or a synthesized
// mark removes is not counted in N; a frame they empty has no frames.
func TestRemapInCountsWhatItDrops(t *testing.T) {
	m, err := Parse([]byte(`some.Class -> a:
  4:4:void other.Class.inner():23:23 -> a
  4:4:void caller():7 -> a
  # {"id":"com.android.tools.r8.rewriteFrame","conditions":["throws(Ljava/lang/NullPointerException;)"],"actions":["removeInnerFrames(5)"]}
  5:5:void gen():1:1 -> a
  # {"id":"com.android.tools.r8.synthesized"}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line int
		ctx  Context
		n    int
	}{
		{4, Context{}, 2},
		{4, Context{Thrown: "java.lang.NullPointerException"}, 0},
		{5, Context{}, 1},
		{5, Context{DropSynthesized: true}, 0},
	} {
		r, ok := m.RemapIn(Frame{Class: "a", Method: "a", Line: tc.line}, tc.ctx, 64)
		if !ok || r.N != tc.n || len(r.Frames) != tc.n || r.Outline != 0 {
			t.Errorf("line %d %+v: %d frames, N %d, outline %d; want %d", tc.line, tc.ctx, len(r.Frames), r.N, r.Outline, tc.n)
		}
	}
}

// TestLenientJSON reads the gson forms of R8's documentation and tests.
func TestLenientJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{ id: 'com.android.tools.r8.mapping', version: '2.0' }`: `{ "id": "com.android.tools.r8.mapping", "version": "2.0" }`,
		`{'positions': { '1': 4 }, 'ok': true, 'no': null}`:      `{"positions": { "1": 4 }, "ok": true, "no": null}`,
		`{'a':'say "hi" it\'s'}`:                                 `{"a":"say \"hi\" it's"}`,
	} {
		got, ok := lenientJSON(in)
		if !ok || string(got) != want {
			t.Errorf("lenientJSON(%s) = %s %v, want %s", in, got, ok, want)
		}
	}
	if _, ok := lenientJSON(`{'a`); ok {
		t.Error("a string without its end was read")
	}
}

// r8Metadata is a mapping of R8's metadata of every kind, for
// TestSizeIsWhatAMappingHolds.
func r8Metadata() string {
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "a.C%d -> c%d:\n# {\"id\":\"sourceFile\",\"fileName\":\"C%d.kt\"}\n# {\"id\":\"com.android.tools.r8.synthesized\"}\n", i, i, i)
		fmt.Fprintf(&b, "    1:2:void m%d():3:4 -> a\n    # {\"id\":\"com.android.tools.r8.outline\"}\n", i)
		fmt.Fprintf(&b, "    3:3:void n():5:5 -> a\n    # {\"id\":\"com.android.tools.r8.outlineCallsite\",\"positions\":{\"1\":3,\"2\":3,\"3\":3}}\n")
		fmt.Fprintf(&b, "    # {\"id\":\"com.android.tools.r8.rewriteFrame\",\"conditions\":[\"throws(Ljava/lang/NullPointerException;)\"],\"actions\":[\"removeInnerFrames(1)\"]}\n")
	}
	return b.String()
}
