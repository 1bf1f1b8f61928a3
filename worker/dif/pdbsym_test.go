package dif

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/worker/dif/diftest"
)

// testdata/crash-O0.pdb is the PDB of testdata/native/crash.c built in
// /tmp/native by clang-14 --target=x86_64-pc-windows-msvc -g -gcodeview -O0
// and lld-link-14 /debug; the frames wanted are llvm-symbolizer's on its
// executable, but for the function's parameter list, which errata writes
// from the type stream as symbolic does (llvm-symbolizer names a C
// function by its public symbol, without one).
func TestPDBSymbols(t *testing.T) {
	data, err := os.ReadFile("testdata/crash-O0.pdb")
	if err != nil {
		t.Fatal(err)
	}
	res, err := ReadPDBSymbols(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rva  uint64
		want Frame
	}{
		{0x1000, Frame{Function: "compute(int, int)", Symbol: "compute", SymAddr: 0x1000, File: "/tmp/native/crash.c", Line: 16}},
		{0x1010, Frame{Function: "compute(int, int)", Symbol: "compute", SymAddr: 0x1000, File: "/tmp/native/crash.c", Line: 17}},
		{0x1040, Frame{Function: "compute(int, int)", Symbol: "compute", SymAddr: 0x1000, File: "/tmp/native/crash.c", Line: 21}},
	} {
		got, ok := res.Lookup(tc.rva)
		if !ok {
			t.Fatalf("0x%x: nothing", tc.rva)
		}
		if diff := cmp.Diff([]Frame{tc.want}, got); diff != "" {
			t.Errorf("0x%x (-want +got):\n%s", tc.rva, diff)
		}
	}
	if _, ok := res.Lookup(0x10); ok {
		t.Error("an address before every procedure resolved")
	}
	// Its architecture is the DBI stream's machine.
	if o, err := ReadPDB(bytes.NewReader(data), int64(len(data))); err != nil || o.Arch != "x86_64" {
		t.Errorf("ReadPDB: %+v %v, want x86_64", o, err)
	}
}

