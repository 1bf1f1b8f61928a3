package dif

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// maxDartSymbolMap bounds a Dart symbol map, which is decoded entry by
// entry (an entry is held whole).
const maxDartSymbolMap = 32 << 20

// ErrUnsupported is the error of a file that is none of the formats this
// package reads.
var ErrUnsupported = errors.New("dif: not a supported debug information file")

// ErrNoDebugID is the error of a file of a known format that carries no
// debug id, and whose upload named none.
var ErrNoDebugID = errors.New("dif: the file has no debug id")

// proguardName matches the names ProGuard mappings are uploaded under,
// proguard/UUID.txt or proguard/mapping-UUID.txt, as Sentry reads them.
var proguardName = regexp.MustCompile(`(?:^|/)proguard/(?:mapping-)?([0-9a-fA-F-]{32,36})\.txt$`)

// Read reads the objects of the debug information file r of size bytes,
// uploaded under name: most files hold one; a fat Mach-O holds one per
// architecture. The format is recognised by the file's content, except for
// ProGuard mappings, which carry their UUID in their name (as Sentry reads
// them). debugID is the debug id the upload named ("" none): a Dart symbol
// map, which carries none, takes it.
//
// Every read is bounded by size; the file is never read whole into memory.
func Read(r io.ReaderAt, size int64, name, debugID string) ([]Object, error) {
	head := make([]byte, min(size, 64))
	if _, err := r.ReadAt(head, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("dif: reading: %w", err)
	}
	one := func(o Object, err error) ([]Object, error) {
		if err != nil {
			return nil, err
		}
		return []Object{o}, nil
	}
	if m := proguardName.FindStringSubmatch(name); m != nil {
		return one(ReadProGuard(io.NewSectionReader(r, 0, size), m[1]))
	}
	switch {
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return one(ReadELF(r, size))
	case bytes.HasPrefix(head, []byte("MODULE ")):
		return one(ReadBreakpad(io.NewSectionReader(r, 0, size)))
	case isMachO(head):
		return ReadMachO(r, size)
	case bytes.HasPrefix(head, []byte("MZ")):
		return one(ReadPE(r, size))
	case bytes.HasPrefix(head, []byte(pdbMagic)):
		return one(ReadPDB(r, size))
	case bytes.HasPrefix(head, []byte("SYSB")), bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return one(ReadSourceBundle(r, size))
	case strings.HasPrefix(strings.TrimLeft(string(head), " \t\r\n"), "["):
		if size > maxDartSymbolMap {
			return nil, fmt.Errorf("dif: a Dart symbol map of %d bytes, more than %d", size, maxDartSymbolMap)
		}
		return one(ReadDartSymbolMap(io.NewSectionReader(r, 0, size), debugID))
	case looksLikeText(head):
		// A ProGuard mapping under a name without its UUID: the UUID is
		// the one sentry-cli computes from its content.
		id, err := ProGuardUUID(io.NewSectionReader(r, 0, size))
		if err != nil {
			return nil, err
		}
		if o, err := ReadProGuard(io.NewSectionReader(r, 0, size), id); err == nil {
			return []Object{o}, nil
		}
	}
	return nil, ErrUnsupported
}

// looksLikeText reports whether head, the start of a file, has no control
// characters but tabs and line breaks.
func looksLikeText(head []byte) bool {
	for _, c := range head {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return false
		}
	}
	return len(head) > 0
}

// SameDebugID reports whether two debug ids name the same object: their
// GUIDs are equal, whatever their ages (Sentry lets an upload override
// the age an object carries, as PDBs need).
func SameDebugID(a, b string) bool {
	return len(a) >= 36 && len(b) >= 36 && strings.EqualFold(a[:36], b[:36])
}

// CanonicalDebugID returns s, a debug id in any of its usual spellings (a
// GUID with or without hyphens and braces, in any case, optionally followed
// by an age in hex, separated by a hyphen or not), in Sentry's form: the
// lowercase hyphenated GUID, then "-" and the age when it is not 0.
func CanonicalDebugID(s string) (string, bool) {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	h := strings.ToLower(strings.ReplaceAll(s, "-", ""))
	if len(h) < 32 || len(h) > 40 || !isHex(h) {
		return "", false
	}
	var b [16]byte
	for i := range b {
		b[i] = unhex(h[2*i])<<4 | unhex(h[2*i+1])
	}
	id := formatGUID(b)
	if age := strings.TrimLeft(h[32:], "0"); age != "" {
		id += "-" + age
	}
	return id, true
}

// maxCodeID is the longest code id Sentry keeps, in hex digits.
const maxCodeID = 64

// UploadError is what is wrong with an uploaded file, in words for the
// client that uploaded it.
type UploadError struct{ Msg string }

func (e *UploadError) Error() string { return e.Msg }

func uploadError(format string, args ...any) error {
	return &UploadError{fmt.Sprintf(format, args...)}
}

// ReadUpload reads the objects of an uploaded file, as Read does, and
// checks them against debugID, the debug id the upload named ("" none): an
// object whose GUID is not debugID's is left out, and a file with no
// object left is an UploadError, as is a file that is not a debug file.
// An object that matches but for its age takes debugID's age, as Sentry
// lets an upload override it. Every error is an *UploadError.
func ReadUpload(r io.ReaderAt, size int64, name, debugID string) ([]Object, error) {
	var want string
	if debugID != "" {
		var ok bool
		if want, ok = CanonicalDebugID(debugID); !ok {
			return nil, uploadError("The debug id %q is not a debug id", clip(debugID))
		}
	}
	objs, err := Read(r, size, name, want)
	switch {
	case errors.Is(err, ErrNoDebugID):
		return nil, uploadError("The file %q carries no debug id", clip(name))
	case errors.Is(err, ErrBudget):
		return nil, uploadError("The file %q has headers larger than errata reads", clip(name))
	case err != nil:
		return nil, uploadError("The file %q is not a supported debug information file", clip(name))
	}
	var out, found []Object
	for _, o := range objs {
		found = append(found, o)
		if want != "" && !SameDebugID(o.DebugID, want) {
			continue
		}
		if want != "" {
			o.DebugID = want
		}
		if len(o.CodeID) > maxCodeID {
			o.CodeID = "" // longer than Sentry keeps (a build id over 32 bytes)
		}
		out = append(out, o)
	}
	if len(out) == 0 {
		ids := make([]string, len(found))
		for i, o := range found {
			ids[i] = o.DebugID
		}
		return nil, uploadError("The file %q has the debug id %s, not %s as uploaded", clip(name), clip(strings.Join(ids, ", ")), want)
	}
	return out, nil
}

// clip shortens client text quoted in an error.
func clip(s string) string {
	if len(s) <= 100 {
		return s
	}
	return s[:100] + "..."
}
