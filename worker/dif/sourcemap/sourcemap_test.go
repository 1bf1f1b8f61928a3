package sourcemap

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/worker/dif/diftest"
)

// TestLookupMatchesTheNpmLibraries looks up every position of maps made by
// esbuild and terser, and of an index map of two sections, and compares
// with what npm source-map and @jridgewell/trace-mapping gave for each
// (testdata/oracle.js wrote the want files; they agree but at a section's
// first column, where source-map 0.7.4 is off by one).
func TestLookupMatchesTheNpmLibraries(t *testing.T) {
	for _, name := range []string{"app.min.js", "app.terser.js", "index.js"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile("testdata/" + name + ".map")
			if err != nil {
				t.Fatal(err)
			}
			m, err := Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			wantData, err := os.ReadFile("testdata/" + name + ".want.json")
			if err != nil {
				t.Fatal(err)
			}
			var want [][]any
			if err := json.Unmarshal(wantData, &want); err != nil {
				t.Fatal(err)
			}
			found := 0
			// Each SourceID and NameID stands for one source and one
			// name, below NumSources and NumNames.
			sourceOf, nameOf := map[int]string{}, map[int]string{}
			for _, w := range want {
				line, col := int(w[0].(float64)), int(w[1].(float64))
				p, ok := m.Lookup(line, col)
				var got []any
				if ok {
					found++
					if s, seen := sourceOf[p.SourceID]; seen && s != p.Source || p.SourceID < 0 || p.SourceID >= m.NumSources() {
						t.Fatalf("position %d:%d: source %d is %q, was %q (%d sources)", line, col, p.SourceID, p.Source, s, m.NumSources())
					}
					sourceOf[p.SourceID] = p.Source
					if p.HasName {
						if n, seen := nameOf[p.NameID]; seen && n != p.Name || p.NameID < 0 || p.NameID >= m.NumNames() {
							t.Fatalf("position %d:%d: name %d is %q, was %q (%d names)", line, col, p.NameID, p.Name, n, m.NumNames())
						}
						nameOf[p.NameID] = p.Name
					}
					var name any
					if p.HasName {
						name = p.Name
					}
					got = []any{w[0], w[1], p.Source, float64(p.Line + 1), float64(p.Column), name}
				} else {
					got = []any{w[0], w[1], nil, nil, nil, nil}
				}
				if diff := cmp.Diff(w, got); diff != "" {
					t.Fatalf("position %d:%d (-want +got):\n%s", line, col, diff)
				}
			}
			if found < len(want)/2 {
				t.Errorf("%d of %d positions resolved", found, len(want))
			}
		})
	}
}

// TestLookupGivesSourceContent reads a source's text from sourcesContent.
func TestLookupGivesSourceContent(t *testing.T) {
	data, err := os.ReadFile("testdata/app.min.js.map")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := m.Lookup(0, 88)
	if !ok || !p.HasContent || !strings.Contains(p.Content, "function lookupRate(code)") {
		t.Fatalf("Lookup(0, 88) = %+v, %v", p, ok)
	}
	if got := strings.Split(p.Content, "\n")[p.Line]; !strings.Contains(got, `throw new Error("unknown discount code "`) {
		t.Errorf("line %d of %s is %q", p.Line+1, p.Source, got)
	}
}

// TestSourceRoot joins sourceRoot and a source with one slash.
func TestSourceRoot(t *testing.T) {
	for _, tc := range []struct{ root, src, want string }{
		{"", "a.js", "a.js"},
		{"https://x/src", "a.js", "https://x/src/a.js"},
		{"https://x/src/", "a.js", "https://x/src/a.js"},
		{"webpack://", "./a.js", "webpack://./a.js"},
	} {
		m, err := Parse([]byte(`{"version":3,"sourceRoot":` + quote(tc.root) + `,"sources":[` + quote(tc.src) + `],"names":[],"mappings":"AAAA"}`))
		if err != nil {
			t.Fatal(err)
		}
		p, ok := m.Lookup(0, 0)
		if !ok || p.Source != tc.want {
			t.Errorf("root %q source %q: %q, %v; want %q", tc.root, tc.src, p.Source, ok, tc.want)
		}
	}
}

