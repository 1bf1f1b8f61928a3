package dif

import (
	"context"
	"debug/dwarf"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
)

// dwarfIndex finds the unit of an address by the units' own ranges (the
// DW_AT_ranges, or DW_AT_low_pc and DW_AT_high_pc, of each unit entry,
// read when the file is read; .debug_aranges is not needed), and parses a
// unit (its functions, inlined calls and line table) the first time an
// address falls in it, as llvm-symbolizer reads lazily: a first answer
// parses one unit, not all. A parse is charged to the request whose
// lookup triggers it (its Work: the steps it walks, its context, its parse
// slots); a parse stopped by the request leaves the unit unparsed. A line
// program is read once however many units point at it: they share its
// table. Parsed units and their tables are kept, each charged at what it
// holds; together with the unit index they take at most maxDWARFIndex
// bytes, and a unit that would pass that drops the units parsed before it,
// until dropped units were parsed again more times than there are units,
// plus maxReparses (lookups alternating between units that do not fit
// together): then such a unit is an error. The units whose entry gives no
// range are found through one index of their functions, built the first
// time an address falls in no unit's range. The DWARF sections are kept
// until every unit is parsed, then dropped.
//
// debug/dwarf's Data is not safe for concurrent readers (a reader
// entering a DWARF 5 unit for the first time completes the unit's header
// in place), so every use of d holds mu, and scan enters every unit before
// the index is shared. A lookup of a parsed unit takes no lock: the unit
// is published whole through an atomic pointer.
type dwarfIndex struct {
	d                  *dwarf.Data
	order              binary.ByteOrder
	line, lineStr, str []byte
	infoLen            int
	ends               []dwarf.Offset // the end of each unit in .debug_info, ascending
	units              []lazyUnit
	spans              []span   // the units' ranges (span.cu), sorted by lo
	reach              []uint64 // reach[j]: the highest end of spans[:j+1]
	rangeless          []int32  // units whose entry gives no range: looked in when no unit's range holds an address
	base               int64    // bytes of the above, counted against limit
	limit              int64    // maxDWARFIndex (tests lower it)

	mu       sync.Mutex                // held while d is used
	tables   map[int64]*lineProgram    // the line tables of the units parsed, by offset (mu held)
	done     int                       // units parsed (mu held)
	reparses int                       // parses of units parsed before and dropped (mu held)
	programs int                       // line programs read (mu held)
	work     int64                     // the steps the parses of units may still take, all requests together (mu held)
	parsed   atomic.Int64              // bytes of the units parsed and their tables, counted against limit
	sections atomic.Int64              // bytes of the DWARF sections held: 0 once every unit is parsed
	funcs    atomic.Pointer[funcIndex] // the functions of the rangeless units, once built
	extra    atomic.Int64              // bytes of funcs, counted against limit
	looks    atomic.Int64              // units looked in by lookups
}

// funcIndex is the functions of the units without ranges, by address: a
// lookup that falls in no unit's range finds the units that may hold it
// by a search, not a scan of every such unit.
type funcIndex struct {
	spans []span   // the functions' ranges (span.cu), sorted by lo
	reach []uint64 // reach[j]: the highest end of spans[:j+1]
	err   error    // the first error of a rangeless unit that could not be read
}

type lazyUnit struct {
	off, end dwarf.Offset // its unit entry, the end of its bytes
	p        atomic.Pointer[dwarfUnit]
	dropped  bool // parsed once, then dropped to make room (mu held)
}

// maxReparses bounds, beyond one per unit, the units a resolver parses
// again after dropping them: lookups that alternate between units that do
// not fit the budget together would otherwise parse one at each lookup.
// Past it, a unit that does not fit is an error instead of a reason to
// drop the others.
const maxReparses = 16

// fileWork is the steps that parsing every unit of a file takes at most,
// for each byte of its DWARF sections: a byte of a line program is read
// twice and holds a row at most, an entry takes a byte at least; the rest
// leaves room for units dropped and parsed again. maxWork more are allowed.
const fileWork = 8

// errFileWorkSpent is the error of a unit of a file whose parses have taken
// fileWork steps a byte: units that share parts of the file (a line
// program reached from many offsets, a range list from many entries) would
// otherwise make parsing them all take the square of its size.
var errFileWorkSpent = fmt.Errorf("%w: the DWARF units took more work than the file's size allows", ErrBudget)

// unitWorkSpent and unitBeyondBudget are the answers of the units left
// when their file's work is spent, and of those that do not fit beside the
// units parsed: shared by every such unit, they hold nothing of their own,
// so that the index holds no more than its budget.
var (
	unitWorkSpent    = &dwarfUnit{err: errFileWorkSpent}
	unitBeyondBudget = &dwarfUnit{err: errUnitsBeyondBudget}
)

// errUnitsBeyondBudget is the error of a unit that does not fit beside
// those parsed once the resolver has parsed maxReparses units again.
var errUnitsBeyondBudget = errors.New("dif: the DWARF units used together pass the index budget")

