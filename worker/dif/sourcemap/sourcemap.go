package sourcemap

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Budget of Parse.
const (
	// MaxSize is the largest map Parse reads, in bytes.
	MaxSize = 64 << 20
	// MaxSegments is the most mapping segments of one map, its sections
	// included.
	MaxSegments = 1 << 24
	// MaxDepth is how deep index maps may nest (a map in a section is
	// depth 1).
	MaxDepth = 4
)

// ErrMalformed is the error of a map that is not a source map errata can
// read within its budget.
var ErrMalformed = errors.New("malformed source map")

// ErrTooLarge is the error of a map that would hold more than the bound
// ParseWithin was given; it is ErrMalformed too.
var ErrTooLarge = fmt.Errorf("%w: it would hold more than its bound", ErrMalformed)

// parseState is what a parse has spent of its budget, sections included:
// the segments reserved and the bytes its maps hold (Map.Size), within
// limit.
type parseState struct {
	segments    int
	held, limit int
}

// none marks an absent source or name index in a segment.
const none = ^uint32(0)

// blockSize is how many segments each of Map.blocks stands for.
const blockSize = 16

// segment is one decoded mapping but its generated column (kept apart, in
// Map.cols, so that a lookup's binary search reads 4 bytes a step): when
// src is not none, the original source, line and column (0-based) and
// name.
type segment struct {
	src, line, ocol, name uint32
}

// Map is a parsed source map: a regular map, or an index map made of
// sections.
type Map struct {
	sources []string // sourceRoot applied
	// contents[i] is the text of sources[i] when hasContent[i]: kept
	// in one array, so that a lookup reads it without following a
	// pointer.
	contents   []string
	hasContent []bool
	names      []name
	// ignored[i] tells a source of the map's ignoreList; nil when it
	// lists none.
	ignored []bool
	lines   []uint32 // lines[i] is the first segment of generated line i; one more entry ends the last line
	cols    []uint32 // cols[i] is the generated column of segs[i]
	// blocks[k] is cols[k*blockSize]: a lookup in a long line halves
	// these first, a sixteenth of cols' size, then one block of cols, 64
	// bytes, one line of a processor's cache: halving cols alone read
	// a line from memory at each of its last steps.
	blocks   []uint32
	segs     []segment
	sections []section
	// nsources and nnames count the sources and names of the map, those
	// of its sections included.
	nsources, nnames int
	size             int
}

// section is a part of an index map from a generated offset on; its
// sources and names are numbered from srcBase and nameBase in the whole
// map.
type section struct {
	line, col         int
	m                 *Map
	srcBase, nameBase int
}

// Position is an original position: Source as the map names it (its
// sourceRoot applied; "" for a null source), 0-based Line and Column, the name the map gives
// there, and the source's text when the map carries it. SourceID and
// NameID number the source and the name among all those of the map, its
// sections' included (from 0 to NumSources() and NumNames()), so that a
// caller can keep what it derives from each in an array.
type Position struct {
	Source     string
	SourceID   int
	Line       int
	Column     int
	Name       string
	NameID     int
	HasName    bool
	Content    string
	HasContent bool
	// Ignored tells a source the map's ignoreList (or
	// x_google_ignoreList) names: library code, not the application's.
	Ignored bool
}

// rawMap is a map as its JSON writes it. Every field the specification
// (ECMA-426) gives a type is decoded into that type, so that a map of
// another is refused; file is checked and not kept.
type rawMap struct {
	Version        *int          `json:"version"`
	File           jsonString    `json:"file"`
	SourceRoot     string        `json:"sourceRoot"`
	Sources        []*string     `json:"sources"`
	SourcesContent []*string     `json:"sourcesContent"`
	Names          []name        `json:"names"`
	Mappings       *string       `json:"mappings"`
	IgnoreList     *[]int        `json:"ignoreList"`
	GoogleIgnore   *[]int        `json:"x_google_ignoreList"`
	Sections       *[]rawSection `json:"sections"`
}

type rawSection struct {
	Offset *struct {
		Line   *int `json:"line"`
		Column *int `json:"column"`
	} `json:"offset"`
	URL *string `json:"url"`
	Map *rawMap `json:"map"`
}

// errNotString is the error of a value that must be a JSON string.
var errNotString = errors.New("not a string")

// jsonString checks that a value is a JSON string (or null) and keeps
// nothing of it.
type jsonString struct{}

