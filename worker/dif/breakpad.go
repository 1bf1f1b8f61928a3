package dif

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// maxBreakpadHeader bounds the first line of a Breakpad symbol file.
const maxBreakpadHeader = 4 << 10

// ReadBreakpad reads the identity from the first line of a Breakpad symbol
// file, "MODULE os arch id name": the id is 32 hex digits of GUID followed by
// the age in hex, and Sentry writes it as GUID-age (without the age when 0).
func ReadBreakpad(r io.Reader) (Object, error) {
	line, err := bufio.NewReaderSize(io.LimitReader(r, maxBreakpadHeader), maxBreakpadHeader).ReadString('\n')
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
	return Object{Kind: "breakpad", DebugID: debugID, Arch: fields[2]}, nil
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
