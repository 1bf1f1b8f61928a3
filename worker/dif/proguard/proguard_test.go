package proguard

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var traceLine = regexp.MustCompile(`^\s+at (.+)\.([^.(]+)\(([^:)]+):(\d+)\)$`)

// readTrace reads the frames of a stack trace Java printed.
func readTrace(t *testing.T, path string) (string, []Frame) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var frames []Frame
	for _, l := range lines[1:] {
		m := traceLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("%s: cannot read %q", path, l)
		}
		n, _ := strconv.Atoi(m[4])
		frames = append(frames, Frame{Class: m[1], Method: m[2], File: m[3], Line: n})
	}
	exception, _, _ := strings.Cut(lines[0], ":")
	return exception, frames
}

// TestRemapEqualsRetrace remaps the trace of a program obfuscated by
// Debian's ProGuard 6.2.2 (testdata: javac --release 8 -g, proguard
// -printmapping with inlining) and compares with what ProGuard's retrace
// printed, which is the trace of the program before obfuscation.
func TestRemapEqualsRetrace(t *testing.T) {
	data, err := os.ReadFile("testdata/mapping.txt")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	obfException, obfuscated := readTrace(t, "testdata/obfuscated-trace.txt")
	wantException, want := readTrace(t, "testdata/retrace.txt")
	var got []Frame
	for _, f := range obfuscated {
		frames, ok := m.Remap(f)
		if !ok {
			frames = []Frame{f}
		}
		got = append(got, frames...)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("remapped trace (-retrace +errata):\n%s", diff)
	}
	if c, ok := m.Class(obfException); !ok || c != wantException {
		t.Errorf("exception %s: %q %v, want %q", obfException, c, ok, wantException)
	}
}

// TestRemapR8 reads R8's format: sourceFile metadata, inlined frames
// from other classes, methods without line ranges.
func TestRemapR8(t *testing.T) {
	const mapping = `# compiler: R8
# compiler_version: 8.1.56
com.shop.Cart -> a.a:
# {"id":"sourceFile","fileName":"Cart.kt"}
    java.util.List items -> a
    1:4:int total():12:15 -> a
    5:5:int com.shop.Rates.rate(java.lang.String):30:30 -> b
    5:5:int applyDiscount(java.lang.String):42 -> b
    6:8:int applyDiscount(java.lang.String):43:45 -> b
    void clear() -> c
com.shop.Rates -> a.b:
# {"id":"sourceFile","fileName":"Rates.kt"}
    1:1:void <init>():3:3 -> <init>
`
	m, err := Parse([]byte(mapping))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in   Frame
		want []Frame
	}{
		{at("a.a", "a", "SourceFile", 3), []Frame{at("com.shop.Cart", "total", "Cart.kt", 14)}},
		{at("a.a", "b", "SourceFile", 5), []Frame{at("com.shop.Rates", "rate", "Rates.kt", 30), at("com.shop.Cart", "applyDiscount", "Cart.kt", 42)}},
		{at("a.a", "b", "SourceFile", 7), []Frame{at("com.shop.Cart", "applyDiscount", "Cart.kt", 44)}},
		{at("a.a", "c", "SourceFile", 0), []Frame{at("com.shop.Cart", "clear", "Cart.kt", 0)}},
		{at("a.a", "z", "SourceFile", 9), []Frame{at("com.shop.Cart", "z", "Cart.kt", 9)}},
	} {
		got, ok := m.Remap(tc.in)
		if diff := cmp.Diff(tc.want, got); !ok || diff != "" {
			t.Errorf("Remap(%v) (-want +got):\n%s", tc.in, diff)
		}
	}
	if _, ok := m.Remap(Frame{Class: "x.y", Method: "a"}); ok {
		t.Error("a class absent from the mapping was remapped")
	}
}

// at is the frame of method of class in file at line.
func at(class, method, file string, line int) Frame {
	return Frame{Class: class, Method: method, File: file, Line: line}
}