func (jsonString) UnmarshalJSON(b []byte) error {
	// The decoder checked the value's syntax: a string starts with '"'.
	if b[0] != '"' && string(b) != "null" {
		return errNotString
	}
	return nil
}

// name is a name of the map's names: a JSON string, never null (which
// encoding/json leaves as "" in a string).
type name string

// UnmarshalJSON reads a name as encoding/json reads a string; one without
// escapes and of valid UTF-8, most names, is its bytes between the quotes,
// without a second decoder run for it (b is valid JSON: json.Unmarshal
// checked the whole map before).
func (n *name) UnmarshalJSON(b []byte) error {
	if b[0] != '"' {
		return errNotString
	}
	if bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
		*n = name(b[1 : len(b)-1])
		return nil
	}
	return json.Unmarshal(b, (*string)(n))
}

// Parse decodes the source map data, within the budget of the package
// doc. A map it cannot read is ErrMalformed (wrapped).
func Parse(data []byte) (*Map, error) { return ParseWithin(data, math.MaxInt) }

// ParseWithin is Parse of a map that may hold at most limit bytes
// (Map.Size): a map that would hold more is ErrTooLarge, refused before
// its mappings are decoded, so that the parse allocates nothing past the
// bound beyond the JSON's own strings (at most the size of data).
func ParseWithin(data []byte, limit int) (*Map, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%w: %d bytes, over %d", ErrMalformed, len(data), MaxSize)
	}
	// A map may start with the XSSI prefix )]}' followed by a line.
	if bytes.HasPrefix(data, []byte(")]}")) {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		} else {
			data = nil
		}
	}
	var raw rawMap
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return build(&raw, 0, &parseState{limit: limit})
}

func build(raw *rawMap, depth int, st *parseState) (*Map, error) {
	if raw.Version == nil || *raw.Version != 3 {
		return nil, fmt.Errorf("%w: not version 3", ErrMalformed)
	}
	if raw.Sections != nil {
		if raw.Mappings != nil {
			return nil, fmt.Errorf("%w: an index map with mappings", ErrMalformed)
		}
		return buildIndex(raw, depth, st)
	}
	if raw.Mappings == nil {
		return nil, fmt.Errorf("%w: no mappings", ErrMalformed)
	}
	if raw.Sources == nil {
		return nil, fmt.Errorf("%w: no sources", ErrMalformed)
	}
	m := &Map{names: raw.Names, nsources: len(raw.Sources), nnames: len(raw.Names)}
	ignore := raw.IgnoreList
	if ignore == nil {
		ignore = raw.GoogleIgnore
	}
	if ignore != nil && len(*ignore) > 0 {
		m.ignored = make([]bool, len(raw.Sources))
		m.size += heldString(len(m.ignored))
		for _, i := range *ignore {
			if i < 0 || i >= len(m.ignored) {
				return nil, fmt.Errorf("%w: ignoreList names source %d of %d", ErrMalformed, i, len(m.ignored))
			}
			m.ignored[i] = true
		}
	}
	m.sources = make([]string, len(raw.Sources))
	root := raw.SourceRoot
	for i, s := range raw.Sources {
		// A null source stays "": the sourceRoot is no source's.
		src := ""
		switch {
		case s == nil:
		case root != "" && !strings.HasSuffix(root, "/") && !strings.HasPrefix(*s, "/"):
			src = root + "/" + *s
		default:
			src = root + *s
		}
		m.sources[i] = src
		m.size += heldString(len(src))
		// A sourceRoot is copied into every source: the joined names are
		// charged to the segments' budget (a segment is 20 bytes), so a
		// long root over many sources cannot multiply the map's size.
		st.segments += len(src)/20 + 1
		if st.segments > MaxSegments {
			return nil, fmt.Errorf("%w: sources over the budget of %d segments", ErrMalformed, MaxSegments)
		}
	}
	for _, s := range m.names {
		m.size += heldString(len(s)) + 16
	}
	// A content beyond the sources is never looked up.
	if n := min(len(raw.SourcesContent), len(raw.Sources)); n > 0 {
		m.contents = make([]string, n)
		m.hasContent = make([]bool, n)
		m.size += n * 17
	}
	for i, c := range raw.SourcesContent[:len(m.contents)] {
		if c != nil {
			m.contents[i], m.hasContent[i] = *c, true
			m.size += len(*c)
		}
	}
	if err := m.decode(*raw.Mappings, st); err != nil {
		return nil, err
	}
	m.blocks = make([]uint32, 0, (len(m.cols)+blockSize-1)/blockSize)
	for k := 0; k < len(m.cols); k += blockSize {
		m.blocks = append(m.blocks, m.cols[k])
	}
	m.size += cap(m.segs)*16 + cap(m.cols)*4 + cap(m.blocks)*4 + cap(m.lines)*4 + len(m.sources)*16 + 64
	st.held += m.size
	return m, nil
}

