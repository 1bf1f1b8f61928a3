package dif

import (
	"debug/elf"
	"io"
	"sort"
)

// symbols is an ELF symbol table as llvm-symbolizer uses it: the function
// and data symbols defined in a section, sorted by address and size, their
// names kept in the string table they point into.
type symbols struct {
	syms   []symbol
	strtab []byte
}

type symbol struct {
	addr, size uint64
	name       uint32 // offset in strtab
}

// readELFSymbols reads .symtab, or .dynsym without it, and its string
// table, both taken from budget. No symbol table is no symbols.
func readELFSymbols(r io.ReaderAt, h elfHeader, secs []Section, budget *sectionBudget) (symbols, error) {
	var tab *Section
	for _, want := range []string{".symtab", ".dynsym"} {
		for i := range secs {
			s := &secs[i]
			if s.Name == want && !s.Damaged && s.Type != elf.SHT_NOBITS && s.Flags&elf.SHF_COMPRESSED == 0 {
				tab = s
				break
			}
		}
		if tab != nil {
			break
		}
	}
	if tab == nil || int(tab.Link) >= len(secs) {
		return symbols{}, nil
	}
	str := secs[tab.Link]
	if str.Damaged || str.Type != elf.SHT_STRTAB || str.Flags&elf.SHF_COMPRESSED != 0 {
		return symbols{}, nil
	}
	if err := budget.take(tab.Size); err != nil {
		return symbols{}, err
	}
	if err := budget.take(str.Size); err != nil {
		return symbols{}, err
	}
	entSize := uint64(24)
	if !h.is64 {
		entSize = 16
	}
	raw := make([]byte, tab.Size-tab.Size%entSize)
	if _, err := r.ReadAt(raw, int64(tab.Offset)); err != nil {
		return symbols{}, err
	}
	out := symbols{strtab: make([]byte, str.Size)}
	if _, err := r.ReadAt(out.strtab, int64(str.Offset)); err != nil {
		return symbols{}, err
	}
	o := h.order
	for p := uint64(0); p+entSize <= uint64(len(raw)); p += entSize {
		e := raw[p : p+entSize]
		var s symbol
		var info byte
		var shndx uint16
		if h.is64 {
			s.name, info, shndx, s.addr, s.size = o.Uint32(e), e[4], o.Uint16(e[6:]), o.Uint64(e[8:]), o.Uint64(e[16:])
		} else {
			s.name, s.addr, s.size, info, shndx = o.Uint32(e), uint64(o.Uint32(e[4:])), uint64(o.Uint32(e[8:])), e[12], o.Uint16(e[14:])
		}
		switch elf.SymType(info & 0xf) {
		case elf.STT_FUNC, elf.STT_GNU_IFUNC, elf.STT_OBJECT, elf.STT_COMMON:
		default:
			continue
		}
		if shndx == uint16(elf.SHN_UNDEF) || uint64(s.name) >= str.Size {
			continue
		}
		out.syms = append(out.syms, s)
	}
	sort.SliceStable(out.syms, func(i, j int) bool {
		a, b := out.syms[i], out.syms[j]
		if a.addr != b.addr {
			return a.addr < b.addr
		}
		return a.size < b.size
	})
	return out, nil
}

// lookup is the symbol at addr as llvm-symbolizer finds it: the last one
// that starts at or before addr, unless it has a size that ends before.
func (t symbols) lookup(addr uint64) (name string, start uint64, ok bool) {
	i := sort.Search(len(t.syms), func(i int) bool { return t.syms[i].addr > addr })
	if i == 0 {
		return "", 0, false
	}
	s := t.syms[i-1]
	if s.size != 0 && s.addr+s.size <= addr {
		return "", 0, false
	}
	b := t.strtab[s.name:]
	for k, c := range b {
		if c == 0 {
			b = b[:k]
			break
		}
	}
	return string(b), s.addr, true
}
