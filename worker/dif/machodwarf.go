package dif

import (
	"bytes"
	"debug/macho"
	"encoding/binary"
	"errors"
	"io"
	"sort"
)

// machoDWARFNames maps the Mach-O names of the DWARF sections (16 bytes at
// most) to the resolver's.
var machoDWARFNames = map[string]string{
	"__debug_abbrev": "abbrev", "__debug_info": "info", "__debug_line": "line", "__debug_str": "str",
	"__debug_ranges": "ranges", "__debug_addr": "addr", "__debug_line_str": "line_str",
	"__debug_str_offs": "str_offsets", "__debug_rnglists": "rnglists",
}

// ReadMachODWARF reads the DWARF of a thin 64-bit little-endian Mach-O
// object (a dSYM's, or an executable's own) and its symbol table into a
// Resolver, within the budgets of ReadELFDWARF. A fat file is an
// *UnsupportedError (ReadMachODWARFFor reads one of its architectures); an
// object without DWARF ErrNoDWARF.
func ReadMachODWARF(r io.ReaderAt, size int64) (*Resolver, error) {
	b := newBudgetReader(r, size)
	var hdr [32]byte
	if err := b.readAt(hdr[:], 0); err != nil {
		return nil, errors.New("dif: not a Mach-O object")
	}
	le := binary.LittleEndian
	switch {
	case le.Uint32(hdr[:]) == macho.Magic64:
	case isMachO(hdr[:]):
		return nil, &UnsupportedError{Reason: "only thin 64-bit little-endian Mach-O objects are read"}
	default:
		return nil, errors.New("dif: not a Mach-O object")
	}
	ncmds, cmdsSize := uint64(le.Uint32(hdr[16:])), uint64(le.Uint32(hdr[20:]))
	if cmdsSize > maxMachOCommands || ncmds > cmdsSize/8 {
		return nil, ErrBudget
	}
	if 32+cmdsSize > uint64(size) {
		return nil, errors.New("dif: Mach-O load commands are outside the file")
	}
	found := map[string][2]uint64{} // resolver name -> offset, size
	var symoff, nsyms, stroff, strsize uint64
	var secEnds []uint64 // the end address of each section, by n_sect - 1
	var lc [24]byte
	for i, at, end := uint64(0), uint64(32), 32+cmdsSize; i < ncmds && at+8 <= end; i++ {
		if err := b.readAt(lc[:8], at); err != nil {
			return nil, err
		}
		cmd, cmdSize := macho.LoadCmd(le.Uint32(lc[:])), uint64(le.Uint32(lc[4:]))
		if cmdSize < 8 || cmdSize > end-at {
			break
		}
		switch {
		case cmd == macho.LoadCmdSymtab && cmdSize >= 24:
			if err := b.readAt(lc[:24], at); err != nil {
				return nil, err
			}
			symoff, nsyms, stroff, strsize = uint64(le.Uint32(lc[8:])), uint64(le.Uint32(lc[12:])), uint64(le.Uint32(lc[16:])), uint64(le.Uint32(lc[20:]))
		case cmd == macho.LoadCmdSegment64 && cmdSize >= 72:
			var n [4]byte
			if err := b.readAt(n[:], at+64); err != nil {
				return nil, err
			}
			nsects := min(uint64(le.Uint32(n[:])), (cmdSize-72)/80)
			err := table{b: b, off: at + 72, count: nsects, entSize: 80}.each(func(_ uint64, s []byte) bool {
				name := s[:16]
				if k := bytes.IndexByte(name, 0); k >= 0 {
					name = name[:k]
				}
				key, ok := machoDWARFNames[string(name)]
				sz, off := le.Uint64(s[40:]), uint64(le.Uint32(s[48:]))
				if len(secEnds) < 255 {
					secEnds = append(secEnds, le.Uint64(s[32:])+sz)
				}
				if _, seen := found[key]; ok && !seen && sz > 0 && off <= uint64(size) && sz <= uint64(size)-off {
					found[key] = [2]uint64{off, sz}
				}
				return true
			})
			if err != nil {
				return nil, err
			}
		}
		at += cmdSize
	}
	budget := dwarfBudget(size)
	data, err := readRawDWARF(r, found, budget)
	if err != nil {
		return nil, err
	}
	syms, err := readMachOSymbols(r, size, symoff, nsyms, stroff, strsize, secEnds, budget)
	if err != nil {
		return nil, err
	}
	res, err := buildResolver(data)
	if err != nil {
		return nil, err
	}
	res.syms = syms
	res.size += int64(24*len(syms.syms) + len(syms.strtab))
	return res, nil
}

// readMachOSymbols reads the section symbols (not debugging entries) of a
// 64-bit Mach-O symbol table, their names without the leading underscore
// that Mach-O adds, as llvm-symbolizer names them.
func readMachOSymbols(r io.ReaderAt, size int64, symoff, nsyms, stroff, strsize uint64, secEnds []uint64, budget *sectionBudget) (symbols, error) {
	if nsyms == 0 || symoff > uint64(size) || nsyms > (uint64(size)-symoff)/16 || stroff > uint64(size) || strsize > uint64(size)-stroff {
		return symbols{}, nil
	}
	if err := budget.take(nsyms*16 + strsize); err != nil {
		return symbols{}, err
	}
	raw := make([]byte, nsyms*16)
	if _, err := r.ReadAt(raw, int64(symoff)); err != nil {
		return symbols{}, err
	}
	out := symbols{strtab: make([]byte, strsize)}
	if _, err := r.ReadAt(out.strtab, int64(stroff)); err != nil {
		return symbols{}, err
	}
	le := binary.LittleEndian
	sects := map[uint64]uint8{} // address -> n_sect
	for p := 0; p+16 <= len(raw); p += 16 {
		e := raw[p : p+16]
		strx, typ := le.Uint32(e), e[4]
		if typ&0xe0 != 0 || typ&0x0e != 0x0e || uint64(strx) >= strsize { // N_STAB, or not N_SECT
			continue
		}
		if out.strtab[strx] == '_' {
			strx++
		}
		out.syms = append(out.syms, symbol{addr: le.Uint64(e[8:]), name: strx})
		sects[le.Uint64(e[8:])] = e[5]
	}
	sort.SliceStable(out.syms, func(i, j int) bool { return out.syms[i].addr < out.syms[j].addr })
	// Sizes as llvm computes them: up to the next symbol of the section,
	// or its end.
	for i := range out.syms {
		s := &out.syms[i]
		if i+1 < len(out.syms) && sects[out.syms[i+1].addr] == sects[s.addr] {
			s.size = out.syms[i+1].addr - s.addr
		} else if n := int(sects[s.addr]); n >= 1 && n <= len(secEnds) && secEnds[n-1] > s.addr {
			s.size = secEnds[n-1] - s.addr
		}
	}
	return out, nil
}

// readRawDWARF reads the uncompressed DWARF sections found (keyed without
// ".debug_", each at its offset and size in r) within budget, before
// allocating for each. Without .debug_info it is ErrNoDWARF.
func readRawDWARF(r io.ReaderAt, found map[string][2]uint64, budget *sectionBudget) (map[string][]byte, error) {
	if _, ok := found["info"]; !ok {
		return nil, ErrNoDWARF
	}
	data := map[string][]byte{}
	for key, s := range found {
		if err := budget.take(s[1]); err != nil {
			return nil, err
		}
		buf := make([]byte, s[1])
		if _, err := r.ReadAt(buf, int64(s[0])); err != nil {
			return nil, err
		}
		data[key] = buf
	}
	return data, nil
}