func buildIndex(raw *rawMap, depth int, st *parseState) (*Map, error) {
	if depth >= MaxDepth {
		return nil, fmt.Errorf("%w: sections nest deeper than %d", ErrMalformed, MaxDepth)
	}
	raws := *raw.Sections
	m := &Map{sections: make([]section, 0, len(raws)), size: 64}
	// endLine and endCol are where the last section's last mapping is, in
	// the whole map: the next section starts after it (sections are in
	// order and do not overlap).
	endLine, endCol := -1, -1
	for i, rs := range raws {
		if rs.Map == nil || rs.Offset == nil || rs.Offset.Line == nil || rs.Offset.Column == nil {
			return nil, fmt.Errorf("%w: section %d has no map or offset", ErrMalformed, i)
		}
		line, col := *rs.Offset.Line, *rs.Offset.Column
		if line < 0 || col < 0 || line >= 1<<31 || col >= 1<<31 {
			return nil, fmt.Errorf("%w: section %d offset", ErrMalformed, i)
		}
		if n := len(m.sections); n > 0 {
			p := m.sections[n-1]
			if line < p.line || line == p.line && col < p.col {
				return nil, fmt.Errorf("%w: section %d is out of order", ErrMalformed, i)
			}
		}
		if line < endLine || line == endLine && col <= endCol {
			return nil, fmt.Errorf("%w: section %d overlaps the one before", ErrMalformed, i)
		}
		sub, err := build(rs.Map, depth+1, st)
		if err != nil {
			return nil, err
		}
		if l, c, ok := sub.end(); ok {
			if l == 0 {
				c += col
			}
			endLine, endCol = line+l, c
		}
		m.sections = append(m.sections, section{line: line, col: col, m: sub, srcBase: m.nsources, nameBase: m.nnames})
		m.nsources += sub.nsources
		m.nnames += sub.nnames
		m.size += sub.size + 40
		st.held += 40
	}
	st.held += 64
	return m, nil
}

// end returns the generated line and column of m's last mapping, relative
// to m's start; false when m maps nothing.
func (m *Map) end() (line, col int, ok bool) {
	if m.sections != nil {
		for i := len(m.sections) - 1; i >= 0; i-- {
			s := m.sections[i]
			if l, c, ok := s.m.end(); ok {
				if l == 0 {
					c += s.col
				}
				return s.line + l, c, true
			}
		}
		return 0, 0, false
	}
	for i := len(m.lines) - 2; i >= 0; i-- {
		if m.lines[i] < m.lines[i+1] {
			// Columns are in order in a line: its last is its greatest.
			return i, int(m.cols[m.lines[i+1]-1]), true
		}
	}
	return 0, 0, false
}

// heldString is about what n bytes of a string or a slice hold on the
// heap: the allocator rounds a small one up to its size class, 16 bytes
// for a 13-byte source name.
func heldString(n int) int { return (n + 15) &^ 15 }

// Size is about how many bytes m takes in memory, for a cache's budget.
func (m *Map) Size() int { return m.size }

// Sources lists the sources of a regular map (sourceRoot applied); nil for
// an index map.
func (m *Map) Sources() []string { return m.sources }

// NumSources is how many sources the map has, its sections' included:
// one more than the greatest Position.SourceID.
func (m *Map) NumSources() int { return m.nsources }

// EachContent calls fn with the text of each source the map carries, by
// its number among all the map's sources (as Position.SourceID numbers
// it), its sections' included.
func (m *Map) EachContent(fn func(id int, text string)) {
	for _, s := range m.sections {
		s.m.EachContent(func(id int, text string) { fn(s.srcBase+id, text) })
	}
	for id, text := range m.contents {
		if m.hasContent[id] {
			fn(id, text)
		}
	}
}

// NumNames is how many names the map has, its sections' included: one
// more than the greatest Position.NameID.
func (m *Map) NumNames() int { return m.nnames }

// base64Value maps a base64 character to its value; -1 for others.
var base64Value = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := 0; i < len(alphabet); i++ {
		t[alphabet[i]] = int8(i)
	}
	return t
}()

