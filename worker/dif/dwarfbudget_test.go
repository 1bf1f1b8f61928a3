package dif

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"errata/worker/dif/diftest"
)

// heldBy is what unit u holds, counted from its slices' capacities and
// its strings' lengths (the runtime rounds each up a little more): what
// it is charged must be at least that. tables counts each line table
// once across calls.
func heldBy(u *dwarfUnit, tables map[*lineProgram]bool) int64 {
	n := int64(unsafe.Sizeof(*u)) + int64(len(u.compDir)) + int64(cap(u.funcs))*int64(unsafe.Sizeof(span{}))
	if t := u.lines; t != nil && !tables[t] {
		tables[t] = true
		n += int64(unsafe.Sizeof(*t)) + int64(cap(t.files))*int64(unsafe.Sizeof(lineFile{})) + int64(cap(t.seqs))*int64(unsafe.Sizeof(lineSeq{}))
		dirs := map[string]bool{}
		for _, f := range t.files {
			n += int64(len(f.name))
			if !dirs[f.dir] {
				dirs[f.dir] = true
				n += int64(len(f.dir))
			}
		}
		if len(t.seqs) > 0 {
			// One array holds the rows of all sequences.
			var rows int
			for _, s := range t.seqs {
				rows += len(s.rows)
			}
			n += int64(rows) * int64(unsafe.Sizeof(lineRow{}))
		}
	}
	names := map[*fnName]bool{}
	var node func(f *fnNode)
	node = func(f *fnNode) {
		n += int64(unsafe.Sizeof(*f)) + int64(cap(f.ranges))*16 + int64(cap(f.kids))*int64(unsafe.Sizeof(span{}))
		if !names[f.name] {
			names[f.name] = true
			n += int64(unsafe.Sizeof(*f.name)) + int64(len(f.name.linkage)+len(f.name.name))
		}
		for _, k := range f.kids {
			node(k.fn)
		}
	}
	seen := map[*fnNode]bool{}
	for _, f := range u.funcs {
		if !seen[f.fn] {
			seen[f.fn] = true
			node(f.fn)
		}
	}
	return n
}

// TestDWARFStructureSizes: the sizes units are charged with are those of
// the structures they hold.
func TestDWARFStructureSizes(t *testing.T) {
	for _, c := range []struct {
		name       string
		got, least uintptr
	}{
		{"lineFile", lineFileSize, unsafe.Sizeof(lineFile{})},
		{"lineSeq", lineSeqSize, unsafe.Sizeof(lineSeq{})},
		{"lineRow", lineRowSize, unsafe.Sizeof(lineRow{})},
		{"span", spanSize, unsafe.Sizeof(span{})},
		{"range", rangeSize, unsafe.Sizeof([2]uint64{})},
		{"fnNode", fnNodeCost, unsafe.Sizeof(fnNode{})},
		{"fnName", fnNameCost, unsafe.Sizeof(fnName{})},
		{"dwarfUnit", dwarfUnitCost, unsafe.Sizeof(dwarfUnit{})},
		{"lineProgram", lineProgramCost, unsafe.Sizeof(lineProgram{})},
		{"funcIndex", funcIndexCost, unsafe.Sizeof(funcIndex{})},
	} {
		if c.got < c.least {
			t.Errorf("%s charged %d bytes, holds %d", c.name, c.got, c.least)
		}
	}
}

