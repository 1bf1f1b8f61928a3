package proguard

import (
	"errors"
	"fmt"
	"math"
	"slices"
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
	methodCost    = 112
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
	// flags holds R8's synthesized and outline marks of methods, by the
	// original class and "name(args)"; nil when the mapping has none.
	flags map[methodKey]uint8
	size  int
}

type class struct {
	original, obfuscated string
	sourceFile           string // R8's sourceFile metadata; "" when absent
	synthesized          bool   // R8's synthesized metadata on the class
	methods              map[string][]method
}

// method is a method line: its obfuscated line range (hasRange false when
// it has none, start and end 0 then), the original method as the line
// writes it, "[class.]name(args)", and the original line range (origEnd
// < 0 when only a line is given, origStart < 0 when none is). r8 holds
// R8's metadata of this line, nil for most; flags the marks of its method
// and class (methodFlags), set once the whole mapping is read.
type method struct {
	start, end         int32
	origStart, origEnd int32
	hasRange           bool
	flags              uint8
	sig                string
	r8                 *lineMeta
}

// Frame is a frame of a stack trace: class, method, source file and line.
type Frame struct {
	Class  string
	Method string
	File   string
	Line   int
	// NoLine says the mapping gives no line for the frame (Line is 0).
	NoLine bool
	// Synthesized says R8 marked the frame's method or its class as made
	// by the compiler (com.android.tools.r8.synthesized).
	Synthesized bool
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
	// What R8's metadata comments below apply to: the class line or the
	// method line just above them (lastMethod, under cur.methods[lastName]).
	var lastName string
	lastMethod := -1
	classAbove := false
	for len(text) > 0 {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		line = strings.TrimRight(line, "\r")
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
		case strings.HasPrefix(trimmed, "#"):
			if cur == nil || !classAbove && lastMethod < 0 {
				continue
			}
			var mt *method
			if lastMethod >= 0 {
				mt = &cur.methods[lastName][lastMethod]
			}
			m.readMetadata(strings.TrimSpace(trimmed[1:]), cur, mt)
		case line[0] != ' ' && line[0] != '\t':
			cur, classAbove, lastMethod = nil, false, -1
			orig, obf, ok := strings.Cut(strings.TrimSuffix(trimmed, ":"), " -> ")
			if !ok || !strings.HasSuffix(trimmed, ":") || orig == "" || obf == "" {
				continue
			}
			cur, classAbove = &class{original: orig, obfuscated: obf}, true
			m.classes[obf] = cur
			m.byOrig[orig] = cur
			m.size += classCost
		case cur != nil:
			classAbove, lastMethod = false, -1
			if name, mt, ok := parseMethod(trimmed); ok {
				if cur.methods == nil {
					cur.methods = map[string][]method{}
					m.size += methodMapCost
				}
				cur.methods[name] = append(cur.methods[name], mt)
				lastName, lastMethod = name, len(cur.methods[name])-1
				m.size += methodCost
			}
		}
		if m.size > limit {
			return nil, fmt.Errorf("%w: %d bytes, over %d", ErrTooLarge, m.size, limit)
		}
	}
	m.setFlags()
	return m, nil
}

// setFlags copies R8's marks onto the method lines they apply to, once,
// so that remapping a frame looks up no names.
func (m *Mapping) setFlags() {
	if m.flags == nil {
		return
	}
	for _, c := range m.classes {
		for _, methods := range c.methods {
			for i := range methods {
				methods[i].flags = m.methodFlags(c, &methods[i])
			}
		}
	}
}

