package diftest

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// Section is a section of ELFWith: of type SHT_PROGBITS unless Type says.
type Section struct {
	Name  string
	Type  elf.SectionType
	Flags elf.SectionFlag
	Data  []byte
}

// ELFWith builds a little-endian ELF64 object holding secs.
func ELFWith(secs ...Section) []byte {
	le := binary.LittleEndian
	var body bytes.Buffer
	body.Write(make([]byte, 64))
	shstr := []byte{0}
	type hdr struct {
		name   uint32
		typ    elf.SectionType
		flags  elf.SectionFlag
		off    uint64
		size   uint64
		offset int
	}
	hdrs := []hdr{{}}
	for _, s := range secs {
		typ := s.Type
		if typ == 0 {
			typ = elf.SHT_PROGBITS
		}
		hdrs = append(hdrs, hdr{name: uint32(len(shstr)), typ: typ, flags: s.Flags, off: uint64(body.Len()), size: uint64(len(s.Data))})
		shstr = append(append(shstr, s.Name...), 0)
		body.Write(s.Data)
	}
	hdrs = append(hdrs, hdr{name: uint32(len(shstr)), typ: elf.SHT_STRTAB, off: uint64(body.Len())})
	shstr = append(append(shstr, ".shstrtab"...), 0)
	hdrs[len(hdrs)-1].size = uint64(len(shstr))
	body.Write(shstr)
	shoff := body.Len()
	for _, h := range hdrs {
		var e [64]byte
		le.PutUint32(e[0:], h.name)
		le.PutUint32(e[4:], uint32(h.typ))
		le.PutUint64(e[8:], uint64(h.flags))
		le.PutUint64(e[24:], h.off)
		le.PutUint64(e[32:], h.size)
		body.Write(e[:])
	}
	b := body.Bytes()
	copy(b, elf.ELFMAG)
	b[elf.EI_CLASS], b[elf.EI_DATA], b[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	le.PutUint16(b[16:], uint16(elf.ET_DYN))
	le.PutUint16(b[18:], uint16(elf.EM_X86_64))
	le.PutUint64(b[40:], uint64(shoff))
	le.PutUint16(b[58:], 64)
	le.PutUint16(b[60:], uint16(len(hdrs)))
	le.PutUint16(b[62:], uint16(len(hdrs)-1))
	return b
}

// BuildIDNote is a .note.gnu.build-id section of id.
func BuildIDNote(id []byte) Section {
	le := binary.LittleEndian
	note := le.AppendUint32(nil, 4)
	note = le.AppendUint32(note, uint32(len(id)))
	note = le.AppendUint32(note, 3) // NT_GNU_BUILD_ID
	note = append(append(note, "GNU\x00"...), id...)
	return Section{Name: ".note.gnu.build-id", Type: elf.SHT_NOTE, Data: note}
}

// HostileUnits describes a DWARF file of units that all point at one line
// program (as the audit's files did): each unit names its compilation
// directory, and holds one function of 16 bytes at FuncBase+32*i when
// FuncBase is not 0. Its units give no range (rangeless) unless Ranged.
type HostileUnits struct {
	Units    int
	CompDir  func(i int) string
	FuncBase uint64
	Ranged   bool
	Line     []byte          // the .debug_line section: the program at offset 0
	StmtList func(i int) int // the offset of unit i's line program, when not 0
	BuildID  []byte          // the GNU build id of the object, when not nil
}

// ELF builds the ELF object of h.
func (h HostileUnits) ELF() []byte {
	le := binary.LittleEndian
	abbrev := []byte{
		1, 0x11, 1, 0x10, 0x17, 0x1b, 0x08, 0, 0, // compile unit, children: stmt_list, comp_dir string
		2, 0x2e, 0, 0x11, 0x01, 0x12, 0x06, 0x03, 0x08, 0, 0, // subprogram: low_pc, high_pc data4, name
		3, 0x11, 1, 0x10, 0x17, 0x1b, 0x08, 0x11, 0x01, 0x12, 0x06, 0, 0, // compile unit with low_pc, high_pc
		0,
	}
	var info []byte
	for i := range h.Units {
		dir := "/c"
		if h.CompDir != nil {
			dir = h.CompDir(i)
		}
		lo := h.FuncBase + 32*uint64(i)
		stmt := 0
		if h.StmtList != nil {
			stmt = h.StmtList(i)
		}
		var dies []byte
		if h.Ranged {
			dies = le.AppendUint32([]byte{3}, uint32(stmt))
			dies = append(append(dies, dir...), 0)
			dies = le.AppendUint32(le.AppendUint64(dies, lo), 16)
		} else {
			dies = le.AppendUint32([]byte{1}, uint32(stmt))
			dies = append(append(dies, dir...), 0)
		}
		if h.FuncBase != 0 {
			dies = le.AppendUint32(le.AppendUint64(append(dies, 2), lo), 16)
			dies = append(dies, fmt.Sprintf("f%d\x00", i)...)
		}
		dies = append(dies, 0)
		u := le.AppendUint32(nil, uint32(2+4+1+len(dies)))
		u = le.AppendUint16(u, 4)
		u = le.AppendUint32(u, 0)
		info = append(info, append(append(u, 8), dies...)...)
	}
	secs := []Section{{Name: ".debug_info", Data: info}, {Name: ".debug_abbrev", Data: abbrev},
		{Name: ".debug_line", Data: h.Line}}
	if h.BuildID != nil {
		secs = append(secs, BuildIDNote(h.BuildID))
	}
	return ELFWith(secs...)
}

// LineSection is a DWARF 4 line table: the directories and files given
// (each file in directory 1 when there is one), then program.
func LineSection(dirs, files []string, program []byte) []byte {
	le := binary.LittleEndian
	hdr := []byte{1, 1, 1, 0xfb, 14, 13, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1}
	for _, d := range dirs {
		hdr = append(append(hdr, d...), 0)
	}
	hdr = append(hdr, 0)
	for _, f := range files {
		hdr = append(append(hdr, f...), 0, byte(min(len(dirs), 1)), 0, 0)
	}
	hdr = append(hdr, 0)
	b := le.AppendUint32(nil, uint32(2+4+len(hdr)+len(program)))
	b = le.AppendUint16(b, 4)
	b = le.AppendUint32(b, uint32(len(hdr)))
	return append(append(b, hdr...), program...)
}

// SharedPrograms is a .debug_line section of n line table headers, one
// after the other (headerLen bytes each), that all lead to the one program
// after them.
func SharedPrograms(n int, program []byte) (section []byte, headerLen int) {
	le := binary.LittleEndian
	fields := []byte{1, 1, 1, 0xfb, 14, 13, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1, 0, 'a', '.', 'c', 0, 0, 0, 0, 0}
	headerLen = 4 + 2 + 4 + len(fields)
	total := n*headerLen + len(program)
	for i := range n {
		section = le.AppendUint32(section, uint32(total-i*headerLen-4))
		section = le.AppendUint16(section, 4)
		section = le.AppendUint32(section, uint32(total-i*headerLen-10-len(program)))
		section = append(section, fields...)
	}
	return append(section, program...), headerLen
}

// SetAddress is DW_LNE_set_address.
func SetAddress(addr uint64) []byte {
	return binary.LittleEndian.AppendUint64([]byte{0, 9, 2}, addr)
}

// EndSequence is DW_LNE_end_sequence: 3 bytes.
var EndSequence = []byte{0, 1, 1}

// Sequences is a program of n sequences of rows rows each from 0x1000
// (special opcodes: an address and a line further each).
func Sequences(n, rows int) []byte {
	var p []byte
	for i := range n {
		p = append(p, SetAddress(0x1000+uint64(i)*uint64(rows+1)*16)...)
		p = append(p, bytes.Repeat([]byte{0x20}, rows)...)
		p = append(p, EndSequence...)
	}
	return p
}
