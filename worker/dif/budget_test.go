package dif

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/worker/dif/diftest"
)

// Memory budgets the tests hold the readers to: what one read may allocate
// in all (runtime.MemStats.TotalAlloc), whatever the counts in the file.
const (
	identityBudget = 2 << 20
	sectionsBudget = 8 << 20 // ReadELFSections keeps a table of up to 65,535 sections
)

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// checkBudget fails t when fn allocates more than budget bytes.
func checkBudget(t testing.TB, what string, budget uint64, fn func()) {
	t.Helper()
	n := allocated(fn)
	if n > budget {
		t.Errorf("%s allocated %d bytes, more than the budget of %d", what, n, budget)
	}
	t.Logf("%s allocated %d bytes", what, n)
}

// TestReadersWithinBudget reads files whose counts and lengths would make
// a reader that trusts them allocate gigabytes: each is read, or refused,
// within a budget that does not depend on them.
func TestReadersWithinBudget(t *testing.T) {
	machoSyms := diftest.MachO(1, 60_000, 1<<20)
	tests := []struct {
		name    string
		file    []byte
		want    []Object
		wantN   int // when set, the number of objects wanted
		wantErr error
	}{
		{name: "ELF of 65,535 sections named by one 1 MiB name", file: diftest.ELF(65535, 1<<20),
			want: []Object{{Kind: "elf", DebugID: diftest.DebugID, CodeID: "00112233445566778899aabbccddeeff", Arch: "x86_64", Type: "lib"}}},
		{name: "Mach-O of 60,000 symbols named by one 1 MiB name", file: diftest.MachO(1, 60_000, 1<<20),
			want: []Object{{Kind: "macho", DebugID: "00112233-4455-6677-8899-aabbccddeeff", CodeID: "00112233445566778899aabbccddeeff",
				Arch: "x86_64", Type: "exe", Features: []string{"symtab", "unwind"}}}},
		{name: "Mach-O of a segment claiming 2^32-1 sections", file: diftest.MachO(1<<32-1, 0, 0),
			want: []Object{{Kind: "macho", DebugID: "00112233-4455-6677-8899-aabbccddeeff", CodeID: "00112233445566778899aabbccddeeff",
				Arch: "x86_64", Type: "exe", Features: []string{"unwind"}}}},
		{name: "fat Mach-O of 64 such architectures", file: diftest.FatMachO(64, machoSyms), wantN: 64},
		{name: "PE of 65,535 sections and 50,000 symbols named by one 1 MiB name, a debug directory of 4 GiB", file: diftest.PE(65535, 50_000, 1<<20, 1<<32-1),
			want: []Object{{Kind: "pe", DebugID: diftest.DebugID + "-2", CodeID: "5f0000003000", Arch: "x86_64", Type: "exe"}}},
		{name: "PDB of a 4 MiB directory of one block", file: diftest.PDB(4096),
			want: []Object{{Kind: "pdb", DebugID: diftest.DebugID + "-2", Arch: "unknown", Type: "dbg", Features: []string{"debug", "symtab"}}}},
		{name: "source bundle of 20,000 members of 2 KiB names", file: diftest.SourceBundle(20_000, 2<<10),
			want: []Object{{Kind: "sourcebundle", DebugID: diftest.DebugID, Arch: "any", Type: "src", Features: []string{"sources"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Object
			var err error
			checkBudget(t, "Read", identityBudget, func() {
				got, err = Read(bytes.NewReader(tt.file), int64(len(tt.file)), "bomb", "")
			})
			if tt.wantN > 0 {
				if err != nil || len(got) != tt.wantN {
					t.Fatalf("Read: %d objects, %v; want %d", len(got), err, tt.wantN)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Read (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadersRefuseOverBudget reads files whose headers claim more than
// the budget lets a reader read: each is refused without allocating in
// proportion to what it claims.
func TestReadersRefuseOverBudget(t *testing.T) {
	le := binary.LittleEndian
	hugeCmds := diftest.MachO(1, 0, 0)
	le.PutUint32(hugeCmds[16:], 1<<32-1) // ncmds
	le.PutUint32(hugeCmds[20:], 1<<32-8) // sizeofcmds
	manyArches := diftest.FatMachO(1, diftest.MachO(1, 0, 0))
	binary.BigEndian.PutUint32(manyArches[4:], 1<<32-1)
	extended := diftest.ELF(3, 8)
	le.PutUint16(extended[60:], 0) // the count is section 0's size
	shoff := le.Uint64(extended[40:])
	le.PutUint64(extended[shoff+32:], 1<<40)
	tests := []struct {
		name   string
		file   []byte
		read   func(f []byte) error
		budget uint64
	}{
		{"Mach-O of 2^32-1 load commands in 4 GiB", hugeCmds, func(f []byte) error {
			_, err := ReadMachO(bytes.NewReader(f), int64(len(f)))
			return err
		}, identityBudget},
		{"fat Mach-O of 2^32-1 architectures", manyArches, func(f []byte) error {
			_, err := ReadMachO(bytes.NewReader(f), int64(len(f)))
			return err
		}, identityBudget},
		{"ELF of 2^40 sections", extended, func(f []byte) error {
			_, err := ReadELF(bytes.NewReader(f), int64(len(f)))
			return err
		}, identityBudget},
		{"ELF section table of 65,535 names of 1 MiB", diftest.ELF(65535, 1<<20), func(f []byte) error {
			_, err := ReadELFSections(bytes.NewReader(f), int64(len(f)))
			return err
		}, sectionsBudget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			checkBudget(t, "reading", tt.budget, func() { err = tt.read(tt.file) })
			if err == nil {
				t.Fatal("read, want an error")
			}
		})
	}
}

// TestReadELFSections reads the section table of a file built by gcc, as
// readelf lists it, within its budget; a table of many short names is
// read whole.
func TestReadELFSections(t *testing.T) {
	data := gccELF(t)
	secs, err := ReadELFSections(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	// readelf lists the same sections, at the same offsets and sizes.
	path := filepath.Join(t.TempDir(), "a.out")
	os.WriteFile(path, data, 0o600)
	out, err := exec.Command("readelf", "-SW", path).CombinedOutput()
	if err != nil {
		t.Skipf("readelf: %v\n%s", err, out)
	}
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^\s*\[\s*[1-9]\d*\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)`).FindAllStringSubmatch(string(out), -1) {
		listed = append(listed, m[1]+" "+m[2]+" "+m[3])
	}
	var read []string
	for _, s := range secs[1:] {
		if s.Damaged {
			t.Errorf("section %+v of a valid file is damaged", s)
		}
		read = append(read, fmt.Sprintf("%s %06x %06x", s.Name, s.Offset, s.Size))
	}
	if diff := cmp.Diff(listed, read); diff != "" || len(read) < 20 {
		t.Errorf("sections (-readelf +ReadELFSections):\n%s", diff)
	}
	many := diftest.ELF(65535, 8)
	checkBudget(t, "ReadELFSections", sectionsBudget, func() { secs, err = ReadELFSections(bytes.NewReader(many), int64(len(many))) })
	if err != nil || len(secs) != 65535 || secs[3].Name != "AAAAAAAA" {
		t.Errorf("ReadELFSections of 65,535 sections: %d sections, %v", len(secs), err)
	}
}

// gccELF builds a C program with gcc and returns its bytes.
func gccELF(t *testing.T) []byte {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "a.c")
	os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o600)
	out := filepath.Join(dir, "a.out")
	if b, err := exec.Command("gcc", "-g", "-Wl,--build-id=0x00112233445566778899aabbccddeeff", "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestReadELFWithDamagedSection damages one section header of a file built
// by gcc (its bytes past the end of the file, its name out of the name
// table): the file keeps its identity, and only that section is damaged.
func TestReadELFWithDamagedSection(t *testing.T) {
	data := gccELF(t)
	want, err := ReadELF(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	secs, err := ReadELFSections(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	damaged := bytes.Clone(data)
	shoff := le.Uint64(damaged[40:])
	i := -1
	for k, s := range secs {
		if s.Name == ".comment" {
			i = k
		}
	}
	if i < 0 {
		t.Fatal("no .comment section")
	}
	sh := damaged[shoff+64*uint64(i):]
	le.PutUint32(sh, 1<<31)      // sh_name
	le.PutUint64(sh[24:], 1<<40) // sh_offset
	le.PutUint64(sh[32:], 1<<20) // sh_size
	got, err := ReadELF(bytes.NewReader(damaged), int64(len(damaged)))
	if err != nil {
		t.Fatalf("ReadELF of a file with one damaged section: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadELF (-undamaged +damaged):\n%s", diff)
	}
	after, err := ReadELFSections(bytes.NewReader(damaged), int64(len(damaged)))
	if err != nil || len(after) != len(secs) {
		t.Fatalf("ReadELFSections: %d sections, %v; want %d", len(after), err, len(secs))
	}
	for k, s := range after {
		if s.Damaged != (k == i) {
			t.Errorf("section %d %q damaged: %v", k, s.Name, s.Damaged)
		}
	}
}

// TestReadSourceBundleCountingItsHeader reads a bundle whose zip offsets
// count the 8-byte header before it, as sentry-cli writes them.
func TestReadSourceBundleCountingItsHeader(t *testing.T) {
	var buf bytes.Buffer
	buf.WriteString("SYSB\x02\x00\x00\x00")
	zw := zip.NewWriter(&buf)
	zw.SetOffset(8)
	w, _ := zw.Create("files/src/a.c")
	w.Write([]byte("int main(void) { return 0; }\n"))
	w, _ = zw.Create("manifest.json")
	w.Write([]byte(`{"files":{},"debug_id":"` + diftest.DebugID + `"}`))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSourceBundle(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || got.DebugID != diftest.DebugID {
		t.Errorf("ReadSourceBundle: %+v, %v", got, err)
	}
}

// TestReadBreakpadWithinBudget reads a Breakpad file of 20,000 lines of
// 1,000 bytes within a budget that does not grow with its lines.
func TestReadBreakpadWithinBudget(t *testing.T) {
	f := "MODULE Linux x86_64 33221100554477668899AABBCCDDEEFF0 a.out\n" +
		strings.Repeat("FILE 0 "+strings.Repeat("a", 992)+"\n", 20_000)
	var err error
	checkBudget(t, "ReadBreakpad", identityBudget, func() { _, err = ReadBreakpad(strings.NewReader(f)) })
	if err != nil {
		t.Fatal(err)
	}
}

// TestSourceBundleIndexWithinBudget indexes a bundle whose directory names
// 20,000 members of 2 KiB names the manifest does not list: nothing of
// them is kept, and a real bundle's sources are found by canonical path.
func TestSourceBundleIndexWithinBudget(t *testing.T) {
	bomb := diftest.SourceBundle(20_000, 2<<10)
	checkBudget(t, "SourceBundleIndex of 20,000 unlisted members", identityBudget, func() {
		idx, err := SourceBundleIndex(bytes.NewReader(bomb), int64(len(bomb)))
		if err != nil || len(idx) != 0 {
			t.Errorf("SourceBundleIndex: %v, %v; want an empty index", idx, err)
		}
	})
	var buf bytes.Buffer
	buf.WriteString("SYSB\x02\x00\x00\x00")
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("files/_/src dir/a.c")
	w.Write([]byte("int a;\n"))
	w, _ = zw.CreateHeader(&zip.FileHeader{Name: "files/_/src/b.h", Method: zip.Store})
	w.Write([]byte("int b;\n"))
	w, _ = zw.Create("manifest.json")
	w.Write([]byte(`{"debug_id":"` + diftest.DebugID + `","files":{"files/_/src dir/a.c":{"path":"/src dir/./a.c"},` +
		`"files/_/src/b.h":{"path":"C:\\src\\b.h"},"files/_/gone.c":{"path":"/gone.c"}}}`))
	zw.Close()
	idx, err := SourceBundleIndex(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || len(idx) != 2 {
		t.Fatalf("SourceBundleIndex: %+v, %v; want a.c and b.h", idx, err)
	}
	b := buf.Bytes()
	if m := idx["/C:/src/b.h"]; m.Method != 0 || string(b[m.Offset:m.Offset+m.CSize]) != "int b;\n" {
		t.Errorf("the stored member: %+v", m)
	}
	if m := idx["/src dir/a.c"]; m.Method != 8 || m.Size != 7 || m.Offset+m.CSize > int64(len(b)) {
		t.Errorf("the deflated member: %+v", m)
	}
}
