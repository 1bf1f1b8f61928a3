package sourcemap

import "sort"

// LookupSegment is Lookup, and the generated column the segment found
// starts at: where a reader of the generated file finds the token the
// position belongs to.
func (m *Map) LookupSegment(line, column int) (Position, int, bool) {
	p, ok := m.Lookup(line, column)
	if !ok {
		return p, 0, false
	}
	return p, m.segmentColumn(line, column), true
}

// segmentColumn is the greatest column of a segment of line not after
// column, line and column being those of a position Lookup found: the
// column of the segment it found (the first of equal ones has it too).
func (m *Map) segmentColumn(line, column int) int {
	if m.sections != nil {
		i := sort.Search(len(m.sections), func(i int) bool {
			s := m.sections[i]
			return s.line > line || s.line == line && s.col > column
		}) - 1
		s := m.sections[i]
		if line == s.line {
			return s.col + s.m.segmentColumn(0, column-s.col)
		}
		return s.m.segmentColumn(line-s.line, column)
	}
	cols := m.cols[m.lines[line]:m.lines[line+1]]
	k := sort.Search(len(cols), func(k int) bool { return uint64(cols[k]) > uint64(column) })
	return int(cols[k-1])
}
