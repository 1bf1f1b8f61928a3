package symbolkey

import (
	"encoding/hex"
	"errors"
	"path"
	"strings"
)

// The path prefixes of the symbol routes.
const (
	DebuginfodPrefix = "/debuginfod/"
	SymbolsPrefix    = "/symbols/"
)

// ErrNotFound is a path that names no file the symbol routes serve: none
// of their routes, or a key of no stored format.
var ErrNotFound = errors.New("symbolkey: the path names no file")

// MalformedError is a path of a route whose build id or source path is
// malformed; Msg says what, for the client.
type MalformedError struct{ Msg string }

func (e *MalformedError) Error() string { return e.Msg }

// Kinds of files a debuginfod path asks for.
const (
	Debuginfo  = "debuginfo"
	Executable = "executable"
	Source     = "source"
	Section    = "section"
)

// Debuginfod is a parsed debuginfod path.
type Debuginfod struct {
	Org     string
	BuildID string // in lower case
	Kind    string // Debuginfo, Executable, Source or Section
	Arg     string // the canonical source path, or the section name
}

// ParseDebuginfod parses the path (decoded) of a debuginfod request,
// below DebuginfodPrefix. A path that is none of the routes is
// ErrNotFound; a malformed build id or source path a *MalformedError.
func ParseDebuginfod(p string) (Debuginfod, error) {
	var q Debuginfod
	rest, ok := strings.CutPrefix(p, DebuginfodPrefix)
	if !ok {
		return q, ErrNotFound
	}
	q.Org, rest, ok = strings.Cut(rest, "/")
	if !ok || q.Org == "" {
		return q, ErrNotFound
	}
	if rest, ok = strings.CutPrefix(rest, "buildid/"); !ok {
		return q, ErrNotFound
	}
	var id string
	if id, rest, ok = strings.Cut(rest, "/"); !ok {
		return q, ErrNotFound
	}
	if !IsBuildID(id) {
		return q, &MalformedError{"The build id is not 2 to 128 hex digits"}
	}
	q.BuildID = strings.ToLower(id)
	q.Kind, rest, _ = strings.Cut(rest, "/")
	switch q.Kind {
	case Debuginfo, Executable:
		if rest != "" || strings.HasSuffix(p, "/") {
			return q, ErrNotFound
		}
	case Source:
		src, err := canonicalSourcePath(rest)
		if err != nil {
			return q, err
		}
		q.Arg = src
	case Section:
		if rest == "" || strings.ContainsAny(rest, "/\x00") {
			return q, ErrNotFound
		}
		q.Arg = rest
	default:
		return q, ErrNotFound
	}
	return q, nil
}

