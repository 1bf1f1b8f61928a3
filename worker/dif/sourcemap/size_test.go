package sourcemap

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"errata/worker/dif/diftest"
)

// TestSizeIsWhatAMapHolds builds several maps of each shape (many
// segments, long names, sources with their contents, sections) and checks
// that the size each reports is at least what the heap holds for it and
// at most twice that: a cache charged with Size holds what its bound says.
func TestSizeIsWhatAMapHolds(t *testing.T) {
	segments := `{"version":3,"sources":["a.js"],"names":["n"],"mappings":"` +
		strings.Repeat("AAAAA,", 200_000) + `A"}`
	names := `{"version":3,"sources":["a.js"],"names":[` +
		strings.Repeat(`"`+strings.Repeat("x", 300)+`",`, 2000) + `"y"],"mappings":"AAAA"}`
	contents := `{"version":3,"sources":[` + strings.Repeat(`"src/file.js",`, 500) + `"z.js"],"sourcesContent":[` +
		strings.Repeat(`"`+strings.Repeat("line\\n", 400)+`",`, 500) + `null],"mappings":"AAAA;AACA"}`
	var sb strings.Builder
	sb.WriteString(`{"version":3,"sections":[`)
	for i := range 200 {
		fmt.Fprintf(&sb, `{"offset":{"line":%d,"column":0},"map":{"version":3,"sources":["s.js"],"names":[],"mappings":"%sA"}},`, i, strings.Repeat("AAAA,", 2000))
	}
	sb.WriteString(`{"offset":{"line":200,"column":0},"map":{"version":3,"sources":[],"names":[],"mappings":""}}]}`)
	sections := sb.String()
	var ignored strings.Builder
	ignored.WriteString(`{"version":3,"sources":[` + strings.Repeat(`"lib/vendor.js",`, 50_000) + `"app.js"],"names":[],"mappings":"AAAA","ignoreList":[0`)
	for i := 1; i < 50_000; i++ {
		fmt.Fprintf(&ignored, ",%d", i)
	}
	ignored.WriteString("]}")
	lines := `{"version":3,"sources":["a.js"],"names":[],"mappings":"` + strings.Repeat(";", 1_000_000) + `"}`
	for _, c := range []struct{ name, data string }{
		{"segments", segments}, {"names", names}, {"contents", contents}, {"sections", sections}, {"lines", lines},
		{"ignored", ignored.String()},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := []byte(c.data)
			diftest.CheckHeld(t, 8, func() (int, any) {
				m, err := Parse(data)
				if err != nil {
					t.Fatal(err)
				}
				return m.Size(), m
			})
		})
	}
}

// TestParseWithinRefusesBeforeAllocating: a map of 4 MB of line
// separators would hold 100 MB; bounded to a megabyte, its parse is
// ErrTooLarge having allocated little beyond the JSON's own strings, and
// a map is taken at exactly its size.
func TestParseWithinRefusesBeforeAllocating(t *testing.T) {
	data := []byte(`{"version":3,"sources":["a.js"],"names":[],"mappings":"` + strings.Repeat(";", 4<<20) + `"}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ParseWithin(data, 1<<20)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrMalformed) {
		t.Fatalf("ParseWithin: %v, want ErrTooLarge", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*uint64(len(data)) {
		t.Errorf("a refused parse allocated %d bytes for a map of %d", alloc, len(data))
	}
	small := []byte(`{"version":3,"sources":["a.js"],"names":["n"],"mappings":"AAAAA,CAAC;AACA"}`)
	m, err := Parse(small)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseWithin(small, m.Size()); err != nil {
		t.Errorf("ParseWithin its own size %d: %v", m.Size(), err)
	}
	if _, err := ParseWithin(small, m.Size()-1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ParseWithin a byte below its size: %v, want ErrTooLarge", err)
	}
}

// FuzzParseWithin: whatever the map and the bound, a map ParseWithin
// returns holds at most the bound.
func FuzzParseWithin(f *testing.F) {
	f.Add([]byte(`{"version":3,"sources":["a.js"],"names":["n"],"mappings":"AAAAA,CAAC;AACA"}`), 200)
	f.Add([]byte(`{"version":3,"sections":[{"offset":{"line":0,"column":0},"map":{"version":3,"sources":["s.js"],"names":[],"mappings":"AAAA;;"}}]}`), 1000)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		m, err := ParseWithin(data, limit)
		if err == nil && m.Size() > limit {
			t.Fatalf("a map of %d bytes within %d", m.Size(), limit)
		}
	})
}