// decode decodes the mappings string s into m.lines and m.segs, sized by
// counting its separators first.
func (m *Map) decode(s string, st *parseState) error {
	nlines := strings.Count(s, ";") + 1
	nsegs := strings.Count(s, ",") + nlines
	// A segment takes at least one character: never more than len(s).
	if nsegs > len(s) {
		nsegs = len(s)
	}
	if st.segments+nsegs > MaxSegments {
		return fmt.Errorf("%w: over %d segments", ErrMalformed, MaxSegments)
	}
	// What is reserved is charged, not what is used: a string of commas
	// reserves segments it never fills. What the map will hold is known
	// before anything is allocated for it.
	st.segments += nsegs
	reserved := nsegs*16 + nsegs*4 + (nsegs+blockSize-1)/blockSize*4 + (nlines+1)*4 + len(m.sources)*16 + 64
	if st.held+m.size+reserved > st.limit {
		return fmt.Errorf("%w: %d bytes, over %d", ErrTooLarge, st.held+m.size+reserved, st.limit)
	}
	m.lines = make([]uint32, 0, nlines+1)
	m.cols = make([]uint32, 0, nsegs)
	m.segs = make([]segment, 0, nsegs)
	var src, oline, ocol, name int64
	var fields [5]int64
	i := 0
	m.lines = append(m.lines, 0)
	for i <= len(s) {
		var col int64
		lineStart := len(m.segs)
		sorted := true
		for i < len(s) && s[i] != ';' {
			if s[i] == ',' {
				// A comma separates two segments of a line: never an
				// empty one before or after it.
				i++
				if len(m.segs) == lineStart || i == len(s) || s[i] == ',' || s[i] == ';' {
					return fmt.Errorf("%w: an empty segment", ErrMalformed)
				}
			}
			n := 0
			for i < len(s) && s[i] != ',' && s[i] != ';' {
				if n == len(fields) {
					return fmt.Errorf("%w: a segment of more than 5 fields", ErrMalformed)
				}
				v, next, err := vlq(s, i)
				if err != nil {
					return err
				}
				fields[n] = v
				n++
				i = next
			}
			seg := segment{src: none, name: none}
			col += fields[0]
			if col < 0 || col >= 1<<31 {
				return fmt.Errorf("%w: generated column %d", ErrMalformed, col)
			}
			switch n {
			case 1:
			case 4, 5:
				src += fields[1]
				oline += fields[2]
				ocol += fields[3]
				if src < 0 || src >= int64(len(m.sources)) {
					return fmt.Errorf("%w: source %d of %d", ErrMalformed, src, len(m.sources))
				}
				if oline < 0 || oline >= 1<<31 || ocol < 0 || ocol >= 1<<31 {
					return fmt.Errorf("%w: original position %d:%d", ErrMalformed, oline, ocol)
				}
				seg.src, seg.line, seg.ocol = uint32(src), uint32(oline), uint32(ocol)
				if n == 5 {
					name += fields[4]
					if name < 0 || name >= int64(len(m.names)) {
						return fmt.Errorf("%w: name %d of %d", ErrMalformed, name, len(m.names))
					}
					seg.name = uint32(name)
				}
			default:
				return fmt.Errorf("%w: a segment of %d fields", ErrMalformed, n)
			}
			if len(m.segs) == cap(m.segs) {
				return fmt.Errorf("%w: more segments than counted", ErrMalformed)
			}
			if len(m.cols) > lineStart && int64(m.cols[len(m.cols)-1]) > col {
				sorted = false
			}
			m.cols = append(m.cols, uint32(col))
			m.segs = append(m.segs, seg)
		}
		if !sorted {
			sortLine(m.cols[lineStart:], m.segs[lineStart:])
		}
		m.lines = append(m.lines, uint32(len(m.segs)))
		i++ // past ';' (or the end)
	}
	return nil
}

// sortLine sorts the segments of a line by generated column, keeping the
// order of equal ones.
func sortLine(cols []uint32, segs []segment) {
	type colSeg struct {
		col uint32
		seg segment
	}
	line := make([]colSeg, len(cols))
	for i := range line {
		line[i] = colSeg{cols[i], segs[i]}
	}
	slices.SortStableFunc(line, func(a, b colSeg) int { return cmp.Compare(a.col, b.col) })
	for i, cs := range line {
		cols[i], segs[i] = cs.col, cs.seg
	}
}

