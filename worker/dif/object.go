package dif

import "encoding/hex"

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

// formatGUID writes b as a GUID: lowercase hex, hyphenated 8-4-4-4-12.
func formatGUID(b [16]byte) string {
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
