package sourcemap

import (
	"encoding/json"
	"errors"
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
		"sections out of order": `{"version":3,"sections":[{"offset":{"line":2,"column":0},"map":{"sources":[],"mappings":""}},` +
			`{"offset":{"line":1,"column":0},"map":{"sources":[],"mappings":""}}]}`,
		"nested too deep": `{"sections":[{"offset":{"line":0,"column":0},"map":{"sections":[{"offset":{"line":0,"column":0},"map":` +
			`{"sections":[{"offset":{"line":0,"column":0},"map":{"sections":[{"offset":{"line":0,"column":0},"map":` +
			`{"sections":[]}}]}}]}}]}}]}`,
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
		b.WriteString("null")
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