// measureUnits reads copies resolvers of file, then parses all their
// units, and returns the bytes their units hold (measured by the heap,
// per copy) and what they are charged (per copy).
//
// The heap's figure has a few bytes of noise, the runtime's own
// allocations between the two readings (22 bytes a copy of 6.4 MB seen on
// a busy machine): a charge of exactly what a structure holds may read
// below it by up to measureNoise.
func measureUnits(t *testing.T, file []byte, copies int) (held, charged int64) {
	t.Helper()
	rs := make([]*Resolver, copies)
	keep := make([]any, 0, copies) // the sections, dropped once every unit is parsed
	for i := range rs {
		r, err := ReadELFDWARF(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			t.Fatal(err)
		}
		rs[i] = r
		keep = append(keep, r.dw.d, r.dw.line)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, r := range rs {
		for k := range r.dw.units {
			if _, err := r.dw.unit(int32(k), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	for _, r := range rs {
		charged += r.dw.parsed.Load()
	}
	runtime.KeepAlive(keep)
	runtime.KeepAlive(rs)
	return (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / int64(copies), charged / int64(copies)
}

// measureNoise is the most measureUnits' figure of what a copy holds may
// be off by: the runtime's own allocations between its two readings.
const measureNoise = 1 << 10

// TestDWARFUnitsChargedAtWhatTheyHold: a parsed unit (its line table's
// paths, sequences and rows, its functions and names) is charged at least
// what the heap says it holds and at most twice that, for the files of
// the audit: paths of up to 8 MiB, sequences of one row, many units that
// share one line program. The first charged 16 bytes a path (+690 MB held
// from 3 files of 25 KB) and nothing for a sequence (+1,099 MB).
func TestDWARFUnitsChargedAtWhatTheyHold(t *testing.T) {
	dir := strings.Repeat("d", 4096)
	var files []string
	for i := range 1500 {
		files = append(files, fmt.Sprintf("f%04d.c", i))
	}
	long := strings.Repeat("n", 5000)
	for _, tc := range []struct {
		name   string
		file   diftest.HostileUnits
		copies int
	}{
		{"1,500 files in a 4 KiB directory", diftest.HostileUnits{Units: 1, Line: diftest.LineSection([]string{dir}, files, diftest.Sequences(1, 4))}, 16},
		{"100,000 sequences of one row", diftest.HostileUnits{Units: 1, Line: diftest.LineSection(nil, []string{"a.c"}, diftest.Sequences(100_000, 1))}, 4},
		{"200,000 rows in 100 sequences", diftest.HostileUnits{Units: 1, Line: diftest.LineSection(nil, []string{"a.c"}, diftest.Sequences(100, 2000))}, 4},
		{"500 units sharing a program of 1,500 paths", diftest.HostileUnits{Units: 500, FuncBase: 0x1000,
			Line: diftest.LineSection([]string{dir}, files, diftest.Sequences(1000, 10))}, 8},
		{"2,000 units of one function each", diftest.HostileUnits{Units: 2000, FuncBase: 0x1000, CompDir: func(i int) string { return long[:i%64] },
			Line: diftest.LineSection(nil, []string{"a.c"}, diftest.Sequences(1, 1))}, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held, charged := measureUnits(t, tc.file.ELF(), tc.copies)
			if charged < held-measureNoise || charged > 2*held {
				t.Errorf("charged %d bytes a copy, holds %d: want between 1 and 2 times", charged, held)
			}
			t.Logf("charged %d bytes a copy, holds %d (%.2f)", charged, held, float64(charged)/float64(held))
		})
	}
}

// TestDWARFEmptySequencesHoldNothing: a program of 3-byte ends of
// sequence holds nothing it is not charged for (the first held 40
// uncounted bytes each).
func TestDWARFEmptySequencesHoldNothing(t *testing.T) {
	prog := append(diftest.SetAddress(0x1000), bytes.Repeat(diftest.EndSequence, 400_000)...)
	file := diftest.HostileUnits{Units: 1, Line: diftest.LineSection(nil, []string{"a.c"}, prog)}.ELF()
	held, charged := measureUnits(t, file, 4)
	if charged < held-measureNoise {
		t.Errorf("charged %d bytes a copy, holds %d", charged, held)
	}
	if held > 64<<10 {
		t.Errorf("400,000 empty sequences hold %d bytes", held)
	}
	t.Logf("charged %d bytes a copy, holds %d", charged, held)
}

// TestDWARFSharedLineProgramReadOnce: units that point at one line
// program read it once (the first read it once per unit: 42 s of CPU for
// one frame), a lookup is charged to its request's Work for what it walks,
// and what the units hold counts the program once.
func TestDWARFSharedLineProgramReadOnce(t *testing.T) {
	const units, rows = 400, 20_000
	h := diftest.HostileUnits{Units: units, FuncBase: 0x100000, Line: diftest.LineSection(nil, []string{"a.c"}, diftest.Sequences(rows/100, 100))}
	file := h.ELF()
	res, err := ReadELFDWARF(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	w := NewWork(context.Background(), nil)
	frames, ok, err := res.ResolveWork(w, 0x100000+32*200+4)
	if err != nil || !ok || frames[0].Function != "f200" {
		t.Fatalf("%+v %v %v, want f200", frames, ok, err)
	}
	res.dw.mu.Lock()
	programs := res.dw.programs
	res.dw.mu.Unlock()
	// The work: the program's bytes twice, its rows, the entries.
	most := int64(2*len(h.Line) + rows + 8*units)
	if programs != 1 || w.Spent() > most {
		t.Errorf("%d units read the line program %d times, walking %d steps: want once, at most %d", units, programs, w.Spent(), most)
	}
	tables := map[*lineProgram]bool{}
	var held int64
	for i := range res.dw.units {
		u, err := res.dw.unit(int32(i), nil)
		if err != nil {
			t.Fatal(err)
		}
		held += heldBy(u, tables)
	}
	if len(tables) != 1 || res.dw.parsed.Load() < held || res.dw.parsed.Load() > 3*held {
		t.Errorf("%d line tables held; charged %d bytes, holds %d", len(tables), res.dw.parsed.Load(), held)
	}
	t.Logf("%d steps for %d units; charged %d bytes, holds %d", w.Spent(), units, res.dw.parsed.Load(), held)
}

// TestDWARFFileWorkBounded: units that each point at their own line table
// header, all leading to one program, make the program read once per
// unit; the parses of a file's units, all requests together, take at most
// fileWork steps a byte of its sections (plus maxWork), then its units
// left are beyond the budget.
func TestDWARFFileWorkBounded(t *testing.T) {
	const units, rows = 600, 20_000
	line, hdr := diftest.SharedPrograms(units, diftest.Sequences(rows/100, 100))
	h := diftest.HostileUnits{Units: units, FuncBase: 0x100000, Ranged: true, Line: line, StmtList: func(i int) int { return i * hdr }}
	file := h.ELF()
	res, err := ReadELFDWARF(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	budget := fileWork*res.dw.sections.Load() + maxWork
	var spent int64
	beyond := 0
	for i := range units {
		w := NewWork(context.Background(), nil)
		frames, ok, err := res.ResolveWork(w, 0x100000+32*uint64(i)+4)
		spent += w.Spent()
		switch {
		case errors.Is(err, errFileWorkSpent):
			beyond++
		case err != nil || !ok || frames[0].Function != fmt.Sprintf("f%d", i):
			t.Fatalf("unit %d: %+v %v %v", i, frames, ok, err)
		}
	}
	if spent > budget+maxWork || beyond == 0 {
		t.Errorf("%d steps for %d units, budget %d; %d beyond it: want within the budget and some beyond", spent, units, budget, beyond)
	}
	t.Logf("%d steps for %d units, budget %d; %d units beyond it", spent, units, budget, beyond)
}

// TestDWARFParseStopsWithItsRequest: a parse stops when its request's
// context is done or its Work spent, without walking the program, and
// leaves the unit for another request; a spent Work fails the lookups
// that would parse, not those of units parsed.
func TestDWARFParseStopsWithItsRequest(t *testing.T) {
	h := diftest.HostileUnits{Units: 4, FuncBase: 0x100000, Ranged: true, Line: diftest.LineSection(nil, []string{"a.c"}, diftest.Sequences(1000, 100))}
	file := h.ELF()
	res, err := ReadELFDWARF(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	// The client leaves once the parse has its slot.
	ctx, cancel := context.WithCancel(context.Background())
	entered := 0
	w := NewWork(ctx, func() (func(), error) {
		entered++
		cancel()
		return func() {}, nil
	})
	if _, _, err := res.ResolveWork(w, 0x100004); !errors.Is(err, context.Canceled) {
		t.Fatalf("a lookup whose client left: %v, want context.Canceled", err)
	}
	if entered != 1 || res.dw.units[0].p.Load() != nil || w.Spent() > int64(2*len(h.Line)+workCheck) {
		t.Errorf("%d slots taken, unit parsed: %v, %d steps: want one slot, the unit left, at most %d steps",
			entered, res.dw.units[0].p.Load() != nil, w.Spent(), 2*len(h.Line)+workCheck)
	}
	if _, _, err := res.ResolveWork(w, 0x100004); !errors.Is(err, context.Canceled) || entered != 1 {
		t.Errorf("a lookup after the client left: %v after %d slots, want context.Canceled without a slot", err, entered)
	}
	// A Work spent part-way: ErrBudget, the unit left for the next
	// request, which parses it.
	w = NewWork(context.Background(), nil)
	w.left.Store(50_000)
	if _, _, err := res.ResolveWork(w, 0x100004); !errors.Is(err, ErrBudget) || res.dw.units[0].p.Load() != nil {
		t.Fatalf("a lookup beyond its Work: %v, want ErrBudget and the unit left", err)
	}
	if frames, ok, err := res.ResolveWork(NewWork(context.Background(), nil), 0x100004); err != nil || !ok || frames[0].Function != "f0" {
		t.Fatalf("the next request: %+v %v %v, want f0", frames, ok, err)
	}
	if frames, ok, err := res.ResolveWork(w, 0x100004); err != nil || !ok || frames[0].Function != "f0" {
		t.Errorf("a spent Work, a unit parsed: %+v %v %v, want f0", frames, ok, err)
	}
	if _, _, err := res.ResolveWork(w, 0x100000+32+4); !errors.Is(err, ErrBudget) {
		t.Errorf("a spent Work, a unit to parse: %v, want ErrBudget", err)
	}
}

// TestDWARFRangelessUnitsIndexed: an address in no unit's range looks in
// the units without ranges through one index of their functions: one or
// two units a lookup, not each of them (the first scanned 11.4 s of
// cached units per frame).
func TestDWARFRangelessUnitsIndexed(t *testing.T) {
	const units = 3000
	h := diftest.HostileUnits{Units: units, FuncBase: 0x100000, Line: diftest.LineSection(nil, []string{"a.c"}, diftest.Sequences(1, 1))}
	file := h.ELF()
	res, err := ReadELFDWARF(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.dw.rangeless) != units {
		t.Fatalf("%d units without ranges, want %d", len(res.dw.rangeless), units)
	}
	res.Resolve(0x100004) // builds the index
	start := res.dw.looks.Load()
	const lookups = 1000
	for i := range lookups {
		k := i * 7 % units
		frames, ok, err := res.Resolve(0x100000 + 32*uint64(k) + 8)
		if want := fmt.Sprintf("f%d", k); err != nil || !ok || frames[0].Function != want {
			t.Fatalf("%+v %v %v, want %s", frames, ok, err, want)
		}
	}
	if _, ok, err := res.Resolve(0x10); ok || err != nil {
		t.Errorf("an address in no function: %v %v, want nothing", ok, err)
	}
	if looks := res.dw.looks.Load() - start; looks > 2*lookups {
		t.Errorf("%d lookups looked in %d units, want at most %d", lookups, looks, 2*lookups)
	}
	// What the index holds, measured by the heap over copies whose units
	// are parsed before it is built.
	const copies = 16
	rs := make([]*Resolver, copies)
	for i := range rs {
		if rs[i], err = ReadELFDWARF(bytes.NewReader(file), int64(len(file))); err != nil {
			t.Fatal(err)
		}
		allFuncs(rs[i])
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, r := range rs {
		if _, err := r.dw.rangelessFuncs(nil); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / copies
	if charged := rs[0].dw.extra.Load(); charged < held || charged > 2*held {
		t.Errorf("the index of %d functions charged %d bytes, holds %d: want between 1 and 2 times", units, charged, held)
	} else {
		t.Logf("the index of %d functions charged %d bytes, holds %d", units, charged, held)
	}
	runtime.KeepAlive(rs)
}

// FuzzDWARFUnitBudget reads files of units that share a fuzzed line
// program: whatever the program, it is read once, the lookups stay within
// their Work, the units are charged at least what they hold, and together
// within the index budget.
func FuzzDWARFUnitBudget(f *testing.F) {
	f.Add(diftest.Sequences(10, 3), uint8(4), false, uint64(0x1004))
	f.Add(append(diftest.SetAddress(0x1000), bytes.Repeat(diftest.EndSequence, 1000)...), uint8(40), true, uint64(0x1000))
	f.Add(diftest.Sequences(3000, 1), uint8(200), false, uint64(0x2000))
	f.Fuzz(func(t *testing.T, program []byte, units uint8, ranged bool, addr uint64) {
		h := diftest.HostileUnits{Units: int(units) + 1, FuncBase: 0x1000, Ranged: ranged,
			Line: diftest.LineSection([]string{"/d"}, []string{"a.c", "b.c"}, program)}
		file := h.ELF()
		res, err := ReadELFDWARF(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			return
		}
		res.dw.limit = res.dw.base + 256<<10
		w := NewWork(context.Background(), nil)
		for _, a := range []uint64{addr, 0x1004, 0x1000 + 32*uint64(units/2) + 4, 0x10} {
			before := res.dw.looks.Load()
			res.ResolveWork(w, a)
			if looks := res.dw.looks.Load() - before; looks > spanLookback+1 {
				t.Errorf("0x%x: looked in %d units", a, looks)
			}
		}
		res.dw.mu.Lock()
		programs, limit := res.dw.programs, res.dw.limit
		res.dw.mu.Unlock()
		if programs > 1+res.dw.reparses {
			t.Errorf("the program read %d times for %d units", programs, h.Units)
		}
		if w.Spent() > maxWork {
			t.Errorf("%d steps, more than the Work's %d", w.Spent(), maxWork)
		}
		if got := res.dw.base + res.dw.extra.Load() + res.dw.parsed.Load(); got > limit {
			t.Errorf("the index holds %d bytes, more than its budget of %d", got, limit)
		}
		tables := map[*lineProgram]bool{}
		var held int64
		for i := range res.dw.units {
			if u := res.dw.units[i].p.Load(); u != nil {
				held += heldBy(u, tables)
			}
		}
		if res.dw.parsed.Load() < held {
			t.Errorf("the units are charged %d bytes, hold %d", res.dw.parsed.Load(), held)
		}
	})
}
