package dif

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"sort"
)

// peDWARF is the DWARF of a PE image (MinGW's, or any linker's that keeps
// the .debug_* sections): its addresses are virtual addresses, the image
// base plus the relative addresses a resolution asks for.
type peDWARF struct {
	res  *Resolver
	base uint64
}

// resolve resolves a relative virtual address.
func (p *peDWARF) resolve(w *Work, addr uint64) ([]Frame, bool, error) {
	frames, ok, err := p.res.ResolveWork(w, addr+p.base)
	for i := range frames {
		if frames[i].SymAddr >= p.base {
			frames[i].SymAddr -= p.base
		}
	}
	return frames, ok, err
}

// ReadPEDWARF reads the DWARF sections that a PE image holds (.debug_info
// and the others ReadELFDWARF reads, their long names taken from the COFF
// string table) into a Resolver answering relative virtual addresses, as
// a PDB's does, the outermost frame named by the COFF symbol table's
// function symbols when it has them, as llvm-symbolizer names it. It reads
// the headers and the section table within maxObjectRead bytes (at most
// 65,535 sections, 32 bytes of a long name: more than any DWARF section's),
// keeping 16 bytes a section; the DWARF sections, the symbol table and its
// string table within the DWARF budget of ReadELFDWARF, and indexes them
// within its index budget. An image without .debug_info is ErrNoDWARF;
// compressed sections (.zdebug_*) are not read.
func ReadPEDWARF(r io.ReaderAt, size int64) (*Resolver, error) {
	b := newBudgetReader(r, size)
	le := binary.LittleEndian
	hdr, coff, err := readPEHeader(b)
	if err != nil {
		return nil, err
	}
	nsections, symtab, nsyms := uint64(le.Uint16(coff[6:])), uint64(le.Uint32(coff[12:])), uint64(le.Uint32(coff[16:]))
	optSize := uint64(le.Uint16(coff[20:]))
	var opt [32]byte
	if optSize < 32 || b.readAt(opt[:], hdr+24) != nil {
		return nil, errors.New("dif: PE image has no optional header")
	}
	var base uint64
	switch le.Uint16(opt[:]) {
	case 0x10b: // PE32
		base = uint64(le.Uint32(opt[28:]))
	case 0x20b: // PE32+
		base = le.Uint64(opt[24:])
	default:
		return nil, errors.New("dif: PE image has no optional header")
	}
	// name reads a section's name into buf: its 8 bytes, or the string
	// table's bytes at the decimal offset after "/" that a longer name
	// is. No DWARF section's name is longer than buf.
	strtab := symtab + 18*nsyms
	var buf [32]byte
	name := func(raw []byte) []byte {
		n := raw[:8]
		if k := bytes.IndexByte(n, 0); k >= 0 {
			n = n[:k]
		}
		if len(n) < 2 || n[0] != '/' || symtab == 0 {
			return n
		}
		var off uint64
		for _, d := range n[1:] {
			if d < '0' || d > '9' {
				return nil
			}
			off = off*10 + uint64(d-'0')
		}
		at := strtab + off
		if at >= uint64(size) {
			return nil
		}
		k := min(uint64(len(buf)), uint64(size)-at)
		if b.readAt(buf[:k], at) != nil {
			return nil
		}
		if i := bytes.IndexByte(buf[:k], 0); i >= 0 {
			return buf[:i]
		}
		return nil
	}
	secs := make([][2]uint64, 0, nsections) // the start and end of each section, by section number - 1
	wanted := map[string]bool{}
	for _, n := range dwarfSectionNames {
		wanted[n] = true
	}
	found := map[string][2]uint64{} // resolver name -> offset, size
	err = table{b: b, off: hdr + 24 + optSize, count: nsections, entSize: 40}.each(func(_ uint64, s []byte) bool {
		va := base + uint64(le.Uint32(s[12:]))
		secs = append(secs, [2]uint64{va, va + uint64(le.Uint32(s[8:]))})
		key, ok := bytes.CutPrefix(name(s), []byte(".debug_"))
		if !ok || !wanted[string(key)] {
			return true
		}
		virtSize, rawSize, rawOff := uint64(le.Uint32(s[8:])), uint64(le.Uint32(s[16:])), uint64(le.Uint32(s[20:]))
		n := rawSize // raw bytes are padded to the file alignment
		if virtSize > 0 && virtSize < n {
			n = virtSize
		}
		if _, seen := found[string(key)]; !seen && n > 0 && rawOff <= uint64(size) && n <= uint64(size)-rawOff {
			found[string(key)] = [2]uint64{rawOff, n}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	budget := dwarfBudget(size)
	data, err := readRawDWARF(r, found, budget)
	if err != nil {
		return nil, err
	}
	syms, err := readCOFFSymbols(r, size, symtab, nsyms, secs, budget)
	if err != nil {
		return nil, err
	}
	inner, err := buildResolver(data)
	if err != nil {
		return nil, err
	}
	inner.syms = syms
	inner.size += int64(24*len(syms.syms) + len(syms.strtab))
	return &Resolver{pe: &peDWARF{res: inner, base: base}}, nil
}

// readCOFFSymbols reads the function symbols defined in a section of a PE
// image's COFF symbol table, at their virtual addresses (secs holds each
// section's start and end), their sizes up to the next symbol of their
// section or its end, as llvm-symbolizer sizes them. The table and its
// string table are taken from budget; short names are copied after the
// string table.
func readCOFFSymbols(r io.ReaderAt, size int64, symtab, nsyms uint64, secs [][2]uint64, budget *sectionBudget) (symbols, error) {
	if symtab == 0 || nsyms == 0 || symtab > uint64(size) || nsyms > (uint64(size)-symtab)/18 {
		return symbols{}, nil
	}
	le := binary.LittleEndian
	strOff := symtab + 18*nsyms
	var strSize uint64
	var word [4]byte
	if strOff+4 <= uint64(size) {
		if _, err := r.ReadAt(word[:], int64(strOff)); err == nil {
			strSize = uint64(le.Uint32(word[:]))
		}
	}
	if strSize < 4 || strSize > uint64(size)-strOff {
		strSize = 0
	}
	if err := budget.take(18*nsyms + strSize + 9*nsyms); err != nil {
		return symbols{}, err
	}
	raw := make([]byte, 18*nsyms)
	if _, err := r.ReadAt(raw, int64(symtab)); err != nil {
		return symbols{}, err
	}
	out := symbols{strtab: make([]byte, strSize, strSize+9*nsyms)}
	if _, err := r.ReadAt(out.strtab, int64(strOff)); err != nil {
		return symbols{}, err
	}
	type secSym struct {
		symbol
		sect int
	}
	var found []secSym
	for i := uint64(0); i < nsyms; i++ {
		e := raw[18*i : 18*i+18]
		value, sect, typ, aux := uint64(le.Uint32(e[8:])), int(int16(le.Uint16(e[12:]))), le.Uint16(e[14:]), uint64(e[17])
		i += aux
		if sect <= 0 || sect > len(secs) || typ&0xf0 != 0x20 { // defined in a section, a function
			continue
		}
		var name uint32
		if le.Uint32(e) == 0 { // a long name: its offset in the string table
			off := le.Uint32(e[4:])
			if uint64(off) >= strSize {
				continue
			}
			name = off
		} else {
			short := e[:8]
			if k := bytes.IndexByte(short, 0); k >= 0 {
				short = short[:k]
			}
			name = uint32(len(out.strtab))
			out.strtab = append(append(out.strtab, short...), 0)
		}
		found = append(found, secSym{symbol{addr: secs[sect-1][0] + value, name: name}, sect})
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].addr < found[j].addr })
	out.syms = make([]symbol, len(found))
	for i, s := range found {
		out.syms[i] = s.symbol
		if i+1 < len(found) && found[i+1].sect == s.sect {
			out.syms[i].size = found[i+1].addr - s.addr
		} else if end := secs[s.sect-1][1]; end > s.addr {
			out.syms[i].size = end - s.addr
		}
	}
	return out, nil
}
