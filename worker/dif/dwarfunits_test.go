package dif

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/worker/dif/diftest"
)

// unitsProgram builds a C program of 16 units with gcc -O2 -g (DWARF 5,
// inlined calls) and returns it, and up to n addresses: the middle of
// functions spread over it.
func unitsProgram(t *testing.T, n int) ([]byte, []uint64) {
	t.Helper()
	dir := t.TempDir()
	srcs, err := diftest.CProgram(dir, 15, 12, 4)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "units")
	if out, err := exec.Command("gcc", append([]string{"-O2", "-g", "-o", exe}, srcs...)...).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ReadELFDWARF(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.dw.units) < 16 {
		t.Fatalf("%d DWARF units, want 16 at least", len(res.dw.units))
	}
	funcs := allFuncs(res)
	var addrs []uint64
	for i := 0; i < len(funcs); i += max(1, len(funcs)/n) {
		addrs = append(addrs, funcs[i].lo+(funcs[i].hi-funcs[i].lo)/2)
	}
	return data, addrs
}

// answers resolves addrs with res, each answer as text.
func answers(res *Resolver, addrs []uint64) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		frames, ok, err := res.Resolve(a)
		out[i] = fmt.Sprintf("%v %v %+v", ok, err, frames)
	}
	return out
}

// TestDWARFUnits reads a program of many units whose units are parsed on
// first use.
func TestDWARFUnits(t *testing.T) {
	data, addrs := unitsProgram(t, 400)
	t.Run("concurrent", func(t *testing.T) { testDWARFUnitsConcurrent(t, data, addrs) })
	t.Run("budget", func(t *testing.T) { testDWARFUnitsBudget(t, data, addrs) })
}