// vlq decodes the base64 VLQ value of s at i: a 32-bit signed value, as
// the specification limits them, however many digits of zeros pad it.
func vlq(s string, i int) (int64, int, error) {
	var result uint64
	shift := uint(0)
	for {
		if i >= len(s) {
			return 0, i, fmt.Errorf("%w: a VLQ value ends early", ErrMalformed)
		}
		c := base64Value[s[i]]
		if c < 0 {
			return 0, i, fmt.Errorf("%w: %q in mappings", ErrMalformed, s[i])
		}
		i++
		// 33 bits hold a sign and a 32-bit magnitude: a digit past them
		// carries only zeros.
		if shift < 35 {
			result |= uint64(c&31) << shift
			shift += 5
		} else if c&31 != 0 {
			return 0, i, fmt.Errorf("%w: a VLQ value beyond 32 bits", ErrMalformed)
		}
		if c&32 == 0 {
			break
		}
	}
	v := int64(result >> 1)
	if result&1 != 0 {
		v = -v
	}
	if v > math.MaxInt32 || v < math.MinInt32 {
		return 0, i, fmt.Errorf("%w: a VLQ value beyond 32 bits", ErrMalformed)
	}
	return v, i, nil
}

// Lookup returns the original position of the generated 0-based line and
// column: the segment of that line with the greatest column not after
// column (the first of equal ones), as Mozilla source-map's
// originalPositionFor with its default bias. False when no segment is
// there or the segment has no source.
func (m *Map) Lookup(line, column int) (Position, bool) {
	return m.lookup(line, column, nil)
}

// lookup is Lookup, adding to *probes (when not nil) how many columns it
// read to find the first of equal ones.
func (m *Map) lookup(line, column int, probes *int) (Position, bool) {
	if line < 0 || column < 0 {
		return Position{}, false
	}
	if m.sections != nil {
		i := sort.Search(len(m.sections), func(i int) bool {
			s := m.sections[i]
			return s.line > line || s.line == line && s.col > column
		}) - 1
		if i < 0 {
			return Position{}, false
		}
		s := m.sections[i]
		if line == s.line {
			column -= s.col
		}
		p, ok := s.m.lookup(line-s.line, column, probes)
		p.SourceID += s.srcBase
		p.NameID += s.nameBase
		return p, ok
	}
	if line >= len(m.lines)-1 {
		return Position{}, false
	}
	start, end := int(m.lines[line]), int(m.lines[line+1])
	// The first segment of the line whose column is after column, by
	// halves (columns are below 1<<31, so a column beyond 32 bits is
	// after them all).
	c := uint32(min(uint64(column), math.MaxUint32))
	lo, hi := start, end
	if end-start > 2*blockSize {
		// The blocks that start in the line, from first to last: the
		// first of them to start after column bounds the search above,
		// the one before it below.
		first, last := (start+blockSize-1)/blockSize, (end-1)/blockSize
		l, h := first, last+1
		for l < h {
			k := int(uint(l+h) >> 1)
			if m.blocks[k] <= c {
				l = k + 1
			} else {
				h = k
			}
		}
		if l > first {
			lo = (l-1)*blockSize + 1
		}
		if l <= last {
			hi = l * blockSize
		}
	}
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if m.cols[h] <= c {
			lo = h + 1
		} else {
			hi = h
		}
	}
	j := lo - 1
	if j < start {
		return Position{}, false
	}
	// The first of the segments at that column, by halves too: a line
	// of segments all at one column is not stepped back one by one.
	if j > start && m.cols[j-1] == m.cols[j] {
		lo, hi := start, j
		for lo < hi {
			h := int(uint(lo+hi) >> 1)
			if probes != nil {
				*probes++
			}
			if m.cols[h] < m.cols[j] {
				lo = h + 1
			} else {
				hi = h
			}
		}
		j = lo
	}
	seg := m.segs[j]
	if seg.src == none {
		return Position{}, false
	}
	p := Position{Source: m.sources[seg.src], SourceID: int(seg.src), Line: int(seg.line), Column: int(seg.ocol)}
	if seg.name != none {
		p.Name, p.NameID, p.HasName = string(m.names[seg.name]), int(seg.name), true
	}
	p.Ignored = m.ignored != nil && m.ignored[seg.src]
	if int(seg.src) < len(m.contents) && m.hasContent[seg.src] {
		p.Content, p.HasContent = m.contents[seg.src], true
	}
	return p, true
}
