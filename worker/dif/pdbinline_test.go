package dif

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// msfFile lays streams out in an MSF 7.00 file of 4 KiB blocks.
func msfFile(streams [][]byte) []byte {
	const bs = 4096
	le := binary.LittleEndian
	blocks := func(n int) int { return (n + bs - 1) / bs }
	dir := le.AppendUint32(nil, uint32(len(streams)))
	for _, s := range streams {
		dir = le.AppendUint32(dir, uint32(len(s)))
	}
	next := 3 + blocks(4*len(streams)+4+4*(len(streams)+1)) // generous room for the directory
	for _, s := range streams {
		for range blocks(len(s)) {
			dir = le.AppendUint32(dir, uint32(next))
			next++
		}
	}
	dirStart := next
	next += blocks(len(dir))
	f := make([]byte, next*bs)
	copy(f, pdbMagic)
	le.PutUint32(f[32:], bs)
	le.PutUint32(f[40:], uint32(next))
	le.PutUint32(f[44:], uint32(len(dir)))
	le.PutUint32(f[52:], 2) // the block map
	for i := range blocks(len(dir)) {
		le.PutUint32(f[2*bs+4*i:], uint32(dirStart+i))
	}
	copy(f[dirStart*bs:], dir)
	at := 3 + blocks(4*len(streams)+4+4*(len(streams)+1))
	for _, s := range streams {
		copy(f[at*bs:], s)
		at += blocks(len(s))
	}
	return f
}

// pdbOfProc builds a PDB of one module whose symbols are a procedure p
// of 64 KiB at relative address 0x1000 holding body, a file crash.c and
// inlinee lines for LF_FUNC_ID 0x1000 "f" (line 10), and c13 after them.
// body's records are laid out from offset 4+len(proc record), which
// endAt returns for the procedure's S_END given body's length.
func pdbOfProc(body func(start int) []byte, c13 []byte) []byte {
	le := binary.LittleEndian
	record := func(kind uint16, data []byte) []byte {
		for (len(data)+4)%4 != 0 {
			data = append(data, 0)
		}
		r := le.AppendUint16(nil, uint16(len(data)+2))
		r = le.AppendUint16(r, kind)
		return append(r, data...)
	}
	procData := make([]byte, 35)
	le.PutUint32(procData[12:], 0x10000) // length
	le.PutUint16(procData[32:], 1)       // section 1, offset 0
	procData = append(procData, "p\x00"...)
	proc := record(0x1110, procData)
	b := body(4 + len(proc))
	le.PutUint32(proc[4+4:], uint32(4+len(proc)+len(b))) // its End: the S_END after body
	syms := le.AppendUint32(nil, 4)
	syms = append(append(append(syms, proc...), b...), record(0x0006, nil)...)
	sub := func(kind uint32, body []byte) []byte {
		s := le.AppendUint32(le.AppendUint32(nil, kind), uint32(len(body)))
		s = append(s, body...)
		for len(s)%4 != 0 {
			s = append(s, 0)
		}
		return s
	}
	lines := sub(0xf4, []byte{1, 0, 0, 0, 0, 0, 0, 0}) // crash.c, no checksum
	il := le.AppendUint32(nil, 0)
	il = le.AppendUint32(le.AppendUint32(le.AppendUint32(il, 0x1000), 0), 10)
	lines = append(append(lines, sub(0xf6, il)...), c13...)
	mod := append(syms, lines...)

	info := make([]byte, 28)
	le.PutUint32(info, 20000404)
	info = le.AppendUint32(info, 7)
	info = append(info, "/names\x00"...)
	for _, v := range []uint32{1, 1, 1, 1, 0, 0, 5} { // size, capacity, present words and bits, deleted, key, stream
		info = le.AppendUint32(info, v)
	}
	typeStream := func(records []byte) []byte {
		h := make([]byte, 56)
		le.PutUint32(h[4:], 56)
		le.PutUint32(h[8:], 0x1000)
		le.PutUint32(h[16:], uint32(len(records)))
		return append(h, records...)
	}
	fn := []byte{0, 0, 0, 0, 0, 0, 0, 0, 'f', 0}
	ipi := typeStream(record(0x1601, fn))
	names := le.AppendUint32(nil, 0xeffeeffe)
	names = le.AppendUint32(le.AppendUint32(names, 1), 9)
	names = append(names, "\x00crash.c\x00"...)
	sh := make([]byte, 40)
	le.PutUint32(sh[12:], 0x1000)
	modInfo := make([]byte, 64)
	le.PutUint16(modInfo[34:], 7)
	le.PutUint32(modInfo[36:], uint32(len(syms)))
	le.PutUint32(modInfo[44:], uint32(len(lines)))
	modInfo = append(modInfo, "m\x00m\x00"...)
	dbg := bytes.Repeat([]byte{0xff, 0xff}, 11)
	le.PutUint16(dbg[10:], 6)
	dbi := make([]byte, 64)
	le.PutUint32(dbi, 0xffffffff)
	le.PutUint32(dbi[24:], uint32(len(modInfo)))
	le.PutUint32(dbi[48:], uint32(len(dbg)))
	dbi = append(append(dbi, modInfo...), dbg...)
	return msfFile([][]byte{nil, info, typeStream(nil), dbi, ipi, names, sh, mod})
}

