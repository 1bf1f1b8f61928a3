package dif

import (
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
)

// typeStream lays records (each a kind and the bytes after it) out as a
// TPI or IPI stream whose first type index is 0x1000.
func typeStream(recs ...[]byte) []byte {
	le := binary.LittleEndian
	var body []byte
	for _, r := range recs {
		for len(r)%4 != 2 { // records are padded to 4 bytes with the length
			r = append(r, 0xf1)
		}
		body = le.AppendUint16(body, uint16(len(r)))
		body = append(body, r...)
	}
	hdr := make([]byte, 56)
	le.PutUint32(hdr[4:], 56)
	le.PutUint32(hdr[8:], 0x1000)
	le.PutUint32(hdr[12:], 0x1000+uint32(len(recs)))
	le.PutUint32(hdr[16:], uint32(len(body)))
	return append(hdr, body...)
}

// rec is a type record of kind made of words (uint32 or uint16 values)
// and strings (NUL-terminated).
func rec(kind uint16, fields ...any) []byte {
	le := binary.LittleEndian
	b := le.AppendUint16(nil, kind)
	for _, f := range fields {
		switch v := f.(type) {
		case uint32:
			b = le.AppendUint32(b, v)
		case uint16:
			b = le.AppendUint16(b, v)
		case string:
			b = append(append(b, v...), 0)
		}
	}
	return b
}

// testNamer builds a pdbNamer over the records tpi and ipi, of type
// indices 0x1000 and on.
func testNamer(t testing.TB, tpi, ipi [][]byte) *pdbNamer {
	t.Helper()
	p := &pdbReader{budget: &sectionBudget{left: 1 << 20}}
	ti, err := p.indexTypeRecords(typeStream(tpi...))
	if err != nil {
		t.Fatal(err)
	}
	ii, err := p.indexTypeRecords(typeStream(ipi...))
	if err != nil {
		t.Fatal(err)
	}
	return &pdbNamer{tpi: ti, ipi: ii, ptrSize: 4, types: map[uint32]string{}, args: map[uint32]string{},
		spend: func(int) error { return nil }}
}

