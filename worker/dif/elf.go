package dif

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
)

// ErrNoBuildID reports an ELF object without a GNU build-id note.
var ErrNoBuildID = errors.New("dif: ELF object has no GNU build id")

// maxNoteSize bounds the bytes read from one note section.
const maxNoteSize = 64 << 10

// ReadELF reads the identity of the ELF object r of the given size. The debug
// id is the first 16 bytes of the GNU build id (zero-padded) read as a
// little-endian GUID, and the code id is the build id in hex, as Sentry
// computes them.
//
// It reads the header, the section headers one window at a time, the
// first bytes of each section's name and the note sections, within
// maxObjectRead bytes; it keeps no table. A section that is damaged (its
// name or its bytes outside the file) is passed over.
func ReadELF(r io.ReaderAt, size int64) (Object, error) {
	b := newBudgetReader(r, size)
	h, err := readELFHeader(b)
	if err != nil {
		return Object{}, err
	}
	// The first section of each name that the identity looks at, as
	// debug/elf's File.Section finds it.
	first := map[string]elfSection{}
	var id []byte
	var note []byte
	err = h.sections(b, elfIdentityName, func(s elfSection, name []byte) bool {
		if _, seen := first[string(name)]; !seen && slices.Contains(elfIdentityNames, string(name)) {
			first[string(name)] = s
		}
		if id == nil && s.Type == elf.SHT_NOTE && s.Size > 0 && s.Size <= maxNoteSize &&
			s.Flags&elf.SHF_COMPRESSED == 0 && s.inFile(size) {
			if note == nil {
				note = make([]byte, maxNoteSize)
			}
			if b.readAt(note[:s.Size], s.Offset) == nil {
				id = findGNUBuildID(note[:s.Size], h.order)
			}
		}
		return true
	})
	if err != nil {
		return Object{}, err
	}
	if id == nil {
		return Object{}, ErrNoBuildID
	}
	has := func(name string) bool {
		s, ok := first[name]
		return ok && s.Size > 0 && s.Type != elf.SHT_NOBITS
	}
	o := Object{
		Kind:    "elf",
		DebugID: guidLE(id),
		CodeID:  hex.EncodeToString(id),
		Arch:    elfArch(h.machine),
		Type:    elfType(h.typ),
	}
	// A stripped-off debug companion, whose code is gone, is "dbg".
	if text, ok := first[".text"]; ok && text.Type == elf.SHT_NOBITS {
		o.Type = "dbg"
	}
	if has(".debug_info") || has(".zdebug_info") {
		o.Features = append(o.Features, "debug")
	}
	if has(".symtab") || has(".dynsym") {
		o.Features = append(o.Features, "symtab")
	}
	if has(".eh_frame") || has(".debug_frame") {
		o.Features = append(o.Features, "unwind")
	}
	return o, nil
}

// elfIdentityNames are the section names ReadELF looks for, and
// elfIdentityName bounds the bytes it reads of a name: a longer name is
// none of them.
var elfIdentityNames = []string{".text", ".debug_info", ".zdebug_info", ".symtab", ".dynsym", ".eh_frame", ".debug_frame"}

const elfIdentityName = len(".zdebug_info") + 1

// elfType is the kind of object an ELF header's type says, as Sentry names
// it: a position-independent executable is a shared object, "lib", as
// Sentry's symbolic reads it.
func elfType(t elf.Type) string {
	switch t {
	case elf.ET_REL:
		return "rel"
	case elf.ET_EXEC:
		return "exe"
	case elf.ET_DYN:
		return "lib"
	case elf.ET_CORE:
		return "dump"
	}
	return ""
}

// Section is one entry of an ELF object's section table.
type Section struct {
	Name   string
	Type   elf.SectionType
	Flags  elf.SectionFlag
	Offset uint64
	Size   uint64
	Link   uint32 // sh_link: for a symbol table, its string table's index
	// Damaged is set when the section's name cannot be read (its offset
	// is outside the name table, or the name is longer than
	// maxSectionName) or its bytes are not all in the file (a type other
	// than SHT_NOBITS): it is listed, so that indexes hold, but not to
	// be served.
	Damaged bool
}