// TestNullSource: a null source has no name, whatever the sourceRoot.
func TestNullSource(t *testing.T) {
	m, err := Parse([]byte(`{"version":3,"sourceRoot":"https://x/src","sources":[null],"sourcesContent":["a"],"names":[],"mappings":"AAAA"}`))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := m.Lookup(0, 0); !ok || p.Source != "" || !p.HasContent {
		t.Errorf("Lookup(0, 0) = %+v, %v; want the null source with its content", p, ok)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestMalformedMapsAreRefused refuses maps beyond the budget or
// inconsistent with themselves.
func TestMalformedMapsAreRefused(t *testing.T) {
	for name, m := range map[string]string{
		"not json":            `{"version":3,`,
		"no mappings":         `{"version":3,"sources":[]}`,
		"version 2":           `{"version":2,"sources":[],"mappings":""}`,
		"huge vlq":            `{"version":3,"sources":["a"],"mappings":"gggggggggggggggggggggggE"}`,
		"source out of range": `{"version":3,"sources":["a"],"mappings":"ACAA"}`,
		"name out of range":   `{"version":3,"sources":["a"],"names":[],"mappings":"AAAAA"}`,
		"negative line":       `{"version":3,"sources":["a"],"mappings":"AADA"}`,
		"two fields":          `{"version":3,"sources":["a"],"mappings":"AA"}`,
		"six fields":          `{"version":3,"sources":["a"],"names":["x"],"mappings":"AAAAAA"}`,
		"bad character":       `{"version":3,"sources":["a"],"mappings":"A!AA"}`,
		"sections out of order": `{"version":3,"sections":[{"offset":{"line":2,"column":0},"map":{"version":3,"sources":[],"mappings":""}},` +
			`{"offset":{"line":1,"column":0},"map":{"version":3,"sources":[],"mappings":""}}]}`,
		"nested too deep": `{"version":3,"sections":[{"offset":{"line":0,"column":0},"map":{"version":3,"sections":[{"offset":{"line":0,"column":0},"map":` +
			`{"version":3,"sections":[{"offset":{"line":0,"column":0},"map":{"version":3,"sections":[{"offset":{"line":0,"column":0},"map":` +
			`{"version":3,"sections":[]}}]}}]}}]}}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse([]byte(m)); !errors.Is(err, ErrMalformed) {
				t.Errorf("Parse = %v, want ErrMalformed", err)
			}
		})
	}
}

// TestHugeNumbersAllocateLittle parses small maps whose numbers claim huge
// positions, offsets and counts, and checks that what Parse allocates
// depends on the size of the map, not on those numbers.
func TestHugeNumbersAllocateLittle(t *testing.T) {
	big := `{"version":3,"sources":["a"],"names":["n"],"mappings":"` +
		strings.Repeat("+/////D+/////D+/////D+/////D+/////D;", 200) + `"}`
	sections := `{"version":3,"sections":[{"offset":{"line":2147483000,"column":2147483000},"map":` +
		`{"version":3,"sources":["a"],"mappings":"+/////DAAA"}}]}`
	for name, m := range map[string]string{"positions": big, "section offsets": sections} {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			parsed, err := Parse([]byte(m))
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Logf("refused: %v", err)
			} else {
				parsed.Lookup(2147483000, 2147483646)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > uint64(64*len(m)+64<<10) {
				t.Errorf("Parse of %d bytes allocated %d bytes", len(m), n)
			}
		})
	}
}

// FuzzSourceMap parses arbitrary maps and looks positions up in them:
// never a panic, and a parsed map's size stays within its budget.
func FuzzSourceMap(f *testing.F) {
	for _, name := range []string{"app.min.js.map", "index.js.map"} {
		data, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, 0, 88)
	}
	f.Add([]byte(`{"version":3,"sources":["a"],"names":["x"],"mappings":"AAAAA,CAAC;;EAAE"}`), 2, 3)
	// The shapes of TC39's source-map tests: VLQ values at 32 bits and
	// padded with zeros, ignore lists, sections that touch.
	f.Add([]byte(`{"version":3,"sources":["a"],"names":["x"],"mappings":"+/////DA+/////D+/////DA"}`), 0, math.MaxInt32)
	f.Add([]byte(`{"version":3,"sources":["a"],"names":[],"mappings":"i`+strings.Repeat("g", 100)+`AAAA"}`), 0, 1)
	f.Add([]byte(`{"version":3,"sources":["a",null],"sourcesContent":[null,"x"],"names":[],"mappings":"AAAA,CCAA","ignoreList":[1]}`), 0, 1)
	f.Add([]byte(`{"version":3,"sections":[{"offset":{"line":0,"column":0},"map":{"version":3,"sources":["a"],"names":["x"],"mappings":"AAAAA,EAAA"}},`+
		`{"offset":{"line":0,"column":3},"map":{"version":3,"sources":["b"],"names":[],"mappings":"AAAA","x_google_ignoreList":[0]}}]}`), 0, 4)
	f.Fuzz(func(t *testing.T, data []byte, line, col int) {
		m, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if m.Size() > 64*len(data)+1<<20 {
			t.Fatalf("%d bytes of map take %d", len(data), m.Size())
		}
		m.Lookup(line, col)
		m.Lookup(0, 0)
	})
}

// TestSourceRootIsChargedToTheBudget sends a map whose long sourceRoot is
// copied into each of 20,000 sources: 2 GB once joined, from 2 MB of
// map. It is refused, the joined names charged to the segments' budget.
func TestSourceRootIsChargedToTheBudget(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"version":3,"sourceRoot":"` + strings.Repeat("r", 100_000) + `","sources":[`)
	for i := range 20_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		// An empty name, the root whole: a null source has no root.
		b.WriteString(`""`)
	}
	b.WriteString(`],"names":[],"mappings":"AAAA"}`)
	if _, err := Parse([]byte(b.String())); !errors.Is(err, ErrMalformed) {
		t.Errorf("a sourceRoot over 20,000 sources: %v, want ErrMalformed", err)
	}
}

// TestLookupInLongLines looks up every column of lines of up to 2,000
// segments, with repeated columns and lines out of order, and compares
// with a scan of the line: the segment with the greatest column not after
// the asked one, the first of equal ones.
func TestLookupInLongLines(t *testing.T) {
	type seg struct{ col, src, line, ocol int }
	rng := rand.New(rand.NewPCG(1, 2))
	var lines [][]seg
	for l := range 12 {
		n := []int{0, 1, 63, 64, 65, 128, 129, 130, 700, 2000, 1999, 257}[l]
		line := make([]seg, n)
		col := 0
		for i := range line {
			col += rng.IntN(3) // repeated columns
			line[i] = seg{col, rng.IntN(3), i, rng.IntN(50)}
		}
		if l%3 == 2 { // out of order
			rng.Shuffle(len(line), func(i, j int) { line[i], line[j] = line[j], line[i] })
		}
		lines = append(lines, line)
	}
	var mappings []byte
	var src, oline, ocol int
	for l, line := range lines {
		if l > 0 {
			mappings = append(mappings, ';')
		}
		col := 0
		for i, s := range line {
			if i > 0 {
				mappings = append(mappings, ',')
			}
			mappings = diftest.AppendVLQ(mappings, s.col-col)
			mappings = diftest.AppendVLQ(mappings, s.src-src)
			mappings = diftest.AppendVLQ(mappings, s.line-oline)
			mappings = diftest.AppendVLQ(mappings, s.ocol-ocol)
			col, src, oline, ocol = s.col, s.src, s.line, s.ocol
		}
	}
	m, err := Parse([]byte(`{"version":3,"sources":["a","b","c"],"names":[],"mappings":"` + string(mappings) + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	for l, line := range lines {
		sorted := slices.Clone(line)
		slices.SortStableFunc(sorted, func(a, b seg) int { return a.col - b.col })
		for c := range len(line) + 3 {
			var want *seg
			for i := range sorted {
				if sorted[i].col <= c && (want == nil || sorted[i].col > want.col) {
					want = &sorted[i]
				}
			}
			p, ok := m.Lookup(l, c)
			switch {
			case want == nil && ok:
				t.Fatalf("line %d column %d: %+v, want none", l, c, p)
			case want != nil && (!ok || p.Source != string(rune('a'+want.src)) || p.SourceID != want.src || p.Line != want.line || p.Column != want.ocol):
				t.Fatalf("line %d column %d: %+v %v, want %+v", l, c, p, ok, *want)
			}
		}
	}
}

