package dif

// Frame is one frame of a resolved address: a function, or a call inlined
// into the frame that follows it.
type Frame struct {
	Function string // demangled, parameters included
	Symbol   string // as stored: the linkage name, or the name
	SymAddr  uint64 // the start of the function (for an inlined call, of its outermost function)
	File     string // absolute when the file says so (joined with the compilation directory)
	CompDir  string // the compilation directory of the unit
	Line     int
	Column   int
}

// Resolver answers addresses from an object's debug information. It is
// safe for concurrent use: the DWARF units it parses on first use are
// parsed once, under a lock, and published whole.
type Resolver struct {
	dw   *dwarfIndex // DWARF units, found by address and parsed on first use
	syms symbols
	bp   *bpIndex  // a Breakpad symbol file's records, instead of the above
	pdb  *pdbIndex // a PDB's procedures and lines, instead of the above
	pe   *peDWARF  // a PE image's DWARF, by relative address, instead of the above
	size int64     // bytes of the index built (DWARF units and their ranges, symbols)
}

// Size is the bytes the resolver holds: its index, the DWARF units it has
// parsed since it was built (each charged at what it holds, a line table
// that units share once), the index of the functions of the units without
// ranges once built, and the DWARF sections until every unit is parsed.
func (r *Resolver) Size() int64 {
	if r.pe != nil {
		return r.pe.res.Size()
	}
	if r.dw != nil {
		return r.size + r.dw.parsed.Load() + r.dw.extra.Load() + r.dw.sections.Load()
	}
	return r.size
}

// Lookup resolves the relative address addr: the frames of the function
// that holds it, innermost (the deepest inlined call) first. ok is false
// when no function and no line of the file holds it, or when the DWARF
// unit that holds it cannot be read (Resolve says why).
func (r *Resolver) Lookup(addr uint64) (frames []Frame, ok bool) {
	frames, ok, _ = r.Resolve(addr)
	return frames, ok
}

// Resolve is Lookup, with the error of the DWARF unit that holds addr when
// that unit cannot be read: a unit is parsed the first time an address
// falls in it, so damage in one shows then, and only for its addresses.
// The parse has a Work of its own: a request resolves with ResolveWork.
func (r *Resolver) Resolve(addr uint64) (frames []Frame, ok bool, err error) {
	return r.ResolveWork(nil, addr)
}

// ResolveWork is Resolve for a request: the DWARF units it parses on first
// use are charged to the request's Work w, and a parse stops, the unit left
// unparsed, when w is spent (an error that is ErrBudget) or its context
// done (the context's error).
func (r *Resolver) ResolveWork(w *Work, addr uint64) (frames []Frame, ok bool, err error) {
	if r.bp != nil {
		frames, ok = r.bp.lookup(addr)
		return frames, ok, nil
	}
	if r.pdb != nil {
		frames, ok = r.pdb.lookup(addr)
		return frames, ok, nil
	}
	if r.pe != nil {
		return r.pe.resolve(w, addr)
	}
	var top *span
	var u *dwarfUnit
	if r.dw != nil {
		if top, u, err = r.dw.find(addr, w); err != nil {
			return nil, false, err
		}
	}
	symName, symStart, hasSym := r.syms.lookup(addr)
	var file, compDir string
	var line, col int
	if u != nil {
		compDir = u.compDir
		if row := u.lines.row(addr); row != nil {
			file = u.lines.path(compDir, row.file)
			line, col = int(row.line), int(row.col)
		}
	}
	if top == nil {
		if !hasSym && file == "" {
			return nil, false, nil
		}
		f := Frame{File: file, CompDir: compDir, Line: line, Column: col}
		if hasSym {
			n := fnName{linkage: symName}
			f.Function, f.Symbol, f.SymAddr = n.function(), symName, symStart
		}
		return []Frame{f}, true, nil
	}
	chain := []*fnNode{top.fn}
	for n := top.fn; len(chain) < maxInlineDepth; {
		k := findSpan(n.kids, addr)
		if k == nil {
			break
		}
		chain = append(chain, k.fn)
		n = k.fn
	}
	start := top.fn.start()
	if hasSym {
		start = symStart
	}
	frames = make([]Frame, len(chain))
	for i := range chain {
		n := chain[len(chain)-1-i]
		f := &frames[i]
		f.Function, f.Symbol = n.name.function(), n.name.symbol()
		f.SymAddr, f.CompDir = start, compDir
		if i == 0 {
			f.File, f.Line, f.Column = file, line, col
		} else {
			inner := chain[len(chain)-i]
			f.File = u.lines.path(compDir, inner.callFile)
			f.Line, f.Column = int(inner.callLine), int(inner.callCol)
		}
	}
	// The outermost frame is named by the symbol table when it has the
	// address, as llvm-symbolizer names it (gcc writes no linkage name for
	// a static C++ function; its symbol has one).
	if hasSym {
		n := fnName{linkage: symName}
		last := &frames[len(frames)-1]
		last.Function, last.Symbol = n.function(), symName
	}
	return frames, true, nil
}
