package dif

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"unicode/utf8"
)

// Bounds of what the readers of source bundles and mappings read.
const (
	maxBundleMembers  = 100_000 // walked, never kept
	maxBundleManifest = 16 << 20
	maxMappingLine    = 64 << 10
	mappingProbeLines = 1000
	maxSymbolMapEntry = 1 << 20
)

// ReadSourceBundle reads the identity of a source bundle (what sentry-cli
// debug-files bundle-sources and bundle-jvm write, and upload
// --include-sources): an 8-byte SYSB header, then a zip whose
// manifest.json names the debug id, code id, architecture and object name
// of the object whose sources it holds.
//
// It walks the zip's central directory through one small buffer, keeping
// nothing of it but where the last member named manifest.json is (so that
// what a directory of maxBundleMembers members costs is time, not
// memory), and reads that member, of at most maxBundleManifest bytes.
func ReadSourceBundle(r io.ReaderAt, size int64) (Object, error) {
	var start int64
	head := make([]byte, 8)
	if _, err := r.ReadAt(head, 0); err == nil && bytes.HasPrefix(head, []byte("SYSB")) {
		start = 8
	}
	if size < start {
		return Object{}, errors.New("dif: not a source bundle")
	}
	zr := io.NewSectionReader(r, start, size-start)
	d, err := readZipDirectory(zr, size-start, maxBundleMembers)
	if err != nil {
		return Object{}, fmt.Errorf("dif: not a source bundle: %w", err)
	}
	const manifestName = "manifest.json"
	manifest := int64(-1) // where its directory record is
	name := make([]byte, len(manifestName))
	err = d.walk(func(hdr []byte, at int64) error {
		if binary.LittleEndian.Uint16(hdr[28:]) != uint16(len(manifestName)) {
			return nil
		}
		if _, err := zr.ReadAt(name, at+dirRecordLen); err != nil {
			return badZip("The bundle's zip directory is corrupt")
		}
		if string(name) == manifestName {
			manifest = at
		}
		return nil
	})
	if err != nil {
		return Object{}, fmt.Errorf("dif: not a source bundle: %w", err)
	}
	if manifest < 0 {
		return Object{}, errors.New("dif: the source bundle has no manifest.json")
	}
	body, err := d.readMember(manifest, maxBundleManifest)
	if err != nil {
		return Object{}, fmt.Errorf("dif: source bundle manifest: %w", err)
	}
	// Only the fields read are decoded: the list of files is skipped.
	var m struct {
		DebugID string `json:"debug_id"`
		CodeID  string `json:"code_id"`
		Arch    string `json:"arch"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return Object{}, fmt.Errorf("dif: source bundle manifest: %w", err)
	}
	id, ok := CanonicalDebugID(m.DebugID)
	if !ok {
		return Object{}, ErrNoDebugID
	}
	o := Object{Kind: "sourcebundle", DebugID: id, Arch: "any", Type: "src", Features: []string{"sources"}}
	if m.Arch != "" && len(m.Arch) <= 32 && isPrintable(m.Arch) {
		o.Arch = strings.ToLower(m.Arch)
	}
	if c := strings.ToLower(m.CodeID); c != "" && len(c) <= 64 && isHex(c) {
		o.CodeID = c
	}
	return o, nil
}

// ReadProGuard reads a ProGuard (R8) mapping uploaded under the UUID
// nameID. It checks that the text is a mapping (a class line, "a.B -> c:",
// among its first lines) and that it has line information, without which
// Sentry cannot use it. The debug id is nameID: sentry-cli names a mapping
// by the UUID of its content (see ProGuardUUID) unless told another with
// --uuid.
func ReadProGuard(r io.Reader, nameID string) (Object, error) {
	id, ok := CanonicalDebugID(nameID)
	if !ok || len(id) != 36 {
		return Object{}, fmt.Errorf("dif: ProGuard mapping name has no UUID")
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var class, lines bool
	for n := 0; n < mappingProbeLines && !(class && lines); n++ {
		line, err := readLine(br, maxMappingLine)
		t := strings.TrimSpace(line)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
		case line[0] != ' ' && line[0] != '\t' && strings.Contains(t, " -> ") && strings.HasSuffix(t, ":"):
			class = true
		case class && startsWithDigits(t):
			lines = true // "12:14:void run() -> a"
		}
		if err != nil {
			break
		}
	}
	switch {
	case !class:
		return Object{}, errors.New("dif: not a ProGuard mapping")
	case !lines:
		return Object{}, errors.New("dif: the ProGuard mapping has no line information")
	}
	return Object{Kind: "proguard", DebugID: id, Arch: "any", Features: []string{"mapping"}}, nil
}

func startsWithDigits(s string) bool {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i > 0 && i < len(s) && s[i] == ':'
}

// proguardNamespace is the UUID namespace of ProGuard mappings: the
// version 5 UUID of "guardsquare.com" in the DNS namespace.
var proguardNamespace = uuidV5([]byte{
	0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8,
}, strings.NewReader("guardsquare.com"))

// ProGuardUUID returns the UUID sentry-cli gives the mapping r: the
// version 5 UUID of its bytes in proguardNamespace.
func ProGuardUUID(r io.Reader) (string, error) {
	var b [16]byte
	id := uuidV5(proguardNamespace[:], r)
	if id == nil {
		return "", errors.New("dif: reading the mapping failed")
	}
	copy(b[:], id)
	return formatGUID(b), nil
}

// uuidV5 returns the version 5 UUID of what r holds in namespace ns, or
// nil when r fails.
func uuidV5(ns []byte, r io.Reader) []byte {
	h := sha1.New()
	h.Write(ns)
	if _, err := io.Copy(h, r); err != nil {
		return nil
	}
	sum := h.Sum(nil)[:16]
	sum[6] = sum[6]&0x0f | 0x50
	sum[8] = sum[8]&0x3f | 0x80
	return sum
}

// ReadDartSymbolMap reads a Dart symbol map (what flutter build
// --extra-gen-snapshot-options=--save-obfuscation-map writes): a JSON array
// of strings in pairs, obfuscated name then original. It carries no id of
// its own: it belongs to the debug id of the program it was built with,
// which the upload names.
func ReadDartSymbolMap(r io.Reader, debugID string) (Object, error) {
	dec := json.NewDecoder(bufio.NewReader(r))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('[') {
		return Object{}, errors.New("dif: not a Dart symbol map (a JSON array)")
	}
	n := 0
	for dec.More() {
		var s string
		if err := dec.Decode(&s); err != nil {
			return Object{}, fmt.Errorf("dif: Dart symbol map entry %d is not a string", n)
		}
		if len(s) > maxSymbolMapEntry {
			return Object{}, fmt.Errorf("dif: Dart symbol map entry %d is too long", n)
		}
		n++
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		return Object{}, errors.New("dif: the Dart symbol map does not end")
	}
	if _, err := dec.Token(); err != io.EOF {
		return Object{}, errors.New("dif: text after the Dart symbol map")
	}
	if n%2 != 0 {
		return Object{}, fmt.Errorf("dif: the Dart symbol map has %d entries, not pairs", n)
	}
	id, ok := CanonicalDebugID(debugID)
	if !ok {
		return Object{}, fmt.Errorf("%w: a Dart symbol map belongs to the debug id it is uploaded with", ErrNoDebugID)
	}
	return Object{Kind: "dartsymbolmap", DebugID: id, Arch: "any", Features: []string{"mapping"}}, nil
}

func isPrintable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// CanonicalSourcePath is a source path as the symbol routes compare them:
// "/" for "\", rooted, its dot segments removed (RFC 3986 §5.2.4) and
// "//" folded.
func CanonicalSourcePath(p string) string {
	return path.Clean("/" + strings.ReplaceAll(p, `\`, "/"))
}

// SourceBundleIndex reads where each source of the source bundle r of
// size bytes lies, by its canonical path (CanonicalSourcePath of the path
// its manifest names), for the debuginfod source route to serve it
// without reading the bundle's directory again. Where the offsets count
// from the start of r. What it keeps is bounded by the manifest, of at
// most maxBundleManifest bytes: the directory is walked through one small
// buffer, and only the members the manifest names are kept. A member that
// is not where its record says is left out.
func SourceBundleIndex(r io.ReaderAt, size int64) (map[string]ZipMember, error) {
	var start int64
	head := make([]byte, 8)
	if _, err := r.ReadAt(head, 0); err == nil && bytes.HasPrefix(head, []byte("SYSB")) {
		start = 8
	}
	if size < start {
		return nil, errors.New("dif: not a source bundle")
	}
	zr := io.NewSectionReader(r, start, size-start)
	d, err := readZipDirectory(zr, size-start, maxBundleMembers)
	if err != nil {
		return nil, fmt.Errorf("dif: not a source bundle: %w", err)
	}
	// The members by name, read through one buffer: the manifest first.
	const manifestName = "manifest.json"
	var name []byte
	eachName := func(fn func(name []byte, at int64)) error {
		return d.walk(func(hdr []byte, at int64) error {
			n := int(binary.LittleEndian.Uint16(hdr[28:]))
			if cap(name) < n {
				name = make([]byte, n)
			}
			name = name[:n]
			if _, err := zr.ReadAt(name, at+dirRecordLen); err != nil {
				return badZip("The bundle's zip directory is corrupt")
			}
			fn(name, at)
			return nil
		})
	}
	manifest := int64(-1)
	if err := eachName(func(n []byte, at int64) {
		if string(n) == manifestName {
			manifest = at
		}
	}); err != nil {
		return nil, fmt.Errorf("dif: not a source bundle: %w", err)
	}
	if manifest < 0 {
		return nil, errors.New("dif: the source bundle has no manifest.json")
	}
	body, err := d.readMember(manifest, maxBundleManifest)
	if err != nil {
		return nil, fmt.Errorf("dif: source bundle manifest: %w", err)
	}
	var m struct {
		Files map[string]struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("dif: source bundle manifest: %w", err)
	}
	body = nil
	// Only the members the zip holds are kept: a manifest may name many
	// more than it holds.
	out := make(map[string]ZipMember, min(len(m.Files), int(d.records)))
	err = eachName(func(n []byte, at int64) {
		f, ok := m.Files[string(n)]
		if !ok || f.Path == "" || strings.ContainsRune(f.Path, 0) {
			return
		}
		if zm, err := d.member(at); err == nil && (zm.Method == 0 || zm.Method == 8) {
			zm.Offset += start
			out[CanonicalSourcePath(f.Path)] = zm
		}
	})
	if err != nil {
		return nil, fmt.Errorf("dif: not a source bundle: %w", err)
	}
	return out, nil
}