// inlineSite is an S_INLINESITE record of inlinee 0x1000 whose End is
// end and whose code is [lo, lo+n) at line offset 0.
func inlineSite(end uint32, lo, n byte) []byte {
	return inlineSiteOf(end, []byte{0x0b, lo & 0xf, 0x04, n})
}

// inlineSiteOf is an S_INLINESITE record of inlinee 0x1000 whose End is
// end, with the annotations ann (padded to 4 bytes).
func inlineSiteOf(end uint32, ann []byte) []byte {
	for len(ann)%4 != 0 {
		ann = append(ann, 0)
	}
	le := binary.LittleEndian
	r := le.AppendUint16(nil, uint16(14+len(ann)))
	r = le.AppendUint16(r, 0x114d)
	r = le.AppendUint32(le.AppendUint32(le.AppendUint32(r, 0), end), 0x1000)
	return append(r, ann...)
}

// TestPDBInlineesWithinBudget reads PDBs whose counts are claims: 100,000
// inlined calls nested in each other are cut at maxInlineDepth, 100,000
// side by side are kept within an allocation that follows the file's
// bytes, inlinee lines claiming 2^32-1 extra files are passed over, and a
// lookup looks at maxSiteRanges calls and ranges at most.
func TestPDBInlineesWithinBudget(t *testing.T) {
	const n = 100_000
	nested := pdbOfProc(func(start int) []byte {
		var b []byte
		for range n {
			b = append(b, inlineSite(uint32(start+20*n), 0, 8)...)
		}
		return b
	}, nil)
	sideBySide := pdbOfProc(func(start int) []byte {
		var b []byte
		for i := range n {
			b = append(b, inlineSite(uint32(start+20*(i+1)), byte(i%8), 8)...)
		}
		return b
	}, nil)
	// The last of them alone holds 0x1100: a lookup gives up before.
	lastAlone := pdbOfProc(func(start int) []byte {
		var b []byte
		for i := range n - 1 {
			b = append(b, inlineSite(uint32(start+20*(i+1)), 0, 8)...)
		}
		// ChangeCodeOffset 0x100, ChangeCodeLength 8.
		return append(b, inlineSiteOf(uint32(start+20*n+4), []byte{0x03, 0x81, 0x00, 0x04, 0x08})...)
	}, nil)
	le := binary.LittleEndian
	extra := le.AppendUint32(le.AppendUint32(nil, 0xf6), 20)
	extra = le.AppendUint32(extra, 1) // CV_INLINEE_SOURCE_LINE_SIGNATURE_EX
	extra = le.AppendUint32(le.AppendUint32(le.AppendUint32(extra, 0x2000), 0), 20)
	extra = le.AppendUint32(extra, 0xffffffff) // extra files claimed
	claims := pdbOfProc(func(start int) []byte { return inlineSite(uint32(start+20), 0, 8) }, extra)
	for _, tc := range []struct {
		name   string
		file   []byte
		frames int // at 0x1004
	}{
		{"100,000 nested inlined calls", nested, maxInlineDepth},
		{"100,000 inlined calls side by side", sideBySide, 2},
		{"inlinee lines claiming 2^32-1 extra files", claims, 2},
		{"100,000 inlined calls side by side, the last alone at 0x1100", lastAlone, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res *Resolver
			var err error
			checkBudget(t, "ReadPDBSymbols", uint64(64*len(tc.file)), func() {
				res, err = ReadPDBSymbols(bytes.NewReader(tc.file), int64(len(tc.file)))
			})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := res.Lookup(0x1004)
			if len(got) != tc.frames {
				t.Fatalf("%d frames at 0x1004, want %d", len(got), tc.frames)
			}
			if f := got[0]; f.Function != "f" || f.File != "crash.c" || f.Line != 10 {
				t.Errorf("innermost frame %+v, want f at crash.c:10", f)
			}
			if tc.file == nil || &tc.file[0] != &lastAlone[0] {
				return
			}
			// maxSiteRanges bounds the calls a lookup looks at: the
			// last call is beyond them.
			if got, _ := res.Lookup(0x1100); len(got) != 1 || got[0].Function != "p" {
				t.Errorf("0x1100: %+v, want the procedure alone", got)
			}
		})
	}
}