// TestPDBTypeNames names functions and inlinees of a type stream written
// by hand, one record kind at a time, as symbolic's type formatter prints
// them (the forms of its snapshot of windows/crash.pdb: "wchar_t* const",
// "const unsigned int", "wchar_t const&", " const" methods,
// "`anonymous namespace'").
func TestPDBTypeNames(t *testing.T) {
	const (
		tInt, tUint, tWchar, tVoidPtr, tChar = 0x74, 0x75, 0x71, 0x403, 0x70
	)
	tpi := [][]byte{
		rec(0x1505, uint16(0), uint16(0x80), uint32(0), uint32(0), uint32(0), uint16(8), "ns::Class"),              // 0x1000 struct, forward reference
		rec(0x1001, uint32(0x1000), uint16(1)),                                                                     // 0x1001 const ns::Class
		rec(0x1002, uint32(0x1001), uint32(0x0a|4<<13)),                                                            // 0x1002 const ns::Class* (this of a const method)
		rec(0x1002, uint32(0x1000), uint32(0x0a|4<<13)),                                                            // 0x1003 ns::Class*
		rec(0x1002, uint32(tWchar), uint32(0x0a|0x400|4<<13)),                                                      // 0x1004 wchar_t* const
		rec(0x1001, uint32(tUint), uint16(1)),                                                                      // 0x1005 const unsigned int
		rec(0x1001, uint32(tWchar), uint16(1)),                                                                     // 0x1006 const wchar_t
		rec(0x1002, uint32(0x1006), uint32(0x0a|1<<5|4<<13)),                                                       // 0x1007 wchar_t const&
		rec(0x1201, uint32(3), uint32(0x1004), uint32(0x1005), uint32(0x1007)),                                     // 0x1008 the arguments
		rec(0x1009, uint32(0x03), uint32(0x1000), uint32(0x1002), uint16(0), uint16(3), uint32(0x1008), uint32(0)), // 0x1009 const method
		rec(0x1201, uint32(0)),                                                                                     // 0x100a no arguments
		rec(0x1008, uint32(0x03), uint16(0), uint16(0), uint32(0x100a)),                                            // 0x100b void ()
		rec(0x1002, uint32(0x100b), uint32(0x0a|4<<13)),                                                            // 0x100c void (*)()
		rec(0x1503, uint32(tInt), uint32(tUint), uint16(40), ""),                                                   // 0x100d int[10]
		rec(0x1002, uint32(0x100d), uint32(0x0a|4<<13)),                                                            // 0x100e int[10]*
		rec(0x1201, uint32(4), uint32(0x100c), uint32(0x100e), uint32(tVoidPtr), uint32(0)),                        // 0x100f the arguments
		rec(0x1008, uint32(tInt), uint16(0), uint16(4), uint32(0x100f)),                                            // 0x1010 int (void(*)(), int[10]*, void*, ...)
		rec(0x1009, uint32(0x03), uint32(0x1000), uint32(0x1003), uint16(0), uint16(0), uint32(0x100a), uint32(0)), // 0x1011 method
		rec(0x1002, uint32(0x1012), uint32(0x0a|4<<13)),                                                            // 0x1012 a pointer to itself
		rec(0x1201, uint32(1), uint32(0x1012)),                                                                     // 0x1013
		rec(0x1008, uint32(0x03), uint16(0), uint16(1), uint32(0x1013)),                                            // 0x1014 void (loop)
		rec(0x1001, uint32(tChar|0x400), uint16(1)),                                                                // 0x1015 char const*
		rec(0x1201, uint32(1), uint32(0x1015)),                                                                     // 0x1016
		rec(0x1008, uint32(0x03), uint16(0), uint16(1), uint32(0x1016)),                                            // 0x1017 void (char const*)
	}
	ipi := [][]byte{
		rec(0x1605, uint32(0), "?A0xc3a0617d"),                // 0x1000
		rec(0x1601, uint32(0x1000), uint32(0x100b), "start"),  // 0x1001
		rec(0x1602, uint32(0x1000), uint32(0x1009), "assign"), // 0x1002
		rec(0x1605, uint32(0), "std"),                         // 0x1003
		rec(0x1601, uint32(0x1003), uint32(0x1017), "puts"),   // 0x1004
		rec(0x1601, uint32(0), uint32(0x1009), "bad"),         // 0x1005 a function id of a method type
	}
	n := testNamer(t, tpi, ipi)
	for _, tc := range []struct {
		name string
		ti   uint32
		want string
	}{
		{"assign", 0x1009, "assign(wchar_t* const, const unsigned int, wchar_t const&) const"},
		{"f", 0x1010, "f(void (*)(), int[10]*, void*, <NoType>)"},
		{"_Xlen", 0x1011, "_Xlen()"},
		{"loop", 0x1014, ""},
		{"plain", 0, "plain"},
		{"notafunction", 0x1000, "notafunction"},
		{"missing", 0x2000, "missing"},
	} {
		got := n.function(tc.name, tc.ti)
		if tc.name == "loop" {
			// A pointer to itself ends, its name bounded.
			if !strings.HasPrefix(got, "loop(") || !strings.HasSuffix(got, ")") || len(got) > maxPDBName {
				t.Errorf("function %s: %q", tc.name, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("function %s: %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		id     uint32
		want   string
		wantOK bool
	}{
		{0x1001, "`anonymous namespace'::start()", true},
		{0x1002, "ns::Class::assign(wchar_t* const, const unsigned int, wchar_t const&) const", true},
		{0x1004, "std::puts(char const*)", true},
		{0x1005, "", false},
		{0x1fff, "<missing type 0x1fff>", true},
	} {
		got, ok := n.id(tc.id)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("id 0x%x: %q %v, want %q %v", tc.id, got, ok, tc.want, tc.wantOK)
		}
	}
}

// TestPDBTypeNamesWithinBounds names a function whose arguments are a
// chain of 10,000 pointers and a list of 16,000 arguments, each of a long
// class name: its name is cut at maxPDBName bytes, and the records
// followed stay within maxTypeSteps.
func TestPDBTypeNamesWithinBounds(t *testing.T) {
	long := strings.Repeat("N", 4000)
	tpi := [][]byte{rec(0x1505, uint16(0), uint16(0), uint32(0), uint32(0), uint32(0), uint16(8), long)} // 0x1000
	for i := range 10_000 {
		tpi = append(tpi, rec(0x1002, uint32(0x1000+i), uint32(0x0a|4<<13))) // 0x1001...
	}
	args := []any{uint32(16_000)}
	for i := range 16_000 {
		args = append(args, uint32(0x1000+i%10_000))
	}
	list := uint32(0x1000 + len(tpi))
	tpi = append(tpi, rec(0x1201, args...))
	tpi = append(tpi, rec(0x1008, uint32(0x03), uint16(0), uint16(0), list))
	n := testNamer(t, tpi, nil)
	got := n.function("f", list+1)
	if len(got) > maxPDBName || !strings.HasPrefix(got, "f(") {
		t.Errorf("a name of %d bytes: %.40q", len(got), got)
	}
	if n.steps > maxTypeSteps+1 {
		t.Errorf("%d steps", n.steps)
	}
}

func TestUndecorateWindows(t *testing.T) {
	for in, want := range map[string]string{
		"_malloc":             "malloc",
		"_Sleep@4":            "Sleep",
		"@fast@8":             "fast",
		"vec@@16":             "vec",
		"main":                "main",
		"?f@@YAXXZ":           "?f@@YAXXZ",
		"_Xlen()":             "_Xlen()",
		"ns::_f":              "ns::_f",
		"@notanumber@x":       "@notanumber@x",
		"_":                   "",
		"":                    "",
		"std::vector<_T>::at": "std::vector<_T>::at",
	} {
		if got := undecorateWindows(in); got != want {
			t.Errorf("undecorateWindows(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzPDBTypeNames names functions and inlinees of arbitrary type and id
// streams within the names' bounds.
func FuzzPDBTypeNames(f *testing.F) {
	f.Add(typeStream(rec(0x1201, uint32(1), uint32(0x1001)), rec(0x1002, uint32(0x1001), uint32(0x0a)),
		rec(0x1008, uint32(0), uint16(0), uint16(1), uint32(0x1000))),
		typeStream(rec(0x1605, uint32(0), "?A0x1"), rec(0x1601, uint32(0x1000), uint32(0x1002), "f")), uint32(0x1002), uint32(0x1001))
	f.Add(typeStream(rec(0x1503, uint32(0x1000), uint32(0x75), uint16(0x8004), uint32(1<<31), ""),
		rec(0x1009, uint32(0), uint32(0x1000), uint32(0x1000), uint16(0), uint16(0), uint32(0x1000), uint32(0))),
		typeStream(rec(0x1602, uint32(0x1000), uint32(0x1001), "m")), uint32(0x1001), uint32(0x1000))
	f.Fuzz(func(t *testing.T, tpi, ipi []byte, fn, id uint32) {
		p := &pdbReader{budget: &sectionBudget{left: 1 << 24}}
		ti, err := p.indexTypeRecords(tpi)
		if err != nil {
			return
		}
		ii, err := p.indexTypeRecords(ipi)
		if err != nil {
			return
		}
		n := &pdbNamer{tpi: ti, ipi: ii, ptrSize: 8, types: map[uint32]string{}, args: map[uint32]string{},
			spend: func(int) error { return nil }}
		if s := n.function("f", fn); len(s) > maxPDBName {
			t.Errorf("a name of %d bytes", len(s))
		}
		if s, _ := n.id(id); len(s) > maxPDBName {
			t.Errorf("a name of %d bytes", len(s))
		}
	})
}

// TestPDBIdsShareParameters names 300 method ids of one method type of
// 16,000 arguments: its parameter list is built once, not once an id.
func TestPDBIdsShareParameters(t *testing.T) {
	args := []any{uint32(16_000)}
	for range 16_000 {
		args = append(args, uint32(0x74))
	}
	tpi := [][]byte{
		rec(0x1505, uint16(0), uint16(0x80), uint32(0), uint32(0), uint32(0), uint16(8), "C"), // 0x1000 class C
		rec(0x1201, args...), // 0x1001 arguments
		rec(0x1009, uint32(0x03), uint32(0x1000), uint32(0), uint16(0), uint16(16_000), uint32(0x1001), uint32(0)), // 0x1002 static method of C
	}
	var ipi [][]byte
	for range 300 {
		ipi = append(ipi, rec(0x1602, uint32(0x1000), uint32(0x1002), "m"))
	}
	n := testNamer(t, tpi, ipi)
	first, ok := n.id(0x1000)
	if !ok || !strings.HasPrefix(first, "C::m(int, int, ") || len(first) > maxPDBName {
		t.Fatalf("%.60q, %v", first, ok)
	}
	for i := range uint32(300) {
		if got, _ := n.id(0x1000 + i); got != first {
			t.Fatalf("id 0x%x: %.60q", 0x1000+i, got)
		}
	}
	if a := testing.AllocsPerRun(10, func() { n.id(0x1001) }); a > 3 {
		t.Errorf("%v allocations to name an id of a list built already", a)
	}
}

// TestPDBIdScopesWithinBounds names 100 inlinee ids whose scope is a
// chain of 20 function ids of 60,000-byte names: each id's name is the
// chain's cut at maxPDBName bytes (at the start of a character), built
// without copying the chain's names whole, nor joining them.
func TestPDBIdScopesWithinBounds(t *testing.T) {
	long := "x" + strings.Repeat("é", 30_000)
	tpi := [][]byte{rec(0x1201, uint32(0)), rec(0x1008, uint32(0x03), uint16(0), uint16(0), uint32(0x1000))} // f()
	var ipi [][]byte
	scope, full := uint32(0), ""
	for i := range 20 {
		ipi = append(ipi, rec(0x1601, scope, uint32(0x1001), long))
		scope, full = 0x1000+uint32(i), full+long+"()::"
	}
	for range 100 {
		ipi = append(ipi, rec(0x1601, scope, uint32(0x1001), "leaf"))
	}
	want := cutPDBName(full + "leaf()")
	n := testNamer(t, tpi, ipi)
	var names []string
	checkBudget(t, "naming 100 ids", 16<<20, func() {
		for i := range uint32(100) {
			s, _ := n.id(0x1000 + 20 + i)
			names = append(names, s)
		}
	})
	for i, s := range names {
		if s != want {
			t.Fatalf("id %d: %d bytes %.40q, want %d bytes", i, len(s), s, len(want))
		}
	}
}

// TestIsHex32 reads hexadecimal numbers as strconv.ParseUint does.
func TestIsHex32(t *testing.T) {
	for _, s := range []string{"", "0", "1", "ffffffff", "FFFFFFFF", "100000000", "0000000000ffffffff", "g", "1_0", "-1", "+1", "0x1", "deadBEEF"} {
		_, err := strconv.ParseUint(s, 16, 32)
		if got := isHex32([]byte(s)); got != (err == nil) {
			t.Errorf("isHex32(%q) = %v", s, got)
		}
	}
}