// parseMethod reads "[a:b:]type name(args)[:c[:d]] -> obf"; a field line
// (no parenthesis) is not a method. An inverted range (b < a, d < c) is
// read the right way round.
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
		mt.start, mt.end, mt.hasRange = min(a, b), max(a, b), true
		head = head[i+1+j+1:]
		left = left[i+1+j+1:]
		open -= i + 1 + j + 1
		closing -= i + 1 + j + 1
	}
	sp := strings.LastIndexByte(head, ' ')
	if sp < 0 || sp+1 == len(head) {
		return "", method{}, false
	}
	mt.sig = left[sp+1 : closing+1]
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
			mt.origStart, mt.origEnd = min(mt.origStart, mt.origEnd), max(mt.origStart, mt.origEnd)
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
	r, ok := m.RemapIn(f, Context{}, math.MaxInt)
	return r.Frames, ok
}

// Context is where a frame stands in its stack trace, read callee first,
// for R8's metadata: the exception it threw and the outline it called.
type Context struct {
	// Thrown is the original class name of the exception the frame threw
	// ("java.lang.NullPointerException") when it is the top frame of the
	// stack trace, "" otherwise: R8's rewriteFrame rules of the method
	// lines at its line apply when their conditions name it.
	Thrown string
	// Outline is the position in the outline the frame called (the line
	// of the outline's frame, Remapped.Outline), 0 for none: the method
	// line at the frame's line maps it to the line of the call site
	// (R8's outlineCallsite), which the frame is remapped at.
	Outline int
	// DropSynthesized leaves out the frames of methods R8 synthesized.
	DropSynthesized bool
	// Work, when not nil, is what is left of the caller's budget of work
	// (MaxWork for a request): RemapIn takes from it the method lines and
	// rewriteFrame rules it reads (and, by 64 bytes, the signatures of the
	// frames it builds and, for a frame without a line, of the method
	// lines whose names it compares), and
	// remaps nothing (false) once it is
	// spent, so that a mapping whose many lines share a name costs a
	// bounded time over all the frames of a request.
	Work *int
}

// MaxWork is the work a request may take of RemapIn (Context.Work):
// method lines and rules read, a fraction of a second of it.
const MaxWork = 1 << 24

// Remapped is what RemapIn gives for an obfuscated frame.
type Remapped struct {
	// Frames are the original frames, innermost first, at most the limit.
	Frames []Frame
	// N is how many frames the mapping gives, the ones past the limit
	// included (those are counted, not built).
	N int
	// Outline is, for a frame in an outline method (R8's outline), its
	// position, which the next frame toward the caller takes in its
	// Context: the outline's own frame is left out (Frames holds only
	// what was inlined into it).
	Outline int
}

// RemapIn is Remap of f keeping its first limit frames (a line that many
// methods share remaps to them all: the others are counted, not built),
// as R8's retrace reads a stack trace, where ctx says what comes before
// f, callee first: R8's rewriteFrame rules for the exception it threw,
// outlines it called, synthesized methods.
// False when f's class is not in the mapping, or ctx.Work is spent.
func (m *Mapping) RemapIn(f Frame, ctx Context, limit int) (Remapped, bool) {
	c, ok := m.classes[f.Class]
	if !ok {
		return Remapped{}, false
	}
	methods := c.methods[f.Method]
	if !ctx.Take(len(methods)) {
		return Remapped{}, false
	}
	if len(methods) == 0 {
		return m.classOnly(c, f, limit, ctx)
	}
	line := f.Line
	if ctx.Outline > 0 {
		if callsite, ok := outlineCallsite(methods, line, ctx.Outline); ok {
			line = callsite
		}
	}
	if line == 0 && !ctx.takeNames(methods) {
		return Remapped{}, false
	}
	// First what the lines say: how many frames a rule removes, whether
	// the frame is in an outline; then the frames kept. What R8's metadata
	// removes (rewriteFrame, synthesized) is not counted in N: a frame it
	// empties answers nothing.
	var r Remapped
	remove := 0
	classOnly := m.matches(c, methods, line, func(mt *method, _, _ int, _ bool) {
		if mt.flags&flagOutline != 0 {
			r.Outline = line
		}
		if ctx.Thrown != "" && mt.r8 != nil && ctx.Take(len(mt.r8.rules)) {
			remove += mt.r8.removes(ctx.Thrown)
		}
	})
	if ctx.Work != nil && *ctx.Work < 0 {
		return Remapped{}, false
	}
	if classOnly {
		return m.classOnly(c, f, limit, ctx)
	}
	at := 0
	m.matches(c, methods, line, func(mt *method, first, count int, noLine bool) {
		skip := min(max(remove-at, 0), count)
		at += count
		if mt.flags&flagOutline != 0 || ctx.DropSynthesized && mt.flags&flagSynthesized != 0 {
			return
		}
		for i := skip; i < count; i++ {
			if r.N++; len(r.Frames) < limit {
				if !ctx.Take(len(mt.sig) >> 6) {
					return // spent: RemapIn answers nothing below
				}
				fr := m.frame(c, mt.sig, first+i)
				fr.NoLine, fr.Synthesized = noLine, mt.flags&flagSynthesized != 0
				r.Frames = append(r.Frames, fr)
			} else {
				r.N += count - i - 1
				break
			}
		}
	})
	if ctx.Work != nil && *ctx.Work < 0 {
		return Remapped{}, false
	}
	return r, true
}

