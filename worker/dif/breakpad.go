package dif

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
)

// maxBreakpadHeader bounds the first line of a Breakpad symbol file, and
// maxBreakpadRecord each line after it: a longer line is cut. Lines after
// the first are read into one buffer of that size, never kept.
const (
	maxBreakpadHeader = 4 << 10
	maxBreakpadRecord = 64 << 10
)

// ReadBreakpad reads the identity from the first line of a Breakpad symbol
// file, "MODULE os arch id name": the id is 32 hex digits of GUID followed by
// the age in hex, and Sentry writes it as GUID-age (without the age when 0).
//
// Its features come from the records that follow: FUNC and PUBLIC records
// are a symbol table, line records debug information and STACK records
// unwind information.
func ReadBreakpad(r io.Reader) (Object, error) {
	br := bufio.NewReaderSize(r, maxBreakpadHeader)
	line, err := readLine(br, maxBreakpadHeader)
	if err != nil && err != io.EOF {
		return Object{}, fmt.Errorf("dif: reading Breakpad header: %w", err)
	}
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "MODULE" {
		return Object{}, fmt.Errorf("dif: not a Breakpad symbol file")
	}
	id := strings.ToLower(fields[3])
	if len(id) < 33 || len(id) > 40 || !isHex(id) {
		return Object{}, fmt.Errorf("dif: Breakpad module id %q is not a GUID and age", fields[3])
	}
	var b [16]byte
	for i := range b {
		b[i] = unhex(id[2*i])<<4 | unhex(id[2*i+1])
	}
	debugID := formatGUID(b)
	if age := strings.TrimLeft(id[32:], "0"); age != "" {
		debugID += "-" + age
	}
	arch := strings.ToLower(fields[2])
	if len(arch) > maxArchName || !isHex(strings.NewReplacer("_", "", "-", "").Replace(arch)) && !isName(arch) {
		arch = "unknown"
	}
	o := Object{Kind: "breakpad", DebugID: debugID, Arch: arch, Type: "dbg"}
	var symtab, debug, unwind bool
	buf := make([]byte, 0, maxBreakpadRecord)
	for {
		var line []byte
		line, err = appendLine(buf[:0], br, maxBreakpadRecord)
		switch {
		case bytes.HasPrefix(line, []byte("FUNC ")), bytes.HasPrefix(line, []byte("PUBLIC ")):
			symtab = true
		case bytes.HasPrefix(line, []byte("STACK ")):
			unwind = true
		case len(line) > 0 && (line[0] >= '0' && line[0] <= '9' || line[0] >= 'a' && line[0] <= 'f'):
			debug = true // a line record: address size line file
		}
		if err != nil || symtab && debug && unwind {
			break
		}
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{debug, "debug"}, {symtab, "symtab"}, {unwind, "unwind"}} {
		if f.on {
			o.Features = append(o.Features, f.name)
		}
	}
	return o, nil
}

// readLine reads a line of at most max bytes; a longer one is cut, the
// rest skipped.
func readLine(br *bufio.Reader, max int) (string, error) {
	line, err := appendLine(nil, br, max)
	return string(line), err
}

// appendLine appends to buf a line of br, cut at max bytes (the rest is
// skipped), and returns it.
func appendLine(buf []byte, br *bufio.Reader, max int) ([]byte, error) {
	n := len(buf)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)-n < max {
			buf = append(buf, chunk[:min(len(chunk), max-(len(buf)-n))]...)
		}
		if err != bufio.ErrBufferFull {
			return buf, err
		}
	}
}

// maxArchName bounds an architecture name read from a file.
const maxArchName = 32

// isName reports whether s is a name of lower-case letters, digits and
// underscores, as architectures are.
func isName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return s != ""
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}
