package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// maxBodyBytes is the largest JSON body a route reads.
const maxBodyBytes = 1 << 20

// writeJSON encodes v into a buffer and only then writes status and body, so
// an encoding failure can still become a 500.
func writeJSON(w http.ResponseWriter, r *http.Request, log *slog.Logger, status int, v any) {
	if a, ok := v.(jsonAppender); ok {
		writeAppended(w, r, log, status, a)
		return
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		log.ErrorContext(r.Context(), "encode response", "err", err)
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"detail":"Internal Server Error"}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	w.Write(buf.Bytes()) //nolint:errcheck // the client went away
}

// appendBuffers recycles the buffers of writeAppended: a list page is tens
// of kilobytes.
var appendBuffers = sync.Pool{New: func() any { return new([]byte) }}

// writeAppended is writeJSON for a value that encodes itself: the same
// bytes as encoding/json's Encoder, newline included.
func writeAppended(w http.ResponseWriter, r *http.Request, log *slog.Logger, status int, a jsonAppender) {
	bp := appendBuffers.Get().(*[]byte)
	defer appendBuffers.Put(bp)
	b, err := a.appendJSON((*bp)[:0])
	if err != nil {
		log.ErrorContext(r.Context(), "encode response", "err", err)
		status = http.StatusInternalServerError
		b = append((*bp)[:0], `{"detail":"Internal Server Error"}`...)
	}
	b = append(b, '\n')
	if cap(b) <= 1<<20 {
		*bp = b // larger buffers are left to the collector
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b) //nolint:errcheck // the client went away
}

// noContent answers 204 with no body.
func noContent(w http.ResponseWriter) {
	w.WriteHeader(http.StatusNoContent)
}

// decodeJSON reads a JSON object of at most maxBodyBytes into dst. Keys may
// be camelCase or snake_case; unknown keys are ignored. It answers 413 for a
// body over the limit, 408 for one that does not arrive in time, 400 for one
// that does not parse and 422 for values of the wrong type.
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	if r.ContentLength > maxBodyBytes {
		return errTooLarge // before reading any of it
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return bodyError(err)
	}
	if n := jsonValues(body); n > maxJSONValues {
		// Before any decoding: a 1 MiB body of {} items would decode to
		// tens of megabytes.
		return invalid(valueErr, fmt.Sprintf("The body has more than %d values", maxJSONValues), "body")
	}
	return unmarshalObject(body, dst, "body")
}

// maxJSONValues bounds the values (objects, arrays, strings, numbers,
// literals) a JSON body may hold, and so what decoding it costs.
const maxJSONValues = 20_000

// jsonValues counts, roughly and without allocating, the values of the
// JSON text data: one for the top value and one more for each ',' and each
// ':' outside strings. It counts every value of valid JSON at least once.
func jsonValues(data []byte) int {
	n, inString, escaped := 1, false, false
	for _, c := range data {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ',' || c == ':' || c == '[' || c == '{':
			n++
		}
	}
	return n
}

// unmarshalObject decodes the JSON object data into dst after renaming its
// snake_case keys to camelCase. Only the keys of this object are renamed:
// nested free-form objects (a release's data) stay as they were sent. loc is
// where data sits, for validation errors.
func unmarshalObject(data []byte, dst any, loc ...any) error {
	// JSON must be UTF-8: encoding/json would replace invalid bytes
	// silently, storing other text than the client sent.
	if !json.Valid(data) || !utf8.Valid(data) {
		return errCannotParse
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return invalid(typeError, "Input should be an object", loc...)
	}
	if fields == nil { // the JSON null
		return invalid(typeError, "Input should be an object", loc...)
	}
	canon := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		c := camelCase(k)
		if _, taken := canon[c]; taken && c != k {
			continue // the camelCase spelling wins over its snake_case twin
		}
		canon[c] = v
	}
	data, err := json.Marshal(canon)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, dst); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			at := append(append([]any{}, loc...), jsonPath(reflect.TypeOf(dst), te.Field)...)
			return invalid(typeError, "Input should be a valid "+jsonKind(te.Type), at...)
		}
		var ve validationError
		if errors.As(err, &ve) {
			return ve
		}
		return invalid(typeError, "Input has the wrong type", loc...)
	}
	if at, found := nulPath(reflect.ValueOf(dst)); found {
		// PostgreSQL's text and jsonb cannot hold the NUL character.
		return invalid(valueErr, "Input should not contain NUL characters", append(append([]any{}, loc...), at...)...)
	}
	return nil
}

