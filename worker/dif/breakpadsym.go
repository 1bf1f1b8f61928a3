package dif

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// bpIndex is a Breakpad symbol file as the resolver reads it: functions
// with their line records and inlined calls, and public symbols.
type bpIndex struct {
	files   map[uint64]string
	origins map[uint64]string
	funcs   []bpFunc   // sorted by lo
	publics []bpPublic // sorted by addr
}

type bpFunc struct {
	lo, hi  uint64
	name    string
	lines   []bpLine // sorted by lo
	inlines []bpInline
	ranges  int // of the inlines, together
}

// maxBreakpadInlineRanges bounds the ranges of one function's INLINE
// records.
const maxBreakpadInlineRanges = 1 << 16

type bpLine struct {
	lo, hi uint64
	line   uint32
	file   uint64
}

type bpInline struct {
	depth    uint64
	callLine uint32
	callFile uint64
	origin   uint64
	ranges   [][2]uint64
}

type bpPublic struct {
	addr uint64
	name string
}

// errBreakpad is a record that does not read.
var errBreakpad = errors.New("dif: a Breakpad record does not read")

// ReadBreakpadSymbols reads the FILE, FUNC, line, INLINE_ORIGIN, INLINE and
// PUBLIC records of a Breakpad symbol file into a Resolver, a line of at
// most maxBreakpadRecord bytes at a time (a longer record is left out, and
// a function's line records with it), what it keeps bounded by
// maxDWARFIndex.
func ReadBreakpadSymbols(r io.Reader) (*Resolver, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	idx := &bpIndex{files: map[uint64]string{}, origins: map[uint64]string{}}
	res := &Resolver{bp: idx}
	spend := func(n int) error {
		res.size += int64(n)
		if res.size > maxDWARFIndex {
			return ErrBudget
		}
		return nil
	}
	var cur *bpFunc
	skipping := false // the records of a function left out
	first := true
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(line) > maxBreakpadRecord {
			if first {
				return nil, fmt.Errorf("dif: Breakpad line %d is longer than %d bytes", lineNo, maxBreakpadRecord)
			}
			// A record beyond the budget (a C++ name of templates can be)
			// is left out, as damage elsewhere in an uploaded file is. A
			// function with such a record, its own or one of its lines or
			// inlined calls, goes whole with its records; the rest of the
			// file reads.
			switch {
			case inFunction(line):
				if cur != nil {
					idx.funcs = idx.funcs[:len(idx.funcs)-1]
				}
				cur, skipping = nil, true
			case bytes.HasPrefix(line, []byte("FUNC ")):
				cur, skipping = nil, true
			case !bytes.HasPrefix(line, []byte("FILE ")) && !bytes.HasPrefix(line, []byte("INLINE_ORIGIN ")):
				cur = nil // PUBLIC, STACK, INFO end a function
			}
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, err
			}
			continue
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if first {
			if !bytes.HasPrefix(line, []byte("MODULE ")) {
				return nil, errors.New("dif: not a Breakpad symbol file")
			}
			first = false
		} else if skipping && inFunction(line) {
			// A record of the function left out above.
		} else if len(line) > 0 {
			skipping = false
			if perr := idx.record(line, &cur, spend); perr != nil {
				return nil, fmt.Errorf("dif: Breakpad line %d: %w", lineNo, perr)
			}
		}
		if err == io.EOF {
			break
		}
	}
	if first {
		return nil, errors.New("dif: not a Breakpad symbol file")
	}
	sort.SliceStable(idx.funcs, func(i, j int) bool { return idx.funcs[i].lo < idx.funcs[j].lo })
	sort.SliceStable(idx.publics, func(i, j int) bool { return idx.publics[i].addr < idx.publics[j].addr })
	for i := range idx.funcs {
		ls := idx.funcs[i].lines
		sort.SliceStable(ls, func(a, b int) bool { return ls[a].lo < ls[b].lo })
	}
	return res, nil
}

