package dif

import (
	"bytes"
	"compress/zlib"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/worker/dif/diftest"
)

// The testdata programs are testdata/native/crash.c and util.h of the
// repository, built in /tmp/native: dwarf4.elf by gcc -O2 -g -gdwarf-4,
// dwarf5z.elf by clang-14 -O2 -g -gdwarf-5 -gz=zlib; dwarf4zstd.elf is
// dwarf4.elf through GNU objcopy 2.40 --compress-debug-sections=zstd
// (SHF_COMPRESSED, ELFCOMPRESS_ZSTD). dwarf4-be.elf is a
// big-endian program of two units, built in /tmp/nc/be by clang-14
// --target=powerpc64-linux-gnu -nostdlib -fuse-ld=lld -static -g -gdwarf-4
// -O2 from be.c:
//
//	static inline int sq(int x) { return x * x; }
//	int f(int n) { int s = 0; for (int i = 0; i < n; i++) s += sq(i); return s; }
//	int g(int n) { return f(n) + 1; }
//	void _start(void) { g(3); for (;;) ; }
//
// and be2.c, "int h(int n) { return n * 7; }". The frames wanted are
// llvm-symbolizer --inlining's.
func TestDWARFTestdata(t *testing.T) {
	for _, tc := range []struct {
		file string
		addr uint64
		want []Frame
	}{
		{"testdata/dwarf4.elf", 0x11a0, []Frame{
			{Function: "square", Symbol: "square", File: "/tmp/native/util.h", Line: 4, Column: 11},
			{Function: "sum", Symbol: "sum", File: "/tmp/native/crash.c", Line: 11, Column: 8},
			{Function: "compute", Symbol: "compute", File: "/tmp/native/crash.c", Line: 18, Column: 10},
		}},
		{"testdata/dwarf4zstd.elf", 0x11a0, []Frame{
			{Function: "square", Symbol: "square", File: "/tmp/native/util.h", Line: 4, Column: 11},
			{Function: "sum", Symbol: "sum", File: "/tmp/native/crash.c", Line: 11, Column: 8},
			{Function: "compute", Symbol: "compute", File: "/tmp/native/crash.c", Line: 18, Column: 10},
		}},
		{"testdata/dwarf4-be.elf", 0x10010380, []Frame{
			{Function: "f", Symbol: "f", File: "/tmp/nc/be/be.c", Line: 2, Column: 27},
			{Function: "g", Symbol: "g", File: "/tmp/nc/be/be.c", Line: 3, Column: 23},
		}},
		{"testdata/dwarf4-be.elf", 0x100103e4, []Frame{
			{Function: "h", Symbol: "h", File: "/tmp/nc/be/be2.c", Line: 1, Column: 16},
		}},
		{"testdata/dwarf5z.elf", 0x1150, []Frame{
			{Function: "sum", Symbol: "sum", File: "/tmp/native/crash.c", Line: 10, Column: 20},
			{Function: "compute", Symbol: "compute", File: "/tmp/native/crash.c", Line: 18, Column: 10},
		}},
	} {
		data, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		res, err := ReadELFDWARF(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		got, ok := res.Lookup(tc.addr)
		if !ok {
			t.Fatalf("%s: nothing at 0x%x", tc.file, tc.addr)
		}
		for i := range got {
			got[i].SymAddr, got[i].CompDir = 0, ""
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s 0x%x (-want +got):\n%s", tc.file, tc.addr, diff)
		}
	}
	// dwarf4.elf with bytes changed so that debug/dwarf's reader returns
	// empty entries without end (the first resolver looped on it): read
	// and resolved, or refused, in bounded time. A unit is read up to the
	// empty entry that closes its children, so the lazy resolver answers.
	loop, err := os.ReadFile("testdata/dwarf-loop.elf")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- readResolve(loop, 0x11a0) }()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, errNoProgress) {
			t.Errorf("dwarf-loop.elf: %v, want an answer or errNoProgress", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("dwarf-loop.elf: no answer in 10 s")
	}
	tiny, err := os.ReadFile("testdata/tiny.elf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadELFDWARF(bytes.NewReader(tiny), int64(len(tiny))); !errors.Is(err, ErrNoDWARF) {
		t.Errorf("an ELF without DWARF: %v, want ErrNoDWARF", err)
	}
}

