package dif

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

// testBuildID is the build id (and Mach-O UUID, PDB and CodeView GUID)
// of the files built below, and testDebugID the debug id it makes.
var testBuildID = []byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}

const testDebugID = "33221100-5544-7766-8899-aabbccddeeff"

// elfBomb builds an ELF64 shared object of nsect section headers whose
// names all point at one name of nameLen bytes: section 1 is the name
// table, section 2 a note with testBuildID, the others hold 16 bytes each.
func elfBomb(nsect, nameLen int) []byte {
	le := binary.LittleEndian
	f := make([]byte, 64, 64+40+nameLen+2+64*nsect+8)
	copy(f, "\x7fELF\x02\x01\x01")
	le.PutUint16(f[16:], 3)    // ET_DYN
	le.PutUint16(f[18:], 0x3e) // x86_64
	le.PutUint32(f[20:], 1)
	le.PutUint16(f[52:], 64)
	le.PutUint16(f[58:], 64)
	le.PutUint16(f[60:], uint16(nsect))
	le.PutUint16(f[62:], 1)
	// The note: namesz, descsz, type 3, "GNU\0", the id.
	note := len(f)
	f = le.AppendUint32(f, 4)
	f = le.AppendUint32(f, uint32(len(testBuildID)))
	f = le.AppendUint32(f, 3)
	f = append(f, "GNU\x00"...)
	f = append(f, testBuildID...)
	noteLen := len(f) - note
	strtab := len(f)
	f = append(f, 0)
	f = append(f, bytes.Repeat([]byte("A"), nameLen)...)
	f = append(f, 0)
	for len(f)%8 != 0 {
		f = append(f, 0)
	}
	le.PutUint64(f[40:], uint64(len(f))) // e_shoff
	for i := range nsect {
		sh := make([]byte, 64)
		le.PutUint32(sh, 1) // the long name
		switch i {
		case 0:
			le.PutUint32(sh, 0)
		case 1:
			le.PutUint32(sh, 0)
			le.PutUint32(sh[4:], 3) // SHT_STRTAB
			le.PutUint64(sh[24:], uint64(strtab))
			le.PutUint64(sh[32:], uint64(nameLen+2))
		case 2:
			le.PutUint32(sh[4:], 7) // SHT_NOTE
			le.PutUint64(sh[24:], uint64(note))
			le.PutUint64(sh[32:], uint64(noteLen))
		default:
			le.PutUint32(sh[4:], 1) // SHT_PROGBITS
			le.PutUint64(sh[32:], 16)
		}
		f = append(f, sh...)
	}
	return f
}

// machoBomb builds a thin 64-bit Mach-O executable with LC_UUID
// testBuildID, a segment that claims nsects sections and holds one
// (__eh_frame), and a symbol table of nsyms symbols whose names all point
// at one name of nameLen bytes.
func machoBomb(nsects uint32, nsyms, nameLen int) []byte {
	le := binary.LittleEndian
	cmds := []byte{}
	cmds = le.AppendUint32(cmds, lcUUID)
	cmds = le.AppendUint32(cmds, 24)
	cmds = append(cmds, testBuildID...)
	seg := make([]byte, 72+80)
	le.PutUint32(seg, 0x19) // LC_SEGMENT_64
	le.PutUint32(seg[4:], uint32(len(seg)))
	copy(seg[8:], "__TEXT")
	le.PutUint32(seg[64:], nsects)
	copy(seg[72:], "__eh_frame")
	copy(seg[72+16:], "__TEXT")
	le.PutUint64(seg[72+40:], 16)
	cmds = append(cmds, seg...)
	symtab := make([]byte, 24)
	le.PutUint32(symtab, 2) // LC_SYMTAB
	le.PutUint32(symtab[4:], 24)
	cmds = append(cmds, symtab...)
	f := make([]byte, 32)
	le.PutUint32(f, 0xfeedfacf)
	le.PutUint32(f[4:], 0x01000007) // x86_64
	le.PutUint32(f[8:], 3)
	le.PutUint32(f[12:], 2) // MH_EXECUTE
	le.PutUint32(f[16:], 3)
	le.PutUint32(f[20:], uint32(len(cmds)))
	f = append(f, cmds...)
	st := 32 + 24 + len(seg) // the LC_SYMTAB command
	le.PutUint32(f[st+8:], uint32(len(f)))
	le.PutUint32(f[st+12:], uint32(nsyms))
	for range nsyms {
		sym := make([]byte, 16)
		le.PutUint32(sym, 1)
		sym[4] = 0x0f // N_SECT | N_EXT
		sym[5] = 1
		f = append(f, sym...)
	}
	le.PutUint32(f[st+16:], uint32(len(f)))
	le.PutUint32(f[st+20:], uint32(nameLen+2))
	f = append(f, 0)
	f = append(f, bytes.Repeat([]byte("A"), nameLen)...)
	return append(f, 0)
}

