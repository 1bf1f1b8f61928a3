package dif

import (
	"bytes"
	"debug/macho"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// maxFatArches bounds the architectures of a fat Mach-O.
const maxFatArches = 64

// isMachO reports whether head starts like a Mach-O object, thin or fat. A
// fat header's magic is also a Java class file's: a fat file has few
// architectures, a class file a large version number there.
func isMachO(head []byte) bool {
	if len(head) < 8 {
		return false
	}
	switch binary.BigEndian.Uint32(head) {
	case macho.Magic32, macho.Magic64:
		return true
	case macho.MagicFat:
		n := binary.BigEndian.Uint32(head[4:])
		return n > 0 && n <= maxFatArches
	}
	switch binary.LittleEndian.Uint32(head) {
	case macho.Magic32, macho.Magic64:
		return true
	}
	return false
}

// ReadMachO reads the objects of a Mach-O file, one per architecture of a
// fat file. The debug id is the LC_UUID of each, as it is (Mach-O UUIDs
// are not byte-swapped), and the code id the same UUID in hex.
//
// It reads the fat header (at most maxFatArches architectures), each
// object's header and its load commands (at most maxMachOCommands bytes),
// a command header at a time, and of them only LC_UUID, the section
// headers of LC_SEGMENT(_64) and LC_SYMTAB's symbol count: never the
// symbol table. Each object is read within maxObjectRead bytes.
func ReadMachO(r io.ReaderAt, size int64) ([]Object, error) {
	arches, fat, err := readFatArches(r, size)
	if err != nil {
		return nil, err
	}
	if !fat {
		o, err := machoObject(io.NewSectionReader(r, 0, size), size)
		if err != nil {
			return nil, err
		}
		return []Object{o}, nil
	}
	var objs []Object
	seen := map[uint64]bool{}
	for i, a := range arches {
		if seen[a.cpu] {
			return nil, fmt.Errorf("dif: fat Mach-O architecture %d is a duplicate", i)
		}
		seen[a.cpu] = true
		o, err := machoObject(io.NewSectionReader(r, a.off, a.length), a.length)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// fatArch is an architecture of a fat Mach-O file: its CPU type and
// subtype, and where its object lies in the file.
type fatArch struct {
	cpu         uint64
	off, length int64
}

// readFatArches reads the architectures of r when it is a fat Mach-O file
// (fat is false for any other file): at most maxFatArches, each within the
// file.
func readFatArches(r io.ReaderAt, size int64) (arches []fatArch, fat bool, err error) {
	var head [8]byte
	if _, err := r.ReadAt(head[:], 0); err != nil {
		return nil, false, fmt.Errorf("dif: not a Mach-O object: %w", err)
	}
	if binary.BigEndian.Uint32(head[:]) != macho.MagicFat {
		return nil, false, nil
	}
	n := binary.BigEndian.Uint32(head[4:])
	if n == 0 || n > maxFatArches {
		return nil, true, fmt.Errorf("dif: a fat Mach-O of %d architectures", n)
	}
	raw := make([]byte, 20*n)
	if _, err := r.ReadAt(raw, 8); err != nil {
		return nil, true, fmt.Errorf("dif: not a fat Mach-O object: %w", err)
	}
	for i := range n {
		a := raw[20*i:]
		off, length := int64(binary.BigEndian.Uint32(a[8:])), int64(binary.BigEndian.Uint32(a[12:]))
		if off > size || length > size-off {
			return nil, true, fmt.Errorf("dif: fat Mach-O architecture %d is outside the file", i)
		}
		arches = append(arches, fatArch{cpu: binary.BigEndian.Uint64(a), off: off, length: length})
	}
	return arches, true, nil
}

// lcUUID is the load command that carries a Mach-O object's UUID.
const lcUUID = 0x1b

// machoObject reads the identity of the thin Mach-O object r of size bytes.
func machoObject(r io.ReaderAt, size int64) (Object, error) {
	b := newBudgetReader(r, size)
	var hdr [28]byte
	if err := b.readAt(hdr[:], 0); err != nil {
		return Object{}, errors.New("dif: not a Mach-O object")
	}
	var order binary.ByteOrder
	var hdrSize uint64
	switch magic := binary.BigEndian.Uint32(hdr[:]); {
	case magic == macho.Magic32:
		order, hdrSize = binary.BigEndian, 28
	case magic == macho.Magic64:
		order, hdrSize = binary.BigEndian, 32
	case binary.LittleEndian.Uint32(hdr[:]) == macho.Magic32:
		order, hdrSize = binary.LittleEndian, 28
	case binary.LittleEndian.Uint32(hdr[:]) == macho.Magic64:
		order, hdrSize = binary.LittleEndian, 32
	default:
		return Object{}, errors.New("dif: not a Mach-O object")
	}
	cpu, subCPU, typ := macho.Cpu(order.Uint32(hdr[4:])), order.Uint32(hdr[8:]), macho.Type(order.Uint32(hdr[12:]))
	ncmds, cmdsSize := uint64(order.Uint32(hdr[16:])), uint64(order.Uint32(hdr[20:]))
	if cmdsSize > maxMachOCommands || ncmds > cmdsSize/8 {
		return Object{}, ErrBudget
	}
	if hdrSize > uint64(size) || cmdsSize > uint64(size)-hdrSize {
		return Object{}, errors.New("dif: Mach-O load commands are outside the file")
	}
	var id []byte
	var symtab bool
	sections := map[string]bool{} // names of the sections that have bytes
	var lc [8]byte
	var raw [80]byte
	for i, at, end := uint64(0), hdrSize, hdrSize+cmdsSize; i < ncmds; i++ {
		if at+8 > end {
			break // damaged: the commands that fit are read
		}
		if err := b.readAt(lc[:], at); err != nil {
			return Object{}, err
		}
		cmd, cmdSize := order.Uint32(lc[:]), uint64(order.Uint32(lc[4:]))
		if cmdSize < 8 || cmdSize > end-at {
			break
		}
		var err error
		switch macho.LoadCmd(cmd) {
		case lcUUID:
			if id == nil && cmdSize >= 24 {
				err = b.readAt(raw[:16], at+8)
				id = bytes.Clone(raw[:16])
			}
		case macho.LoadCmdSymtab:
			if cmdSize >= 24 {
				err = b.readAt(raw[:24], at)
				symtab = symtab || order.Uint32(raw[12:]) > 0 // nsyms
			}
		case macho.LoadCmdSegment, macho.LoadCmdSegment64:
			err = machoSections(b, order, macho.LoadCmd(cmd) == macho.LoadCmdSegment64, at, cmdSize, sections)
		}
		if err != nil {
			return Object{}, err
		}
		at += cmdSize
	}
	if id == nil || bytes.Equal(id, make([]byte, 16)) {
		return Object{}, errors.New("dif: Mach-O object has no LC_UUID")
	}
	var u [16]byte
	copy(u[:], id)
	o := Object{
		Kind: "macho", DebugID: formatGUID(u), CodeID: hex.EncodeToString(id),
		Arch: machoArch(cpu, subCPU), Type: machoType(typ),
	}
	if sections["__debug_info"] {
		o.Features = append(o.Features, "debug")
	}
	if symtab {
		o.Features = append(o.Features, "symtab")
	}
	if sections["__eh_frame"] || sections["__unwind_info"] || sections["__debug_frame"] {
		o.Features = append(o.Features, "unwind")
	}
	return o, nil
}

// machoSections reads the section headers of the segment command of
// cmdSize bytes at offset at, and adds to sections the names of those that
// have bytes. A count of sections larger than the command holds is damage:
// the sections that fit are read.
func machoSections(b *budgetReader, order binary.ByteOrder, is64 bool, at, cmdSize uint64, sections map[string]bool) error {
	segSize, secSize, nsectsAt, sizeAt := uint64(56), uint64(68), uint64(48), uint64(36)
	if is64 {
		segSize, secSize, nsectsAt, sizeAt = 72, 80, 64, 40
	}
	if cmdSize < segSize {
		return nil
	}
	var n [4]byte
	if err := b.readAt(n[:], at+nsectsAt); err != nil {
		return err
	}
	nsects := min(uint64(order.Uint32(n[:])), (cmdSize-segSize)/secSize)
	return table{b: b, off: at + segSize, count: nsects, entSize: secSize}.each(func(_ uint64, s []byte) bool {
		var size uint64
		if is64 {
			size = order.Uint64(s[sizeAt:])
		} else {
			size = uint64(order.Uint32(s[sizeAt:]))
		}
		if name := s[:16]; size > 0 {
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if machoFeatureSections[string(name)] {
				sections[string(name)] = true
			}
		}
		return true
	})
}

// machoFeatureSections are the section names whose presence machoObject
// reports as features.
var machoFeatureSections = map[string]bool{"__debug_info": true, "__eh_frame": true, "__unwind_info": true, "__debug_frame": true}

func machoType(t macho.Type) string {
	switch t {
	case macho.TypeObj:
		return "rel"
	case macho.TypeExec:
		return "exe"
	case macho.TypeDylib, macho.TypeBundle:
		return "lib"
	case 4: // MH_CORE
		return "dump"
	case 0xa: // MH_DSYM
		return "dbg"
	}
	return ""
}

func machoArch(cpu macho.Cpu, sub uint32) string {
	sub &^= 0xff000000 // capability bits
	switch cpu {
	case macho.CpuAmd64:
		if sub == 8 {
			return "x86_64h"
		}
		return "x86_64"
	case macho.Cpu386:
		return "x86"
	case macho.CpuArm64:
		if sub == 2 {
			return "arm64e"
		}
		return "arm64"
	case macho.CpuArm:
		switch sub {
		case 9:
			return "armv7"
		case 11:
			return "armv7s"
		case 12:
			return "armv7k"
		case 6:
			return "armv6"
		}
		return "arm"
	case macho.CpuPpc:
		return "ppc"
	case macho.CpuPpc64:
		return "ppc64"
	case 0x0200000c: // CPU_TYPE_ARM64_32
		return "arm64_32"
	}
	return "unknown"
}