// readResolve reads the DWARF of the ELF object data and resolves addr,
// which parses the unit that holds it (or the units without ranges, when
// none does): the error of either.
func readResolve(data []byte, addr uint64) error {
	res, err := ReadELFDWARF(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	_, _, err = res.Resolve(addr)
	return err
}

// cuAbbrev is an abbreviation table of one entry: code 1, a compile unit
// without children with a DW_AT_stmt_list (sec_offset).
var cuAbbrev = []byte{1, 0x11, 0, 0x10, 0x17, 0, 0, 0}

// cuInfo is a DWARF 4 unit whose compile unit entry (abbreviation 1 at
// abbrevOff) points at the line table at offset 0.
func cuInfo(abbrevOff uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2+4+1+1+4)
	b = binary.LittleEndian.AppendUint16(b, 4)
	b = binary.LittleEndian.AppendUint32(b, abbrevOff)
	b = append(b, 8, 1)
	return binary.LittleEndian.AppendUint32(b, 0)
}

// lineTable wraps a line table header's fields after header_length.
func lineTable(version uint16, fields []byte) []byte {
	var h []byte
	if version >= 5 {
		h = append(h, 8, 0)
	}
	h = binary.LittleEndian.AppendUint32(h, uint32(len(fields)))
	h = append(h, fields...)
	b := binary.LittleEndian.AppendUint32(nil, uint32(2+len(h)))
	b = binary.LittleEndian.AppendUint16(b, version)
	return append(b, h...)
}