// TestPDBImportedInlineesWithinBudget reads a PDB of 100,000 inlined
// calls whose inlinees the module imports, through an imports subsection
// of 2,048 modules of 1,000 ids each, within an allocation that follows
// the file's bytes. No module of the PDB has the name the imports give
// (the empty string): the calls stay unnamed. (TestSymbolicPDB resolves
// the imported inlinees of symbolic's windows/crash.pdb.)
func TestPDBImportedInlineesWithinBudget(t *testing.T) {
	const n = 100_000
	le := binary.LittleEndian
	var imp []byte
	for range 0x800 {
		imp = le.AppendUint32(le.AppendUint32(imp, 0), 1000)
		for range 1000 {
			imp = le.AppendUint32(imp, 0x80001000)
		}
	}
	c13 := append(le.AppendUint32(le.AppendUint32(nil, 0xf7), uint32(len(imp))), imp...)
	c13 = le.AppendUint32(le.AppendUint32(c13, 0xf8), 8)
	c13 = le.AppendUint32(le.AppendUint32(c13, 0x80001000), 0x1000)
	file := pdbOfProc(func(start int) []byte {
		var b []byte
		for i := range n {
			site := inlineSite(uint32(start+20*(i+1)), byte(i%8), 8)
			le.PutUint32(site[12:], 0x80000000|uint32(i%0x800)<<20|uint32(i%1000))
			b = append(b, site...)
		}
		return b
	}, c13)
	var res *Resolver
	var err error
	checkBudget(t, "ReadPDBSymbols", uint64(64*len(file)), func() {
		res, err = ReadPDBSymbols(bytes.NewReader(file), int64(len(file)))
	})
	if err != nil {
		t.Fatal(err)
	}
	// The module "m" exports nothing under the name the imports give
	// (the empty name, offset 0 of /names): the calls are not named.
	for _, s := range res.pdb.procs[0].sites[:3] {
		if s.id != 0 || s.name != "" {
			t.Fatalf("site %+v resolved", s)
		}
	}
}

// TestPDBImportsTakenFromBudget: the imported calls of a module are taken
// from the reader's budget before they are kept, which refuses them when
// it has not their bytes left.
func TestPDBImportsTakenFromBudget(t *testing.T) {
	le := binary.LittleEndian
	imported := le.AppendUint32(le.AppendUint32(le.AppendUint32(nil, 0), 1), 0x1000)
	sites := make([]pdbSite, 1000)
	for i := range sites {
		sites[i].inlinee = 0x80000000
	}
	procs := []pdbProc{{sites: sites}}
	str := func(uint32) string { return "m" }
	full := &sectionBudget{left: 1 << 20}
	imports, err := importedInlinees(procs, imported, str, nil, full)
	if err != nil || len(imports) != 1000 || imports[0].local != 0x1000 {
		t.Fatalf("%d imports, %v", len(imports), err)
	}
	if full.left >= 1<<20 {
		t.Error("the imports were not taken from the budget")
	}
	if _, err := importedInlinees(procs, imported, str, nil, &sectionBudget{left: 1000}); !errors.Is(err, ErrBudget) {
		t.Errorf("read within 1,000 bytes with %v", err)
	}
}
