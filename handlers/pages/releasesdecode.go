package pages

import (
	"bytes"
	"encoding/json"
	"errors"
	"html/template"
	"strconv"
	"sync"
)

// The list pages of releases, release files and debug files read the
// API's answer and write their table's rows by hand: encoding/json would
// check and decode every field of 50 items, and html/template call its
// escaper through reflection for every cell, which together cost the
// server about twice the API's own answer, where handlers/pagecost_test.go
// holds a list page to 1.5 times. The walker below reads the JSON the API
// wrote, in-process, and hands each field's raw value to the item that
// shows it. The rows are the one place where a page is not written by
// html/template: every value goes through escape, which escapes as
// html/template does (TestEscape), and raw takes only the page's own
// literal markup. The rest of each page, the table's head included, is a
// template.

var errJSON = errors.New("pages: the API's answer is not the JSON expected")

// jsonSpace skips white space from i.
func jsonSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// jsonValueEnd is the end of the JSON value at b[i].
func jsonValueEnd(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errJSON
	}
	switch b[i] {
	case '"':
		return jsonStringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, err := jsonStringEnd(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errJSON
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
		j++
	}
	if j == i {
		return 0, errJSON
	}
	return j, nil
}

// jsonStringEnd is the end of the JSON string at b[i]: the quote that
// no backslash escapes.
func jsonStringEnd(b []byte, i int) (int, error) {
	for j := i + 1; j < len(b); {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			break
		}
		q := j + k
		escaped := false
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			escaped = !escaped
		}
		if !escaped {
			return q + 1, nil
		}
		j = q + 1
	}
	return 0, errJSON
}

// jsonItems calls item with each value of the JSON array b; null is an
// empty list.
func jsonItems(b []byte, item func(v []byte) error) error {
	return jsonArray(b, func(b []byte, i int) (int, error) {
		end, err := jsonValueEnd(b, i)
		if err != nil {
			return 0, err
		}
		return end, item(b[i:end])
	})
}

// jsonArray reads the JSON array b (null is an empty one): item reads
// the value at b[i] and returns where it ends, so that an array of
// objects is read in one pass.
func jsonArray(b []byte, item func(b []byte, i int) (end int, err error)) error {
	i := jsonSpace(b, 0)
	if string(b[i:]) == "null" {
		return nil
	}
	if i >= len(b) || b[i] != '[' {
		return errJSON
	}
	i = jsonSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return nil
	}
	for {
		end, err := item(b, i)
		if err != nil {
			return err
		}
		i = jsonSpace(b, end)
		if i >= len(b) {
			return errJSON
		}
		if b[i] == ']' {
			return nil
		}
		if b[i] != ',' {
			return errJSON
		}
		i = jsonSpace(b, i+1)
	}
}

// jsonFields calls field with the key (as written, without its quotes)
// and the raw value of each member of the JSON object b.
func jsonFields(b []byte, field func(key, v []byte) error) error {
	_, err := jsonObject(b, jsonSpace(b, 0), field)
	return err
}

// jsonObject reads the JSON object at b[i] as jsonFields does, and
// returns where it ends.
func jsonObject(b []byte, i int, field func(key, v []byte) error) (int, error) {
	if i >= len(b) || b[i] != '{' {
		return 0, errJSON
	}
	i = jsonSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, errJSON
		}
		keyEnd, err := jsonValueEnd(b, i)
		if err != nil {
			return 0, err
		}
		key := b[i+1 : keyEnd-1]
		i = jsonSpace(b, keyEnd)
		if i >= len(b) || b[i] != ':' {
			return 0, errJSON
		}
		i = jsonSpace(b, i+1)
		end, err := jsonValueEnd(b, i)
		if err != nil {
			return 0, err
		}
		if err := field(key, b[i:end]); err != nil {
			return 0, err
		}
		i = jsonSpace(b, end)
		if i >= len(b) {
			return 0, errJSON
		}
		if b[i] == '}' {
			return i + 1, nil
		}
		if b[i] != ',' {
			return 0, errJSON
		}
		i = jsonSpace(b, i+1)
	}
}

