package jsscope

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"errata/worker/dif/diftest"
)

// fakeMap is a source map of segments by generated line, in column order.
type fakeMap map[int][]Mapping

func (m fakeMap) Mapping(line, col int) (Mapping, bool) {
	var best Mapping
	ok := false
	for _, s := range m[line] {
		if s.Column <= col {
			best, ok = s, true
		}
	}
	return best, ok
}

// at returns the 0-based line and UTF-16 column of the first byte of sub
// in src.
func at(t *testing.T, src, sub string) (int, int) {
	t.Helper()
	i := strings.Index(src, sub)
	if i < 0 {
		t.Fatalf("%q not in the source", sub)
	}
	line := strings.Count(src[:i], "\n")
	lineStart := strings.LastIndexByte(src[:i], '\n') + 1
	col := 0
	for _, r := range src[lineStart:i] {
		col++
		if r >= 0x10000 {
			col++
		}
	}
	return line, col
}

// TestNameAt looks positions up: the innermost scope, UTF-16 columns after
// characters beyond the BMP, lines, no scope at the top level, and the
// names a map gives the identifiers.
func TestNameAt(t *testing.T) {
	src := "var s='😀é';function n(t){return t.a(function(){X1})}\n" +
		"var o={m(){X2},k:()=>{X3}};X4\n" +
		"r.prototype.q=function(){X5};class C{constructor(){X6}}"
	x := Build([]byte(src))
	fLine, fCol := at(t, src, "n(t)")
	rLine, rCol := at(t, src, "r.prototype")
	_, qCol := at(t, src, "q=function")
	m := fakeMap{
		fLine: {{Column: fCol, Name: "add", HasName: true}, {Column: fCol + 1}},
		rLine: {{Column: rCol, Line: 1, Name: "Klass", HasName: true}, {Column: rCol + 1, Line: 2}, {Column: qCol, Line: 3, Name: "run", HasName: true}},
	}
	tests := []struct {
		at, minified, mapped string
	}{
		{"return t", "n", "add"},
		{"X1", "", ""},
		{"X2", "o.m", "o.m"},
		{"X3", "o.k", "o.k"},
		{"X4", "", ""},
		{"X5", "r.prototype.q", "Klass.prototype.run"},
		{"X6", "new C", "new C"},
		{"var s", "", ""},
	}
	for _, tt := range tests {
		line, col := at(t, src, tt.at)
		if got := x.NameAt(line, col, nil); got != tt.minified {
			t.Errorf("at %s (%d:%d): %q, want %q", tt.at, line, col, got, tt.minified)
		}
		if got := x.NameAt(line, col, m); got != tt.mapped {
			t.Errorf("at %s (%d:%d) with the map: %q, want %q", tt.at, line, col, got, tt.mapped)
		}
	}
	if got := x.NameAt(99, 0, m); got != "" {
		t.Errorf("past the end: %q", got)
	}
}

// TestMappedNameRules holds the look-up of an identifier's original name
// to symbolic's NameResolver: a segment starting at the identifier or one
// column before it, or the segment before it when both map to the same
// place; none further.
func TestMappedNameRules(t *testing.T) {
	src := "function abc(){X}"
	x := Build([]byte(src))
	line, col := at(t, src, "X")
	tests := []struct {
		name string
		segs []Mapping
		want string
	}{
		{"at the identifier", []Mapping{{Column: 9, Name: "orig", HasName: true}}, "orig"},
		{"one column before", []Mapping{{Column: 8, Name: "orig", HasName: true}}, "orig"},
		{"too far before", []Mapping{{Column: 7, Name: "orig", HasName: true}}, "abc"},
		{"on the keyword, same place", []Mapping{{Column: 0, Line: 3, Name: "orig", HasName: true}, {Column: 9, Line: 3}}, "orig"},
		{"on the keyword, elsewhere", []Mapping{{Column: 0, Line: 3, Name: "orig", HasName: true}, {Column: 9, Line: 4}}, "abc"},
		{"at the closing bracket", []Mapping{{Column: 9}, {Column: 16, Line: 1, Name: "closing", HasName: true}, {Column: 17, Line: 2}}, "closing"},
		{"at the closing bracket, the last segment", []Mapping{{Column: 9}, {Column: 16, Line: 1, Name: "closing", HasName: true}}, "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := x.NameAt(line, col, fakeMap{0: tt.segs}); got != tt.want {
				t.Errorf("%q, want %q", got, tt.want)
			}
		})
	}
}

// TestLongMappedNamesAreCut names a function of several parts after a
// map whose names are a megabyte each: the name is cut, not joined whole.
func TestLongMappedNamesAreCut(t *testing.T) {
	src := "a.b.c=function(){X}"
	x := Build([]byte(src))
	long := strings.Repeat("é", 1<<19)
	m := fakeMap{0: {{Column: 0, Line: 1, Name: long, HasName: true}, {Column: 1}, {Column: 2, Line: 2, Name: long, HasName: true}, {Column: 3}}}
	got := x.NameAt(0, strings.Index(src, "X"), m)
	if len(got) > MaxMappedNameBytes || len(got) < MaxMappedNameBytes-1 || !utf8.ValidString(got) || !strings.HasPrefix(got, "éé") {
		t.Errorf("a name of %d bytes (valid UTF-8: %v)", len(got), utf8.ValidString(got))
	}
}