// fatBomb builds a fat Mach-O of narch architectures that are all thin.
func fatBomb(narch int, thin []byte) []byte {
	be := binary.BigEndian
	const off = 1 << 12
	f := make([]byte, off)
	be.PutUint32(f, 0xcafebabe)
	be.PutUint32(f[4:], uint32(narch))
	for i := range narch {
		a := f[8+20*i:]
		be.PutUint32(a, 0x01000007)
		be.PutUint32(a[4:], uint32(i)) // a subtype each: no duplicate
		be.PutUint32(a[8:], off)
		be.PutUint32(a[12:], uint32(len(thin)))
		be.PutUint32(a[16:], 12)
	}
	return append(f, thin...)
}

// peBomb builds a PE32+ image of nsect sections and nsyms COFF symbols
// whose names all point at one name of nameLen bytes in the string table,
// with a debug directory of debugSize bytes whose first entry is a
// CodeView record of testBuildID, age 2.
func peBomb(nsect, nsyms, nameLen int, debugSize uint32) []byte {
	le := binary.LittleEndian
	const optSize = 112 + 16*8
	f := make([]byte, 64+24+optSize)
	copy(f, "MZ")
	le.PutUint32(f[0x3c:], 64)
	coff := f[64:]
	copy(coff, "PE\x00\x00")
	le.PutUint16(coff[4:], 0x8664)
	le.PutUint16(coff[6:], uint16(nsect))
	le.PutUint32(coff[8:], 0x5f000000)
	le.PutUint32(coff[16:], uint32(nsyms))
	le.PutUint16(coff[20:], optSize)
	le.PutUint16(coff[22:], 0x22)
	opt := coff[24:]
	le.PutUint16(opt, 0x20b)
	le.PutUint32(opt[56:], 0x3000)
	le.PutUint32(opt[108:], 16)
	le.PutUint32(opt[112+6*8:], 0x1000) // the debug directory
	le.PutUint32(opt[112+6*8+4:], debugSize)
	sections := len(f)
	f = append(f, make([]byte, 40*nsect)...)
	le.PutUint32(f[64+12:], uint32(len(f))) // the symbol table
	for range nsyms {
		sym := make([]byte, 18)
		le.PutUint32(sym[4:], 4) // a long name, at 4 in the string table
		f = append(f, sym...)
	}
	f = le.AppendUint32(f, uint32(4+nameLen+1))
	f = append(f, bytes.Repeat([]byte("A"), nameLen)...)
	f = append(f, 0)
	raw := len(f)
	entry := make([]byte, 28)
	le.PutUint32(entry[12:], 2)
	le.PutUint32(entry[16:], 30)
	le.PutUint32(entry[24:], uint32(raw+28))
	f = append(f, entry...)
	f = append(f, "RSDS"...)
	f = append(f, testBuildID...)
	f = le.AppendUint32(f, 2)
	f = append(f, "a.pdb\x00"...)
	for i := range nsect {
		s := f[sections+40*i:]
		copy(s, "/4")
		le.PutUint32(s[8:], 0x200)
		le.PutUint32(s[12:], 0x1000)
		le.PutUint32(s[16:], 0x200)
		le.PutUint32(s[20:], uint32(raw))
	}
	return append(f, make([]byte, 0x200)...)
}

// pdbBomb builds a PDB of 4096-byte blocks whose directory claims the
// most bytes its block map can list (4 MiB), every block of it the same.
func pdbBomb() []byte {
	const bs = 4096
	le := binary.LittleEndian
	f := make([]byte, 4*bs)
	copy(f, pdbMagic)
	le.PutUint32(f[32:], bs)
	le.PutUint32(f[40:], 4)
	le.PutUint32(f[44:], bs/4*bs)
	le.PutUint32(f[52:], 1) // the block map
	for i := range bs / 4 {
		le.PutUint32(f[bs+4*i:], 2)
	}
	for i, v := range []uint32{4, 0, 28, 0, 0, 3} {
		le.PutUint32(f[2*bs+4*i:], v)
	}
	info := f[3*bs:]
	le.PutUint32(info, 20000404)
	le.PutUint32(info[8:], 2)
	copy(info[12:], testBuildID)
	return f
}

// bundleBomb builds a source bundle whose zip directory names members
// members of nameLen-byte names, all pointing at its manifest, then the
// manifest itself.
func bundleBomb(members, nameLen int) []byte {
	le := binary.LittleEndian
	manifest := `{"debug_id":"` + testDebugID + `","files":{}}`
	record := func(name string) []byte {
		r := make([]byte, 46, 46+len(name))
		le.PutUint32(r, 0x02014b50)
		le.PutUint16(r[4:], 20)
		le.PutUint16(r[6:], 20)
		le.PutUint32(r[16:], crc32.ChecksumIEEE([]byte(manifest)))
		le.PutUint32(r[20:], uint32(len(manifest)))
		le.PutUint32(r[24:], uint32(len(manifest)))
		le.PutUint16(r[28:], uint16(len(name)))
		return append(r, name...)
	}
	f := []byte("SYSB\x02\x00\x00\x00")
	local := make([]byte, 30)
	le.PutUint32(local, 0x04034b50)
	le.PutUint16(local[4:], 20)
	copy(local[14:], record("")[16:28])
	le.PutUint16(local[26:], 13)
	f = append(f, local...)
	f = append(f, "manifest.json"+manifest...)
	dir := len(f)
	long := record(strings.Repeat("a", nameLen))
	for range members {
		f = append(f, long...)
	}
	f = append(f, record("manifest.json")...)
	end := make([]byte, 22)
	le.PutUint32(end, 0x06054b50)
	le.PutUint16(end[8:], uint16(members+1))
	le.PutUint16(end[10:], uint16(members+1))
	le.PutUint32(end[12:], uint32(len(f)-dir))
	le.PutUint32(end[16:], uint32(dir-8))
	return append(f, end...)
}

