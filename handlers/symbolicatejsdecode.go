package handlers

import (
	"bytes"
	"encoding/binary"
	"strings"

	"errata/handlers/symbolication/js"
)

// decodeJSRequestFast reads the common symbolicate-js body in one pass:
// the keys of js.Request spelled exactly, strings without escapes, whole
// numbers, and frames whose other keys hold such scalars, at most
// maxJSONValues values as jsonValues counts them. It reports false for
// anything else (then nothing it filled counts, and encoding/json reads
// the body with its answers for every fault); when it reports true, req is
// what encoding/json and checkJSRequest's decoding would have made of the
// body (FuzzDecodeJSRequestFast holds it to that). body is valid UTF-8.
func decodeJSRequestFast(body []byte, req *js.Request) bool {
	p := fastJSON{b: body}
	ok := p.object(func(key []byte) bool {
		switch string(key) {
		case "stacktraces":
			return p.stacktraces(req)
		case "modules":
			return p.modules(req)
		case "release":
			return p.stringOrNull(&req.Release)
		case "dist":
			return p.stringOrNull(&req.Dist)
		case "options":
			return p.object(func(key []byte) bool {
				switch string(key) {
				case "apply_source_context":
					v, ok := p.boolean()
					req.Options.ApplySourceContext = &v
					return ok
				case "frame_order":
					return p.stringOrNull(&req.Options.FrameOrder)
				}
				return false
			})
		}
		return false
	})
	p.ws()
	if !ok || p.i != len(body) || req.Stacktraces == nil {
		return false
	}
	return true
}

// stacktraces reads the value of "stacktraces" into req.Traces, and
// its text into req.Stacktraces.
func (p *fastJSON) stacktraces(req *js.Request) bool {
	p.ws()
	start := p.i
	req.Traces = []js.StacktraceIn{}
	if !p.array(func() bool {
		var st js.StacktraceIn
		ok := p.object(func(key []byte) bool {
			return string(key) == "frames" && p.frames(&st)
		})
		req.Traces = append(req.Traces, st)
		return ok
	}) {
		return false
	}
	req.Stacktraces = p.b[start:p.i]
	return true
}

// frames reads the value of a stack trace's "frames" into st.
func (p *fastJSON) frames(st *js.StacktraceIn) bool {
	st.Frames = []js.FrameIn{}
	return p.array(func() bool {
		var f js.FrameIn
		if !p.object(func(key []byte) bool { return p.frameField(key, &f) }) {
			return false
		}
		st.Frames = append(st.Frames, f)
		return true
	})
}

// modules reads the value of "modules" into req.Modules.
func (p *fastJSON) modules(req *js.Request) bool {
	req.Modules = []js.Module{}
	return p.array(func() bool {
		var m js.Module
		ok := p.object(func(key []byte) bool {
			switch string(key) {
			case "type":
				return p.stringOrNull(&m.Type)
			case "code_file":
				return p.stringOrNull(&m.CodeFile)
			case "debug_id":
				return p.stringOrNull(&m.DebugID)
			}
			return false
		})
		req.Modules = append(req.Modules, m)
		return ok
	})
}

// frameFields are the keys of js.FrameIn. encoding/json also takes them in
// any case: another spelling of one is not read here.
var frameFields = []string{"abs_path", "lineno", "colno", "function"}

// frameField reads the value of key into f.
func (p *fastJSON) frameField(key []byte, f *js.FrameIn) bool {
	switch string(key) {
	case "abs_path":
		return p.internOrNull(&f.AbsPath, &p.lastAbsPath)
	case "function":
		return p.internOrNull(&f.Function, &p.lastFunction)
	case "lineno":
		return p.intOrNull(&f.Lineno)
	case "colno":
		return p.intOrNull(&f.Colno)
	}
	for _, k := range frameFields {
		if bytes.EqualFold([]byte(k), key) {
			return false
		}
	}
	return p.scalar()
}

// fastJSON reads a subset of JSON from b at i.
type fastJSON struct {
	b []byte
	i int
	// seps counts the ',', ':', '[' and '{' read: one less than
	// jsonValues counts in what was read. The reading stops before it
	// reaches maxJSONValues, so that the fast path takes no more values
	// than checkResolveBody lets through.
	seps int
	// interned holds the strings of frames read so far, which a stack
	// trace repeats (its file's URL, often its function names), so
	// that each is allocated once. Frames never change their strings.
	interned map[string]*string
	// lastAbsPath and lastFunction are the last frame's, which the next
	// one most often repeats.
	lastAbsPath, lastFunction *string
	// ints is where numbers read go, allocated a block at a time.
	ints []int64
}

// maxInterned bounds interned: a body of distinct strings makes each once
// anyway.
const maxInterned = 4096