// ReadELFSections reads the section table of the ELF object r of the given
// size: every section, with its name read from the section name table one
// bounded name at a time. A table of more than maxELFSections sections,
// names of more than maxSectionNames bytes together or more than
// maxObjectRead bytes to read is ErrBudget.
func ReadELFSections(r io.ReaderAt, size int64) ([]Section, error) {
	b := newBudgetReader(r, size)
	h, err := readELFHeader(b)
	if err != nil {
		return nil, err
	}
	out := make([]Section, 0, h.shnum)
	names := 0
	err = h.sections(b, maxSectionName+1, func(s elfSection, name []byte) bool {
		names += len(name)
		if names > maxSectionNames {
			return false
		}
		out = append(out, Section{Name: string(name), Type: s.Type, Flags: s.Flags, Offset: s.Offset, Size: s.Size, Link: s.link,
			Damaged: name == nil || s.Type != elf.SHT_NOBITS && !s.inFile(size)})
		return true
	})
	switch {
	case err != nil:
		return nil, err
	case names > maxSectionNames:
		return nil, ErrBudget
	}
	return out, nil
}

// elfHeader is what the readers use of an ELF header.
type elfHeader struct {
	order     binary.ByteOrder
	is64      bool
	typ       elf.Type
	machine   elf.Machine
	shoff     uint64
	shentsize uint64
	shnum     uint64
	shstrndx  uint64
}

// elfSection is a section header as the readers use it.
type elfSection struct {
	nameOff uint32
	Type    elf.SectionType
	Flags   elf.SectionFlag
	Offset  uint64
	Size    uint64
	link    uint32
}

// inFile reports whether the section's bytes are all in a file of size
// bytes.
func (s elfSection) inFile(size int64) bool {
	return s.Offset <= uint64(size) && s.Size <= uint64(size)-s.Offset
}