// TestReadersWithinBudget reads files whose counts and lengths would make
// a reader that trusts them allocate gigabytes: each is read, or refused,
// within a budget that does not depend on them.
func TestReadersWithinBudget(t *testing.T) {
	machoSyms := machoBomb(1, 60_000, 1<<20)
	tests := []struct {
		name    string
		file    []byte
		want    []Object
		wantN   int // when set, the number of objects wanted
		wantErr error
	}{
		{name: "ELF of 65,535 sections named by one 1 MiB name", file: elfBomb(65535, 1<<20),
			want: []Object{{Kind: "elf", DebugID: testDebugID, CodeID: "00112233445566778899aabbccddeeff", Arch: "x86_64", Type: "lib"}}},
		{name: "Mach-O of 60,000 symbols named by one 1 MiB name", file: machoBomb(1, 60_000, 1<<20),
			want: []Object{{Kind: "macho", DebugID: "00112233-4455-6677-8899-aabbccddeeff", CodeID: "00112233445566778899aabbccddeeff",
				Arch: "x86_64", Type: "exe", Features: []string{"symtab", "unwind"}}}},
		{name: "Mach-O of a segment claiming 2^32-1 sections", file: machoBomb(1<<32-1, 0, 0),
			want: []Object{{Kind: "macho", DebugID: "00112233-4455-6677-8899-aabbccddeeff", CodeID: "00112233445566778899aabbccddeeff",
				Arch: "x86_64", Type: "exe", Features: []string{"unwind"}}}},
		{name: "fat Mach-O of 64 such architectures", file: fatBomb(64, machoSyms), wantN: 64},
		{name: "PE of 65,535 sections and 50,000 symbols named by one 1 MiB name, a debug directory of 4 GiB", file: peBomb(65535, 50_000, 1<<20, 1<<32-1),
			want: []Object{{Kind: "pe", DebugID: testDebugID + "-2", CodeID: "5f0000003000", Arch: "x86_64", Type: "exe"}}},
		{name: "PDB of a 4 MiB directory of one block", file: pdbBomb(),
			want: []Object{{Kind: "pdb", DebugID: testDebugID + "-2", Arch: "unknown", Type: "dbg"}}},
		{name: "source bundle of 20,000 members of 2 KiB names", file: bundleBomb(20_000, 2<<10),
			want: []Object{{Kind: "sourcebundle", DebugID: testDebugID, Arch: "any", Type: "src", Features: []string{"sources"}}}},
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
	hugeCmds := machoBomb(1, 0, 0)
	le.PutUint32(hugeCmds[16:], 1<<32-1) // ncmds
	le.PutUint32(hugeCmds[20:], 1<<32-8) // sizeofcmds
	manyArches := fatBomb(1, machoBomb(1, 0, 0))
	binary.BigEndian.PutUint32(manyArches[4:], 1<<32-1)
	extended := elfBomb(3, 8)
	le.PutUint16(extended[60:], 0) // the count is section 0's size
	shoff := le.Uint64(extended[40:])
	le.PutUint64(extended[shoff+32:], 1<<40)
	tests := []struct {
		name string
		file []byte
		read func(f []byte) error
	}{
		{"Mach-O of 2^32-1 load commands in 4 GiB", hugeCmds, func(f []byte) error {
			_, err := ReadMachO(bytes.NewReader(f), int64(len(f)))
			return err
		}},
		{"fat Mach-O of 2^32-1 architectures", manyArches, func(f []byte) error {
			_, err := ReadMachO(bytes.NewReader(f), int64(len(f)))
			return err
		}},
		{"ELF of 2^40 sections", extended, func(f []byte) error {
			_, err := ReadELF(bytes.NewReader(f), int64(len(f)))
			return err
		}},
		{"ELF section table of 65,535 names of 1 MiB", elfBomb(65535, 1<<20), func(f []byte) error {
			_, err := ReadELFSections(bytes.NewReader(f), int64(len(f)))
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			checkBudget(t, "reading", sectionsBudget, func() { err = tt.read(tt.file) })
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
	many := elfBomb(65535, 8)
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
	w.Write([]byte(`{"files":{},"debug_id":"` + testDebugID + `"}`))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSourceBundle(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || got.DebugID != testDebugID {
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