// TestHugeNumbersAllocateLittle parses a small mapping whose line numbers
// are huge: what Parse allocates depends on the mapping's size only.
func TestHugeNumbersAllocateLittle(t *testing.T) {
	var b strings.Builder
	b.WriteString("a.B -> c:\n")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&b, "    2147483640:2147483647:void m%d():99999999999999:4294967295 -> a\n", i)
		fmt.Fprintf(&b, "    1:2147483647:void n%d():1:2147483647 -> b\n", i)
	}
	data := []byte(b.String())
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := Parse(data)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > uint64(16*len(data)+64<<10) {
		t.Errorf("Parse of %d bytes allocated %d bytes", len(data), n)
	}
	if got, ok := m.Remap(Frame{Class: "c", Method: "b", Line: 2147483646}); !ok || len(got) != 200 || got[0].Line != 2147483646 {
		t.Errorf("Remap at a huge line: %v %v", len(got), ok)
	}
}

// FuzzProguardMapping parses arbitrary mappings and remaps a frame in
// them: never a panic, and the parsed size stays within the budget.
func FuzzProguardMapping(f *testing.F) {
	data, err := os.ReadFile("testdata/mapping.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data, "com.shop.a", "a", 1014)
	f.Add([]byte("a.B -> c:\n# {\"id\":\"sourceFile\",\"fileName\":\"B.kt\"}\n    1:2:void d():3:4 -> e\n    1:2:void x.Y.f():7 -> e\n"), "c", "e", 2)
	// R8's metadata, as R8 writes it and as its documentation and tests do.
	f.Add([]byte("# {\"id\":\"com.android.tools.r8.mapping\",\"version\":\"2.2\"}\na.B -> c:\n# {\"id\":\"com.android.tools.r8.synthesized\"}\n    void d() -> e\n    # {'id':'com.android.tools.r8.synthesized'}\n"), "c", "e", 0)
	f.Add([]byte("o.O -> a:\n  1:2:int outline() -> a\n# { 'id':'com.android.tools.r8.outline' }\ns.C -> b:\n  4:4:int caller(int):98:98 -> s\n  27:27:int caller(int):0:0 -> s\n# { 'id':'com.android.tools.r8.outlineCallsite', 'positions': { '1': 4, '2': 5 } }\n"), "b", "s", 27)
	f.Add([]byte("s.C -> a:\n  4:4:void o.C.i():23:23 -> a\n  4:4:void caller(o.C):7 -> a\n  # { id: 'com.android.tools.r8.rewriteFrame', conditions: ['throws(Ljava/lang/NullPointerException;)'], actions: ['removeInnerFrames(1)'] }\n"), "a", "a", 4)
	f.Add([]byte("s.C -> a:\n# {\"id\":\"sourceFile\",\"fileName\":\n    1:1:void m():1 -> a\n    # {'id':'com.android.tools.r8.outlineCallsite','positions':{'1':-1,'x':2}}\n    # {\"id\":\"com.android.tools.r8.rewriteFrame\",\"conditions\":[],\"actions\":[\"removeInnerFrames(99999999999)\"]}\n"), "a", "a", 1)
	f.Fuzz(func(t *testing.T, data []byte, class, method string, line int) {
		m, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatal(err)
			}
			return
		}
		if m.Size() > 16*len(data)+1<<10 {
			t.Fatalf("%d bytes of mapping take %d", len(data), m.Size())
		}
		m.Remap(Frame{Class: class, Method: method, Line: line})
		r, _ := m.RemapIn(Frame{Class: class, Method: method, Line: line},
			Context{Thrown: "java.lang.NullPointerException", Outline: line, DropSynthesized: line > 0}, 64)
		if len(r.Frames) > 64 || r.N < len(r.Frames) {
			t.Fatalf("RemapIn within 64: %d frames, N %d", len(r.Frames), r.N)
		}
		work := 4
		if _, ok := m.RemapIn(Frame{Class: class, Method: method, Line: line}, Context{Thrown: "java.lang.NullPointerException", Work: &work}, 64); ok && work < 0 {
			t.Fatalf("remapped past its work: %d left", work)
		}
		m.Class(class)
	})
}

