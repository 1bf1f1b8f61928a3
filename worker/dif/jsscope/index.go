package jsscope

import (
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// pos is a position of the source as source maps count it: a 0-based line
// (lines end at \n) and a 0-based column in UTF-16 code units.
type pos struct{ line, col uint32 }

func (p pos) before(q pos) bool { return p.line < q.line || p.line == q.line && p.col < q.col }

// Index is the scopes of a minified file: for each position, the
// innermost function around it and the parts of its name. It is safe for
// concurrent use.
type Index struct {
	// starts are where the innermost scope changes, in order; in is the
	// scope from each on (-1: none).
	starts []pos
	in     []int32
	scopes []scopeRec
	parts  []partRec
	text   string
	// end is where the scan stopped when it stopped early: it knows
	// nothing from there on.
	end     pos
	partial bool
}

// scopeRec is a scope: its name's parts, and the positions of its last
// character and of the one after it.
type scopeRec struct {
	p0, p1     int32
	last, past pos
}

// partRec is a part of a name: its text, and where an identifier stands.
type partRec struct {
	t0, t1 int32
	at     pos
	ident  bool
}

// Build reads the scopes of the JavaScript source src within the bounds
// of doc.go. It accepts any bytes; src is not kept.
func Build(src []byte) *Index {
	s := scan(src)
	src = s.lex.src
	x := &Index{}

	// The scopes closed, outer ones first.
	order := make([]int, 0, len(s.scopes))
	for i, b := range s.scopes {
		if b.end > b.start {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		sa, sb := s.scopes[order[a]], s.scopes[order[b]]
		return sa.start < sb.start || sa.start == sb.start && sa.end > sb.end
	})

	// The byte offsets whose positions are needed.
	var offs []int
	type rangeAt struct {
		off   int
		scope int32
	}
	var ranges []rangeAt
	var stack []int
	unwind := func(upTo int) {
		for len(stack) > 0 {
			top := s.scopes[order[stack[len(stack)-1]]]
			if top.end > upTo {
				return
			}
			stack = stack[:len(stack)-1]
			parent := int32(-1)
			if len(stack) > 0 {
				parent = int32(stack[len(stack)-1])
			}
			ranges = append(ranges, rangeAt{top.end, parent})
		}
	}
	for k, i := range order {
		b := s.scopes[i]
		unwind(b.start)
		if len(stack) > 0 && s.scopes[order[stack[len(stack)-1]]].end < b.end {
			continue // not within its parent: cannot happen, as brackets nest
		}
		ranges = append(ranges, rangeAt{b.start, int32(k)})
		stack = append(stack, k)
	}
	unwind(len(src) + 1)
	for _, r := range ranges {
		offs = append(offs, r.off)
	}
	for _, i := range order {
		b := s.scopes[i]
		offs = append(offs, b.end-1, b.end)
		for _, p := range s.parts[b.p0:b.p1] {
			if p.isIdent() {
				offs = append(offs, int(p.start))
			}
		}
	}
	if s.stopped {
		offs = append(offs, s.stopAt)
	}
	at := positions(src, offs)

	// Consecutive ranges at one offset: the last one holds.
	n := 0
	for j, r := range ranges {
		if j+1 == len(ranges) || ranges[j+1].off != r.off {
			n++
		}
	}
	x.starts, x.in = make([]pos, 0, n), make([]int32, 0, n)
	for j, r := range ranges {
		if j+1 < len(ranges) && ranges[j+1].off == r.off {
			continue
		}
		x.starts = append(x.starts, at(r.off))
		x.in = append(x.in, r.scope)
	}
	var text strings.Builder
	nparts := 0
	for _, i := range order {
		nparts += s.scopes[i].p1 - s.scopes[i].p0
	}
	x.parts = make([]partRec, 0, nparts)
	x.scopes = make([]scopeRec, len(order))
	for k, i := range order {
		b := s.scopes[i]
		rec := scopeRec{p0: int32(len(x.parts)), last: at(b.end - 1), past: at(b.end)}
		for _, p := range s.parts[b.p0:b.p1] {
			pr := partRec{t0: int32(text.Len()), ident: p.isIdent()}
			if p.isIdent() {
				text.Write(src[p.start:p.end])
				pr.at = at(int(p.start))
			} else {
				text.WriteString(p.text)
			}
			pr.t1 = int32(text.Len())
			x.parts = append(x.parts, pr)
		}
		rec.p1 = int32(len(x.parts))
		x.scopes[k] = rec
	}
	x.text = strings.Clone(text.String()) // the builder's spare capacity is not kept
	if s.stopped {
		x.end, x.partial = at(s.stopAt), true
	}
	return x
}

// positions returns the position of each of offs, byte offsets of src,
// found in one pass over src.
func positions(src []byte, offs []int) func(int) pos {
	slices.Sort(offs)
	offs = slices.Compact(offs)
	ps := make([]pos, len(offs))
	var p pos
	i, k := 0, 0
	for k < len(offs) {
		for i < offs[k] && i < len(src) {
			c := src[i]
			switch {
			case c == '\n':
				p.line++
				p.col = 0
				i++
			case c < utf8.RuneSelf:
				p.col++
				i++
			default:
				r, n := utf8.DecodeRune(src[i:])
				p.col++
				if r >= 0x10000 {
					p.col++
				}
				i += n
			}
		}
		if i < offs[k] { // past the end
			p.col += uint32(offs[k] - i)
			i = offs[k]
		}
		ps[k] = p
		k++
	}
	return func(off int) pos {
		j, _ := slices.BinarySearch(offs, off)
		return ps[j]
	}
}

// Size is the bytes x holds, as the heap counts them (a test holds it
// there).
func (x *Index) Size() int64 {
	return 128 + int64(cap(x.starts))*8 + int64(cap(x.in))*4 + int64(cap(x.scopes))*24 +
		int64(cap(x.parts))*20 + int64(len(x.text))
}

// Len is the number of scopes.
func (x *Index) Len() int { return len(x.scopes) }

// MaxMappedNameBytes is the longest name NameAt returns: the names a map
// gives the parts of a name may be long, and a longer one is cut.
const MaxMappedNameBytes = 4 * MaxNameBytes

// Mapping is what a source map says at a generated position: the segment
// of that line with the greatest column not after it.
type Mapping struct {
	// Column is the segment's own generated column.
	Column int
	// Source, Line and OrigColumn are its original position.
	Source, Line, OrigColumn int
	Name                     string
	HasName                  bool
}

// Mapper is the source map of the file an Index was built from.
type Mapper interface {
	// Mapping returns the segment of generated line (0-based) with the
	// greatest column not after col (UTF-16, 0-based); false when there
	// is none on that line.
	Mapping(line, col int) (Mapping, bool)
}

// NameAt returns the name of the innermost function around the generated
// position line:col (0-based, UTF-16), its identifiers replaced by the
// names m gives them, as symbolic's sourcemapcache names a scope (a name
// of several parts cut at MaxMappedNameBytes; one of one part is the
// map's, which the caller cuts as it cuts any name it answers): "" when
// no function is around it or none is named, or when the scan stopped
// before it. m may be nil (the minified names).
func (x *Index) NameAt(line, col int, m Mapper) string {
	if x == nil || line < 0 || col < 0 || line > 1<<31 || col > 1<<31 {
		return ""
	}
	p := pos{uint32(line), uint32(col)}
	if x.partial && !p.before(x.end) {
		return ""
	}
	i := sort.Search(len(x.starts), func(i int) bool { return p.before(x.starts[i]) }) - 1
	if i < 0 || x.in[i] < 0 {
		return ""
	}
	sc := x.scopes[x.in[i]]
	parts := x.parts[sc.p0:sc.p1]
	named, renamed := "", false
	if len(parts) == 1 { // most names of minified code: nothing to join
		named = x.text[parts[0].t0:parts[0].t1]
		if parts[0].ident && m != nil {
			if n, ok := mappedName(m, parts[0].at); ok {
				named, renamed = n, n != named
			}
		}
	} else {
		var orig, b strings.Builder
		for _, pr := range parts {
			text := x.text[pr.t0:pr.t1]
			orig.WriteString(text)
			if pr.ident && m != nil {
				if n, ok := mappedName(m, pr.at); ok {
					text = n
				}
			}
			if b.Len()+len(text) > MaxMappedNameBytes {
				// The map's names may be long: a name is cut, at the
				// start of a character, rather than joined whole.
				cut := MaxMappedNameBytes - b.Len()
				for cut > 0 && !utf8.RuneStart(text[cut]) {
					cut--
				}
				b.WriteString(text[:cut])
				renamed = true
				break
			}
			b.WriteString(text)
		}
		named = b.String()
		renamed = renamed || named != orig.String()
	}
	if !renamed && m != nil {
		// The map may name the function at its closing bracket (as
		// dart2js does), where symbolic looks when no part was renamed.
		if n, ok := closingName(m, sc); ok {
			return n
		}
	}
	return named
}

// mappedName is the name m gives the identifier at p: that of its segment
// when the segment starts at p or one column before, else that of the
// segment just before it when both map to the same place (TypeScript puts
// a function's name on its keyword), as symbolic's NameResolver reads it.
func mappedName(m Mapper, p pos) (string, bool) {
	t, ok := m.Mapping(int(p.line), int(p.col))
	if !ok || t.Column+1 < int(p.col) {
		return "", false
	}
	if t.HasName {
		return t.Name, true
	}
	if t.Column == 0 {
		return "", false
	}
	prev, ok := m.Mapping(int(p.line), t.Column-1)
	if ok && prev.Source == t.Source && prev.Line == t.Line && prev.OrigColumn == t.OrigColumn && prev.HasName {
		return prev.Name, true
	}
	return "", false
}

// closingName is the name of the segment that starts at the last
// character of scope sc, when the one after it is another segment.
func closingName(m Mapper, sc scopeRec) (string, bool) {
	t, ok := m.Mapping(int(sc.last.line), int(sc.last.col))
	if !ok || t.Column != int(sc.last.col) || !t.HasName {
		return "", false
	}
	if n, ok := m.Mapping(int(sc.past.line), int(sc.past.col)); ok && sc.past.line == sc.last.line && n.Column == t.Column {
		return "", false
	}
	return t.Name, true
}