// readELFHeader reads the ELF header, and the first section header when
// the section count or the name table's index does not fit in the header
// (extended numbering).
func readELFHeader(b *budgetReader) (elfHeader, error) {
	var raw [64]byte
	hdr := raw[:52]
	if b.size >= 64 {
		hdr = raw[:]
	}
	if err := b.readAt(hdr, 0); err != nil || string(hdr[:4]) != elf.ELFMAG || hdr[elf.EI_VERSION] != byte(elf.EV_CURRENT) {
		return elfHeader{}, errors.New("dif: not an ELF object")
	}
	var h elfHeader
	switch elf.Data(hdr[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
		h.order = binary.LittleEndian
	case elf.ELFDATA2MSB:
		h.order = binary.BigEndian
	default:
		return elfHeader{}, errors.New("dif: not an ELF object: unknown byte order")
	}
	o := h.order
	h.typ, h.machine = elf.Type(o.Uint16(hdr[16:])), elf.Machine(o.Uint16(hdr[18:]))
	switch elf.Class(hdr[elf.EI_CLASS]) {
	case elf.ELFCLASS32:
		h.shoff = uint64(o.Uint32(hdr[32:]))
		h.shentsize, h.shnum, h.shstrndx = uint64(o.Uint16(hdr[46:])), uint64(o.Uint16(hdr[48:])), uint64(o.Uint16(hdr[50:]))
		if h.shnum > 0 && h.shentsize < 40 {
			return elfHeader{}, errors.New("dif: not an ELF object: section header size")
		}
	case elf.ELFCLASS64:
		if len(hdr) < 64 {
			return elfHeader{}, errors.New("dif: not an ELF object: short header")
		}
		h.is64 = true
		h.shoff = o.Uint64(hdr[40:])
		h.shentsize, h.shnum, h.shstrndx = uint64(o.Uint16(hdr[58:])), uint64(o.Uint16(hdr[60:])), uint64(o.Uint16(hdr[62:]))
		if h.shnum > 0 && h.shentsize < 64 {
			return elfHeader{}, errors.New("dif: not an ELF object: section header size")
		}
	default:
		return elfHeader{}, errors.New("dif: not an ELF object: unknown class")
	}
	if h.shoff == 0 {
		h.shnum = 0
		return h, nil
	}
	if h.shnum == 0 || h.shstrndx == uint64(elf.SHN_XINDEX) {
		// Extended numbering: section 0 holds the count and the index.
		if h.shentsize < 40 {
			return elfHeader{}, errors.New("dif: not an ELF object: section header size")
		}
		var s0 elfSection
		err := table{b: b, off: h.shoff, count: 1, entSize: h.shentsize}.each(func(_ uint64, ent []byte) bool {
			s0 = h.section(ent)
			return false
		})
		if err != nil {
			return elfHeader{}, fmt.Errorf("dif: ELF section headers: %w", err)
		}
		if h.shnum == 0 {
			h.shnum = s0.Size
		}
		if h.shstrndx == uint64(elf.SHN_XINDEX) {
			h.shstrndx = uint64(s0.link)
		}
	}
	if h.shnum > maxELFSections {
		return elfHeader{}, ErrBudget
	}
	if h.shoff > uint64(b.size) || h.shnum*h.shentsize > uint64(b.size)-h.shoff {
		return elfHeader{}, errors.New("dif: ELF section headers are outside the file")
	}
	return h, nil
}

// section decodes the section header ent.
func (h elfHeader) section(ent []byte) elfSection {
	o := h.order
	if h.is64 {
		return elfSection{nameOff: o.Uint32(ent), Type: elf.SectionType(o.Uint32(ent[4:])), Flags: elf.SectionFlag(o.Uint64(ent[8:])),
			Offset: o.Uint64(ent[24:]), Size: o.Uint64(ent[32:]), link: o.Uint32(ent[40:])}
	}
	return elfSection{nameOff: o.Uint32(ent), Type: elf.SectionType(o.Uint32(ent[4:])), Flags: elf.SectionFlag(o.Uint32(ent[8:])),
		Offset: uint64(o.Uint32(ent[16:])), Size: uint64(o.Uint32(ent[20:])), link: o.Uint32(ent[24:])}
}

// smallNameTable is the largest section name table read whole; a larger
// one is read a name at a time.
const smallNameTable = 64 << 10

// sections calls fn with each section header and its name, read up to
// nameCap bytes with its NUL: nil when it cannot be read, or is longer.
// The name's bytes are valid until fn returns; fn returns false to stop.
func (h elfHeader) sections(b *budgetReader, nameCap int, fn func(s elfSection, name []byte) bool) error {
	// The section name table, when there is one in the file.
	var strtab elfSection
	var small []byte
	if h.shstrndx != 0 && h.shstrndx < h.shnum {
		err := table{b: b, off: h.shoff + h.shstrndx*h.shentsize, count: 1, entSize: h.shentsize}.each(func(_ uint64, ent []byte) bool {
			strtab = h.section(ent)
			return false
		})
		if err != nil {
			return fmt.Errorf("dif: ELF section headers: %w", err)
		}
		if strtab.Type != elf.SHT_STRTAB || !strtab.inFile(b.size) {
			strtab = elfSection{}
		}
		if strtab.Size <= smallNameTable {
			small = make([]byte, strtab.Size)
			if b.readAt(small, strtab.Offset) != nil {
				small, strtab = nil, elfSection{}
			}
		}
	}
	buf := make([]byte, nameCap)
	var spent error // the budget, spent reading a name
	name := func(off uint32) []byte {
		if uint64(off) >= strtab.Size {
			return nil
		}
		var n []byte
		if small != nil {
			n = small[off:min(uint64(len(small)), uint64(off)+uint64(nameCap))]
		} else {
			n = buf[:min(uint64(nameCap), strtab.Size-uint64(off))]
			if err := b.readAt(n, strtab.Offset+uint64(off)); err != nil {
				if errors.Is(err, ErrBudget) {
					spent = err
				}
				return nil
			}
		}
		if i := bytes.IndexByte(n, 0); i >= 0 {
			return n[:i:i]
		}
		return nil
	}
	err := table{b: b, off: h.shoff, count: h.shnum, entSize: h.shentsize}.each(func(_ uint64, ent []byte) bool {
		s := h.section(ent)
		n := name(s.nameOff)
		return spent == nil && fn(s, n)
	})
	if err == nil {
		err = spent
	}
	if err != nil {
		return fmt.Errorf("dif: ELF section headers: %w", err)
	}
	return nil
}

// findGNUBuildID walks the notes in data and returns the build id, or nil.
func findGNUBuildID(data []byte, order binary.ByteOrder) []byte {
	for len(data) >= 12 {
		namesz := uint64(order.Uint32(data[0:]))
		descsz := uint64(order.Uint32(data[4:]))
		typ := order.Uint32(data[8:])
		data = data[12:]
		nameEnd := align4(namesz)
		if nameEnd > uint64(len(data)) {
			return nil
		}
		name := data[:namesz]
		data = data[nameEnd:]
		descEnd := align4(descsz)
		if descsz > uint64(len(data)) {
			return nil
		}
		desc := data[:descsz]
		if typ == 3 && bytes.Equal(name, []byte("GNU\x00")) && descsz > 0 {
			return bytes.Clone(desc)
		}
		if descEnd > uint64(len(data)) {
			return nil
		}
		data = data[descEnd:]
	}
	return nil
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

func elfArch(m elf.Machine) string {
	switch m {
	case elf.EM_X86_64:
		return "x86_64"
	case elf.EM_386:
		return "x86"
	case elf.EM_AARCH64:
		return "arm64"
	case elf.EM_ARM:
		return "arm"
	case elf.EM_PPC64:
		return "ppc64"
	case elf.EM_PPC:
		return "ppc"
	case elf.EM_MIPS:
		return "mips"
	}
	return "unknown"
}
