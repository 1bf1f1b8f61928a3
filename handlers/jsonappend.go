package handlers

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// The appenders below write a value's JSON by hand, exactly as
// encoding/json writes it, HTML escaping included, for the shapes that are
// too hot for its reflection (releasejson.go): TestReleaseJSONIsEncodingJSON
// and FuzzReleaseJSON compare their bytes with encoding/json's.

// jsonAppender is a value that appends its own JSON, as encoding/json
// would write it, for writeJSON.
type jsonAppender interface {
	appendJSON(b []byte) ([]byte, error)
}

// appendTime writes t as jsonTime.MarshalText does (timeLayout, in UTC),
// without parsing the layout; years outside 0-9999 take AppendFormat.
func appendTime(b []byte, t jsonTime) []byte {
	u := time.Time(t).UTC()
	b = append(b, '"')
	year, month, day := u.Date()
	if year < 0 || year > 9999 {
		b = u.AppendFormat(b, timeLayout)
		return append(b, '"')
	}
	hour, minute, second := u.Clock()
	b = appendDigits(b, year, 4)
	b = appendDigits(append(b, '-'), int(month), 2)
	b = appendDigits(append(b, '-'), day, 2)
	b = appendDigits(append(b, 'T'), hour, 2)
	b = appendDigits(append(b, ':'), minute, 2)
	b = appendDigits(append(b, ':'), second, 2)
	b = appendDigits(append(b, '.'), u.Nanosecond()/1e6, 3)
	return append(b, 'Z', '"')
}

// appendDigits writes n (0 ≤ n < 10^width, width ≤ 4) in width digits.
func appendDigits(b []byte, n, width int) []byte {
	start := len(b)
	b = append(b, "0000"[:width]...)
	for i := len(b) - 1; i >= start; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return b
}

func appendTimePtr(b []byte, t *jsonTime) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return appendTime(b, *t)
}

func appendStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// appendRaw appends a JSON document as encoding/json writes a
// json.RawMessage: compacted, with <, >, &, U+2028 and U+2029 escaped; nil
// is null. Invalid JSON is an error, as it is for encoding/json. Once
// json.Valid has said the document is JSON, compacting it is dropping the
// white space outside strings.
func appendRaw(b []byte, raw json.RawMessage) ([]byte, error) {
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

// htmlSafe says which bytes appendString and appendRaw copy as they are:
// the ASCII characters other than controls, ", \\, <, > and &. Bytes of
// multi-byte UTF-8 characters are not, so that U+2028 and U+2029 and
// invalid UTF-8 are looked at.
var htmlSafe = func() (safe [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		safe[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return safe
}()

// appendString appends s as a JSON string as encoding/json writes it with
// HTML escaping: <, >, & and control characters as \u00XX (but \b, \f, \n,
// \r and \t), invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
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