// scan reads the unit entry of each unit: its ranges, and whether it is
// one that errata does not read (split DWARF). It does not read the
// entries within units: a unit with children is left by debug/dwarf's
// jump to the next unit, and the last one is not read past its entry.
func (x *dwarfIndex) scan() error {
	b := &indexBuilder{d: x.d, infoLen: x.infoLen, limit: x.limit}
	if err := b.spend(8 * len(x.ends)); err != nil {
		return err
	}
	r := x.d.Reader()
	for {
		e, err := b.next(r)
		if err != nil {
			return err
		}
		if e == nil {
			break
		}
		k := sort.Search(len(x.ends), func(k int) bool { return x.ends[k] > e.Offset })
		switch e.Tag {
		case dwarf.TagCompileUnit, dwarf.TagPartialUnit:
		case dwarf.TagSkeletonUnit:
			return &UnsupportedError{Reason: "split DWARF: a skeleton unit refers to a .dwo file"}
		default:
			r.SkipChildren()
			continue
		}
		if e.Val(dwarf.Attr(0x2130)) != nil || e.Val(dwarf.AttrDwoName) != nil {
			return &UnsupportedError{Reason: "split DWARF: a unit refers to a .dwo file (DW_AT_GNU_dwo_name)"}
		}
		if k == len(x.ends) {
			break // not within a unit debug/dwarf counted: damage
		}
		idx := int32(len(x.units))
		x.units = append(x.units, lazyUnit{off: e.Offset, end: x.ends[k]})
		if err := b.spend(unitCost); err != nil {
			return err
		}
		held := 0
		if rs, err := x.d.Ranges(e); err == nil {
			for _, rg := range rs {
				if rg[0] < rg[1] {
					x.spans = append(x.spans, span{lo: rg[0], hi: rg[1], cu: idx})
					held++
				}
			}
			if err := b.spend(32 * len(rs)); err != nil {
				return err
			}
		}
		if held == 0 {
			x.rangeless = append(x.rangeless, idx)
		}
		if k == len(x.ends)-1 {
			break // the last unit: its entries are read when an address falls in it
		}
		r.SkipChildren()
	}
	sort.Slice(x.spans, func(i, j int) bool { return x.spans[i].lo < x.spans[j].lo })
	if err := b.spend(8 * len(x.spans)); err != nil {
		return err
	}
	x.reach = make([]uint64, len(x.spans))
	var hi uint64
	for j, s := range x.spans {
		hi = max(hi, s.hi)
		x.reach[j] = hi
	}
	x.base = b.size
	return nil
}

// unit is unit i, parsed on its first use, charged to w (nil: the
// reading of the file, with a Work of its own).
func (x *dwarfIndex) unit(i int32, w *Work) (*dwarfUnit, error) {
	u := &x.units[i]
	if p := u.p.Load(); p != nil {
		return p, p.err
	}
	if w == nil {
		w = NewWork(context.Background(), nil)
	}
	release, err := w.enter()
	if err != nil {
		return nil, err
	}
	defer release()
	x.mu.Lock()
	defer x.mu.Unlock()
	if p := u.p.Load(); p != nil {
		return p, p.err
	}
	limit := x.limit - x.base - x.extra.Load()
	if x.tables == nil {
		x.tables = map[int64]*lineProgram{}
	}
	b := &indexBuilder{d: x.d, order: x.order, infoLen: x.infoLen, line: x.line, lineStr: x.lineStr, str: x.str,
		names: map[dwarf.Offset]*fnName{}, limit: limit, work: w, tables: x.tables}
	p := &dwarfUnit{}
	if x.work <= 0 {
		err = errFileWorkSpent
	} else {
		spent := w.Spent()
		err = b.parseUnit(u.off, u.end, p)
		x.work -= w.Spent() - spent
	}
	x.programs += b.programs
	if err != nil {
		if w.stopped(err) {
			return nil, err // the request's, not the file's: left unparsed
		}
		p = &dwarfUnit{err: err}
		b.size, b.shared = dwarfUnitCost, 0
		for off, t := range b.fresh {
			if t.err == nil {
				delete(b.fresh, off)
				continue
			}
			b.size += t.size // kept: the units that share it fail without reading it again
		}
	}
	p.size = b.size
	add := p.size - b.shared // a table the index holds is counted once
	if errors.Is(err, errFileWorkSpent) {
		p, add, b.fresh = unitWorkSpent, 0, nil
	}
	if u.dropped {
		x.reparses++
	}
	if x.parsed.Load()+add > limit {
		if x.reparses > len(x.units)+maxReparses {
			p, add, b.fresh = unitBeyondBudget, 0, nil
		} else {
			// The units parsed before make room for this one; it keeps
			// the tables it shares.
			x.dropUnits(p.lines)
			add = p.size
		}
	}
	for off, t := range b.fresh {
		x.tables[off] = t
	}
	u.p.Store(p)
	x.parsed.Add(add)
	if x.done++; x.done == len(x.units) {
		// Every unit is parsed: no lookup reads the sections again.
		x.d, x.line, x.lineStr, x.str = nil, nil, nil, nil
		x.tables = nil
		x.sections.Store(0)
	}
	return p, p.err
}