// Take takes n from ctx.Work: false when it is spent (below 0 after).
func (ctx Context) Take(n int) bool {
	if ctx.Work == nil {
		return true
	}
	*ctx.Work -= n
	return *ctx.Work >= 0
}

// takeNames takes from ctx.Work what a frame without a line reads of
// methods beyond one unit a line: it compares their names, a unit per 64
// bytes of their signatures. False when it is spent.
func (ctx Context) takeNames(methods []method) bool {
	if ctx.Work == nil {
		return true
	}
	n := 0
	for i := range methods {
		n += len(methods[i].sig) >> 6
	}
	return ctx.Take(n)
}

// classOnly is RemapIn of the frame f of class c whose method or line the
// mapping does not know: the class remapped, the method and line as they
// came. Building it reads the class's name: it takes a unit of ctx.Work
// per 64 bytes of it.
func (m *Mapping) classOnly(c *class, f Frame, limit int, ctx Context) (Remapped, bool) {
	if !ctx.Take(len(c.original) >> 6) {
		return Remapped{}, false
	}
	if limit < 1 {
		return Remapped{N: 1}, true
	}
	return Remapped{Frames: []Frame{{Class: c.original, Method: f.Method, File: m.fileOf(c.original, c, f.File), Line: f.Line}}, N: 1}, true
}

// matches calls yield for each method line of methods (those of one
// obfuscated name of class c) that remaps line, in the order R8's
// retrace gives their frames, with the original lines first, first+1, ...
// of count frames (noLine when the mapping gives none). Line 0 is a frame
// without a line. True when none does although the method has line
// ranges: the frame is remapped by its class only.
func (m *Mapping) matches(c *class, methods []method, line int, yield func(mt *method, first, count int, noLine bool)) (classOnly bool) {
	ranged := false // some line of the method has an obfuscated range
	for i := range methods {
		ranged = ranged || methods[i].end > 0
	}
	if line == 0 {
		m.matchesWithoutLine(methods, ranged, yield)
		return false
	}
	found := false
	for i := range methods {
		mt := &methods[i]
		switch {
		case mt.end > 0:
			if line < int(mt.start) || line > int(mt.end) {
				continue
			}
			yield(mt, originalLine(mt, line), 1, false)
		case ranged:
			continue // a range holds the lines of this method
		case mt.origStart < 0:
			yield(mt, line, 1, false) // no line information: the line as it came
		case mt.origEnd > mt.origStart && mt.origEnd-mt.origStart <= maxSpan:
			// One obfuscated position for several original lines: each.
			yield(mt, int(mt.origStart), int(mt.origEnd-mt.origStart)+1, false)
		case mt.origStart > 0:
			yield(mt, int(mt.origStart), 1, false)
		default:
			yield(mt, 0, 1, true)
		}
		found = true
	}
	return !found && ranged
}