func uleb(v uint64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

// dwarfBudget bounds what reading one of the crafted files below may
// allocate, whatever they claim.
const dwarfTestBudget = 24 << 20

// TestDWARFWithinBudget reads small files whose counts and sizes would
// make a reader that trusts them allocate gigabytes: each is refused, or
// read, within a budget that does not depend on them.
func TestDWARFWithinBudget(t *testing.T) {
	le := binary.LittleEndian
	// A compressed .debug_info that says it inflates to 1 PiB.
	chdr := le.AppendUint32(nil, uint32(elf.COMPRESS_ZLIB))
	chdr = le.AppendUint32(chdr, 0)
	chdr = le.AppendUint64(chdr, 1<<50)
	chdr = le.AppendUint64(chdr, 1)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(make([]byte, 1<<16))
	zw.Close()
	zdebug := append([]byte("ZLIB"), binary.BigEndian.AppendUint64(nil, 1<<40)...)

	// zstd sections (ELFCOMPRESS_ZSTD) whose header or frame claims more
	// than the other: 1 PiB in the header; a frame that declares 1 TiB of
	// content (and so a 1 TiB window) where the header says 64 KiB; a
	// frame of 1 MiB without a declared size, and one that declares a
	// 16 MiB window, both where the header says 64 KiB.
	zstdSection := func(n uint64, frame []byte) []byte {
		h := le.AppendUint32(nil, uint32(elf.COMPRESS_ZSTD))
		h = le.AppendUint32(h, 0)
		h = le.AppendUint64(h, n)
		h = le.AppendUint64(h, 1)
		return append(h, frame...)
	}
	// zstdFrame is a frame of the given header bytes (after the magic
	// number) and blocks; rle is a block that repeats one byte n times.
	zstdFrame := func(header []byte, blocks ...[]byte) []byte {
		f := append([]byte{0x28, 0xb5, 0x2f, 0xfd}, header...)
		for i, b := range blocks {
			if i == len(blocks)-1 {
				b[0] |= 1
			}
			f = append(f, b...)
		}
		return f
	}
	rle := func(n int) []byte { return []byte{byte(n<<3 | 1<<1), byte(n >> 5), byte(n >> 13), 0} }
	raw16 := append([]byte{16 << 3, 0, 0}, make([]byte, 16)...)
	// 0xe0: a single segment with 8 bytes of content size, 1 TiB.
	tebibyteFrame := zstdFrame(le.AppendUint64([]byte{0xe0}, 1<<40), raw16)
	// 0x00, 0x30: no content size, a 64 KiB window; sixteen blocks of 64 KiB.
	var blocks [][]byte
	for range 16 {
		blocks = append(blocks, rle(1<<16))
	}
	mebibyteFrame := zstdFrame([]byte{0x00, 0x30}, blocks...)
	// 0x00, 0x70: no content size, a 16 MiB window.
	wideFrame := zstdFrame([]byte{0x00, 0x70}, rle(1<<16))

	// DWARF 5 line tables: 2^40 directories of no fields, and 2^40 of
	// one string each.
	std := []byte{1, 1, 1, 0xfb, 14, 13, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1}
	noForms := append(append(append([]byte{}, std...), 0), uleb(1<<40)...)
	oneForm := append(append(append([]byte{}, std...), 1, 1, 0x08), uleb(1<<40)...)
	// A DWARF 4 line table: a 60 KiB directory, and 60,000 files in it of
	// five bytes each: 3.6 GB of joined paths.
	v4 := append([]byte{}, std[:len(std)-1]...)
	v4 = append(v4, bytes.Repeat([]byte{'d'}, 60<<10)...)
	v4 = append(v4, 0, 0)
	for range 60_000 {
		v4 = append(v4, 'f', 0, 1, 0, 0)
	}
	v4 = append(v4, 0)

	// 20,000 units, each pointing at its own entry of a 160 KiB
	// abbreviation table of 20,000 entries: debug/dwarf would parse 200
	// million entries into tables.
	var abbrev []byte
	var offs []uint32
	for i := range 20_000 {
		offs = append(offs, uint32(len(abbrev)))
		abbrev = append(append(abbrev, uleb(uint64(i+1))...), 0x11, 0, 0x03, 0x08, 0, 0)
	}
	abbrev = append(abbrev, 0)
	var units []byte
	for _, off := range offs {
		units = append(units, cuInfo(off)...)
	}

	tests := []struct {
		name string
		file []byte
	}{
		{"SHF_COMPRESSED .debug_info of 1 PiB", diftest.ELFWith(diftest.Section{Name: ".debug_info", Flags: elf.SHF_COMPRESSED, Data: append(chdr, z.Bytes()...)})},
		{".zdebug_info of 1 TiB", diftest.ELFWith(diftest.Section{Name: ".zdebug_info", Data: append(zdebug, z.Bytes()...)})},
		{"zstd .debug_info of 1 PiB", diftest.ELFWith(diftest.Section{Name: ".debug_info", Flags: elf.SHF_COMPRESSED,
			Data: zstdSection(1<<50, zstdFrame([]byte{0x00, 0x30}, rle(1<<16)))})},
		{"zstd frame of 1 TiB in a .debug_info of 64 KiB", diftest.ELFWith(diftest.Section{Name: ".debug_info", Flags: elf.SHF_COMPRESSED,
			Data: zstdSection(1<<16, tebibyteFrame)})},
		{"zstd frame of 1 MiB in a .debug_info of 64 KiB", diftest.ELFWith(diftest.Section{Name: ".debug_info", Flags: elf.SHF_COMPRESSED,
			Data: zstdSection(1<<16, mebibyteFrame)})},
		{"zstd window of 16 MiB for a .debug_info of 64 KiB", diftest.ELFWith(diftest.Section{Name: ".debug_info", Flags: elf.SHF_COMPRESSED,
			Data: zstdSection(1<<16, wideFrame)})},
		{"line table of 2^40 directories of no fields", diftest.ELFWith(diftest.Section{Name: ".debug_info", Data: cuInfo(0)},
			diftest.Section{Name: ".debug_abbrev", Data: cuAbbrev}, diftest.Section{Name: ".debug_line", Data: lineTable(5, noForms)})},
		{"line table of 2^40 directories", diftest.ELFWith(diftest.Section{Name: ".debug_info", Data: cuInfo(0)},
			diftest.Section{Name: ".debug_abbrev", Data: cuAbbrev}, diftest.Section{Name: ".debug_line", Data: lineTable(5, oneForm)})},
		{"line table of 60,000 files in a 60 KiB directory", diftest.ELFWith(diftest.Section{Name: ".debug_info", Data: cuInfo(0)},
			diftest.Section{Name: ".debug_abbrev", Data: cuAbbrev}, diftest.Section{Name: ".debug_line", Data: lineTable(4, v4)})},
		{"20,000 units of overlapping abbreviation tables", diftest.ELFWith(diftest.Section{Name: ".debug_info", Data: units},
			diftest.Section{Name: ".debug_abbrev", Data: abbrev})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			checkBudget(t, "ReadELFDWARF and a lookup", dwarfTestBudget, func() { err = readResolve(tc.file, 0) })
			if err == nil {
				t.Errorf("%d bytes read without an error", len(tc.file))
			}
			t.Log(err)
		})
	}
}

