package handlers

import (
	"encoding/json"
	"time"

	"errata/handlers/appendjson"
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

// appendStringPtr appends *s as a JSON string, or null.
func appendStringPtr(b []byte, s *string) []byte { return appendjson.StringPtr(b, s) }

// appendRaw appends a JSON document as encoding/json writes a
// json.RawMessage (appendjson.Raw).
func appendRaw(b []byte, raw json.RawMessage) ([]byte, error) { return appendjson.Raw(b, raw) }

// appendString appends s as a JSON string as encoding/json writes it
// (appendjson.String).
func appendString(b []byte, s string) []byte { return appendjson.String(b, s) }
