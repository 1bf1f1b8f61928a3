package sourcemap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
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

// none marks an absent source or name index in a segment.
const none = ^uint32(0)

// segment is one decoded mapping: a generated column and, when src is not
// none, the original source, line and column (0-based) and name.
type segment struct {
	col, src, line, ocol, name uint32
}

// Map is a parsed source map: a regular map, or an index map made of
// sections.
type Map struct {
	sources  []string // sourceRoot applied
	contents []*string
	names    []string
	lines    []uint32 // lines[i] is the first segment of generated line i; one more entry ends the last line
	segs     []segment
	sections []section
	size     int
}

// section is a part of an index map from a generated offset on.
type section struct {
	line, col int
	m         *Map
}

// Position is an original position: Source as the map names it (its
// sourceRoot applied), 0-based Line and Column, the name the map gives
// there, and the source's text when the map carries it.
type Position struct {
	Source     string
	Line       int
	Column     int
	Name       string
	HasName    bool
	Content    string
	HasContent bool
}

type rawMap struct {
	Version        *int         `json:"version"`
	SourceRoot     string       `json:"sourceRoot"`
	Sources        []*string    `json:"sources"`
	SourcesContent []*string    `json:"sourcesContent"`
	Names          []string     `json:"names"`
	Mappings       *string      `json:"mappings"`
	Sections       []rawSection `json:"sections"`
}

type rawSection struct {
	Offset struct {
		Line   *int `json:"line"`
		Column *int `json:"column"`
	} `json:"offset"`
	URL *string `json:"url"`
	Map *rawMap `json:"map"`
}

// Parse decodes the source map data, within the budget of the package
// doc. A map it cannot read is ErrMalformed (wrapped).
func Parse(data []byte) (*Map, error) {
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
	segments := 0
	return build(&raw, 0, &segments)
}

func build(raw *rawMap, depth int, segments *int) (*Map, error) {
	if raw.Version != nil && *raw.Version != 3 {
		return nil, fmt.Errorf("%w: version %d", ErrMalformed, *raw.Version)
	}
	if raw.Sections != nil {
		return buildIndex(raw, depth, segments)
	}
	if raw.Mappings == nil {
		return nil, fmt.Errorf("%w: no mappings", ErrMalformed)
	}
	m := &Map{names: raw.Names, contents: raw.SourcesContent}
	m.sources = make([]string, len(raw.Sources))
	root := raw.SourceRoot
	for i, s := range raw.Sources {
		src := ""
		if s != nil {
			src = *s
		}
		if root != "" && !strings.HasSuffix(root, "/") && !strings.HasPrefix(src, "/") {
			src = root + "/" + src
		} else {
			src = root + src
		}
		m.sources[i] = src
		m.size += len(src)
		// A sourceRoot is copied into every source: the joined names are
		// charged to the segments' budget (a segment is 20 bytes), so a
		// long root over many sources cannot multiply the map's size.
		*segments += len(src)/20 + 1
		if *segments > MaxSegments {
			return nil, fmt.Errorf("%w: sources over the budget of %d segments", ErrMalformed, MaxSegments)
		}
	}
	for _, s := range m.names {
		m.size += len(s) + 16
	}
	for _, c := range m.contents {
		if c != nil {
			m.size += len(*c) + 8
		}
	}
	if err := m.decode(*raw.Mappings, segments); err != nil {
		return nil, err
	}
	m.size += cap(m.segs)*20 + cap(m.lines)*4 + len(m.sources)*16 + 64
	return m, nil
}

func buildIndex(raw *rawMap, depth int, segments *int) (*Map, error) {
	if depth >= MaxDepth {
		return nil, fmt.Errorf("%w: sections nest deeper than %d", ErrMalformed, MaxDepth)
	}
	m := &Map{sections: make([]section, 0, len(raw.Sections)), size: 64}
	for i, rs := range raw.Sections {
		if rs.Map == nil || rs.Offset.Line == nil || rs.Offset.Column == nil {
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
		sub, err := build(rs.Map, depth+1, segments)
		if err != nil {
			return nil, err
		}
		m.sections = append(m.sections, section{line: line, col: col, m: sub})
		m.size += sub.size + 24
	}
	return m, nil
}

// Size is about how many bytes m takes in memory, for a cache's budget.
func (m *Map) Size() int { return m.size }

// Sources lists the sources of a regular map (sourceRoot applied); nil for
// an index map.
func (m *Map) Sources() []string { return m.sources }

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
func (m *Map) decode(s string, segments *int) error {
	nlines := strings.Count(s, ";") + 1
	nsegs := strings.Count(s, ",") + nlines
	// A segment takes at least one character: never more than len(s).
	if nsegs > len(s) {
		nsegs = len(s)
	}
	if *segments+nsegs > MaxSegments {
		return fmt.Errorf("%w: over %d segments", ErrMalformed, MaxSegments)
	}
	// What is reserved is charged, not what is used: a string of commas
	// reserves segments it never fills.
	*segments += nsegs
	m.lines = make([]uint32, 0, nlines+1)
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
				i++
				continue
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
			seg.col = uint32(col)
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
			if len(m.segs) > lineStart && m.segs[len(m.segs)-1].col > seg.col {
				sorted = false
			}
			m.segs = append(m.segs, seg)
		}
		if !sorted {
			line := m.segs[lineStart:]
			sort.SliceStable(line, func(a, b int) bool { return line[a].col < line[b].col })
		}
		m.lines = append(m.lines, uint32(len(m.segs)))
		i++ // past ';' (or the end)
	}
	return nil
}

// vlq decodes the base64 VLQ value of s at i, refusing values beyond 32
// bits.
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
		if shift > 30 {
			return 0, i, fmt.Errorf("%w: a VLQ value beyond 32 bits", ErrMalformed)
		}
		result |= uint64(c&31) << shift
		shift += 5
		if c&32 == 0 {
			break
		}
	}
	v := int64(result >> 1)
	if result&1 != 0 {
		v = -v
	}
	if v >= 1<<32 || v <= -(1<<32) {
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
		return s.m.Lookup(line-s.line, column)
	}
	if line >= len(m.lines)-1 {
		return Position{}, false
	}
	segs := m.segs[m.lines[line]:m.lines[line+1]]
	j := sort.Search(len(segs), func(j int) bool { return int64(segs[j].col) > int64(column) }) - 1
	if j < 0 {
		return Position{}, false
	}
	for j > 0 && segs[j-1].col == segs[j].col {
		j--
	}
	seg := segs[j]
	if seg.src == none {
		return Position{}, false
	}
	p := Position{Source: m.sources[seg.src], Line: int(seg.line), Column: int(seg.ocol)}
	if seg.name != none {
		p.Name, p.HasName = m.names[seg.name], true
	}
	if int(seg.src) < len(m.contents) && m.contents[seg.src] != nil {
		p.Content, p.HasContent = *m.contents[seg.src], true
	}
	return p, true
}