// FuzzDWARFResolver reads ELF objects' DWARF within a budget and resolves
// addresses in them without panicking.
func FuzzDWARFResolver(f *testing.F) {
	for _, p := range []string{"testdata/dwarf4.elf", "testdata/dwarf5z.elf", "testdata/dwarf4zstd.elf", "testdata/dwarf4-be.elf"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint64(0x11a0))
	}
	f.Add(diftest.ELFWith(diftest.Section{Name: ".debug_info", Data: cuInfo(0)}, diftest.Section{Name: ".debug_abbrev", Data: cuAbbrev},
		diftest.Section{Name: ".debug_line", Data: lineTable(4, []byte{1, 1, 1, 0xfb, 14, 13, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1, 0, 'a', 0, 0, 0, 0, 0})}), uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, addr uint64) {
		// The units an address falls in are parsed by its lookup: the
		// lookups count in the budget.
		checkBudget(t, "ReadELFDWARF and lookups", uint64(64<<20+64*len(data)), func() {
			res, err := ReadELFDWARF(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				return
			}
			for _, a := range []uint64{addr, addr + 1, 0x1000, 0x11a0} {
				frames, ok := res.Lookup(a)
				if ok && len(frames) == 0 {
					t.Errorf("0x%x: ok without frames", a)
				}
			}
		})
	})
}

