package dif

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/worker/dif/diftest"
)

// testdata/dwarf-mingw.exe is testdata/native/crash.c built in /tmp/native
// by clang-14 --target=x86_64-w64-windows-gnu -g -O2 and linked by
// ld.lld-14 -m i386pep --build-id with stubs of the libc functions it
// calls (no MinGW sysroot): a PE image whose DWARF sections have long
// names. The frames wanted are llvm-symbolizer's on it, by relative
// address (0x1044, padding after compute, is named by the COFF symbol).
func TestPEDWARF(t *testing.T) {
	data, err := os.ReadFile("testdata/dwarf-mingw.exe")
	if err != nil {
		t.Fatal(err)
	}
	res, err := ReadPEDWARF(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	const c = "/tmp/native/crash.c"
	for _, tc := range []struct {
		rva  uint64
		want []Frame
	}{
		{0x1000, []Frame{{Function: "sum", Symbol: "sum", SymAddr: 0x1000, File: c, Line: 10, Column: 20},
			{Function: "compute", Symbol: "compute", SymAddr: 0x1000, File: c, Line: 18, Column: 10}}},
		{0x1030, []Frame{{Function: "compute", Symbol: "compute", SymAddr: 0x1000, File: c, Line: 19, Column: 6}}},
		{0x1044, []Frame{{Function: "compute", Symbol: "compute", SymAddr: 0x1000, File: c, Line: 19, Column: 6}}},
	} {
		got, ok := res.Lookup(tc.rva)
		if !ok {
			t.Fatalf("0x%x: nothing", tc.rva)
		}
		for i := range got {
			got[i].CompDir = ""
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("0x%x (-want +got):\n%s", tc.rva, diff)
		}
	}
	// 65,535 sections and 50,000 symbols named by one 1 MiB name, and no
	// DWARF: within the identity budget.
	big := diftest.PE(65535, 50_000, 1<<20, 28)
	checkBudget(t, "ReadPEDWARF", identityBudget, func() {
		_, err = ReadPEDWARF(bytes.NewReader(big), int64(len(big)))
	})
	if !errors.Is(err, ErrNoDWARF) {
		t.Errorf("a PE without DWARF: %v, want ErrNoDWARF", err)
	}
}

// FuzzPEDWARF reads PE images' DWARF and COFF symbols within a budget and
// resolves addresses without panicking.
func FuzzPEDWARF(f *testing.F) {
	data, err := os.ReadFile("testdata/dwarf-mingw.exe")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data, uint64(0x1000))
	f.Add(diftest.PE(2, 2, 8, 28), uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, addr uint64) {
		var res *Resolver
		var err error
		checkBudget(t, "ReadPEDWARF", uint64(64<<20+64*len(data)), func() {
			res, err = ReadPEDWARF(bytes.NewReader(data), int64(len(data)))
		})
		if err == nil {
			res.Lookup(addr)
			res.Lookup(0x1000)
		}
	})
}
