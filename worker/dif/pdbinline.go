package dif

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"unsafe"
)

// pdbAnnotations appends to out the ranges that an inlined call's binary
// annotations describe, as Microsoft's cvinfo.h defines them: each of
// CodeOffset, ChangeCodeOffset, ChangeCodeOffsetAndLineOffset and
// ChangeCodeLengthAndCodeOffset starts a range at the code offset (from
// the procedure's start) with the line offset and file the annotations
// have reached; a range ends where the next starts or where a code length
// says. A range whose end is never said is dropped, as llvm-symbolizer
// drops it. Every annotation takes a byte at least: the ranges are at most
// the bytes of ann.
func pdbAnnotations(ann []byte, out []pdbRange) []pdbRange {
	// operand reads a compressed unsigned number: 1, 2 or 4 bytes by its
	// high bits.
	operand := func() (uint32, bool) {
		switch b := ann; {
		case len(b) >= 1 && b[0]&0x80 == 0:
			ann = b[1:]
			return uint32(b[0]), true
		case len(b) >= 2 && b[0]&0xc0 == 0x80:
			ann = b[2:]
			return uint32(b[0]&0x3f)<<8 | uint32(b[1]), true
		case len(b) >= 4 && b[0]&0xe0 == 0xc0:
			ann = b[4:]
			return uint32(b[0]&0x1f)<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]), true
		}
		return 0, false
	}
	signed := func(v uint32) int32 {
		if v&1 != 0 {
			return -int32(v >> 1)
		}
		return int32(v >> 1)
	}
	first := len(out)
	var code, file uint32
	var line int32
	open := -1 // the range whose end is not known yet
	end := func(at uint32) {
		if open >= 0 {
			out[open].hi = at
			open = -1
		}
	}
	start := func() {
		end(code)
		out = append(out, pdbRange{lo: code, lineOff: line, fileOff: file})
		open = len(out) - 1
	}
read:
	for {
		op, ok := operand()
		if !ok || op == 0 { // the end, or padding
			break
		}
		v, ok := operand()
		if !ok {
			break
		}
		switch op {
		case 1: // CodeOffset
			code = v
			start()
		case 3: // ChangeCodeOffset
			code += v
			start()
		case 4: // ChangeCodeLength
			code += v
			end(code)
		case 5: // ChangeFile
			file = v
		case 6: // ChangeLineOffset
			line += signed(v)
		case 11: // ChangeCodeOffsetAndLineOffset: code delta in the low 4 bits
			code += v & 0xf
			line += signed(v >> 4)
			start()
		case 12: // ChangeCodeLengthAndCodeOffset: the length, then the offset
			off, ok := operand()
			if !ok {
				break read
			}
			code += off
			start()
			end(code + v)
		case 2, 7, 8, 9, 10, 13: // code offset base, line end, range kind, columns
		default:
			break read
		}
	}
	// Keep the ranges with an end after their start.
	kept := out[:first]
	for _, r := range out[first:] {
		if r.hi > r.lo {
			kept = append(kept, r)
		}
	}
	return kept
}