// TestBoundsMakeThePartialIndex reaches each bound: the index answers
// before the point the scan stopped, and nothing after it.
func TestBoundsMakeThePartialIndex(t *testing.T) {
	t.Run("depth", func(t *testing.T) {
		src := "var f=function(){X};" + strings.Repeat("(", MaxDepth+10) + "\nvar g=function(){Y}"
		x := Build([]byte(src))
		if got := x.nameAtNoMap(at(t, src, "X")); got != "f" {
			t.Errorf("before the bound: %q", got)
		}
		if got := x.nameAtNoMap(at(t, src, "Y")); got != "" {
			t.Errorf("after the bound: %q", got)
		}
	})
	t.Run("scopes", func(t *testing.T) {
		src := "var f=function(){X};" + strings.Repeat("a=function(){};", MaxScopes) + "\nvar g=function(){Y}"
		x := Build([]byte(src))
		if x.Len() != MaxScopes {
			t.Errorf("%d scopes kept", x.Len())
		}
		if got := x.nameAtNoMap(at(t, src, "X")); got != "f" {
			t.Errorf("before the bound: %q", got)
		}
		if got := x.nameAtNoMap(at(t, src, "Y")); got != "" {
			t.Errorf("after the bound: %q", got)
		}
	})
	t.Run("name", func(t *testing.T) {
		src := "a" + strings.Repeat(".b", MaxNameParts) + "=function(){X}"
		if got := Build([]byte(src)).nameAtNoMap(at(t, src, "X")); got != "" {
			t.Errorf("a name of too many parts is kept: %q", got)
		}
	})
	t.Run("chain", func(t *testing.T) {
		// A member chain of a million parts holds no more than a name's.
		src := "var f=function(){X};a" + strings.Repeat(".b", 1<<20) + "=function(){Y}"
		data := []byte(src)
		before := diftest.HeapAlloc()
		s := scan(data)
		if grown := int64(diftest.HeapAlloc() - before); grown > 1<<20 {
			t.Errorf("the scan holds %d bytes", grown)
		}
		for _, fr := range s.frames {
			if len(fr.st.chain) > MaxNameParts+3 {
				t.Errorf("a chain of %d parts is kept", len(fr.st.chain))
			}
		}
		x := Build([]byte(src))
		if got := x.nameAtNoMap(at(t, src, "X")); got != "f" {
			t.Errorf("before the chain: %q", got)
		}
		if got := x.nameAtNoMap(at(t, src, "Y")); got != "" {
			t.Errorf("after the chain: %q", got)
		}
	})
	t.Run("deep names", func(t *testing.T) {
		// Every function's name would have a part for each of 500
		// objects around it: the walk stops once the name is too long.
		src := "x=" + strings.Repeat("{a:", MaxDepth-4) + "{" + strings.Repeat("b(){},", 1<<16)
		if s := scan([]byte(src)); s.walked > len(s.scopes)*MaxNameParts {
			t.Errorf("the walks of %d scopes read %d frames", len(s.scopes), s.walked)
		}
		x := Build([]byte(src))
		if x.Len() != 1<<16 || x.names()[0] != "" {
			t.Errorf("%d scopes, the first named %q", x.Len(), x.names()[0])
		}
	})
	t.Run("bytes", func(t *testing.T) {
		src := "var f=function(){X" + strings.Repeat(" ", MaxBytes) + "}"
		x := Build([]byte(src))
		if got := x.nameAtNoMap(at(t, src, "X")); got != "f" {
			t.Errorf("an open scope at the bound: %q", got)
		}
		if got := x.nameAtNoMap(0, MaxBytes+1); got != "" {
			t.Errorf("after the bound: %q", got)
		}
	})
}

// nameAtNoMap is NameAt without a map.
func (x *Index) nameAtNoMap(line, col int) string { return x.NameAt(line, col, nil) }

// TestSizeIsWhatTheHeapHolds builds indexes of a bundle of many small
// functions and holds Size to what the heap grows by.
func TestSizeIsWhatTheHeapHolds(t *testing.T) {
	var b bytes.Buffer
	for i := 0; b.Len() < 1<<20; i++ {
		b.WriteString("obj.member.prop" + strings.Repeat("x", i%7) + "=function(e,t){return e.run(()=>t)};")
	}
	src := b.Bytes()
	const copies = 4
	keep := make([]*Index, copies)
	before := diftest.HeapAlloc()
	for i := range keep {
		keep[i] = Build(src)
	}
	after := diftest.HeapAlloc()
	held := int64(after-before) / copies
	size := keep[0].Size()
	t.Logf("%d scopes: Size %d, heap %d per index", keep[0].Len(), size, held)
	if held > size || held < size*3/4 {
		t.Errorf("Size %d, the heap holds %d", size, held)
	}
}