// TestLookupHalvesEqualColumns: in a line of a million segments all at one
// column, the lookup finds the first of them by halves, reading about
// twenty columns, where stepping back one segment at a time read them all
// for each frame.
func TestLookupHalvesEqualColumns(t *testing.T) {
	const n = 1 << 20
	mappings := "AAAA" + strings.Repeat(",AACA", n-1) // each one more original column
	for _, data := range []string{
		`{"version":3,"sources":["a"],"names":[],"mappings":"` + mappings + `"}`,
		`{"version":3,"sections":[{"offset":{"line":0,"column":0},"map":{"version":3,"sources":["a"],"names":[],"mappings":"` + mappings + `"}}]}`,
	} {
		m, err := Parse([]byte(data))
		if err != nil {
			t.Fatal(err)
		}
		for _, column := range []int{0, 7, 1 << 30} {
			probes := 0
			p, ok := m.lookup(0, column, &probes)
			if !ok || p.Column != 0 || p.Source != "a" {
				t.Errorf("column %d: %+v %v, want the first segment", column, p, ok)
			}
			if probes > 21 {
				t.Errorf("column %d: %d columns read to find the first of equal ones, want at most 21", column, probes)
			}
		}
	}
}

// TestValidityRules parses maps that the specification (ECMA-426) calls
// valid or invalid, by the rule each shows: the types of the fields, VLQ
// values up to 32 bits however many digits write them, segments of 1, 4
// or 5 fields, index maps whose sections are in order and do not overlap.
func TestValidityRules(t *testing.T) {
	const empty = `"sources":["a.js"],"names":["n"]`
	for _, tc := range []struct {
		name  string
		valid bool
		data  string
	}{
		{"version 3", true, `{"version":3,` + empty + `,"mappings":""}`},
		{"no version", false, `{` + empty + `,"mappings":""}`},
		{"version as a string", false, `{"version":"3",` + empty + `,"mappings":""}`},
		{"version 4", false, `{"version":4,` + empty + `,"mappings":""}`},
		{"no sources", false, `{"version":3,"names":[],"mappings":""}`},
		{"sources not a list", false, `{"version":3,"sources":"a.js","mappings":""}`},
		{"a source neither a string nor null", false, `{"version":3,"sources":[3],"mappings":""}`},
		{"a null source", true, `{"version":3,"sources":[null],"mappings":"AAAA"}`},
		{"no names", true, `{"version":3,"sources":["a.js"],"mappings":"AAAA"}`},
		{"a null name", false, `{"version":3,"sources":["a.js"],"names":[null],"mappings":""}`},
		{"a name not a string", false, `{"version":3,"sources":["a.js"],"names":[3],"mappings":""}`},
		{"a content not a string", false, `{"version":3,"sources":["a.js"],"sourcesContent":[true],"mappings":""}`},
		{"file not a string", false, `{"version":3,"file":[],` + empty + `,"mappings":""}`},
		{"file a string", true, `{"version":3,"file":"a.min.js",` + empty + `,"mappings":""}`},
		{"sourceRoot not a string", false, `{"version":3,"sourceRoot":-1,` + empty + `,"mappings":""}`},
		{"mappings not a string", false, `{"version":3,` + empty + `,"mappings":5}`},
		{"unknown fields", true, `{"version":3,` + empty + `,"mappings":"","foo":[1,{}]}`},
		{"an ignoreList", true, `{"version":3,` + empty + `,"mappings":"","ignoreList":[0]}`},
		{"an ignoreList past the sources", false, `{"version":3,` + empty + `,"mappings":"","ignoreList":[1]}`},
		{"a negative ignoreList", false, `{"version":3,` + empty + `,"mappings":"","ignoreList":[-1]}`},
		{"an ignoreList of a fraction", false, `{"version":3,` + empty + `,"mappings":"","ignoreList":[0.5]}`},
		{"an ignoreList of a string", false, `{"version":3,` + empty + `,"mappings":"","ignoreList":["0"]}`},
		{"an ignoreList not a list", false, `{"version":3,` + empty + `,"mappings":"","x_google_ignoreList":0}`},
		{"32-bit values", true, `{"version":3,` + empty + `,"mappings":"+/////DA+/////D+/////DA"}`},
		{"zeros in 200 digits", true, `{"version":3,` + empty + `,"mappings":"i` + strings.Repeat("g", 200) + `A"}`},
		{"a column of 2^31", false, `{"version":3,` + empty + `,"mappings":"ggggggE"}`},
		{"a value of 2^31 written in 8 digits", false, `{"version":3,` + empty + `,"mappings":"gggggggE"}`},
		{"a bit past 32 bits after zeros", false, `{"version":3,` + empty + `,"mappings":"g` + strings.Repeat("g", 40) + `B"}`},
		{"a negative column", false, `{"version":3,` + empty + `,"mappings":"C,F"}`},
		{"a name past the names", false, `{"version":3,` + empty + `,"mappings":"AAAAC"}`},
		{"empty lines", true, `{"version":3,` + empty + `,"mappings":";;;;"}`},
		{"empty segments", false, `{"version":3,` + empty + `,"mappings":",,,"}`},
		{"a comma ending a line", false, `{"version":3,` + empty + `,"mappings":"AAAA,;AAAA"}`},
		{"a comma starting a line", false, `{"version":3,` + empty + `,"mappings":",AAAA"}`},
		{"a padding character", false, `{"version":3,` + empty + `,"mappings":"A="}`},
		{"empty sections", true, `{"version":3,"sections":[]}`},
		{"sections not a list", false, `{"version":3,"sections":"x"}`},
		{"sections and mappings", false, `{"version":3,"mappings":"AAAA","sections":[]}`},
		{"a section without offset", false, `{"version":3,"sections":[{"map":{"version":3,` + empty + `,"mappings":"AAAA"}}]}`},
		{"an offset not an object", false, `{"version":3,"sections":[{"offset":"x","map":{"version":3,` + empty + `,"mappings":"AAAA"}}]}`},
		{"a section map of no version", false, `{"version":3,"sections":[{"offset":{"line":0,"column":0},"map":{` + empty + `,"mappings":"AAAA"}}]}`},
		{"sections that touch", true, `{"version":3,"sections":[{"offset":{"line":0,"column":0},"map":{"version":3,` + empty + `,"mappings":"AAAA,EAAA"}},` +
			`{"offset":{"line":0,"column":3},"map":{"version":3,` + empty + `,"mappings":"AAAA"}}]}`},
		{"sections that overlap", false, `{"version":3,"sections":[{"offset":{"line":0,"column":0},"map":{"version":3,` + empty + `,"mappings":"AAAA,EAAA"}},` +
			`{"offset":{"line":0,"column":2},"map":{"version":3,` + empty + `,"mappings":"AAAA"}}]}`},
		{"sections at one offset", false, `{"version":3,"sections":[{"offset":{"line":0,"column":0},"map":{"version":3,` + empty + `,"mappings":"AAAA"}},` +
			`{"offset":{"line":0,"column":0},"map":{"version":3,` + empty + `,"mappings":"AAAA"}}]}`},
		{"a section over the next line", false, `{"version":3,"sections":[{"offset":{"line":0,"column":5},"map":{"version":3,` + empty + `,"mappings":";AAAA"}},` +
			`{"offset":{"line":1,"column":0},"map":{"version":3,` + empty + `,"mappings":"AAAA"}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.data))
			if tc.valid && err != nil {
				t.Errorf("Parse: %v, want a map", err)
			}
			if !tc.valid && !errors.Is(err, ErrMalformed) {
				t.Errorf("Parse: %v, want ErrMalformed", err)
			}
		})
	}
}

// TestLookupOfBoundaryValues finds the positions of the greatest and the
// least 32-bit values and of a value padded with 200 digits of zeros.
func TestLookupOfBoundaryValues(t *testing.T) {
	for _, tc := range []struct {
		mappings  string
		line, col int
		want      Position
		wantOK    bool
	}{
		{"+/////DA+/////D+/////DA", 0, math.MaxInt32, Position{Source: "a.js", Line: math.MaxInt32, Column: math.MaxInt32, Name: "n", HasName: true}, true},
		{"+/////DA+/////D+/////DA", 0, math.MaxInt32 - 1, Position{}, false},
		{"i" + strings.Repeat("g", 200) + "A", 0, 1, Position{}, false}, // a segment of one field
		{"i" + strings.Repeat("g", 200) + "AAAA", 0, 1, Position{Source: "a.js"}, true},
	} {
		m, err := Parse([]byte(`{"version":3,"sources":["a.js"],"names":["n"],"mappings":"` + tc.mappings + `"}`))
		if err != nil {
			t.Fatalf("%s: %v", tc.mappings, err)
		}
		p, ok := m.Lookup(tc.line, tc.col)
		if ok != tc.wantOK || p != tc.want {
			t.Errorf("%.30s at %d:%d = %+v, %v; want %+v, %v", tc.mappings, tc.line, tc.col, p, ok, tc.want, tc.wantOK)
		}
	}
	// The least value: no position is ever that far behind, but it is
	// a value, and one less is not.
	if v, _, err := vlq("hgggggE", 0); err != nil || v != math.MinInt32 {
		t.Errorf("vlq(hgggggE) = %d, %v; want %d", v, err, math.MinInt32)
	}
	if v, _, err := vlq("jgggggE", 0); !errors.Is(err, ErrMalformed) {
		t.Errorf("vlq(jgggggE) = %d, %v; want ErrMalformed", v, err)
	}
}

// TestIgnoreList marks the positions of the sources ignoreList names, and
// of x_google_ignoreList's when there is no ignoreList, in sections too.
func TestIgnoreList(t *testing.T) {
	for _, tc := range []struct {
		list string
		want []bool
	}{
		{`"ignoreList":[1]`, []bool{false, true}},
		{`"x_google_ignoreList":[0]`, []bool{true, false}},
		{`"ignoreList":[],"x_google_ignoreList":[0]`, []bool{false, false}},
		{``, []bool{false, false}},
	} {
		sub := `{"version":3,"sources":["app.js","lib.js"],"names":[],"mappings":"AAAA,CCAA",` + tc.list + `}`
		for _, data := range []string{
			strings.Replace(sub, `,}`, `}`, 1),
			`{"version":3,"sections":[{"offset":{"line":3,"column":4},"map":` + strings.Replace(sub, `,}`, `}`, 1) + `}]}`,
		} {
			m, err := Parse([]byte(data))
			if err != nil {
				t.Fatalf("%s: %v", data, err)
			}
			line, col := 0, 0
			if strings.Contains(data, "sections") {
				line, col = 3, 4
			}
			for i, want := range tc.want {
				p, ok := m.Lookup(line, col+i)
				if !ok || p.Ignored != want {
					t.Errorf("%s: source %d (%+v, %v) ignored %v, want %v", data, i, p, ok, p.Ignored, want)
				}
			}
		}
	}
}

// TestNameDecodesAsAString: a name reads as encoding/json reads the same
// JSON string, escapes, invalid UTF-8 and all.
func TestNameDecodesAsAString(t *testing.T) {
	for _, b := range []string{`""`, `"foo"`, `"é"`, `"a\"b"`, `"\u00e9\n"`, "\"\xff\xfe\"", "\"a\xc3\"", `"\\"`} {
		var want string
		if err := json.Unmarshal([]byte(b), &want); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		var got name
		if err := json.Unmarshal([]byte(b), &got); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		if string(got) != want {
			t.Errorf("%q: name %q, string %q", b, got, want)
		}
	}
}