// inFunction reports whether a Breakpad record belongs to the FUNC record
// before it: a line record (its first field hex digits) or an INLINE.
func inFunction(line []byte) bool {
	if bytes.HasPrefix(line, []byte("INLINE ")) {
		return true
	}
	end := bytes.IndexByte(line, ' ')
	if end <= 0 {
		return false
	}
	for _, c := range line[:end] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// fields splits a record into at most n fields, the last one the rest of
// the line (a name may hold spaces).
func fields(line []byte, n int) [][]byte {
	var out [][]byte
	for len(out) < n-1 {
		line = bytes.TrimLeft(line, " ")
		i := bytes.IndexByte(line, ' ')
		if i < 0 {
			break
		}
		out = append(out, line[:i])
		line = line[i+1:]
	}
	if line = bytes.TrimLeft(line, " "); len(line) > 0 {
		out = append(out, line)
	}
	return out
}

func hexField(b []byte) (uint64, bool) {
	v, err := strconv.ParseUint(string(b), 16, 64)
	return v, err == nil
}

func decField(b []byte) (uint64, bool) {
	v, err := strconv.ParseUint(string(b), 10, 64)
	return v, err == nil
}

func (idx *bpIndex) record(line []byte, cur **bpFunc, spend func(int) error) error {
	word, rest, _ := bytes.Cut(line, []byte(" "))
	// FUNC and PUBLIC may say "m" (several names share the address) first.
	if r, ok := bytes.CutPrefix(bytes.TrimLeft(rest, " "), []byte("m ")); ok && (string(word) == "FUNC" || string(word) == "PUBLIC") {
		rest = r
	}
	switch string(word) {
	case "FILE", "INLINE_ORIGIN":
		f := fields(line, 3)
		if len(f) < 3 {
			return errBreakpad
		}
		id, ok := decField(f[1])
		if !ok {
			return errBreakpad
		}
		if err := spend(48 + len(f[2])); err != nil {
			return err
		}
		if string(word) == "FILE" {
			idx.files[id] = string(f[2])
		} else {
			idx.origins[id] = string(f[2])
		}
	case "FUNC":
		f := fields(rest, 4)
		if len(f) < 4 {
			return errBreakpad
		}
		lo, ok1 := hexField(f[0])
		size, ok2 := hexField(f[1])
		if !ok1 || !ok2 || lo+size < lo {
			return errBreakpad
		}
		if err := spend(128 + len(f[3])); err != nil {
			return err
		}
		idx.funcs = append(idx.funcs, bpFunc{lo: lo, hi: lo + size, name: string(f[3])})
		*cur = &idx.funcs[len(idx.funcs)-1]
	case "INLINE":
		if *cur == nil {
			return errBreakpad
		}
		f := bytes.Fields(line[len("INLINE"):])
		if len(f) > 0 && string(f[0]) == "m" {
			f = f[1:]
		}
		if len(f) < 6 || len(f)%2 != 0 {
			return errBreakpad
		}
		var in bpInline
		var ok [4]bool
		in.depth, ok[0] = decField(f[0])
		var callLine uint64
		callLine, ok[1] = decField(f[1])
		in.callLine = uint32(min(callLine, 1<<32-1))
		in.callFile, ok[2] = decField(f[2])
		in.origin, ok[3] = decField(f[3])
		if !ok[0] || !ok[1] || !ok[2] || !ok[3] {
			return errBreakpad
		}
		for k := 4; k+1 < len(f); k += 2 {
			a, ok1 := hexField(f[k])
			n, ok2 := hexField(f[k+1])
			if !ok1 || !ok2 || a+n < a {
				return errBreakpad
			}
			in.ranges = append(in.ranges, [2]uint64{a, a + n})
		}
		if err := spend(64 + 16*len(in.ranges)); err != nil {
			return err
		}
		// A lookup scans the inlined calls of its function: their ranges
		// are bounded, so that it stays cheap.
		if (*cur).ranges += len(in.ranges); (*cur).ranges > maxBreakpadInlineRanges {
			return ErrBudget
		}
		(*cur).inlines = append((*cur).inlines, in)
	case "PUBLIC":
		f := fields(rest, 3)
		if len(f) < 3 {
			return errBreakpad
		}
		a, ok := hexField(f[0])
		if !ok {
			return errBreakpad
		}
		if err := spend(48 + len(f[2])); err != nil {
			return err
		}
		idx.publics = append(idx.publics, bpPublic{addr: a, name: string(f[2])})
		*cur = nil
	case "STACK", "INFO", "MODULE":
		*cur = nil
	default:
		// A line record of the current function: address size line file.
		f := bytes.Fields(line)
		if *cur == nil || len(f) != 4 {
			return errBreakpad
		}
		a, ok1 := hexField(f[0])
		n, ok2 := hexField(f[1])
		ln, ok3 := decField(f[2])
		file, ok4 := decField(f[3])
		if !ok1 || !ok2 || !ok3 || !ok4 || a+n < a {
			return errBreakpad
		}
		if err := spend(32); err != nil {
			return err
		}
		(*cur).lines = append((*cur).lines, bpLine{lo: a, hi: a + n, line: uint32(min(ln, 1<<32-1)), file: file})
	}
	return nil
}

// lookup resolves addr as Lookup does.
func (idx *bpIndex) lookup(addr uint64) ([]Frame, bool) {
	i := sort.Search(len(idx.funcs), func(i int) bool { return idx.funcs[i].lo > addr })
	if i == 0 || addr >= idx.funcs[i-1].hi {
		// A public symbol: the last one at or before addr, unless a
		// function starts between them.
		k := sort.Search(len(idx.publics), func(k int) bool { return idx.publics[k].addr > addr })
		if k == 0 || i > 0 && idx.funcs[i-1].lo > idx.publics[k-1].addr {
			return nil, false
		}
		p := idx.publics[k-1]
		n := fnName{linkage: p.name}
		return []Frame{{Function: n.function(), Symbol: p.name, SymAddr: p.addr}}, true
	}
	f := &idx.funcs[i-1]
	var file string
	var line int
	k := sort.Search(len(f.lines), func(k int) bool { return f.lines[k].lo > addr })
	if k > 0 && addr < f.lines[k-1].hi {
		file, line = idx.files[f.lines[k-1].file], int(f.lines[k-1].line)
	}
	var chain []*bpInline
	for j := range f.inlines {
		if contains(f.inlines[j].ranges, addr) {
			chain = append(chain, &f.inlines[j])
		}
	}
	sort.SliceStable(chain, func(a, b int) bool { return chain[a].depth < chain[b].depth })
	if len(chain) > maxInlineDepth-1 {
		chain = chain[:maxInlineDepth-1] // the deepest calls cut
	}
	frames := make([]Frame, 0, len(chain)+1)
	for j := len(chain) - 1; j >= -1; j-- {
		var fr Frame
		if j >= 0 {
			name := idx.origins[chain[j].origin]
			n := fnName{linkage: name}
			fr.Function, fr.Symbol = n.function(), name
		} else {
			n := fnName{linkage: f.name}
			fr.Function, fr.Symbol = n.function(), f.name
		}
		fr.SymAddr = f.lo
		if j == len(chain)-1 {
			fr.File, fr.Line = file, line
		} else {
			inner := chain[j+1]
			fr.File, fr.Line = idx.files[inner.callFile], int(inner.callLine)
		}
		frames = append(frames, fr)
	}
	return frames, true
}
