// Package appendjson appends JSON values to a byte slice exactly as
// encoding/json writes them, HTML escaping included, for the answers that
// are written by hand rather than through encoding/json's reflection (a
// list page of releases, a resolution of a thousand frames). It imports
// nothing of errata.
package appendjson

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// StringPtr appends *s as a JSON string, or null.
func StringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return String(b, *s)
}

// Raw appends a JSON document as encoding/json writes a
// json.RawMessage: compacted, with <, >, &, U+2028 and U+2029 escaped; nil
// is null. Invalid JSON is an error, as it is for encoding/json. Once
// json.Valid has said the document is JSON, compacting it is dropping the
// white space outside strings.
func Raw(b []byte, raw json.RawMessage) ([]byte, error) {
	switch {
	case raw == nil:
		return append(b, "null"...), nil
	case string(raw) == "{}":
		return append(b, raw...), nil
	case !json.Valid(raw):
		var compact bytes.Buffer
		return nil, json.Compact(&compact, raw) // the error encoding/json gives
	}
	inString := false
	start := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if htmlSafe[c] && c != ' ' {
			continue
		}
		b = append(b, raw[start:i]...)
		start = i + 1
		switch {
		case c == '"':
			inString = !inString
			b = append(b, c)
		case c == '\\':
			// An escape: it and the character it escapes are copied.
			b = append(b, raw[i:i+2]...)
			i++
			start = i + 1
		case c == '<' || c == '>' || c == '&':
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8:
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[raw[i+2]&0xF])
			i += 2
			start = i + 1
		case inString || c >= utf8.RuneSelf:
			b = append(b, c) // white space in a string, or other UTF-8
		}
	}
	return append(b, raw[start:]...), nil
}

const hexDigits = "0123456789abcdef"

// htmlSafe says which bytes String and Raw copy as they are:
// the ASCII characters other than controls, ", \\, <, > and &. Bytes of
// multi-byte UTF-8 characters are not, so that U+2028 and U+2029 and
// invalid UTF-8 are looked at.
var htmlSafe = func() (safe [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		safe[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return safe
}()

// String appends s as a JSON string as encoding/json writes it with
// HTML escaping: <, >, & and control characters as \u00XX (but \b, \f, \n,
// \r and \t), invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func String(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if htmlSafe[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// StringLen is the length of what String appends for s: what s costs in
// an answer, counted before the answer is written.
func StringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case htmlSafe[c]:
			n++
			i++
		case c < utf8.RuneSelf:
			switch c {
			case '"', '\\', '\b', '\f', '\n', '\r', '\t':
				n += 2
			default:
				n += 6
			}
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				n += 6
			} else {
				n += size
			}
			i += size
		}
	}
	return n
}
