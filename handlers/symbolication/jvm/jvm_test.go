package jvm

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/handlers/symbolication"
	"errata/worker/dif/proguard"
)

// remapOne is remapTrace of the one frame f.
func remapOne(t *testing.T, mappings []*proguard.Mapping, f FrameIn, callerFirst bool) []FrameOut {
	t.Helper()
	var ans symbolication.Answer
	out, err := remapTrace(t.Context(), mappings, []FrameIn{f}, "", callerFirst, &ans, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func parseTestMapping(t *testing.T) *proguard.Mapping {
	t.Helper()
	data, err := os.ReadFile("../../../worker/dif/proguard/testdata/mapping.txt")
	if err != nil {
		t.Fatal(err)
	}
	m, err := proguard.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRemapFrameInlined gives back the methods inlined at an obfuscated
// line as frames of their own, in the order the request reads frames, and
// a frame no mapping knows as it came.
func TestRemapFrameInlined(t *testing.T) {
	mappings := []*proguard.Mapping{parseTestMapping(t)}
	show := func(frames []FrameOut) []string {
		var out []string
		for _, f := range frames {
			out = append(out, fmt.Sprintf("%d %s.%s(%s:%d)", f.OriginalIndex, *f.Module, *f.Function, *f.Filename, *f.Lineno))
		}
		return out
	}
	line := int64(1014)
	f := FrameIn{Module: ptr("com.shop.a"), Function: ptr("a"), Filename: ptr("SourceFile"), Lineno: &line}
	calleeFirst := []string{
		"0 com.shop.Discounts.lookup(Discounts.java:14)",
		"0 com.shop.Discounts.rateFor(Discounts.java:10)",
		"0 com.shop.Cart.applyDiscount(Cart.java:18)",
	}
	if diff := cmp.Diff(calleeFirst, show(remapOne(t, mappings, f, false))); diff != "" {
		t.Errorf("callee first (-want +got):\n%s", diff)
	}
	callerFirst := []string{calleeFirst[2], calleeFirst[1], calleeFirst[0]}
	if diff := cmp.Diff(callerFirst, show(remapOne(t, mappings, f, true))); diff != "" {
		t.Errorf("caller first (-want +got):\n%s", diff)
	}
	unknown := FrameIn{Module: ptr("org.other.X"), Function: ptr("y"), Filename: ptr("X.java"), Lineno: &line, OriginalIndex: ptr(3)}
	if diff := cmp.Diff([]string{"3 org.other.X.y(X.java:1014)"}, show(remapOne(t, mappings, unknown, false))); diff != "" {
		t.Errorf("unknown class (-want +got):\n%s", diff)
	}
}

// TestRemapException splits the original class of an obfuscated
// exception into its module and type.
func TestRemapException(t *testing.T) {
	mappings := []*proguard.Mapping{parseTestMapping(t)}
	got := remapException(mappings, Exception{Type: ptr("c"), Module: ptr("com.shop")}, nil)
	if got.Module == nil || *got.Module != "com.shop" || got.Type == nil || *got.Type != "UnknownDiscountException" {
		t.Errorf("%v %v, want com.shop UnknownDiscountException", got.Module, got.Type)
	}
}

// TestRemapFrameExpansionCapped: an obfuscated line that 200,000 methods
// of a mapping share answers the first symbolication.MaxFrameExpansion
// of them, the last saying how many more there are, their names cut to
// symbolication.MaxNameBytes, in either order.
func TestRemapFrameExpansionCapped(t *testing.T) {
	long := strings.Repeat("m", 60<<10)
	var mapping strings.Builder
	mapping.WriteString("com.shop." + long + " -> a:\n")
	const methods = 200_000
	for i := range methods {
		fmt.Fprintf(&mapping, "    1:1:void m%d():1:1 -> a\n", i)
	}
	m, err := proguard.Parse([]byte(mapping.String()))
	if err != nil {
		t.Fatal(err)
	}
	line := int64(1)
	f := FrameIn{Module: ptr("a"), Function: ptr("a"), Lineno: &line}
	for _, callerFirst := range []bool{false, true} {
		out := remapOne(t, []*proguard.Mapping{m}, f, callerFirst)
		if len(out) != symbolication.MaxFrameExpansion {
			t.Fatalf("caller first %v: %d frames, want %d", callerFirst, len(out), symbolication.MaxFrameExpansion)
		}
		last := out[len(out)-1]
		if callerFirst {
			last = out[0]
		}
		if last.FramesOmitted != methods-symbolication.MaxFrameExpansion || *last.Function != fmt.Sprintf("m%d", symbolication.MaxFrameExpansion-1) {
			t.Errorf("caller first %v: the last frame kept is %s with %d omitted, want m%d with %d", callerFirst, *last.Function, last.FramesOmitted,
				symbolication.MaxFrameExpansion-1, methods-symbolication.MaxFrameExpansion)
		}
		for _, o := range out {
			if len(*o.Module) > symbolication.MaxNameBytes || len(*o.Filename) > symbolication.MaxNameBytes || len(*o.AbsPath) > symbolication.MaxNameBytes {
				t.Fatalf("names of %d, %d, %d bytes, want at most %d", len(*o.Module), len(*o.Filename), len(*o.AbsPath), symbolication.MaxNameBytes)
			}
		}
	}
}

// TestRemapTraceR8 reads a stack trace callee first whatever order the
// request gives: an outline's frame becomes its call site's, the top frame
// loses what a rewriteFrame rule for its exception removes, a synthesized
// method of a frame with a line is left out; the frames come back in the
// request's order with their input frame's index. The mapping is written
// from R8's retrace documentation; the expected frames are R8's retrace's
// (OutlineSimpleStackTrace, NpeInlineRetraceStackTrace and
// SyntheticLambdaMethodStackTrace of its test suite).
func TestRemapTraceR8(t *testing.T) {
	m, err := proguard.Parse([]byte(`# {"id":"com.android.tools.r8.mapping","version":"2.2"}
outline.Class -> a:
  1:2:int outline() -> a
# {"id":"com.android.tools.r8.outline"}
some.Class -> b:
# {"id":"sourceFile","fileName":"Some.kt"}
  4:4:int outlineCaller(int):98:98 -> s
  27:27:int outlineCaller(int):0:0 -> s
# {"id":"com.android.tools.r8.outlineCallsite","positions":{"1":4}}
  30:30:void other.Inner.run():5:5 -> t
  30:30:void caller():7 -> t
  # {"id":"com.android.tools.r8.rewriteFrame","conditions":["throws(Ljava/lang/NullPointerException;)"],"actions":["removeInnerFrames(1)"]}
  40:40:void gen():1:1 -> u
  # {"id":"com.android.tools.r8.synthesized"}
  50:50:void main():60:60 -> v
`))
	if err != nil {
		t.Fatal(err)
	}
	frame := func(module, function string, line int64) FrameIn {
		return FrameIn{Module: &module, Function: &function, Lineno: &line}
	}
	show := func(frames []FrameOut) []string {
		var out []string
		for _, f := range frames {
			out = append(out, fmt.Sprintf("%d %s.%s(%s:%d)", f.OriginalIndex, *f.Module, *f.Function, *f.Filename, *f.Lineno))
		}
		return out
	}
	calleeFirst := []FrameIn{frame("b", "t", 30), frame("a", "a", 1), frame("b", "s", 27), frame("b", "u", 40), frame("b", "v", 50)}
	for _, tc := range []struct {
		thrown string
		want   []string
	}{
		{"java.lang.NullPointerException", []string{"0 some.Class.caller(Some.kt:7)", "2 some.Class.outlineCaller(Some.kt:98)", "4 some.Class.main(Some.kt:60)"}},
		{"java.lang.IllegalStateException", []string{"0 other.Inner.run(Inner.kt:5)", "0 some.Class.caller(Some.kt:7)", "2 some.Class.outlineCaller(Some.kt:98)", "4 some.Class.main(Some.kt:60)"}},
	} {
		for _, callerFirst := range []bool{false, true} {
			in := slices.Clone(calleeFirst)
			want := slices.Clone(tc.want)
			if callerFirst {
				slices.Reverse(in)
				slices.Reverse(want)
				for i := range want { // the index of the frame as the request sent it
					n, rest, _ := strings.Cut(want[i], " ")
					k, _ := strconv.Atoi(n)
					want[i] = fmt.Sprintf("%d %s", len(in)-1-k, rest)
				}
			}
			var ans symbolication.Answer
			got, err := remapTrace(t.Context(), []*proguard.Mapping{m}, in, tc.thrown, callerFirst, &ans, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, show(got)); diff != "" {
				t.Errorf("%s, caller first %v (-R8 +errata):\n%s", tc.thrown, callerFirst, diff)
			}
		}
	}
}

// TestRemapTraceWork: the frames of a request share one budget of the
// mapping lines read (proguard.MaxWork); with a mapping whose many lines
// share a name, the frames past it come back as they came.
func TestRemapTraceWork(t *testing.T) {
	const lines = 1 << 16
	var b strings.Builder
	b.WriteString("a.Hot -> a:\n")
	for i := range lines {
		fmt.Fprintf(&b, "    %d:%d:void m():%d -> a\n", i+1, i+1, i+1)
	}
	m, err := proguard.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	module, function, line := "a", "a", int64(5)
	in := make([]FrameIn, 1000)
	for i := range in {
		in[i] = FrameIn{Module: &module, Function: &function, Lineno: &line}
	}
	var ans symbolication.Answer
	work := proguard.MaxWork
	out, err := remapTrace(t.Context(), []*proguard.Mapping{m}, in, "", false, &ans, &work)
	if err != nil {
		t.Fatal(err)
	}
	remapped := 0
	for _, f := range out {
		if *f.Module == "a.Hot" {
			remapped++
		} else if *f.Module != "a" || *f.Lineno != 5 {
			t.Fatalf("a frame past the budget changed: %s:%d", *f.Module, *f.Lineno)
		}
	}
	if len(out) != len(in) || remapped != proguard.MaxWork/lines {
		t.Fatalf("%d frames, %d remapped; want %d, %d", len(out), remapped, len(in), proguard.MaxWork/lines)
	}
}

// TestRemapExceptionWork: remapping an exception takes a unit of the
// request's work per 64 bytes of the original name, and leaves the
// exception as it came once the work is spent.
func TestRemapExceptionWork(t *testing.T) {
	m, err := proguard.Parse([]byte("com.shop." + strings.Repeat("x", 64<<10) + " -> a.b:\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		work     int
		remapped bool
	}{{1 << 10, true}, {1<<10 - 1, false}} {
		work := tc.work
		got := remapException([]*proguard.Mapping{m}, Exception{Type: ptr("b"), Module: ptr("a")}, &work)
		if remapped := *got.Module == "com.shop"; remapped != tc.remapped {
			t.Errorf("with %d of work: module %q, remapped %v, want %v", tc.work, *got.Module, remapped, tc.remapped)
		}
	}
}
