package proguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxSize is the largest mapping Parse reads, in bytes.
const MaxSize = 256 << 20

// maxIndex bounds what a parsed mapping holds, as Parse counts it (about
// what its classes and methods take in memory, beyond the text): a fixed
// budget, whatever the mapping says. A mapping of 8 MB of one-line
// classes held 124 MB before it was counted so.
const maxIndex = 512 << 20

// The memory a class and a method of a parsed mapping take besides their
// names (substrings of the text, which is counted whole): the struct, its
// entries in the maps, the maps' buckets; a class's first method makes its
// map of methods. TestSizeIsWhatAMappingHolds measures them with the heap.
const (
	classCost     = 192
	methodCost    = 96
	methodMapCost = 432
)

// ErrMalformed is the error of a mapping beyond the budget.
var ErrMalformed = errors.New("malformed ProGuard mapping")

// ErrTooLarge is the error of a mapping that would hold more than the
// bound ParseWithin was given; it is ErrMalformed too.
var ErrTooLarge = fmt.Errorf("%w: it would hold more than its bound", ErrMalformed)

// Mapping is a parsed mapping file.
type Mapping struct {
	classes map[string]*class // by obfuscated name
	byOrig  map[string]*class // by original name
	size    int
}

type class struct {
	original, obfuscated string
	sourceFile           string // R8's sourceFile metadata; "" when absent
	methods              map[string][]method
}

// method is a method line: its obfuscated line range (0:0 when it has
// none), the original name (qualified when it was inlined from another
// class) and the original line range (origEnd < 0 when only a line is
// given, origStart < 0 when none is).
type method struct {
	start, end         int32
	origStart, origEnd int32
	hasRange           bool
	name               string
}

// Frame is a frame of a stack trace: class, method, source file and line.
type Frame struct {
	Class  string
	Method string
	File   string
	Line   int
}

// Parse reads the mapping data. Lines it cannot read are skipped.
func Parse(data []byte) (*Mapping, error) { return ParseWithin(data, maxIndex) }

// ParseWithin is Parse of a mapping that may hold at most limit bytes
// (Mapping.Size, its text included; never more than maxIndex): one that
// would hold more is ErrTooLarge, refused before its text is copied when
// the text alone is over, else as soon as its index passes the bound.
func ParseWithin(data []byte, limit int) (*Mapping, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%w: %d bytes, over %d", ErrMalformed, len(data), MaxSize)
	}
	limit = min(limit, maxIndex)
	if len(data)+64 > limit {
		return nil, fmt.Errorf("%w: %d bytes, over %d", ErrTooLarge, len(data)+64, limit)
	}
	text := string(data)
	m := &Mapping{classes: map[string]*class{}, byOrig: map[string]*class{}, size: len(text) + 64}
	var cur *class
	for len(text) > 0 {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		line = strings.TrimRight(line, "\r")
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
		case strings.HasPrefix(trimmed, "#"):
			if cur != nil {
				cur.readMetadata(strings.TrimSpace(trimmed[1:]))
			}
		case line[0] != ' ' && line[0] != '\t':
			cur = nil
			orig, obf, ok := strings.Cut(strings.TrimSuffix(trimmed, ":"), " -> ")
			if !ok || !strings.HasSuffix(trimmed, ":") || orig == "" || obf == "" {
				continue
			}
			cur = &class{original: orig, obfuscated: obf}
			m.classes[obf] = cur
			m.byOrig[orig] = cur
			m.size += classCost
		case cur != nil:
			if name, mt, ok := parseMethod(trimmed); ok {
				if cur.methods == nil {
					cur.methods = map[string][]method{}
					m.size += methodMapCost
				}
				cur.methods[name] = append(cur.methods[name], mt)
				m.size += methodCost
			}
		}
		if m.size > limit {
			return nil, fmt.Errorf("%w: %d bytes, over %d", ErrTooLarge, m.size, limit)
		}
	}
	return m, nil
}

// readMetadata reads R8's JSON comment of a class: its source file.
func (c *class) readMetadata(s string) {
	if !strings.HasPrefix(s, "{") || !strings.Contains(s, "sourceFile") {
		return
	}
	var meta struct {
		ID       string `json:"id"`
		FileName string `json:"fileName"`
	}
	if json.Unmarshal([]byte(s), &meta) == nil && meta.ID == "sourceFile" {
		c.sourceFile = meta.FileName
	}
}

