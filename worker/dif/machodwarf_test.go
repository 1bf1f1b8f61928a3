package dif

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/worker/dif/diftest"
)

// testdata/dwarf-macho.dsym is the dSYM (dsymutil-14) of
// testdata/native/crash.c built in /tmp/native by clang-14
// --target=x86_64-apple-macos11 -g -O2 and ld64.lld-14; the frames wanted
// are llvm-symbolizer's on it.
func TestMachODWARF(t *testing.T) {
	data, err := os.ReadFile("testdata/dwarf-macho.dsym")
	if err != nil {
		t.Fatal(err)
	}
	res, err := ReadMachODWARF(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := res.Lookup(0x1000005a0)
	for i := range got {
		got[i].SymAddr, got[i].CompDir = 0, ""
	}
	want := []Frame{
		{Function: "sum", Symbol: "sum", File: "/tmp/native/crash.c", Line: 10, Column: 20},
		{Function: "compute", Symbol: "compute", File: "/tmp/native/crash.c", Line: 18, Column: 10},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("0x1000005a0 (-want +got):\n%s", diff)
	}
	// 60,000 symbols named by one 1 MiB name, and no DWARF.
	syms := diftest.MachO(1, 60_000, 1<<20)
	checkBudget(t, "ReadMachODWARF", identityBudget, func() {
		_, err = ReadMachODWARF(bytes.NewReader(syms), int64(len(syms)))
	})
	if !errors.Is(err, ErrNoDWARF) {
		t.Errorf("a Mach-O without DWARF: %v, want ErrNoDWARF", err)
	}
	var ue *UnsupportedError
	fat := diftest.FatMachO(2, diftest.MachO(1, 1, 4))
	if _, err := ReadMachODWARF(bytes.NewReader(fat), int64(len(fat))); !errors.As(err, &ue) {
		t.Errorf("a fat Mach-O: %v, want unsupported", err)
	}
}

// FuzzMachODWARF reads Mach-O objects' DWARF and symbols within a budget
// and resolves addresses without panicking.
func FuzzMachODWARF(f *testing.F) {
	data, err := os.ReadFile("testdata/dwarf-macho.dsym")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data, uint64(0x1000005a0))
	f.Add(diftest.MachO(1, 2, 8), uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, addr uint64) {
		var res *Resolver
		var err error
		checkBudget(t, "ReadMachODWARF", uint64(64<<20+64*len(data)), func() {
			res, err = ReadMachODWARF(bytes.NewReader(data), int64(len(data)))
		})
		if err == nil {
			res.Lookup(addr)
			res.Lookup(0x1000005a0)
		}
	})
}
