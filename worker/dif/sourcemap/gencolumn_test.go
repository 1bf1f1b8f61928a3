package sourcemap

import "testing"

// TestGenColumnIsTheSegments says where the segment found starts, in a
// map and in a section that starts within a line.
func TestGenColumnIsTheSegments(t *testing.T) {
	m, err := Parse([]byte(`{"version":3,"sections":[{"offset":{"line":0,"column":0},"map":{"version":3,"sources":["a"],"names":[],"mappings":"AAAA,MAAM"}},` +
		`{"offset":{"line":0,"column":20},"map":{"version":3,"sources":["b"],"names":[],"mappings":"AAAA,IAAI"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ col, want int }{{0, 0}, {5, 0}, {7, 6}, {19, 6}, {20, 20}, {23, 20}, {24, 24}, {90, 24}} {
		p, ok := m.Lookup(0, tt.col)
		if !ok || p.GenColumn != tt.want {
			t.Errorf("column %d: segment at %d (%v), want %d", tt.col, p.GenColumn, ok, tt.want)
		}
	}
}
