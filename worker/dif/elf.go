package dif

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// ErrNoBuildID reports an ELF object without a GNU build-id note.
var ErrNoBuildID = errors.New("dif: ELF object has no GNU build id")

// maxNoteSize bounds the bytes read from one note section.
const maxNoteSize = 64 << 10

// Object is the identity of one debug information file.
type Object struct {
	// Kind is Sentry's name of the file's format: "elf", "macho", "pe",
	// "breakpad", "sourcebundle", "proguard" or "dartsymbolmap".
	Kind    string
	DebugID string // Sentry's form: lowercase GUID, with an age suffix when not 0
	CodeID  string // lowercase hex, "" when the format has none
	Arch    string // Sentry's CPU name, e.g. "x86_64"; "any" for mappings
	// Type is what the object is for, in Sentry's words: "exe", "lib",
	// "dbg", "rel", "dump", "src"; "" when the format does not say.
	Type string
	// Features are what the file can serve, sorted: "debug" (debug
	// information), "mapping", "sources", "symtab" (a symbol table),
	// "unwind" (call frame information).
	Features []string
}

// ReadELF reads the identity of the ELF object r of the given size. The debug
// id is the first 16 bytes of the GNU build id (zero-padded) read as a
// little-endian GUID, and the code id is the build id in hex, as Sentry
// computes them.
func ReadELF(r io.ReaderAt, size int64) (Object, error) {
	f, err := elf.NewFile(io.NewSectionReader(r, 0, size))
	if err != nil {
		return Object{}, fmt.Errorf("dif: not an ELF object: %w", err)
	}
	id, err := elfBuildID(f, size)
	if err != nil {
		return Object{}, err
	}
	return Object{
		Kind:     "elf",
		DebugID:  guidLE(id),
		CodeID:   hex.EncodeToString(id),
		Arch:     elfArch(f.Machine),
		Type:     elfType(f),
		Features: elfFeatures(f),
	}, nil
}

// elfType is the kind of object f is, as Sentry names it: a stripped-off
// debug companion (whose code is gone) is "dbg"; a position-independent
// executable is a shared object, "lib", as Sentry's symbolic reads it.
func elfType(f *elf.File) string {
	if text := f.Section(".text"); text != nil && text.Type == elf.SHT_NOBITS {
		return "dbg"
	}
	switch f.Type {
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

// elfFeatures reads the features of f from its section headers.
func elfFeatures(f *elf.File) []string {
	has := func(name string) bool {
		s := f.Section(name)
		return s != nil && s.Size > 0 && s.Type != elf.SHT_NOBITS
	}
	var fs []string
	if has(".debug_info") || has(".zdebug_info") {
		fs = append(fs, "debug")
	}
	if has(".symtab") || has(".dynsym") {
		fs = append(fs, "symtab")
	}
	if has(".eh_frame") || has(".debug_frame") {
		fs = append(fs, "unwind")
	}
	return fs
}

// elfBuildID returns the descriptor of the first NT_GNU_BUILD_ID note.
func elfBuildID(f *elf.File, size int64) ([]byte, error) {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE || s.Size == 0 {
			continue
		}
		if s.Size > maxNoteSize || s.Offset > uint64(size) || s.Size > uint64(size)-s.Offset {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		if id := findGNUBuildID(data, f.ByteOrder); id != nil {
			return id, nil
		}
	}
	return nil, ErrNoBuildID
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

// guidLE formats the first 16 bytes of id (zero-padded) as a GUID whose first
// three fields are little-endian.
func guidLE(id []byte) string {
	var b [16]byte
	copy(b[:], id)
	b[0], b[1], b[2], b[3] = b[3], b[2], b[1], b[0]
	b[4], b[5] = b[5], b[4]
	b[6], b[7] = b[7], b[6]
	return formatGUID(b)
}

func formatGUID(b [16]byte) string {
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

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
