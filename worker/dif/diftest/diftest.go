// Package diftest builds debug files whose counts and lengths would make a
// reader that trusts them allocate gigabytes (name bombs): the tests of
// package dif and the server's end-to-end tests send them. It is for tests
// only.
package diftest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
)

// pdbMagic starts every PDB (an MSF 7.00 container).
const pdbMagic = "Microsoft C/C++ MSF 7.00\r\n\x1aDS\x00\x00\x00"

// BuildID is the build id (and Mach-O UUID, PDB and CodeView GUID) of
// the files built here, and DebugID the debug id it makes.
var BuildID = []byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}

const DebugID = "33221100-5544-7766-8899-aabbccddeeff"

// ELF builds an ELF64 shared object of nsect section headers whose
// names all point at one name of nameLen bytes: section 1 is the name
// table, section 2 a note with BuildID, the others hold 16 bytes each.
func ELF(nsect, nameLen int) []byte {
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
	f = le.AppendUint32(f, uint32(len(BuildID)))
	f = le.AppendUint32(f, 3)
	f = append(f, "GNU\x00"...)
	f = append(f, BuildID...)
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

// MachO builds a thin 64-bit Mach-O executable with LC_UUID
// BuildID, a segment that claims nsects sections and holds one
// (__eh_frame), and a symbol table of nsyms symbols whose names all point
// at one name of nameLen bytes.
func MachO(nsects uint32, nsyms, nameLen int) []byte {
	le := binary.LittleEndian
	cmds := []byte{}
	cmds = le.AppendUint32(cmds, 0x1b)
	cmds = le.AppendUint32(cmds, 24)
	cmds = append(cmds, BuildID...)
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

// FatMachO builds a fat Mach-O of narch architectures that are all thin.
func FatMachO(narch int, thin []byte) []byte {
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

// PE builds a PE32+ image of nsect sections and nsyms COFF symbols
// whose names all point at one name of nameLen bytes in the string table,
// with a debug directory of debugSize bytes whose first entry is a
// CodeView record of BuildID, age 2.
func PE(nsect, nsyms, nameLen int, debugSize uint32) []byte {
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
	f = append(f, BuildID...)
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

// PDB builds a PDB of blockSize-byte blocks (512 to 4096) whose directory
// claims the most bytes its block map can list (4 MiB for 4096-byte
// blocks), every block of it the same.
func PDB(blockSize int) []byte {
	bs := blockSize
	le := binary.LittleEndian
	f := make([]byte, 4*bs)
	copy(f, pdbMagic)
	le.PutUint32(f[32:], uint32(bs))
	le.PutUint32(f[40:], 4)
	le.PutUint32(f[44:], uint32(bs/4*bs))
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
	copy(info[12:], BuildID)
	return f
}

// SourceBundle builds a source bundle whose zip directory names members
// members of nameLen-byte names, all pointing at its manifest, then the
// manifest itself.
func SourceBundle(members, nameLen int) []byte {
	le := binary.LittleEndian
	manifest := `{"debug_id":"` + DebugID + `","files":{}}`
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

// Breakpad builds a Breakpad symbol file of n PUBLIC records, whose
// resolver grows with n: a small parsed debug file for the tests of the
// caches that keep them.
func Breakpad(n int) []byte {
	var b strings.Builder
	b.WriteString("MODULE Linux x86_64 B644071B511E55DBAC271EE28D84D9910 x\n")
	for i := range n {
		b.WriteString("PUBLIC " + strings.Repeat("1", 1+i%8) + " 0 f\n")
	}
	return []byte(b.String())
}

// BreakpadModule builds the Breakpad symbol file of module i (its debug
// id, in the MODULE record's form, and the debug id a request names it
// by) with n PUBLIC records 16 bytes apart: a file of 16 bytes a record
// that parses to about 49, for the tests of what a request holds.
func BreakpadModule(i, n int) (file []byte, debugID string) {
	id := fmt.Sprintf("B644071B511E55DBAC271EE28D84D9%02X0", i)
	var b bytes.Buffer
	fmt.Fprintf(&b, "MODULE Linux x86_64 %s m%d\n", id, i)
	for k := range n {
		fmt.Fprintf(&b, "PUBLIC %x 0 f\n", k*16)
	}
	debugID = strings.ToLower(id[:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:32])
	return b.Bytes(), debugID
}

// CProgram writes the C sources of a program of nfiles units of nfuncs
// functions each (and a struct of nfields members per function, for the
// size of the debug information) into dir, and returns their paths. Each
// function calls a static inline helper, inlined at -O2, and the one
// before it; main calls the first of each unit.
func CProgram(dir string, nfiles, nfuncs, nfields int) ([]string, error) {
	var paths []string
	write := func(name string, src []byte) error {
		p := filepath.Join(dir, name)
		paths = append(paths, p)
		return os.WriteFile(p, src, 0o644)
	}
	var decls, calls bytes.Buffer
	for i := range nfiles {
		var b bytes.Buffer
		fmt.Fprintf(&b, "static inline int helper%d(int x) { return x * %d + (x >> 3); }\n", i, i+3)
		for j := range nfuncs {
			fmt.Fprintf(&b, "struct s%d_%d {", i, j)
			for k := range nfields {
				fmt.Fprintf(&b, " int member%d_%d_%d;", i, j, k)
			}
			fmt.Fprintf(&b, " };\nint f%d_%d(struct s%d_%d *p, int x) {\n", i, j, i, j)
			fmt.Fprintf(&b, "\tint y = helper%d(x) + p->member%d_%d_%d;\n", i, i, j, nfields-1)
			if j > 0 {
				fmt.Fprintf(&b, "\tif (x > %d)\n\t\ty += f%d_%d((struct s%d_%d *)p, x - 1);\n", j, i, j-1, i, j-1)
			}
			fmt.Fprintf(&b, "\treturn y * %d;\n}\n", j+1)
		}
		if err := write(fmt.Sprintf("unit%d.c", i), b.Bytes()); err != nil {
			return nil, err
		}
		fmt.Fprintf(&decls, "struct s%d_0 { int m[%d]; };\nint f%d_0(struct s%d_0 *p, int x);\n", i, nfields, i, i)
		fmt.Fprintf(&calls, "\t{ struct s%d_0 s = {{0}}; r += f%d_0(&s, argc); }\n", i, i)
	}
	main := fmt.Sprintf("%sint main(int argc, char **argv) {\n\tint r = 0;\n%s\treturn r & 1;\n}\n", decls.String(), calls.String())
	if err := write("main.c", []byte(main)); err != nil {
		return nil, err
	}
	return paths, nil
}