// resolveInlinees gives the ranges of a module's inlined calls their
// lines and files: the inlinee's declaration line (DEBUG_S_INLINEELINES
// of the module's C13 subsections c13s) plus the annotations' line offset,
// in the annotations' file or else the inlinee's. A call whose inlinee the
// module has no entry for is marked noLines. Only the entries of inlinees
// the module's calls name are kept while reading.
func resolveInlinees(procs []pdbProc, c13s []byte, fileName func(uint32) string, spend func(int) error) error {
	type decl struct {
		line, file uint32
		found      bool
	}
	want := map[uint32]decl{}
	for i := range procs {
		for _, s := range procs[i].sites {
			want[s.inlinee] = decl{}
		}
	}
	if len(want) == 0 {
		return nil
	}
	le := binary.LittleEndian
	for pos := 0; pos+8 <= len(c13s); {
		kind, n := le.Uint32(c13s[pos:]), uint64(le.Uint32(c13s[pos+4:]))
		if n > uint64(len(c13s)-pos-8) {
			break
		}
		body := c13s[pos+8 : pos+8+int(n)]
		pos += (8 + int(n) + 3) &^ 3
		if kind != 0xf6 || len(body) < 4 { // DEBUG_S_INLINEELINES
			continue
		}
		extra := le.Uint32(body) == 1 // CV_INLINEE_SOURCE_LINE_SIGNATURE_EX: extra files follow
		for d := body[4:]; len(d) >= 12; {
			ti, file, line := le.Uint32(d), le.Uint32(d[4:]), le.Uint32(d[8:])
			d = d[12:]
			if extra {
				if len(d) < 4 || uint64(le.Uint32(d)) > uint64(len(d)-4)/4 {
					break
				}
				d = d[4+4*int(le.Uint32(d)):]
			}
			if e, ok := want[ti]; ok && !e.found {
				want[ti] = decl{line: line, file: file, found: true}
			}
		}
	}
	files := map[uint32]string{} // one string a file
	for i := range procs {
		for k := range procs[i].sites {
			s := &procs[i].sites[k]
			d := want[s.inlinee]
			if !d.found {
				s.noLines = true
				continue
			}
			for j := range s.ranges {
				r := &s.ranges[j]
				// As llvm-symbolizer adds them: 32 bits, a line of 24.
				r.line = (d.line + uint32(r.lineOff)) & 0xffffff
				off := r.fileOff
				if off == 0 {
					off = d.file
				}
				f, ok := files[off]
				if !ok {
					f = fileName(off)
					if err := spend(48 + len(f)); err != nil {
						return err
					}
					files[off] = f
				}
				r.file = f
			}
		}
	}
	return nil
}

// pdbImport is an inlinee a module imports from another: the exporting
// module's name (lower case) and its local index there, and the site
// that calls it.
type pdbImport struct {
	module string
	local  uint32
	site   *pdbSite
}

// importedInlinees appends to imports the calls of procs whose inlinee
// the module imports (an index with the high bit set: the module's entry
// in the DEBUG_S_CROSSSCOPEIMPORTS subsection imported, bits 20 to 30,
// and the index among its ids, bits 0 to 19). Each entry of imported is
// the exporting module's name (an offset in /names), a count and the
// local ids; str reads a name. The entries are read once (at most the
// 2,048 an index can name), each name once. The imports, kept until
// every module is read, are taken from budget before they are appended.
func importedInlinees(procs []pdbProc, imported []byte, str func(uint32) string, imports []pdbImport, budget *sectionBudget) ([]pdbImport, error) {
	le := binary.LittleEndian
	n := 0
	for i := range procs {
		for _, s := range procs[i].sites {
			if s.inlinee&0x80000000 != 0 {
				n++
			}
		}
	}
	if n == 0 {
		return imports, nil
	}
	if err := budget.take(uint64(n) * uint64(unsafe.Sizeof(pdbImport{}))); err != nil {
		return nil, err
	}
	imports = slices.Grow(imports, n)
	type entry struct {
		nameOff uint32
		name    string // lower case, once read
		ids     []byte
	}
	var entries []entry
	for d := imported; len(d) >= 8 && len(entries) < 0x800; {
		count := uint64(le.Uint32(d[4:]))
		if count > uint64(len(d)-8)/4 {
			break
		}
		entries = append(entries, entry{nameOff: le.Uint32(d), ids: d[8 : 8+4*count]})
		d = d[8+4*count:]
	}
	for i := range procs {
		for k := range procs[i].sites {
			s := &procs[i].sites[k]
			if s.inlinee&0x80000000 == 0 {
				continue
			}
			s.id = 0
			e, at := int(s.inlinee>>20&0x7ff), uint64(s.inlinee&0xfffff)
			if e >= len(entries) || at >= uint64(len(entries[e].ids))/4 {
				continue
			}
			if entries[e].name == "" {
				entries[e].name = strings.ToLower(str(entries[e].nameOff))
			}
			imports = append(imports, pdbImport{module: entries[e].name, local: le.Uint32(entries[e].ids[4*at:]), site: s})
		}
	}
	return imports, nil
}

