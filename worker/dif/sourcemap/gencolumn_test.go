package sourcemap

import "testing"

// TestLookupSegmentSaysWhereTheSegmentStarts finds the column of the
// segment found, in a map and in a section that starts within a line.
func TestLookupSegmentSaysWhereTheSegmentStarts(t *testing.T) {
	m, err := Parse([]byte(`{"version":3,"sections":[{"offset":{"line":0,"column":0},"map":{"version":3,"sources":["a"],"names":[],"mappings":"AAAA,MAAM;AACA"}},` +
		`{"offset":{"line":1,"column":20},"map":{"version":3,"sources":["b"],"names":[],"mappings":"AAAA,IAAI;AACA"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ line, col, want int }{
		{0, 0, 0}, {0, 5, 0}, {0, 7, 6}, {0, 90, 6}, {1, 3, 0}, {1, 19, 0},
		{1, 20, 20}, {1, 23, 20}, {1, 24, 24}, {1, 90, 24}, {2, 0, 0}, {2, 7, 0},
	} {
		p, col, ok := m.LookupSegment(tt.line, tt.col)
		q, qok := m.Lookup(tt.line, tt.col)
		if !ok || col != tt.want || p != q || !qok {
			t.Errorf("%d:%d: segment at %d (%v), want %d", tt.line, tt.col, col, ok, tt.want)
		}
	}
	if _, _, ok := m.LookupSegment(9, 0); ok {
		t.Error("a line past the map's is found")
	}
}
