package dif

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/worker/dif/diftest"
)

// testdata/crash-O0.pdb is the PDB of testdata/native/crash.c built in
// /tmp/native by clang-14 --target=x86_64-pc-windows-msvc -g -gcodeview -O0
// and lld-link-14 /debug; the frames wanted are llvm-symbolizer's on its
// executable.
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
		{0x1000, Frame{Function: "compute", Symbol: "compute", SymAddr: 0x1000, File: "/tmp/native/crash.c", Line: 16}},
		{0x1010, Frame{Function: "compute", Symbol: "compute", SymAddr: 0x1000, File: "/tmp/native/crash.c", Line: 17}},
		{0x1040, Frame{Function: "compute", Symbol: "compute", SymAddr: 0x1000, File: "/tmp/native/crash.c", Line: 21}},
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
}

// TestPDBWithinBudget: a 4 MB PDB whose directory lists one block a
// million times for its DBI stream (4 GB claimed) is refused within a
// budget of twice its size.
func TestPDBWithinBudget(t *testing.T) {
	le := binary.LittleEndian
	const bs, nb = 4096, 1_000_000
	dir := le.AppendUint32(nil, 4)
	dir = le.AppendUint32(dir, 0)
	dir = le.AppendUint32(dir, 0)
	dir = le.AppendUint32(dir, 0)
	dir = le.AppendUint32(dir, nb*bs)
	for range nb {
		dir = le.AppendUint32(dir, 1)
	}
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
	var err error
	checkBudget(t, "ReadPDBSymbols", 2*uint64(len(data)), func() {
		_, err = ReadPDBSymbols(bytes.NewReader(data), int64(len(data)))
	})
	if err == nil {
		t.Error("read without an error")
	}
	t.Log(err)
}

// FuzzPDBResolver reads PDBs within a budget of a few times their size
// and resolves addresses without panicking.
func FuzzPDBResolver(f *testing.F) {
	data, err := os.ReadFile("testdata/crash-O0.pdb")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data, uint64(0x1010))
	f.Add(diftest.PDB(4096), uint64(0))
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