// testdata/inline-O2.pdb is the PDB of testdata/native/inline.c (with
// util.h) built in /tmp/native by clang-14 --target=x86_64-pc-windows-msvc
// -g -gcodeview -O2 and lld-link-14 /debug: work holds two inlined calls of
// mix, each holding calls of square (from util.h) over ranges with gaps
// and line changes. The inline frames wanted are the binary annotations
// as llvm-pdbutil-14 dump -symbols lists them (a line from its code offset
// to the next); the outermost frames are llvm-symbolizer's. llvm-symbolizer
// 14 reads a line change one range early (0x1026 in mix at 16, 0x1041 at
// 15): its getLineOffset stops at the first code offset beyond the
// address, after the line change that comes before it; later LLVM reads
// the ranges as here. The names have their parameter lists, as symbolic
// writes them from the type stream (llvm-symbolizer 14 leaves them out).
func TestPDBInlinees(t *testing.T) {
	data, err := os.ReadFile("testdata/inline-O2.pdb")
	if err != nil {
		t.Fatal(err)
	}
	res, err := ReadPDBSymbols(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	const c, h = "/tmp/native/inline.c", "/tmp/native/./util.h"
	frame := func(fn, file string, line int) Frame {
		f := Frame{Function: fn, Symbol: fn, SymAddr: 0x1000, File: file, Line: line}
		if fn == "work(int*, int)" { // the procedure: its name as written
			f.Symbol = "work"
		}
		return f
	}
	for _, tc := range []struct {
		rva  uint64
		want []Frame
	}{
		{0x1001, []Frame{frame("work(int*, int)", c, 21)}},
		{0x1002, []Frame{frame("mix(int*, int)", c, 15), frame("work(int*, int)", c, 22)}},
		{0x1015, []Frame{frame("work(int*, int)", c, 23)}}, // a gap of the first mix
		{0x1026, []Frame{frame("mix(int*, int)", c, 15), frame("work(int*, int)", c, 22)}},
		{0x1041, []Frame{frame("mix(int*, int)", c, 16), frame("work(int*, int)", c, 22)}},
		{0x1044, []Frame{frame("square(int)", h, 4), frame("mix(int*, int)", c, 16), frame("work(int*, int)", c, 22)}},
		{0x1071, []Frame{frame("mix(int*, int)", c, 15), frame("work(int*, int)", c, 22)}},
		{0x1083, []Frame{frame("square(int)", h, 4), frame("mix(int*, int)", c, 16), frame("work(int*, int)", c, 22)}},
		{0x10af, []Frame{frame("mix(int*, int)", c, 15), frame("work(int*, int)", c, 24)}}, // the second mix
		{0x10d5, []Frame{frame("square(int)", h, 4), frame("mix(int*, int)", c, 16), frame("work(int*, int)", c, 24)}},
	} {
		got, ok := res.Lookup(tc.rva)
		if !ok {
			t.Fatalf("0x%x: nothing", tc.rva)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("0x%x (-want +got):\n%s", tc.rva, diff)
		}
	}
}

// testdata/crash-cpp-O2.pdb is the PDB of testdata/native/crash.cpp built
// in /tmp/native by clang++-14 --target=x86_64-pc-windows-msvc -g
// -gcodeview -O2 (stub cstdio and cstdlib) and lld-link-14 /debug: its
// inlined calls are class methods (LF_MFUNC_ID, named after their class in
// the TPI stream) and a function. The frames wanted are llvm-symbolizer's,
// whose outermost frames are the public symbols' demangled names
// (probe::Runner::run(int, bool)), which errata builds from the type
// stream, as symbolic does, for inlined calls too (llvm-symbolizer 14
// names those without their parameters: probe::Runner::twice) and for
// main, whose public symbol is not mangled (llvm-symbolizer: main).
func TestPDBInlineeNames(t *testing.T) {
	data, err := os.ReadFile("testdata/crash-cpp-O2.pdb")
	if err != nil {
		t.Fatal(err)
	}
	res, err := ReadPDBSymbols(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	const c, h = "/tmp/native/crash.cpp", "/tmp/native/./util.h"
	for _, tc := range []struct {
		rva  uint64
		want []Frame
	}{
		{0x105b, []Frame{{Function: "probe::Runner::twice(int) const", File: c, Line: 13}, {Function: "probe::Runner::run(int, bool)", File: c, Line: 31}}},
		{0x106d, []Frame{{Function: "square(int)", File: h, Line: 4}, {Function: "probe::Runner::run(int, bool)", File: c, Line: 34}}},
		{0x108a, []Frame{{Function: "probe::Runner::Runner(int)", File: c, Line: 11}, {Function: "main(int, char**)", File: c, Line: 40}}},
	} {
		got, _ := res.Lookup(tc.rva)
		for i := range got {
			got[i].Symbol, got[i].SymAddr = "", 0
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("0x%x (-want +got):\n%s", tc.rva, diff)
		}
	}
}

// TestPDBAnnotations decodes binary annotations of every kind that
// starts or ends a range, with 1, 2 and 4-byte operands.
func TestPDBAnnotations(t *testing.T) {
	ann := []byte{
		0x0b, 0x62, // ChangeCodeOffsetAndLineOffset: code +2, line +3
		0x04, 0x13, // ChangeCodeLength 0x13: [2, 0x15)
		0x05, 0x20, // ChangeFile 0x20
		0x06, 0x03, // ChangeLineOffset -1
		0x03, 0x81, 0x00, // ChangeCodeOffset +0x100 (2 bytes): 0x115
		0x0c, 0x04, 0x08, // ChangeCodeLengthAndCodeOffset: length 4, offset +8: [0x11d, 0x121)
		0x03, 0xc0, 0x01, 0x00, 0x00, // ChangeCodeOffset +0x10000 (4 bytes): 0x1011d
		0x04, 0x02, // ChangeCodeLength 2
		0x03, 0x05, // a range never ended: dropped
		0x00, 0x00, // padding
	}
	want := []pdbRange{
		{lo: 2, hi: 0x15, lineOff: 3},
		{lo: 0x115, hi: 0x11d, lineOff: 2, fileOff: 0x20},
		{lo: 0x11d, hi: 0x121, lineOff: 2, fileOff: 0x20},
		{lo: 0x1011d, hi: 0x1011f, lineOff: 2, fileOff: 0x20},
	}
	if diff := cmp.Diff(want, pdbAnnotations(ann, nil), cmp.AllowUnexported(pdbRange{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestPDBWithinBudget: a 4 MB PDB whose directory lists one block a
// million times for its DBI stream (4 GB claimed) is refused within a
// budget of twice its size.
func TestPDBWithinBudget(t *testing.T) {
	le := binary.LittleEndian
	const bs, nb = 4096, 1_000_000 // msfOfDirectory's blocks
	dir := le.AppendUint32(nil, 4)
	dir = le.AppendUint32(dir, 0)
	dir = le.AppendUint32(dir, 0)
	dir = le.AppendUint32(dir, 0)
	dir = le.AppendUint32(dir, nb*bs)
	for range nb {
		dir = le.AppendUint32(dir, 1)
	}
	data := msfOfDirectory(dir)
	var err error
	checkBudget(t, "ReadPDBSymbols", 2*uint64(len(data)), func() {
		_, err = ReadPDBSymbols(bytes.NewReader(data), int64(len(data)))
	})
	if err == nil {
		t.Error("read without an error")
	}
	t.Log(err)
}

// TestPDBStreamsWithinBudget reads a PDB whose 4 MiB directory lists a
// million empty streams: each takes 32 bytes to keep whatever its size,
// eight times the directory in all, which is charged to the reader's
// budget before it is allocated.
func TestPDBStreamsWithinBudget(t *testing.T) {
	le := binary.LittleEndian
	const n = 1_000_000
	dir := le.AppendUint32(nil, n)
	dir = append(dir, make([]byte, 4*n)...)
	data := msfOfDirectory(dir)
	var err error
	checkBudget(t, "ReadPDBSymbols", uint64(dwarfBudget(int64(len(data))).left), func() {
		_, err = ReadPDBSymbols(bytes.NewReader(data), int64(len(data)))
	})
	if !errors.Is(err, ErrBudget) {
		t.Errorf("read with %v, not ErrBudget", err)
	}
}

// msfOfDirectory lays out an MSF 7.00 file of 4 KiB blocks that holds
// the stream directory dir and nothing else: the block map in block 2,
// the directory from block 3.
func msfOfDirectory(dir []byte) []byte {
	const bs = 4096
	le := binary.LittleEndian
	nDir := (len(dir) + bs - 1) / bs
	data := make([]byte, (3+nDir)*bs)
	copy(data, pdbMagic)
	le.PutUint32(data[32:], bs)
	le.PutUint32(data[40:], uint32(3+nDir))
	le.PutUint32(data[44:], uint32(len(dir)))
	le.PutUint32(data[52:], 2)
	for i := range nDir {
		le.PutUint32(data[2*bs+4*i:], uint32(3+i))
	}
	copy(data[3*bs:], dir)
	return data
}

// FuzzPDBResolver reads PDBs within a budget of a few times their size
// and resolves addresses without panicking.
func FuzzPDBResolver(f *testing.F) {
	data, err := os.ReadFile("testdata/crash-O0.pdb")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data, uint64(0x1010))
	inl, err := os.ReadFile("testdata/inline-O2.pdb")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(inl, uint64(0x1044))
	cpp, err := os.ReadFile("testdata/crash-cpp-O2.pdb")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(cpp, uint64(0x105b))
	f.Add(diftest.PDB(4096), uint64(0))
	// An inlined call whose inlinee the module imports (the high bit),
	// with the imports and exports that resolve it.
	le := binary.LittleEndian
	xm := le.AppendUint32(le.AppendUint32(nil, 0xf7), 12)
	xm = le.AppendUint32(le.AppendUint32(le.AppendUint32(xm, 1), 1), 0x80001000)
	xm = le.AppendUint32(le.AppendUint32(xm, 0xf8), 8)
	xm = le.AppendUint32(le.AppendUint32(xm, 0x80001000), 0x1000)
	f.Add(pdbOfProc(func(start int) []byte {
		site := inlineSite(uint32(start+20), 0, 8)
		le.PutUint32(site[12:], 0x80000000)
		return site
	}, xm), uint64(0x1004))
	f.Fuzz(func(t *testing.T, data []byte, addr uint64) {
		var res *Resolver
		var err error
		checkBudget(t, "ReadPDBSymbols", uint64(16<<20+64*len(data)), func() {
			res, err = ReadPDBSymbols(bytes.NewReader(data), int64(len(data)))
		})
		if err == nil {
			res.Lookup(addr)
		}
	})
}
