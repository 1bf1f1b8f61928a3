package dif

import (
	"bytes"
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
func ReadPE(r io.ReaderAt, size int64) (Object, error) {
	f, err := pe.NewFile(io.NewSectionReader(r, 0, size))
	if err != nil {
		return Object{}, fmt.Errorf("dif: not a PE image: %w", err)
	}
	var imageSize uint32
	var dirs []pe.DataDirectory
	switch oh := f.OptionalHeader.(type) {
	case *pe.OptionalHeader32:
		imageSize, dirs = oh.SizeOfImage, oh.DataDirectory[:oh.NumberOfRvaAndSizes]
	case *pe.OptionalHeader64:
		imageSize, dirs = oh.SizeOfImage, oh.DataDirectory[:oh.NumberOfRvaAndSizes]
	default:
		return Object{}, errors.New("dif: PE image has no optional header")
	}
	o := Object{
		Kind:   "pe",
		CodeID: fmt.Sprintf("%08x%x", f.TimeDateStamp, imageSize),
		Arch:   peArch(f.Machine),
		Type:   "exe",
	}
	if f.Characteristics&pe.IMAGE_FILE_DLL != 0 {
		o.Type = "lib"
	}
	dir := func(i int) pe.DataDirectory {
		if i < len(dirs) {
			return dirs[i]
		}
		return pe.DataDirectory{}
	}
	// Debug information of a PE image is in its PDB: DWARF sections that
	// some linkers leave in it are not counted, as Sentry does not.
	if dir(pe.IMAGE_DIRECTORY_ENTRY_EXPORT).Size > 0 {
		o.Features = append(o.Features, "symtab")
	}
	if dir(pe.IMAGE_DIRECTORY_ENTRY_EXCEPTION).Size > 0 {
		o.Features = append(o.Features, "unwind")
	}
	debug := dir(pe.IMAGE_DIRECTORY_ENTRY_DEBUG)
	off, ok := rvaOffset(f, debug.VirtualAddress)
	if !ok || debug.Size == 0 {
		return Object{}, ErrNoDebugID
	}
	for i := range min(debug.Size/28, maxDebugEntries) {
		var e [28]byte
		if _, err := r.ReadAt(e[:], off+int64(i)*28); err != nil {
			break
		}
		if binary.LittleEndian.Uint32(e[12:]) != 2 { // IMAGE_DEBUG_TYPE_CODEVIEW
			continue
		}
		var cv [24]byte
		if _, err := r.ReadAt(cv[:], int64(binary.LittleEndian.Uint32(e[24:]))); err != nil {
			continue
		}
		if !bytes.Equal(cv[:4], []byte("RSDS")) {
			continue
		}
		o.DebugID = guidLE(cv[4:20])
		if age := binary.LittleEndian.Uint32(cv[20:]); age != 0 {
			o.DebugID += "-" + strconv.FormatUint(uint64(age), 16)
		}
		return o, nil
	}
	return Object{}, ErrNoDebugID
}

// rvaOffset maps a relative virtual address of f to its offset in the file.
func rvaOffset(f *pe.File, rva uint32) (int64, bool) {
	for _, s := range f.Sections {
		if rva >= s.VirtualAddress && rva-s.VirtualAddress < s.Size {
			return int64(s.Offset) + int64(rva-s.VirtualAddress), true
		}
	}
	return 0, false
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