// maxSpan is the longest original range one position stands for, R8's
// catch-all range 0:65535: a longer one is one line.
const maxSpan = 65535

// originalLine is the original line of obfuscated line inside mt's range.
func originalLine(mt *method, line int) int {
	switch {
	case mt.origStart < 0:
		return line
	case mt.origEnd < 0 || mt.origEnd == mt.origStart:
		return int(mt.origStart)
	case mt.origEnd-mt.origStart == mt.end-mt.start:
		return int(mt.origStart) + line - int(mt.start)
	default:
		return int(mt.origStart)
	}
}

// matchesWithoutLine is matches of a frame without a line, as R8's retrace
// reads one: the method lines without a range (or with 0:0) when there are
// some, else the first lines sharing a range (inlined methods), else the
// method once at line 0 when its lines all name it, else each at line 0.
func (m *Mapping) matchesWithoutLine(methods []method, ranged bool, yield func(mt *method, first, count int, noLine bool)) {
	var zeroRange, noRange, noRangeLines int
	spread := false // a 0:0 line stands for several original lines
	firstName, sameName := "", true
	for i := range methods {
		mt := &methods[i]
		switch {
		case mt.end > 0:
		case mt.hasRange:
			zeroRange++
			spread = spread || mt.origEnd >= 0 && mt.origEnd != mt.origStart
		default:
			if noRange++; noRange == 1 {
				firstName = methodName(mt.sig)
			} else if methodName(mt.sig) != firstName {
				sameName = false
			}
			if mt.origStart >= 0 {
				noRangeLines++
			}
		}
	}
	if zeroRange+noRange == 0 {
		first := &methods[0]
		group := 0
		for group < len(methods) && methods[group].start == first.start && methods[group].end == first.end {
			group++
		}
		if group > 1 {
			for i := range group {
				yield(&methods[i], max(int(methods[i].origStart), 0), 1, false)
			}
			return
		}
		for i := range methods {
			if methodName(methods[i].sig) != methodName(first.sig) {
				for i := range methods {
					yield(&methods[i], 0, 1, false)
				}
				return
			}
		}
		yield(first, 0, 1, false)
		return
	}
	// The lines without a range, in the mapping's order, or by method
	// name when they name several methods and all give a line, as R8's
	// retrace sorts them.
	sorted := !sameName && noRangeLines == noRange
	var later []*method
	emitted := false
	for i := range methods {
		mt := &methods[i]
		switch {
		case mt.end > 0:
		case mt.hasRange:
			switch {
			case spread:
				yield(mt, 0, 1, false)
			case mt.origStart > 0:
				yield(mt, int(mt.origStart), 1, false)
			default:
				yield(mt, 0, 1, true)
			}
		case sorted:
			later = append(later, mt)
		case !sameName:
			yield(mt, 0, 1, false)
		case !emitted:
			emitted = true
			if noRange == 1 {
				yield(mt, max(int(mt.origStart), 0), 1, false)
			} else {
				yield(mt, 0, 1, false)
			}
		}
	}
	slices.SortStableFunc(later, func(a, b *method) int { return strings.Compare(methodName(a.sig), methodName(b.sig)) })
	for _, mt := range later {
		yield(mt, 0, 1, false)
	}
}

// methodName is the name of "[class.]name(args)".
func methodName(sig string) string {
	name := sig[:strings.IndexByte(sig, '(')]
	return name[strings.LastIndexByte(name, '.')+1:]
}

// frame is the original frame of method sig ("[class.]name(args)",
// qualified when inlined from another class) of class c at line.
func (m *Mapping) frame(c *class, sig string, line int) Frame {
	cls, name := receiver(c, sig)
	return Frame{Class: cls, Method: name, File: m.fileOf(cls, c, ""), Line: line}
}

// receiver splits sig of a method line of class c into the method's
// original class and its name.
func receiver(c *class, sig string) (string, string) {
	name := sig[:strings.IndexByte(sig, '(')]
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[:i], name[i+1:]
	}
	return c.original, name
}