// IsBuildID reports whether s is hex of even length, 2 to 128 digits.
func IsBuildID(s string) bool {
	if len(s) < 2 || len(s) > 128 || len(s)%2 != 0 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// canonicalSourcePath is the source path p (decoded, without its leading
// "/") as a manifest names it: rooted, "/" for "\", its dot segments
// removed (RFC 3986 §5.2.4) and "//" folded, as worker/dif's
// CanonicalSourcePath indexes a source bundle. NUL or an empty path is
// malformed.
func canonicalSourcePath(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", &MalformedError{"The source path holds a NUL character"}
	}
	if strings.Trim(p, "/") == "" {
		return "", &MalformedError{"The source path is empty"}
	}
	return path.Clean("/" + strings.ReplaceAll(p, `\`, "/")), nil
}

// Key is a parsed symbol-server path: the organization, the name the
// answer is named by, and the query that selects the file.
type Key struct {
	Org   string
	Name  string // the last segment of the path, as sent
	Query Query
}

// Query selects a stored debug file, as store.SymbolQuery does: by its
// format, and by its debug id (in Sentry's form), its code id or one of
// CodeIDs, narrowed by the object's types, a feature and the object's name.
type Query struct {
	Formats    []string
	DebugID    string
	CodeID     string
	CodeIDs    []string
	Types      []string
	Feature    string
	ObjectName string
}

// ParseKey parses the path of a symbol-server request,
// {file}/{key}/{file} below SymbolsPrefix and the organization, matched
// case-insensitively (docs/symbol-server.md). A path that is no key of a
// stored format is ErrNotFound.
func ParseKey(p string) (Key, error) {
	var k Key
	rest, ok := strings.CutPrefix(p, SymbolsPrefix)
	if !ok {
		return k, ErrNotFound
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || parts[0] == "" {
		return k, ErrNotFound
	}
	k.Org = parts[0]
	file, key, file2 := strings.ToLower(parts[1]), strings.ToLower(parts[2]), strings.ToLower(parts[3])
	if file == "" || key == "" || file2 == "" || strings.ContainsRune(p, 0) {
		return k, ErrNotFound
	}
	// Compressed variants (crash.pd_) and pointer files are not served.
	if strings.HasSuffix(file2, "_") || file2 == "file.ptr" {
		return k, ErrNotFound
	}
	k.Name = parts[3]
	switch {
	case strings.HasSuffix(file2, ".src.zip"):
		id, ok := debugID(key)
		if !ok || file2 != pdbStem(file)+".src.zip" {
			return k, ErrNotFound
		}
		k.Query = Query{Formats: []string{"sourcebundle"}, DebugID: id}
	case strings.HasPrefix(key, "elf-buildid-sym-"):
		id := strings.TrimPrefix(key, "elf-buildid-sym-")
		if file != "_.debug" || file2 != "_.debug" || !IsBuildID(id) {
			return k, ErrNotFound
		}
		k.Query = Query{Formats: []string{"elf"}, CodeIDs: buildIDForms(id), Feature: "debug"}
	case strings.HasPrefix(key, "elf-buildid-"):
		id := strings.TrimPrefix(key, "elf-buildid-")
		if file != file2 || !IsBuildID(id) {
			return k, ErrNotFound
		}
		k.Query = Query{Formats: []string{"elf"}, CodeIDs: buildIDForms(id), Types: []string{"exe", "lib"}}
	case strings.HasPrefix(key, "mach-uuid-sym-"):
		id, ok := machUUID(strings.TrimPrefix(key, "mach-uuid-sym-"))
		if file != "_.dwarf" || file2 != "_.dwarf" || !ok {
			return k, ErrNotFound
		}
		k.Query = Query{Formats: []string{"macho"}, DebugID: id, Feature: "debug"}
	case strings.HasPrefix(key, "mach-uuid-"):
		id, ok := machUUID(strings.TrimPrefix(key, "mach-uuid-"))
		if file != file2 || !ok {
			return k, ErrNotFound
		}
		k.Query = Query{Formats: []string{"macho"}, DebugID: id, Types: []string{"exe", "lib"}}
	case strings.HasSuffix(file2, ".sym"):
		id, ok := debugID(key)
		if !ok || file2 != pdbStem(file)+".sym" {
			return k, ErrNotFound
		}
		k.Query = Query{Formats: []string{"breakpad"}, DebugID: id}
	case strings.HasSuffix(file, ".pdb"):
		if file != file2 || !isHex(key) {
			return k, ErrNotFound
		}
		// 32 digits then ffffffff (a Portable PDB's key) is the GUID
		// alone.
		id, ok := debugID(strings.TrimSuffix(key, "ffffffff"))
		if len(key) != 40 || !strings.HasSuffix(key, "ffffffff") {
			id, ok = debugID(key)
		}
		if !ok {
			return k, ErrNotFound
		}
		k.Query = Query{Formats: []string{"pdb", "portablepdb"}, DebugID: id, ObjectName: file}
	default:
		// A PE: TimeDateStamp (8 hex digits) then SizeOfImage in hex.
		if file != file2 || len(key) < 9 || len(key) > 16 || !isHex(key) {
			return k, ErrNotFound
		}
		k.Query = Query{Formats: []string{"pe"}, CodeID: key, ObjectName: file}
	}
	return k, nil
}

// pdbStem is the name of a debug file without .pdb, .exe or .dll, as a
// Breakpad file and a source bundle are named by it.
func pdbStem(name string) string {
	for _, ext := range []string{".pdb", ".exe", ".dll"} {
		if s, ok := strings.CutSuffix(name, ext); ok {
			return s
		}
	}
	return name
}

// machUUID is the debug id of a Mach-O UUID of 32 hex digits.
func machUUID(s string) (string, bool) {
	if len(s) != 32 {
		return "", false
	}
	return debugID(s)
}

// debugID is the debug id, in Sentry's form, of a key's id in lower case:
// a GUID of 32 hex digits, then an age of up to 8 (its leading zeros
// dropped; an age of 0 is none). Anything else is no debug id.
func debugID(key string) (string, bool) {
	if len(key) < 32 || len(key) > 40 || !isHex(key) {
		return "", false
	}
	id := hyphenated(key[:32])
	if age := strings.TrimLeft(key[32:], "0"); age != "" {
		id += "-" + age
	}
	return id, true
}

// hyphenated is a GUID of 32 hex digits written as Sentry writes one.
func hyphenated(h string) string {
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// buildIDForms are the stored build ids a key's build id may name: itself
// and, for a key of 20 bytes ending in zeros, the shorter ids it pads.
func buildIDForms(id string) []string {
	forms := []string{id}
	if len(id) == 40 {
		for n := 38; n >= 2 && id[n:n+2] == "00"; n -= 2 {
			forms = append(forms, id[:n])
		}
	}
	return forms
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return s != ""
}

// DebugIDOfBuildID is the debug id Sentry derives from an ELF build id
// (IsBuildID): its first 16 bytes, zero-padded, read as a little-endian
// GUID.
func DebugIDOfBuildID(id string) string {
	raw, _ := hex.DecodeString(id)
	var b [16]byte
	copy(b[:], raw)
	le := []byte{b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6]}
	return hyphenated(hex.EncodeToString(append(le, b[8:]...)))
}