// testDWARFUnitsConcurrent resolves the same addresses from goroutines
// that share one resolver whose units are not parsed yet: each unit is
// parsed once, safely (run with -race), and the answers are those of a
// resolver that parsed every unit first.
func testDWARFUnitsConcurrent(t *testing.T, data []byte, addrs []uint64) {
	full, err := ReadELFDWARF(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	allFuncs(full)
	want := answers(full, addrs)
	res, err := ReadELFDWARF(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	before := res.Size()
	got := make([][]string, 4)
	var wg sync.WaitGroup
	for g := range got {
		wg.Go(func() {
			// Each goroutine starts at another place of the list.
			rot := append(append([]uint64{}, addrs[g*len(addrs)/len(got):]...), addrs[:g*len(addrs)/len(got)]...)
			a := answers(res, rot)
			got[g] = append(a[len(a)-g*len(addrs)/len(got):], a[:len(a)-g*len(addrs)/len(got)]...)
		})
	}
	wg.Wait()
	for g := range got {
		if diff := cmp.Diff(want, got[g]); diff != "" {
			t.Errorf("goroutine %d (-want +got):\n%s", g, diff)
		}
	}
	if res.Size() != full.Size() || res.dw.sections.Load() != 0 || res.dw.d != nil {
		t.Errorf("Size %d once every unit is parsed (the sections %d bytes), want %d without the sections",
			res.Size(), res.dw.sections.Load(), full.Size())
	}
	t.Logf("%d addresses, %d units: Size %d once read, %d once parsed", len(addrs), len(res.dw.units), before, res.Size())
}

// testDWARFUnitsBudget lowers a resolver's index budget to a few units:
// the units parsed before make room for the next, the answers stay the
// same, and what the resolver holds stays within the budget.
func testDWARFUnitsBudget(t *testing.T, data []byte, addrs []uint64) {
	full, err := ReadELFDWARF(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	want := answers(full, addrs)
	var largest int64
	for i := range full.dw.units {
		u, err := full.dw.unit(int32(i), nil)
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, u.size)
	}
	res, err := ReadELFDWARF(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	res.dw.limit = res.dw.base + 2*largest
	held := res.Size() - res.dw.base
	for i, a := range addrs {
		frames, ok, err := res.Resolve(a)
		if got := fmt.Sprintf("%v %v %+v", ok, err, frames); got != want[i] {
			t.Fatalf("0x%x: %s, want %s", a, got, want[i])
		}
		if p := res.dw.parsed.Load(); p > 2*largest {
			t.Fatalf("0x%x: %d bytes of units parsed, more than the budget of %d", a, p, 2*largest)
		}
	}
	if res.dw.parsed.Load() >= full.dw.parsed.Load() || res.dw.sections.Load() == 0 {
		t.Errorf("%d bytes of units parsed within the budget, %d without: want less, the sections kept", res.dw.parsed.Load(), full.dw.parsed.Load())
	}
	t.Logf("largest unit %d bytes; %d held besides the units", largest, held)
}

// TestDWARFDamagedUnit: a unit whose entries cannot be read fails the
// addresses it holds, and only those; the unit beside it resolves.
func TestDWARFDamagedUnit(t *testing.T) {
	le := binary.LittleEndian
	abbrev := []byte{
		1, 0x11, 1, 0x11, 0x01, 0x12, 0x06, 0, 0, // compile unit, children: low_pc addr, high_pc data4
		2, 0x2e, 0, 0x11, 0x01, 0x12, 0x06, 0x03, 0x08, 0, 0, // subprogram: low_pc, high_pc, name string
		0,
	}
	unit := func(lo uint64, child []byte) []byte {
		dies := le.AppendUint64([]byte{1}, lo)
		dies = le.AppendUint32(dies, 0x100)
		dies = append(append(dies, child...), 0)
		b := le.AppendUint32(nil, uint32(2+4+1+len(dies)))
		b = le.AppendUint16(b, 4)
		b = le.AppendUint32(b, 0)
		return append(append(b, 8), dies...)
	}
	good := le.AppendUint32(le.AppendUint64([]byte{2}, 0x1000), 0x100)
	good = append(good, "good\x00"...)
	bad := []byte{9, 0, 0, 0, 0} // an abbreviation the table does not have
	info := append(unit(0x1000, good), unit(0x2000, bad)...)
	data := diftest.ELFWith(diftest.Section{Name: ".debug_info", Data: info}, diftest.Section{Name: ".debug_abbrev", Data: abbrev})
	res, err := ReadELFDWARF(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if frames, ok, err := res.Resolve(0x1010); err != nil || !ok || frames[0].Function != "good" {
		t.Errorf("0x1010: %+v %v %v, want good", frames, ok, err)
	}
	if frames, ok, err := res.Resolve(0x2010); err == nil || ok {
		t.Errorf("0x2010: %+v %v %v, want the damaged unit's error", frames, ok, err)
	} else {
		t.Log(err)
	}
	if _, ok := res.Lookup(0x2010); ok {
		t.Error("Lookup answers in the damaged unit")
	}
}

// TestDWARFUnitsDoNotThrash: lookups that alternate between two units that
// do not fit the index budget together parse a unit again a bounded number
// of times (each lookup parsed one before), then answer the unit that no
// longer fits as beyond the budget.
func TestDWARFUnitsDoNotThrash(t *testing.T) {
	data, addrs := unitsProgram(t, 400)
	res, err := ReadELFDWARF(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	first, last := addrs[0], addrs[len(addrs)-1]
	_, u1, _ := res.dw.find(first, nil)
	_, u2, _ := res.dw.find(last, nil)
	if u1 == nil || u2 == nil || u1 == u2 {
		t.Fatal("the first and last addresses are not in two units")
	}
	limit := res.dw.base + max(u1.size, u2.size) + 1 // one of them at a time
	if res, err = ReadELFDWARF(bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	res.dw.limit = limit
	beyond := 0
	for range 500 {
		for _, a := range []uint64{first, last} {
			if _, _, err := res.Resolve(a); errors.Is(err, errUnitsBeyondBudget) {
				beyond++
			}
		}
	}
	res.dw.mu.Lock()
	reparses := res.dw.reparses
	res.dw.mu.Unlock()
	if most := len(res.dw.units) + maxReparses + 1; reparses > most || beyond == 0 {
		t.Errorf("%d units parsed again (at most %d), %d lookups beyond the budget (want some)", reparses, most, beyond)
	}
}