// dropUnits drops the units parsed, and the line tables but keep; mu is
// held, and the sections are.
func (x *dwarfIndex) dropUnits(keep *lineProgram) {
	for k := range x.units {
		if x.units[k].p.Swap(nil) != nil {
			x.units[k].dropped = true
		}
	}
	for off, t := range x.tables {
		if t != keep {
			delete(x.tables, off)
		}
	}
	x.parsed.Store(0)
	x.done = 0
}

// rangelessFuncs is the index of the functions of the units without
// ranges, built once: each such unit is parsed, charged to w.
func (x *dwarfIndex) rangelessFuncs(w *Work) (*funcIndex, error) {
	if fi := x.funcs.Load(); fi != nil {
		return fi, nil
	}
	fi := &funcIndex{}
	for _, k := range x.rangeless {
		p, err := x.unit(k, w)
		if err != nil {
			if w.stopped(err) {
				return nil, err
			}
			if fi.err == nil {
				fi.err = err
			}
			continue
		}
		for _, f := range p.funcs {
			fi.spans = append(fi.spans, span{lo: f.lo, hi: f.hi, cu: k})
		}
	}
	fi.spans = append(make([]span, 0, len(fi.spans)), fi.spans...)
	sort.Slice(fi.spans, func(i, j int) bool { return fi.spans[i].lo < fi.spans[j].lo })
	fi.reach = make([]uint64, len(fi.spans))
	var hi uint64
	for j, s := range fi.spans {
		hi = max(hi, s.hi)
		fi.reach[j] = hi
	}
	size := funcIndexCost + sliceCost(len(fi.spans), spanSize) + sliceCost(len(fi.reach), 8)
	x.mu.Lock()
	defer x.mu.Unlock()
	if prev := x.funcs.Load(); prev != nil {
		return prev, nil
	}
	// Units parsed make room for the index, unless every unit is parsed
	// (the sections are gone): then it must fit beside them.
	if used := x.base + x.extra.Load(); used+size > x.limit || x.d == nil && used+x.parsed.Load()+size > x.limit {
		fi, size = funcsBeyondBudget, 0
	}
	x.extra.Add(size)
	x.funcs.Store(fi)
	if x.base+x.extra.Load()+x.parsed.Load() > x.limit && x.d != nil {
		x.dropUnits(nil) // they are parsed again when used
	}
	return fi, nil
}

// funcsBeyondBudget is the index of the functions of the units without
// ranges of every file where it does not fit the index budget: shared, it
// holds nothing of the file's.
var funcsBeyondBudget = &funcIndex{err: ErrBudget}

// funcIndexCost is what a funcIndex holds besides its slices.
const funcIndexCost = 80

// find is the function that holds addr and its unit, or without a
// function the unit whose range holds addr, the one that starts last (nil
// when none does). Several units may hold an address (functions that the
// linker discarded, left at 0): the function that starts last is the one.
// The units without ranges are looked in, through their functions' index,
// when no unit's range holds addr. err is the error of a unit that holds
// addr and cannot be read, or of the request's Work w, when no other unit
// answers.
func (x *dwarfIndex) find(addr uint64, w *Work) (top *span, u *dwarfUnit, err error) {
	var lines *dwarfUnit
	look := func(i int32) {
		x.looks.Add(1)
		p, perr := x.unit(i, w)
		if perr != nil {
			if err == nil {
				err = perr
			}
			return
		}
		if lines == nil {
			lines = p
		}
		if f := findSpan(p.funcs, addr); f != nil && (top == nil || f.lo > top.lo) {
			top, u = f, p
		}
	}
	i := sort.Search(len(x.spans), func(i int) bool { return x.spans[i].lo > addr })
	for j := i - 1; j >= 0 && j >= i-spanLookback && addr < x.reach[j]; j-- {
		if addr < x.spans[j].hi {
			look(x.spans[j].cu)
		}
	}
	if lines == nil && err == nil && len(x.rangeless) > 0 {
		fi, ferr := x.rangelessFuncs(w)
		if ferr != nil {
			return nil, nil, ferr
		}
		i := sort.Search(len(fi.spans), func(i int) bool { return fi.spans[i].lo > addr })
		last := int32(-1)
		for j := i - 1; j >= 0 && j >= i-spanLookback && addr < fi.reach[j]; j-- {
			if s := fi.spans[j]; addr < s.hi && s.cu != last {
				look(s.cu)
				last = s.cu
			}
		}
		if top == nil && err == nil {
			err = fi.err
		}
		lines = nil // a unit without ranges holds no address for its lines
	}
	switch {
	case top != nil:
		return top, u, nil
	case lines != nil:
		return nil, lines, nil
	}
	return nil, nil, err
}