func (p *fastJSON) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// lit consumes c after white space.
func (p *fastJSON) lit(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		if c == ',' || c == ':' || c == '[' || c == '{' {
			p.seps++
			return p.seps < maxJSONValues
		}
		return true
	}
	return false
}

// object reads an object, calling field for each key with the reader
// before its value.
func (p *fastJSON) object(field func(key []byte) bool) bool {
	if !p.lit('{') {
		return false
	}
	if p.lit('}') {
		return true
	}
	for {
		key, ok := p.raw()
		if !ok || !p.lit(':') || !field(key) {
			return false
		}
		if p.lit(',') {
			continue
		}
		return p.lit('}')
	}
}

// array reads an array, calling elem before each element.
func (p *fastJSON) array(elem func() bool) bool {
	if !p.lit('[') {
		return false
	}
	if p.lit(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if p.lit(',') {
			continue
		}
		return p.lit(']')
	}
}

// str reads a string without escapes or control characters.
func (p *fastJSON) str() (string, bool) {
	b, ok := p.raw()
	return string(b), ok
}

// raw reads a string without escapes or control characters, and returns
// its bytes in b.
func (p *fastJSON) raw() ([]byte, bool) {
	if !p.lit('"') {
		return nil, false
	}
	start := p.i
	// Eight bytes at a time while none is a quote, a backslash or a
	// control character (each test sets the high bit of a byte below
	// its bound, or equal to its value, and of no byte when there is
	// none).
	for p.i+8 <= len(p.b) {
		const ones, highs = 0x0101010101010101, 0x8080808080808080
		x := binary.LittleEndian.Uint64(p.b[p.i:])
		quote, backslash := x^(ones*'"'), x^(ones*'\\')
		if ((quote-ones)&^quote|(backslash-ones)&^backslash|(x-ones*0x20)&^x)&highs != 0 {
			break
		}
		p.i += 8
	}
	for p.i < len(p.b) {
		c := p.b[p.i]
		if !plainStringByte[c] {
			if c != '"' {
				return nil, false
			}
			p.i++
			return p.b[start : p.i-1], true
		}
		p.i++
	}
	return nil, false
}

// plainStringByte tells the bytes that may stand for themselves in a JSON
// string: neither its quote, nor the backslash of an escape, nor a control
// character.
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// null consumes null.
func (p *fastJSON) null() bool {
	p.ws()
	if strings.HasPrefix(string(p.b[p.i:min(p.i+4, len(p.b))]), "null") {
		p.i += 4
		return true
	}
	return false
}

// internOrNull is stringOrNull for a string of a frame: the same text
// read before gives the same pointer. *last is the string the same key of
// the previous frame had, tried first.
func (p *fastJSON) internOrNull(dst, last **string) bool {
	if p.null() {
		*dst = nil
		return true
	}
	raw, ok := p.raw()
	if !ok {
		return false
	}
	if *last != nil && **last == string(raw) {
		*dst = *last
		return true
	}
	if s, ok := p.interned[string(raw)]; ok {
		*dst, *last = s, s
		return true
	}
	text := string(raw)
	s := &text
	if p.interned == nil {
		p.interned = map[string]*string{}
	}
	if len(p.interned) < maxInterned {
		p.interned[*s] = s
	}
	*dst, *last = s, s
	return true
}

func (p *fastJSON) stringOrNull(dst **string) bool {
	if p.null() {
		*dst = nil
		return true
	}
	s, ok := p.str()
	*dst = &s
	return ok
}

// intOrNull reads null or a whole number of at most 18 digits.
func (p *fastJSON) intOrNull(dst **int64) bool {
	if p.null() {
		*dst = nil
		return true
	}
	p.ws()
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	n := p.i - digits
	if n == 0 || n > 18 || n > 1 && p.b[digits] == '0' {
		return false
	}
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return false
	}
	// At most 18 digits: the value fits in an int64.
	var v int64
	for _, c := range p.b[digits:p.i] {
		v = v*10 + int64(c-'0')
	}
	if p.b[start] == '-' {
		v = -v
	}
	if len(p.ints) == cap(p.ints) {
		p.ints = make([]int64, 0, 256)
	}
	p.ints = append(p.ints, v)
	*dst = &p.ints[len(p.ints)-1]
	return true
}

func (p *fastJSON) boolean() (bool, bool) {
	p.ws()
	rest := string(p.b[p.i:min(p.i+5, len(p.b))])
	switch {
	case strings.HasPrefix(rest, "true"):
		p.i += 4
		return true, true
	case strings.HasPrefix(rest, "false"):
		p.i += 5
		return false, true
	}
	return false, false
}

// scalar skips a string, a whole number, true, false or null.
func (p *fastJSON) scalar() bool {
	if _, ok := p.boolean(); ok {
		return true
	}
	var n *int64
	if p.intOrNull(&n) {
		return true
	}
	_, ok := p.str()
	return ok
}