// jsonName is the JSON key of a struct field, "" for a field without a
// json tag (an embedded struct, or the value inside opt).
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// jsonPath turns the field path of a type error, Go's dotted field names
// from t down, into JSON keys: the names of embedded structs, which Go
// includes, are left out.
func jsonPath(t reflect.Type, field string) []any {
	var at []any
	for _, f := range strings.Split(field, ".") {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		var next reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			if sf, ok := t.FieldByName(f); ok && sf.Anonymous {
				t = sf.Type
				continue
			}
			for _, sf := range reflect.VisibleFields(t) {
				if jsonName(sf) == f {
					next = sf.Type
					break
				}
			}
		}
		if f != "" {
			at = append(at, f)
		}
		t = next
	}
	return at
}

// nulPath finds a string holding a NUL character in a decoded value and
// returns where it is: the JSON keys of the struct fields and the indexes
// of the list items that lead to it (not the keys of free-form objects).
// Raw JSON is left to the unmarshalObject call that decodes it.
func nulPath(v reflect.Value) ([]any, bool) {
	switch v.Kind() {
	case reflect.String:
		return nil, strings.IndexByte(v.String(), 0) >= 0
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil, false
		}
		return nulPath(v.Elem())
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil, false // raw JSON or bytes, not text
		}
		for i := range v.Len() {
			if at, found := nulPath(v.Index(i)); found {
				return append([]any{i}, at...), true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if _, found := nulPath(it.Key()); found {
				return nil, true
			}
			if _, found := nulPath(it.Value()); found {
				return nil, true
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() && !f.Anonymous {
				continue
			}
			at, found := nulPath(v.Field(i))
			if !found {
				continue
			}
			if name := jsonName(f); name != "" {
				at = append([]any{name}, at...)
			}
			return at, true
		}
	}
	return nil, false
}

// camelCase turns snake_case into camelCase; other keys come back as they are.
func camelCase(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	var b strings.Builder
	up := false
	for i, r := range s {
		switch {
		case r == '_' && i > 0:
			up = true
		case up:
			b.WriteRune(unicode.ToUpper(r))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// opt is a JSON field that remembers whether it was present and whether it
// was null, for inputs where only the keys sent are assigned.
type opt[T any] struct {
	Set  bool
	Null bool
	V    T
}

func (o *opt[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Null = true
		return nil
	}
	return json.Unmarshal(b, &o.V)
}

// ptr returns the value as a pointer: nil when it was null or absent.
func (o opt[T]) ptr() *T {
	if !o.Set || o.Null {
		return nil
	}
	v := o.V
	return &v
}

// jsonTime is a timestamp as the API writes it: RFC 3339 in UTC with
// milliseconds, "2026-11-21T21:10:14.724Z".
type jsonTime time.Time

const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// MarshalText writes t for encoding/json, which quotes it. Text rather
// than JSON spares encoding/json a validation pass over each timestamp.
func (t jsonTime) MarshalText() ([]byte, error) {
	return time.Time(t).UTC().AppendFormat(make([]byte, 0, len(timeLayout)), timeLayout), nil
}

// timeOrNil converts an optional timestamp for output.
func timeOrNil(t *time.Time) *jsonTime {
	if t == nil {
		return nil
	}
	jt := jsonTime(*t)
	return &jt
}

// jsonKind names the JSON type that decodes into t, for error messages.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		if t == reflect.TypeFor[time.Time]() {
			return "datetime"
		}
		return "object"
	}
	return "value"
}