// TestDWARFMutations reads 5,000 copies of the testdata programs (ELF, a
// dSYM and a PDB) with
// random bytes changed: each is read or refused, within the budget,
// without a panic and without looping (a copy whose DWARF made
// debug/dwarf's reader return empty entries without end hung the first
// resolver).
func TestDWARFMutations(t *testing.T) {
	type seed struct {
		data []byte
		read func(r *bytes.Reader, size int64) (*Resolver, error)
	}
	var seeds []seed
	for _, p := range []string{"testdata/dwarf4.elf", "testdata/dwarf5z.elf", "testdata/dwarf-macho.dsym", "testdata/crash-O0.pdb"} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		read := func(r *bytes.Reader, size int64) (*Resolver, error) { return ReadELFDWARF(r, size) }
		if strings.HasSuffix(p, ".dsym") {
			read = func(r *bytes.Reader, size int64) (*Resolver, error) { return ReadMachODWARF(r, size) }
		}
		if strings.HasSuffix(p, ".pdb") {
			read = func(r *bytes.Reader, size int64) (*Resolver, error) { return ReadPDBSymbols(r, size) }
		}
		seeds = append(seeds, seed{data, read})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	read := 0
	for i := range 5000 {
		sd := seeds[i%len(seeds)]
		d := bytes.Clone(sd.data)
		for range 1 + rng.IntN(40) {
			d[rng.IntN(len(d))] = byte(rng.IntN(256))
		}
		done := make(chan error, 1)
		go func() {
			res, err := sd.read(bytes.NewReader(d), int64(len(d)))
			if err == nil {
				res.Lookup(0x11a0)
				res.Lookup(0x1150)
				res.Lookup(0x1000005a0)
				res.Lookup(0x1010)
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				read++
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("mutation %d: no answer in 10 s", i)
		}
	}
	t.Logf("%d of 5000 read", read)
}

// inlineDWARF builds an ELF whose one function f, at 0x1000 for 0x10000
// bytes, holds n inlined calls: nested each in the one before (deep), or
// side by side, one byte each (wide).
func inlineDWARF(n int, deep bool) []byte {
	le := binary.LittleEndian
	abbrev := []byte{
		1, 0x11, 1, 0, 0, // compile unit, children
		2, 0x2e, 1, 0x11, 0x01, 0x12, 0x06, 0x03, 0x08, 0, 0, // subprogram: low_pc addr, high_pc data4, name string
		3, 0x1d, 1, 0x11, 0x01, 0x12, 0x06, 0, 0, // inlined subroutine: low_pc, high_pc
		0,
	}
	var dies []byte
	dies = append(dies, 1)
	dies = append(dies, 2)
	dies = le.AppendUint64(dies, 0x1000)
	dies = le.AppendUint32(dies, 0x10000)
	dies = append(dies, 'f', 0)
	for i := range n {
		dies = append(dies, 3)
		if deep {
			dies = le.AppendUint64(dies, 0x1000)
			dies = le.AppendUint32(dies, 0x10000)
		} else {
			dies = le.AppendUint64(dies, uint64(0x1000+i))
			dies = le.AppendUint32(dies, 1)
			dies = append(dies, 0) // no children
		}
	}
	if deep {
		dies = append(dies, bytes.Repeat([]byte{0}, n)...)
	}
	dies = append(dies, 0, 0) // f's children, the unit's
	info := le.AppendUint32(nil, uint32(2+4+1+len(dies)))
	info = le.AppendUint16(info, 4)
	info = le.AppendUint32(info, 0)
	info = append(info, 8)
	info = append(info, dies...)
	return diftest.ELFWith(diftest.Section{Name: ".debug_info", Data: info}, diftest.Section{Name: ".debug_abbrev", Data: abbrev})
}

// TestDWARFInlineBounds: an address in 10,000 nested inlined calls expands
// to maxInlineDepth frames, and a function of 60,000 inlined calls side by
// side finds the one holding an address by a search.
func TestDWARFInlineBounds(t *testing.T) {
	deep := inlineDWARF(10_000, true)
	res, err := ReadELFDWARF(bytes.NewReader(deep), int64(len(deep)))
	if err != nil {
		t.Fatal(err)
	}
	if frames, _ := res.Lookup(0x1010); len(frames) != maxInlineDepth {
		t.Errorf("%d frames in 10,000 nested calls, want %d", len(frames), maxInlineDepth)
	}
	// A search takes about log2(n) steps, a scan n: 5,000 lookups among
	// 60,000 calls against as many among 600, the fastest of three rounds
	// each, interleaved, so that a busy machine slows both alike. A scan
	// would be about 100 times slower; a search is under 3.
	lookups := func(n int) func() time.Duration {
		data := inlineDWARF(n, false)
		res, err := ReadELFDWARF(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		return func() time.Duration {
			start := time.Now()
			for i := range 5000 {
				addr := uint64(0x1000 + (12*i)%n)
				frames, _ := res.Lookup(addr)
				if len(frames) != 2 || frames[1].Function != "f" {
					t.Fatalf("0x%x among %d calls: %+v, want an inlined call in f", addr, n, frames)
				}
			}
			return time.Since(start)
		}
	}
	wide, narrow := lookups(60_000), lookups(600)
	bestWide, bestNarrow := time.Duration(1<<62), time.Duration(1<<62)
	for range 3 {
		bestWide, bestNarrow = min(bestWide, wide()), min(bestNarrow, narrow())
	}
	if ratio := float64(bestWide) / float64(bestNarrow); ratio > 20 {
		t.Errorf("5,000 lookups among 60,000 calls took %v, %.1f times as long as among 600 (%v)", bestWide, ratio, bestNarrow)
	}
}

// TestBuildResolverShortUnitHeader reads .debug_info whose last unit ends
// before its abbreviation offset (DWARF 5, whose header is two bytes
// longer): checkUnits read past the section and panicked.
func TestBuildResolverShortUnitHeader(t *testing.T) {
	for name, info := range map[string][]byte{
		"dwarf32": {7, 0, 0, 0, 5, 0, 1, 8, 0, 0, 0},
		"dwarf64": append([]byte{0xff, 0xff, 0xff, 0xff, 11, 0, 0, 0, 0, 0, 0, 0, 5, 0, 1, 8}, make([]byte, 7)...),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := buildResolver(map[string][]byte{"info": info, "abbrev": {0}}); err == nil {
				t.Error("a unit header cut short was read")
			}
		})
	}
}