// jsonText is the text of a JSON string (null is none), without a copy
// unless it holds an escape.
func jsonText(v []byte) ([]byte, error) {
	if string(v) == "null" {
		return nil, nil
	}
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return nil, errJSON
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return v[1 : len(v)-1], nil
	}
	var s string
	err := json.Unmarshal(v, &s)
	return []byte(s), err
}

// jsonNumber checks that v is a JSON integer, and returns it.
func jsonNumber(v []byte) ([]byte, error) {
	if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
		return nil, errJSON
	}
	return v, nil
}

// jsonString reads a JSON string; null is "".
func jsonString(v []byte) (string, error) {
	if string(v) == "null" {
		return "", nil
	}
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", errJSON
	}
	plain := true
	for _, c := range v[1 : len(v)-1] {
		if c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return string(v[1 : len(v)-1]), nil
	}
	var s string
	err := json.Unmarshal(v, &s)
	return s, err
}

// jsonStringPtr reads a JSON string or null.
func jsonStringPtr(v []byte) (*string, error) {
	if string(v) == "null" {
		return nil, nil
	}
	s, err := jsonString(v)
	return &s, err
}

// jsonInt reads a JSON integer.
func jsonInt(v []byte) (int64, error) {
	return strconv.ParseInt(string(v), 10, 64)
}

// rows writes a table's rows, escaping text as html/template does, into
// a buffer of rowBuffers.
type rows struct {
	b []byte
	n int // rows written
}

// rowBuffers recycles the buffers of rows.
var rowBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 32<<10); return &b }}

// start begins a table's rows.
func (w *rows) start() {
	if w.b == nil {
		w.b = (*rowBuffers.Get().(*[]byte))[:0]
	}
}

// raw writes markup: a literal of the page's own, never a value.
func (w *rows) raw(s string) { w.b = append(w.b, s...) }

// text writes s escaped, for text or a quoted attribute value.
func (w *rows) text(s string) { escape(w, s) }

// bytes writes s escaped, as text does.
func (w *rows) bytes(s []byte) { escape(w, s) }

// escape writes s escaped as html/template escapes text and attribute
// values (but for "+", which needs no escape in either).
func escape[T string | []byte](w *rows, s T) {
	last := 0
	for i := 0; i < len(s); i++ {
		if !htmlSpecial[s[i]] {
			continue
		}
		var esc string
		switch s[i] {
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '"':
			esc = "&#34;"
		case '\'':
			esc = "&#39;"
		case 0:
			esc = "\uFFFD"
		}
		w.b = append(w.b, s[last:i]...)
		w.b = append(w.b, esc...)
		last = i + 1
	}
	w.b = append(w.b, s[last:]...)
}

// htmlSpecial are the bytes that escape replaces.
var htmlSpecial = [256]bool{'&': true, '<': true, '>': true, '"': true, '\'': true, 0: true}

// time writes a <time> element of an API time, shown as shortDate
// shows it.
func (w *rows) time(s []byte) {
	w.raw(`<time datetime="`)
	w.bytes(s)
	w.raw(`">`)
	if len(s) < 16 || s[10] != 'T' {
		w.bytes(s)
	} else {
		w.bytes(s[:10])
		w.raw(" ")
		w.bytes(s[11:16])
		w.raw(" UTC")
	}
	w.raw(`</time>`)
}

// html is what was written, for a template; the buffer goes back to
// rowBuffers.
func (w *rows) html() template.HTML {
	h := template.HTML(w.b) //nolint:gosec // every value was escaped by escape
	if w.b != nil && cap(w.b) <= 1<<20 {
		b := w.b[:0]
		rowBuffers.Put(&b)
	}
	w.b = nil
	return h
}
