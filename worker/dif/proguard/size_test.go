package proguard

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"errata/worker/dif/diftest"
)

// TestSizeIsWhatAMappingHolds builds several mappings of each shape (many
// one-line classes, many methods, long names, R8's metadata) and checks that the size
// each reports is at least what the heap holds for it and at most twice
// that: a cache charged with Size holds what its bound says.
func TestSizeIsWhatAMappingHolds(t *testing.T) {
	var classes, methods, names strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&classes, "a.b.C%d -> c%d:\n", i, i)
	}
	methods.WriteString("com.shop.Cart -> a:\n")
	for i := range 20_000 {
		fmt.Fprintf(&methods, "    %d:%d:void m%d():%d:%d -> a\n", i, i+1, i%50, i, i+1)
	}
	for i := range 500 {
		fmt.Fprintf(&names, "com.%s%d -> n%d:\n    1:2:void %s():3:4 -> a\n", strings.Repeat("x", 1000), i, i, strings.Repeat("y", 1000))
	}
	for _, c := range []struct{ name, data string }{
		{"classes", classes.String()}, {"methods", methods.String()}, {"names", names.String()},
		{"R8 metadata", r8Metadata()},
	} {
		t.Run(c.name, func(t *testing.T) { measureHeld(t, c.data) })
	}
}

// measureHeld parses data several times and checks that the size each
// parsed mapping reports is at least what the heap holds for it and at
// most twice that.
func measureHeld(t *testing.T, data string) {
	t.Helper()
	diftest.CheckHeld(t, 8, func() (int, any) {
		m, err := Parse([]byte(data)) // the input is the caller's, dropped: only the mapping is held
		if err != nil {
			t.Fatal(err)
		}
		return m.Size(), m
	})
}

// TestParseWithinRefusesPastItsBound: a mapping over the bound is
// ErrTooLarge, refused before its text is copied when the text alone is
// over; one is taken at exactly its size.
func TestParseWithinRefusesPastItsBound(t *testing.T) {
	data := []byte("a.B -> c:\n    1:2:void m():3:4 -> a\n")
	m, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseWithin(data, m.Size()); err != nil {
		t.Errorf("ParseWithin its own size %d: %v", m.Size(), err)
	}
	for _, limit := range []int{m.Size() - 1, len(data)} {
		if _, err := ParseWithin(data, limit); !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseWithin %d of a mapping of %d: %v, want ErrTooLarge", limit, m.Size(), err)
		}
	}
	big := []byte(strings.Repeat("a.B -> c:\n", 100_000))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = ParseWithin(big, len(big)/2)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) || after.TotalAlloc-before.TotalAlloc > 64<<10 {
		t.Errorf("a mapping whose text is over the bound: %v, %d bytes allocated", err, after.TotalAlloc-before.TotalAlloc)
	}
}

// FuzzParseWithin: whatever the mapping and the bound, a mapping
// ParseWithin returns holds at most the bound.
func FuzzParseWithin(f *testing.F) {
	f.Add([]byte("a.B -> c:\n    1:2:void m():3:4 -> a\n"), 300)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		m, err := ParseWithin(data, limit)
		if err == nil && m.Size() > limit {
			t.Fatalf("a mapping of %d bytes within %d", m.Size(), limit)
		}
	})
}
