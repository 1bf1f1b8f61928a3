package dif

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/worker/dif/diftest"
)

// fatOf joins thin objects into a fat file, each at a 4 KiB boundary.
func fatOf(thins ...[]byte) []byte {
	be := binary.BigEndian
	f := make([]byte, 4096)
	be.PutUint32(f, 0xcafebabe)
	be.PutUint32(f[4:], uint32(len(thins)))
	for i, thin := range thins {
		a := f[8+20*i:]
		be.PutUint32(a, 0x01000007)    // x86_64
		be.PutUint32(a[4:], uint32(i)) // a subtype each
		be.PutUint32(a[8:], uint32(len(f)))
		be.PutUint32(a[12:], uint32(len(thin)))
		be.PutUint32(a[16:], 12)
		f = append(f, thin...)
		f = append(f, make([]byte, (4096-len(f)%4096)%4096)...)
	}
	return f
}

// TestMachODWARFFor reads the architecture of a fat file that its debug
// id names, as ReadMachODWARF reads it thin, and refuses a debug id that
// no architecture has, within the identity budget even for 64
// architectures of 60,000 symbols each.
func TestMachODWARFFor(t *testing.T) {
	thin, err := os.ReadFile("testdata/dwarf-macho.dsym")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := ReadMachO(bytes.NewReader(thin), int64(len(thin)))
	if err != nil {
		t.Fatal(err)
	}
	id := objs[0].DebugID
	res, err := ReadMachODWARF(bytes.NewReader(thin), int64(len(thin)))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := res.Lookup(0x1000005a0)
	if len(want) < 2 {
		t.Fatalf("0x1000005a0 in the thin dSYM: %+v, want an inlined call", want)
	}
	fat := fatOf(diftest.MachO(1, 1, 4), thin)
	for _, tc := range []struct {
		name string
		file []byte
	}{
		{"thin", thin},
		{"fat, the dSYM second", fat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ReadMachODWARFFor(bytes.NewReader(tc.file), int64(len(tc.file)), id)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := res.Lookup(0x1000005a0)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("0x1000005a0 (-thin +read):\n%s", diff)
			}
		})
	}
	const other = "11111111-2222-3333-4444-555555555555"
	if _, err := ReadMachODWARFFor(bytes.NewReader(fat), int64(len(fat)), other); err == nil {
		t.Error("a debug id of no architecture resolved")
	}
	many := diftest.FatMachO(64, diftest.MachO(1, 60_000, 1<<20))
	checkBudget(t, "ReadMachODWARFFor", identityBudget, func() {
		_, err = ReadMachODWARFFor(bytes.NewReader(many), int64(len(many)), other)
	})
	if err == nil {
		t.Error("64 architectures without the debug id resolved")
	}
}

// FuzzMachODWARFFor reads fat and thin Mach-O files for a debug id within
// a budget and resolves addresses without panicking.
func FuzzMachODWARFFor(f *testing.F) {
	thin, err := os.ReadFile("testdata/dwarf-macho.dsym")
	if err != nil {
		f.Fatal(err)
	}
	objs, err := ReadMachO(bytes.NewReader(thin), int64(len(thin)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fatOf(diftest.MachO(1, 1, 4), thin), objs[0].DebugID, uint64(0x1000005a0))
	f.Add(diftest.FatMachO(2, diftest.MachO(1, 2, 8)), diftest.DebugID, uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, id string, addr uint64) {
		var res *Resolver
		var err error
		checkBudget(t, "ReadMachODWARFFor", uint64(64<<20+64*len(data)), func() {
			res, err = ReadMachODWARFFor(bytes.NewReader(data), int64(len(data)), id)
		})
		if err == nil {
			res.Lookup(addr)
		}
	})
}
