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
func ReadMachO(r io.ReaderAt, size int64) ([]Object, error) {
	sr := io.NewSectionReader(r, 0, size)
	head := make([]byte, 8)
	if _, err := sr.ReadAt(head, 0); err != nil {
		return nil, fmt.Errorf("dif: not a Mach-O object: %w", err)
	}
	if binary.BigEndian.Uint32(head) != macho.MagicFat {
		f, err := macho.NewFile(sr)
		if err != nil {
			return nil, fmt.Errorf("dif: not a Mach-O object: %w", err)
		}
		o, err := machoObject(f)
		if err != nil {
			return nil, err
		}
		return []Object{o}, nil
	}
	ff, err := macho.NewFatFile(sr)
	if err != nil {
		return nil, fmt.Errorf("dif: not a fat Mach-O object: %w", err)
	}
	defer ff.Close()
	var objs []Object
	for _, a := range ff.Arches {
		o, err := machoObject(a.File)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// lcUUID is the load command that carries a Mach-O object's UUID.
const lcUUID = 0x1b

func machoObject(f *macho.File) (Object, error) {
	var id []byte
	for _, l := range f.Loads {
		raw := l.Raw()
		if len(raw) >= 24 && f.ByteOrder.Uint32(raw) == lcUUID {
			id = raw[8:24]
			break
		}
	}
	if id == nil || bytes.Equal(id, make([]byte, 16)) {
		return Object{}, errors.New("dif: Mach-O object has no LC_UUID")
	}
	var b [16]byte
	copy(b[:], id)
	o := Object{
		Kind: "macho", DebugID: formatGUID(b), CodeID: hex.EncodeToString(id),
		Arch: machoArch(f.Cpu, f.SubCpu), Type: machoType(f.Type),
	}
	has := func(name string) bool {
		for _, s := range f.Sections {
			if s.Name == name && s.Size > 0 {
				return true
			}
		}
		return false
	}
	if has("__debug_info") {
		o.Features = append(o.Features, "debug")
	}
	if f.Symtab != nil && len(f.Symtab.Syms) > 0 {
		o.Features = append(o.Features, "symtab")
	}
	if has("__eh_frame") || has("__unwind_info") || has("__debug_frame") {
		o.Features = append(o.Features, "unwind")
	}
	return o, nil
}

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