// resolveImports gives each imported call the IPI index its module
// exports its inlinee as: exports holds each module's
// DEBUG_S_CROSSSCOPEEXPORTS, pairs of a local and a global index. The
// exports of each module imported from are indexed once, within budget.
func resolveImports(imports []pdbImport, exports map[string][]byte, budget *sectionBudget) error {
	le := binary.LittleEndian
	byModule := map[string]map[uint32]uint32{}
	for _, im := range imports {
		m, ok := byModule[im.module]
		if !ok {
			d := exports[im.module]
			// A map entry takes about six times its 8 bytes of pairs.
			if err := budget.take(uint64(6 * len(d))); err != nil {
				return err
			}
			m = make(map[uint32]uint32, len(d)/8)
			for ; len(d) >= 8; d = d[8:] {
				m[le.Uint32(d)] = le.Uint32(d[4:])
			}
			byModule[im.module] = m
		}
		im.site.id = m[im.local]
	}
	return nil
}

// nameFunctions names the procedures of idx with their parameter lists
// from the TPI stream, and their inlined calls from the IPI stream's
// LF_FUNC_ID (its scope, its name, its parameters) and LF_MFUNC_ID (its
// class, its name, its parameters), as pdbNamer prints them; a call the
// IPI stream cannot name keeps its record's name. machine is the DBI
// stream's, for the size of a pointer. The streams read are taken from
// the reader's budget, the names kept from spend; a stream that is
// missing or damaged leaves the names as the records write them.
func (p *pdbReader) nameFunctions(idx *pdbIndex, machine uint16, spend func(int) error) error {
	stream := func(i uint64) (*pdbTypeIndex, error) {
		s, err := p.stream(i)
		if errors.Is(err, ErrBudget) {
			return nil, err
		}
		if err != nil {
			return nil, nil
		}
		return p.indexTypeRecords(s)
	}
	tpi, err := stream(2)
	if err != nil {
		return err
	}
	ipi, err := stream(4)
	if err != nil {
		return err
	}
	n := &pdbNamer{tpi: tpi, ipi: ipi, ptrSize: 4, types: map[uint32]string{}, args: map[uint32]string{}, spend: spend}
	switch machine {
	case 0x8664, 0xaa64, 0x200: // x86-64, ARM64, Itanium
		n.ptrSize = 8
	}
	keep := func(name string) (string, error) {
		return name, spend(48 + len(name))
	}
	le := binary.LittleEndian
	names := map[uint32]string{}
	for i := range idx.procs {
		pr := &idx.procs[i]
		typ := pr.typ
		if pr.isID {
			typ = 0
			if k, d, ok := ipi.record(pr.typ); ok && (k == 0x1601 || k == 0x1602) && len(d) >= 8 {
				typ = le.Uint32(d[4:])
			}
		}
		fn, err := keep(undecorateWindows(n.function(pr.name, typ)))
		if err != nil {
			return err
		}
		pr.fn = fn
		for k := range pr.sites {
			s := &pr.sites[k]
			name, ok := names[s.id]
			if !ok && s.id != 0 { // 0: an import no module exports
				name, ok = n.id(s.id)
				if !ok {
					if _, d, found := ipi.record(s.id); found && len(d) >= 8 {
						name = cutPDBName(cString(d[8:]))
					}
				}
				if name, err = keep(undecorateWindows(name)); err != nil {
					return err
				}
				names[s.id] = name
			}
			s.name = name
		}
	}
	return n.err
}

// skipNumericLeaf returns what follows a CodeView numeric leaf at the
// start of d.
func skipNumericLeaf(d []byte) ([]byte, bool) {
	if len(d) < 2 {
		return nil, false
	}
	v := binary.LittleEndian.Uint16(d)
	n := 0
	switch {
	case v < 0x8000:
	case v == 0x8000: // LF_CHAR
		n = 1
	case v == 0x8001 || v == 0x8002: // LF_SHORT, LF_USHORT
		n = 2
	case v == 0x8003 || v == 0x8004: // LF_LONG, LF_ULONG
		n = 4
	case v == 0x8009 || v == 0x800a: // LF_QUADWORD, LF_UQUADWORD
		n = 8
	default:
		return nil, false
	}
	if 2+n > len(d) {
		return nil, false
	}
	return d[2+n:], true
}

// cString is the bytes of b up to its first NUL.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// rangeAt is the range of the call's code that holds off, or nil.
func (s *pdbSite) rangeAt(off uint32) *pdbRange {
	for i := range s.ranges {
		if r := &s.ranges[i]; r.lo <= off && off < r.hi {
			return r
		}
	}
	return nil
}