// TestDWARFSetFileBeyondInt: a line program that sets a file index past
// the largest int (debug/dwarf's line reader indexes its files with it,
// negative, and panics) leaves the unit without lines, and resolves.
func TestDWARFSetFileBeyondInt(t *testing.T) {
	prog := append(diftest.SetAddress(0x100000), 0x04)
	prog = append(append(prog, uleb(1<<63)...), 0x20)
	prog = append(prog, diftest.EndSequence...)
	h := diftest.HostileUnits{Units: 1, FuncBase: 0x100000, Ranged: true, Line: diftest.LineSection(nil, []string{"a.c"}, prog)}
	file := h.ELF()
	res, err := ReadELFDWARF(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	frames, ok, err := res.Resolve(0x100000)
	if err != nil || !ok || frames[0].Function != "f0" || frames[0].File != "" {
		t.Errorf("%+v %v %v, want f0 without a file", frames, ok, err)
	}
}

// TestDWARFZstdLeavesNoGoroutine reads a zstd-compressed file many times:
// the decoder runs in the reading goroutine and leaves none behind.
func TestDWARFZstdLeavesNoGoroutine(t *testing.T) {
	data, err := os.ReadFile("testdata/dwarf4zstd.elf")
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	for range 50 {
		if err := readResolve(data, 0x11a0); err != nil {
			t.Fatal(err)
		}
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("%d goroutines after 50 reads, %d before", after, before)
	}
}

// FuzzZstdSection decodes the body of a zstd-compressed section that says
// it holds n bytes: it gives exactly n bytes or an error, and allocates
// within n plus the decoder's fixed buffers, whatever the frames declare.
func FuzzZstdSection(f *testing.F) {
	data, err := os.ReadFile("testdata/dwarf4zstd.elf")
	if err != nil {
		f.Fatal(err)
	}
	secs, err := ReadELFSections(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range secs {
		if s.Flags&elf.SHF_COMPRESSED != 0 {
			n := binary.LittleEndian.Uint64(data[s.Offset+8:])
			f.Add(data[s.Offset+24:s.Offset+s.Size], n)
		}
	}
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x70, 1<<3 | 1<<1 | 1, 0, 0, 0}, uint64(8))
	f.Fuzz(func(t *testing.T, body []byte, n uint64) {
		n %= 1 << 20
		checkBudget(t, "unzstd", 2*n+4<<20, func() {
			out, err := unzstd(io.NewSectionReader(bytes.NewReader(body), 0, int64(len(body))), n, dwarfBudget(int64(len(body))))
			if err == nil && uint64(len(out)) != n {
				t.Errorf("%d bytes decoded, want %d", len(out), n)
			}
		})
	})
}