// TestRemapInAtMost: RemapIn keeps the first frames of a line that many
// methods share, counts all of them, and builds no more than it keeps:
// Remap's frames, cut.
func TestRemapInAtMost(t *testing.T) {
	var b strings.Builder
	b.WriteString("com.shop.Cart -> a:\n")
	const methods = 200_000
	for i := range methods {
		fmt.Fprintf(&b, "    1:1:void m%d():1:1 -> a\n", i)
	}
	m, err := Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	f := Frame{Class: "a", Method: "a", Line: 1}
	all, ok := m.Remap(f)
	if !ok || len(all) != methods {
		t.Fatalf("Remap: %d frames, want %d", len(all), methods)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, ok := m.RemapIn(f, Context{}, 64)
	runtime.ReadMemStats(&after)
	if !ok || r.N != methods {
		t.Fatalf("RemapIn: %v, %d counted, want %d", ok, r.N, methods)
	}
	if diff := cmp.Diff(all[:64], r.Frames); diff != "" {
		t.Errorf("RemapIn (-want +got):\n%s", diff)
	}
	if a := after.TotalAlloc - before.TotalAlloc; a > 64<<10 {
		t.Errorf("RemapIn of 64 frames allocated %d bytes", a)
	}
}

// TestRemapInWork: RemapIn takes the method lines it reads from
// Context.Work, and remaps nothing once it is spent, so that a mapping
// whose lines all share one name cannot make each frame of a request
// walk them all.
func TestRemapInWork(t *testing.T) {
	const lines = 1000
	var b strings.Builder
	b.WriteString("a.Hot -> a:\n")
	for i := range lines {
		fmt.Fprintf(&b, "    %d:%d:void m%d():%d -> a\n", i+1, i+1, i, i+1)
	}
	b.WriteString("    1:1:void c():9 -> c\n")
	m, err := Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	frame := Frame{Class: "a", Method: "a", Line: 7}
	work := 2*lines + 1
	for i, want := range []bool{true, true, false} {
		r, ok := m.RemapIn(frame, Context{Work: &work}, 64)
		if ok != want {
			t.Fatalf("frame %d: remapped %v, want %v", i, ok, want)
		}
		if ok && (len(r.Frames) != 1 || r.Frames[0].Method != "m6") {
			t.Fatalf("frame %d: %+v, want m6", i, r.Frames)
		}
	}
	// Spent, it stays spent, even for a method of one line.
	if _, ok := m.RemapIn(Frame{Class: "a", Method: "c", Line: 1}, Context{Work: &work}, 64); ok {
		t.Fatal("remapped with the work spent")
	}
	// A frame without a line compares the names of its method's lines:
	// it takes a unit per 64 bytes of them too, and as many again for the
	// long one's frame it builds.
	long := "a.Long -> b:\n    void " + strings.Repeat("x", 64<<10) + "() -> a\n    void y() -> a\n"
	ml, err := Parse([]byte(long))
	if err != nil {
		t.Fatal(err)
	}
	work = 2 + 2<<10
	for i, want := range []bool{true, false} {
		if _, ok := ml.RemapIn(Frame{Class: "b", Method: "a"}, Context{Work: &work}, 64); ok != want {
			t.Fatalf("frame %d without a line: remapped %v, want %v", i, ok, want)
		}
	}
	// Building a frame, or remapping its class alone, reads the names it
	// answers: a unit per 64 bytes of them too.
	name := strings.Repeat("x", 64<<10)
	built, err := Parse([]byte("a." + name + " -> c:\n    1:1:void " + name + "():1 -> a\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Frame{{Class: "c", Method: "a", Line: 1}, {Class: "c", Method: "unknown", Line: 1}} {
		want := 1 << 10
		if f.Method == "a" {
			want++ // the line read
		}
		work = want
		if _, ok := built.RemapIn(f, Context{Work: &work}, 64); !ok || work != 0 {
			t.Fatalf("%s: remapped %v, %d left, want 0", f.Method, ok, work)
		}
		work = want - 1
		if _, ok := built.RemapIn(f, Context{Work: &work}, 64); ok {
			t.Fatalf("%s: remapped with %d of work", f.Method, want-1)
		}
	}
	// Without a budget, nothing changes.
	if r, ok := m.RemapIn(frame, Context{}, 64); !ok || len(r.Frames) != 1 {
		t.Fatalf("%+v %v", r, ok)
	}
}
