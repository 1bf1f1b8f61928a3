package dif

import (
	"debug/pe"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// maxDebugEntries bounds the entries of a PE debug directory that are read.
const maxDebugEntries = 64

// ReadPE reads the identity of a PE image (.exe, .dll): the debug id is the
// GUID and age of its CodeView (RSDS) record, which names the PDB that
// holds its debug information; the code id is its timestamp in 8 hex
// digits followed by its image size in hex, as Sentry and symbol servers
// name it.
//
// It reads the DOS header, the COFF header, the optional header and its
// first 16 data directories, the section headers (to map the debug
// directory's address; never the COFF symbol or string tables, names or
// relocations), at most maxDebugEntries debug directory entries and
// their CodeView records, within maxObjectRead bytes.
func ReadPE(r io.ReaderAt, size int64) (Object, error) {
	b := newBudgetReader(r, size)
	le := binary.LittleEndian
	base, coff, err := readPEHeader(b)
	if err != nil {
		return Object{}, err
	}
	machine, nsections, timestamp := le.Uint16(coff[4:]), uint64(le.Uint16(coff[6:])), le.Uint32(coff[8:])
	optSize, characteristics := uint64(le.Uint16(coff[20:])), le.Uint16(coff[22:])
	// The optional header: its fixed part, then NumberOfRvaAndSizes data
	// directories of 8 bytes, as many as it has room for.
	var opt [112 + 16*8]byte
	if optSize < 2 || b.readAt(opt[:min(optSize, uint64(len(opt)))], base+24) != nil {
		return Object{}, errors.New("dif: PE image has no optional header")
	}
	var imageSize uint32
	var fixed, ndirs uint64
	switch le.Uint16(opt[:]) {
	case 0x10b: // PE32
		fixed, imageSize, ndirs = 96, le.Uint32(opt[56:]), uint64(le.Uint32(opt[92:]))
	case 0x20b: // PE32+
		fixed, imageSize, ndirs = 112, le.Uint32(opt[56:]), uint64(le.Uint32(opt[108:]))
	default:
		return Object{}, errors.New("dif: PE image has no optional header")
	}
	if optSize < fixed {
		return Object{}, errors.New("dif: PE image's optional header is short")
	}
	ndirs = min(ndirs, 16, (optSize-fixed)/8)
	dir := func(i uint64) (rva, size uint32) {
		if i >= ndirs {
			return 0, 0
		}
		d := opt[fixed+8*i:]
		return le.Uint32(d), le.Uint32(d[4:])
	}
	o := Object{
		Kind:   "pe",
		CodeID: fmt.Sprintf("%08x%x", timestamp, imageSize),
		Arch:   peArch(machine),
		Type:   "exe",
	}
	if characteristics&pe.IMAGE_FILE_DLL != 0 {
		o.Type = "lib"
	}
	// Debug information of a PE image is in its PDB: DWARF sections that
	// some linkers leave in it are not counted, as Sentry does not.
	if _, n := dir(pe.IMAGE_DIRECTORY_ENTRY_EXPORT); n > 0 {
		o.Features = append(o.Features, "symtab")
	}
	if _, n := dir(pe.IMAGE_DIRECTORY_ENTRY_EXCEPTION); n > 0 {
		o.Features = append(o.Features, "unwind")
	}
	debugRVA, debugSize := dir(pe.IMAGE_DIRECTORY_ENTRY_DEBUG)
	if debugSize == 0 {
		return Object{}, ErrNoDebugID
	}
	// The section that holds the debug directory: the first whose raw
	// bytes cover its address.
	off, found := int64(0), false
	err = table{b: b, off: base + 24 + optSize, count: nsections, entSize: 40}.each(func(_ uint64, s []byte) bool {
		va, rawSize, rawOff := le.Uint32(s[12:]), le.Uint32(s[16:]), le.Uint32(s[20:])
		if debugRVA >= va && debugRVA-va < rawSize {
			off, found = int64(rawOff)+int64(debugRVA-va), true
			return false
		}
		return true
	})
	if err != nil || !found {
		return Object{}, ErrNoDebugID
	}
	for i := range min(debugSize/28, maxDebugEntries) {
		var e [28]byte
		if b.readAt(e[:], uint64(off)+uint64(i)*28) != nil {
			break
		}
		if le.Uint32(e[12:]) != 2 { // IMAGE_DEBUG_TYPE_CODEVIEW
			continue
		}
		var cv [24]byte
		if b.readAt(cv[:], uint64(le.Uint32(e[24:]))) != nil || string(cv[:4]) != "RSDS" {
			continue
		}
		o.DebugID = guidLE(cv[4:20])
		if age := le.Uint32(cv[20:]); age != 0 {
			o.DebugID += "-" + strconv.FormatUint(uint64(age), 16)
		}
		return o, nil
	}
	return Object{}, ErrNoDebugID
}

// readPEHeader reads a PE image's DOS header and, at the offset it gives
// (hdr), the PE signature and the COFF header (coff).
func readPEHeader(b *budgetReader) (hdr uint64, coff [24]byte, err error) {
	var dos [64]byte
	if err := b.readAt(dos[:], 0); err != nil || dos[0] != 'M' || dos[1] != 'Z' {
		return 0, coff, errors.New("dif: not a PE image")
	}
	hdr = uint64(binary.LittleEndian.Uint32(dos[0x3c:]))
	if err := b.readAt(coff[:], hdr); err != nil || string(coff[:4]) != "PE\x00\x00" {
		return 0, coff, errors.New("dif: not a PE image: no PE signature")
	}
	return hdr, coff, nil
}

func peArch(m uint16) string {
	switch m {
	case pe.IMAGE_FILE_MACHINE_I386:
		return "x86"
	case pe.IMAGE_FILE_MACHINE_AMD64:
		return "x86_64"
	case pe.IMAGE_FILE_MACHINE_ARM64:
		return "arm64"
	case pe.IMAGE_FILE_MACHINE_ARMNT, pe.IMAGE_FILE_MACHINE_ARM, pe.IMAGE_FILE_MACHINE_THUMB:
		return "arm"
	}
	return "unknown"
}
