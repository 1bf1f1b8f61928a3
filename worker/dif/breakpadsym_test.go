package dif

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testBreakpad = `MODULE Linux x86_64 B644071B511E55DBAC271EE28D84D9910 crash
INFO CODE_ID 1B0744B61E51DB55AC271EE28D84D991
FILE 0 /src/crash.cpp
FILE 1 /src/util.h
INLINE_ORIGIN 0 square(int)
INLINE_ORIGIN 1 probe::Runner::twice(int) const
FUNC 1000 40 0 probe::Runner::run(int, bool)
INLINE 0 31 0 1 1010 10
INLINE 1 13 0 0 1014 4
1000 10 30 0
1010 4 13 0
1014 4 4 1
1018 28 33 0
PUBLIC m 2000 0 _ZN5probe4mainEv
STACK CFI INIT 1000 40 .cfa: $rsp 8 +
`

func TestBreakpadSymbols(t *testing.T) {
	res, err := ReadBreakpadSymbols(strings.NewReader(testBreakpad))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr uint64
		want []Frame
	}{
		{0x1005, []Frame{{Function: "probe::Runner::run(int, bool)", Symbol: "probe::Runner::run(int, bool)", SymAddr: 0x1000, File: "/src/crash.cpp", Line: 30}}},
		{0x1016, []Frame{
			{Function: "square(int)", Symbol: "square(int)", SymAddr: 0x1000, File: "/src/util.h", Line: 4},
			{Function: "probe::Runner::twice(int) const", Symbol: "probe::Runner::twice(int) const", SymAddr: 0x1000, File: "/src/crash.cpp", Line: 13},
			{Function: "probe::Runner::run(int, bool)", Symbol: "probe::Runner::run(int, bool)", SymAddr: 0x1000, File: "/src/crash.cpp", Line: 31},
		}},
		{0x2010, []Frame{{Function: "probe::main()", Symbol: "_ZN5probe4mainEv", SymAddr: 0x2000}}},
	} {
		got, ok := res.Lookup(tc.addr)
		if !ok {
			t.Fatalf("0x%x: nothing", tc.addr)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("0x%x (-want +got):\n%s", tc.addr, diff)
		}
	}
	if _, ok := res.Lookup(0xfff); ok {
		t.Error("0xfff, before every function, resolved")
	}
	for name, bad := range map[string]string{
		"a line record outside a function":    "MODULE Linux x86_64 B644071B511E55DBAC271EE28D84D9910 crash\n1000 10 30 0\n",
		"a first line longer than the budget": "MODULE Linux x86_64 B644071B511E55DBAC271EE28D84D9910 " + strings.Repeat("x", maxBreakpadRecord) + "\n",
		"an INLINE without ranges":            "MODULE Linux x86_64 B644071B511E55DBAC271EE28D84D9910 crash\nFUNC 1000 40 0 f\nINLINE 0 1 0 0\n",
		"not Breakpad":                        "ELF",
	} {
		if _, err := ReadBreakpadSymbols(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: read without an error", name)
		}
	}
}

// TestBreakpadRecordsBeyondTheBudgetAreLeftOut: a function whose name, line
// record or inlined call is longer than a record may be goes with its
// records, as damage elsewhere in an uploaded file does; the functions
// before and after it, and the symbols, still resolve.
func TestBreakpadRecordsBeyondTheBudgetAreLeftOut(t *testing.T) {
	long := strings.Repeat("x", maxBreakpadRecord+10)
	sym := "MODULE Linux x86_64 B644071B511E55DBAC271EE28D84D9910 crash\n" +
		"FILE 0 /src/a.c\n" +
		"FUNC 1000 10 0 first\n1000 10 3 0\n" +
		"FUNC 2000 10 0 " + long + "\n2000 10 4 0\nINLINE 0 4 0 0 2000 8\n" +
		"FUNC 3000 10 0 inlining\n3000 10 5 0\nINLINE 0 5 0 0 3000 4 " + strings.Repeat("3004 1 ", maxBreakpadRecord/7) + "\n" +
		"FUNC 4000 10 0 last\n4000 10 6 0\n" +
		"PUBLIC 5000 0 " + long + "\n" +
		"PUBLIC 6000 0 public\n"
	res, err := ReadBreakpadSymbols(strings.NewReader(sym))
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[uint64]string{0x1004: "first", 0x4004: "last", 0x6000: "public"} {
		got, ok := res.Lookup(addr)
		if !ok || len(got) != 1 || got[0].Function != want {
			t.Errorf("0x%x: %+v %v, want %s", addr, got, ok, want)
		}
	}
	for _, addr := range []uint64{0x2004, 0x3002} {
		if got, ok := res.Lookup(addr); ok && got[len(got)-1].Line != 0 {
			t.Errorf("0x%x, in a function left out: %+v, want no line", addr, got)
		}
	}
}

// FuzzBreakpadResolver reads Breakpad symbol files within a budget of a
// few times their size and resolves addresses without panicking.
func FuzzBreakpadResolver(f *testing.F) {
	f.Add([]byte(testBreakpad), uint64(0x1016))
	f.Fuzz(func(t *testing.T, data []byte, addr uint64) {
		var res *Resolver
		var err error
		checkBudget(t, "ReadBreakpadSymbols", uint64(1<<20+64*len(data)), func() {
			res, err = ReadBreakpadSymbols(bytes.NewReader(data))
		})
		if err == nil {
			res.Lookup(addr)
		}
	})
}