// parseMethod reads "[a:b:]type name(args)[:c[:d]] -> obf"; a field line
// (no parenthesis) is not a method.
func parseMethod(s string) (string, method, bool) {
	left, obf, ok := strings.Cut(s, " -> ")
	if !ok || obf == "" {
		return "", method{}, false
	}
	open := strings.IndexByte(left, '(')
	closing := strings.LastIndexByte(left, ')')
	if open < 0 || closing < open {
		return "", method{}, false
	}
	mt := method{origStart: -1, origEnd: -1}
	head := left[:open]
	// The leading "a:b:" range.
	if i := strings.IndexByte(head, ':'); i >= 0 && isDigits(head[:i]) {
		j := strings.IndexByte(head[i+1:], ':')
		if j < 0 {
			return "", method{}, false
		}
		a, okA := number(head[:i])
		b, okB := number(head[i+1 : i+1+j])
		if !okA || !okB {
			return "", method{}, false
		}
		mt.start, mt.end, mt.hasRange = a, b, true
		head = head[i+1+j+1:]
	}
	sp := strings.LastIndexByte(head, ' ')
	if sp < 0 {
		return "", method{}, false
	}
	mt.name = head[sp+1:]
	if mt.name == "" {
		return "", method{}, false
	}
	// The trailing ":c[:d]" original lines.
	if tail := left[closing+1:]; tail != "" {
		if tail[0] != ':' {
			return "", method{}, false
		}
		c, d, hasD := strings.Cut(tail[1:], ":")
		n, ok := number(c)
		if !ok {
			return "", method{}, false
		}
		mt.origStart = n
		if hasD {
			if mt.origEnd, ok = number(d); !ok {
				return "", method{}, false
			}
		}
	}
	return obf, mt, true
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// number reads a line number below 2^31.
func number(s string) (int32, bool) {
	if !isDigits(s) || len(s) > 10 {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n >= 1<<31 {
		return 0, false
	}
	return int32(n), true
}

// Size is about how many bytes m takes in memory, its input included.
func (m *Mapping) Size() int { return m.size }

// Class returns the original name of the obfuscated class name.
func (m *Mapping) Class(name string) (string, bool) {
	if c, ok := m.classes[name]; ok {
		return c.original, true
	}
	return "", false
}

// Remap returns the original frames of the obfuscated frame f, innermost
// first: several when methods were inlined at f's line. False when f's
// class is not in the mapping. A method the mapping does not name keeps
// its name and line.
func (m *Mapping) Remap(f Frame) ([]Frame, bool) {
	frames, _, ok := m.RemapAtMost(f, math.MaxInt)
	return frames, ok
}

// RemapAtMost is Remap keeping the first limit frames of f (a line that
// many methods share remaps to them all): n is how many Remap returns,
// counted without building those left out.
func (m *Mapping) RemapAtMost(f Frame, limit int) (frames []Frame, n int, ok bool) {
	c, ok := m.classes[f.Class]
	if !ok {
		return nil, 0, false
	}
	methods := c.methods[f.Method]
	var out []Frame
	for _, mt := range methods {
		if !mt.hasRange || f.Line < int(mt.start) || f.Line > int(mt.end) {
			continue
		}
		if n++; len(out) == limit {
			continue
		}
		line := f.Line
		switch {
		case mt.origStart < 0:
		case mt.origEnd >= 0 && mt.origEnd-mt.origStart == mt.end-mt.start:
			line = int(mt.origStart) + f.Line - int(mt.start)
		default:
			line = int(mt.origStart)
		}
		out = append(out, m.frame(c, mt.name, line))
	}
	if n > 0 {
		return out, n, true
	}
	// No range holds the line: a method without line ranges, or one
	// whose line the mapping does not know.
	for _, mt := range methods {
		if !mt.hasRange || mt.start == 0 && mt.end == 0 {
			return []Frame{m.frame(c, mt.name, f.Line)}, 1, true
		}
	}
	if len(methods) > 0 {
		return []Frame{m.frame(c, methods[0].name, f.Line)}, 1, true
	}
	return []Frame{{Class: c.original, Method: f.Method, File: m.fileOf(c.original), Line: f.Line}}, 1, true
}

// frame is the original frame of method name (qualified when inlined from
// another class) of class c at line.
func (m *Mapping) frame(c *class, name string, line int) Frame {
	cls := c.original
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		cls, name = name[:i], name[i+1:]
	}
	return Frame{Class: cls, Method: name, File: m.fileOf(cls), Line: line}
}

// fileOf returns the source file of the original class cls: R8's metadata
// when the mapping has it, else the outermost class's name with .java.
func (m *Mapping) fileOf(cls string) string {
	if c, ok := m.byOrig[cls]; ok && c.sourceFile != "" {
		return c.sourceFile
	}
	simple := cls[strings.LastIndexByte(cls, '.')+1:]
	if i := strings.IndexByte(simple, '$'); i > 0 {
		simple = simple[:i]
	}
	return simple + ".java"
}
