package dif

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"sort"
	"strings"
	"unsafe"
)

// pdbReader reads whole streams of an MSF 7.00 file, within a budget.
type pdbReader struct {
	r         io.ReaderAt
	size      int64
	blockSize uint64
	numBlocks uint64
	sizes     []uint64
	blocks    [][]uint32 // of each stream
	budget    *sectionBudget
}

var errPDB = errors.New("dif: the PDB is damaged")

func newPDBReader(r io.ReaderAt, size int64) (*pdbReader, error) {
	var sb [56]byte
	if _, err := r.ReadAt(sb[:], 0); err != nil || string(sb[:32]) != pdbMagic {
		return nil, errors.New("dif: not a PDB")
	}
	le := binary.LittleEndian
	p := &pdbReader{r: r, size: size, blockSize: uint64(le.Uint32(sb[32:])), numBlocks: uint64(le.Uint32(sb[40:])), budget: dwarfBudget(size)}
	dirBytes, blockMap := uint64(le.Uint32(sb[44:])), uint64(le.Uint32(sb[52:]))
	switch p.blockSize {
	case 512, 1024, 2048, 4096:
	default:
		return nil, errPDB
	}
	if p.numBlocks*p.blockSize > uint64(size) || dirBytes < 4 || dirBytes > maxPDBDirectory || blockMap >= p.numBlocks {
		return nil, errPDB
	}
	nDirBlocks := (dirBytes + p.blockSize - 1) / p.blockSize
	if 4*nDirBlocks > p.blockSize {
		return nil, errPDB
	}
	mapBuf := make([]byte, 4*nDirBlocks)
	if _, err := r.ReadAt(mapBuf, int64(blockMap*p.blockSize)); err != nil {
		return nil, errPDB
	}
	dirBlocks := make([]uint32, nDirBlocks)
	for i := range dirBlocks {
		dirBlocks[i] = le.Uint32(mapBuf[4*i:])
	}
	dir, err := p.readBlocks(dirBlocks, dirBytes)
	if err != nil {
		return nil, err
	}
	n := uint64(le.Uint32(dir))
	if 4+4*n > dirBytes {
		return nil, errPDB
	}
	// What each stream keeps: its size and its blocks' slice (32 bytes,
	// an empty stream as much as any), and its blocks (4 bytes each).
	if err := p.budget.take(32 * n); err != nil {
		return nil, err
	}
	p.sizes, p.blocks = make([]uint64, 0, n), make([][]uint32, 0, n)
	pos := 4 + 4*n
	for i := range n {
		s := uint64(le.Uint32(dir[4+4*i:]))
		if s == 0xffffffff {
			s = 0
		}
		nb := (s + p.blockSize - 1) / p.blockSize
		if pos+4*nb > dirBytes {
			return nil, errPDB
		}
		if err := p.budget.take(4 * nb); err != nil {
			return nil, err
		}
		bl := make([]uint32, nb)
		for k := range bl {
			bl[k] = le.Uint32(dir[pos+4*uint64(k):])
		}
		pos += 4 * nb
		p.sizes, p.blocks = append(p.sizes, s), append(p.blocks, bl)
	}
	return p, nil
}

// readBlocks reads n bytes from blocks, taking them from the budget.
func (p *pdbReader) readBlocks(blocks []uint32, n uint64) ([]byte, error) {
	if n > uint64(len(blocks))*p.blockSize {
		return nil, errPDB
	}
	if p.budget != nil {
		if err := p.budget.take(n); err != nil {
			return nil, err
		}
	}
	out := make([]byte, n)
	for i, b := range blocks {
		at := uint64(i) * p.blockSize
		if at >= n {
			break
		}
		if uint64(b) >= p.numBlocks {
			return nil, errPDB
		}
		if _, err := p.r.ReadAt(out[at:min(n, at+p.blockSize)], int64(uint64(b)*p.blockSize)); err != nil {
			return nil, errPDB
		}
	}
	return out, nil
}

// stream reads stream i whole.
func (p *pdbReader) stream(i uint64) ([]byte, error) {
	if i >= uint64(len(p.sizes)) {
		return nil, errPDB
	}
	return p.readBlocks(p.blocks[i], p.sizes[i])
}

// pdbIndex is what the resolver keeps of a PDB: procedures, lines and
// inlined calls, by relative virtual address.
type pdbIndex struct {
	procs   []pdbProc   // sorted by lo
	publics []pdbPublic // sorted by addr
}

type pdbProc struct {
	lo, hi uint64
	name   string    // as the record writes it
	fn     string    // with its parameter list, from the type stream
	typ    uint32    // its type (TPI), or its id (IPI) for the _ID records
	isID   bool      // typ is an id
	lines  []pdbLine // sorted by addr
	sites  []pdbSite // its inlined calls, in the order of their records
	first  int32     // the first site inlined into it directly, -1 for none
}

// pdbPublic is a public symbol (S_PUB32) of code: its name as written,
// and its end, the next public's start or its section's end.
type pdbPublic struct {
	addr, end uint64
	name      string
}

// pdbSite is an inlined call (S_INLINESITE): the inlinee's name, the
// ranges of code it covers with their lines, and the calls inlined into it.
type pdbSite struct {
	// inlinee is its LF_FUNC_ID or LF_MFUNC_ID in the IPI stream, as the
	// module writes it: an index with the high bit set is one the
	// module imports from another (DEBUG_S_CROSSSCOPEIMPORTS), and id
	// is then the IPI index that module exports it as.
	inlinee, id uint32
	name        string
	ranges      []pdbRange // in the order of the annotations
	// kid is the first call inlined into it, next the next call inlined
	// into its parent, in the order of their records; -1 for none.
	kid, next int32
	// noLines is set when the module has no DEBUG_S_INLINEELINES entry
	// for the inlinee: llvm-symbolizer stops the chain there.
	noLines bool
}

// pdbRange is code of an inlined call, by offset from its procedure's
// start, and the line it belongs to.
type pdbRange struct {
	lo, hi uint32
	line   uint32
	file   string
	// lineOff and fileOff are the annotations' line offset and file
	// checksum offset (0: the inlinee's own), until the module's
	// inlinee lines turn them into line and file.
	lineOff int32
	fileOff uint32
}

type pdbLine struct {
	addr uint64
	line uint32
	file string
}

// ReadPDBSymbols reads the procedures (S_GPROC32, S_LPROC32 and their _ID
// forms), their inlined calls (S_INLINESITE, S_INLINESITE2: the binary
// annotations' ranges and line offsets, the module's DEBUG_S_INLINEELINES
// for the inlinee's declaration line and file, the IPI stream's LF_FUNC_ID
// and LF_MFUNC_ID for its name, through the modules' cross-scope imports
// and exports when a module imports it), the C13 line tables of a PDB's
// modules and the public symbols of code (S_PUB32) into a Resolver
// answering relative virtual addresses. Procedures and inlinees are named
// with their parameter lists from the TPI stream (pdbtypes.go), as Sentry's
// symbolic names them. The streams read are taken from the budget of
// ReadELFDWARF, what is kept from its index budget.
func ReadPDBSymbols(r io.ReaderAt, size int64) (*Resolver, error) {
	p, err := newPDBReader(r, size)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	dbi, err := p.stream(3)
	if err != nil {
		return nil, err
	}
	if len(dbi) < 64 || int32(le.Uint32(dbi)) != -1 {
		return nil, errPDB
	}
	sub := func(at int) int { return int(int32(le.Uint32(dbi[at:]))) }
	modSize, scSize, smSize, siSize, tsSize, ecSize, dbgSize := sub(24), sub(28), sub(32), sub(36), sub(40), sub(52), sub(48)
	for _, n := range []int{modSize, scSize, smSize, siSize, tsSize, ecSize, dbgSize} {
		if n < 0 || n > len(dbi) {
			return nil, errPDB
		}
	}
	mods := dbi[64:]
	if modSize > len(mods) {
		return nil, errPDB
	}
	mods = mods[:modSize]
	dbgAt := 64 + modSize + scSize + smSize + siSize + tsSize + ecSize
	if dbgAt+dbgSize > len(dbi) || dbgSize < 12 {
		return nil, errPDB
	}
	// Section headers: the sixth stream of the optional debug header.
	shStream := uint64(le.Uint16(dbi[dbgAt+10:]))
	sh, err := p.stream(shStream)
	if err != nil {
		return nil, err
	}
	var sectionVA, sectionEnd []uint64
	var sectionCode []bool
	for at := 0; at+40 <= len(sh); at += 40 {
		va := uint64(le.Uint32(sh[at+12:]))
		sectionVA = append(sectionVA, va)
		sectionEnd = append(sectionEnd, va+uint64(le.Uint32(sh[at+8:])))
		// IMAGE_SCN_CNT_CODE or IMAGE_SCN_MEM_EXECUTE
		sectionCode = append(sectionCode, le.Uint32(sh[at+36:])&0x20000020 != 0)
	}
	rva := func(seg uint16, off uint32) (uint64, bool) {
		if seg == 0 || int(seg) > len(sectionVA) {
			return 0, false
		}
		return sectionVA[seg-1] + uint64(off), true
	}
	names, err := p.namesTable()
	if err != nil {
		return nil, err
	}
	str := func(off uint32) string {
		if uint64(off) >= uint64(len(names)) {
			return ""
		}
		return cString(names[off:])
	}
	idx := &pdbIndex{}
	res := &Resolver{pdb: idx}
	var scratch []pdbRange // one inlined call's ranges, before they are kept
	// What resolves the inlinees that modules import from others: the
	// exports of each module by its name, and the imports waiting for
	// them.
	exports := map[string][]byte{}
	var imports []pdbImport
	spend := func(n int) error {
		res.size += int64(n)
		if res.size > maxDWARFIndex {
			return ErrBudget
		}
		return nil
	}
	for at := 0; at+64 <= len(mods); {
		m := mods[at:]
		modName := strings.ToLower(cString(m[64:]))
		stream := uint64(le.Uint16(m[34:]))
		symBytes, c11, c13 := uint64(le.Uint32(m[36:])), uint64(le.Uint32(m[40:])), uint64(le.Uint32(m[44:]))
		// Two names after the fixed part, then alignment to 4.
		end := 64
		for range 2 {
			i := bytes.IndexByte(m[end:], 0)
			if i < 0 {
				return nil, errPDB
			}
			end += i + 1
		}
		at += (end + 3) &^ 3
		if stream == 0xffff {
			continue
		}
		ms, err := p.stream(stream)
		if err != nil {
			return nil, err
		}
		if symBytes > uint64(len(ms)) || c11 > uint64(len(ms))-symBytes || c13 > uint64(len(ms))-symBytes-c11 {
			return nil, errPDB
		}
		first := len(idx.procs)
		// Procedures and their inlined calls. scopes are the procedure
		// and the inlined calls open at a record, outermost first: each
		// closes at the record its End names.
		type scope struct {
			end  uint64
			site int32 // -1 for the procedure
			last int32 // the last site inlined into it directly, -1 for none
		}
		var scopes []scope
		syms := ms[:symBytes]
		// The module's sites, counted first: each procedure's are a
		// part of one array, which never grows.
		nSites := 0
		for _, rec := range pdbSymbolRecords(syms, 4) {
			if kind := le.Uint16(rec); kind == 0x114d || kind == 0x115d {
				nSites++
			}
		}
		if err := spend(int(unsafe.Sizeof(pdbSite{})) * nSites); err != nil {
			return nil, err
		}
		sites := make([]pdbSite, 0, nSites)
		siteStart, open := 0, false // where the open procedure's sites start
		endProc := func() {
			if open {
				idx.procs[len(idx.procs)-1].sites = sites[siteStart:len(sites):len(sites)]
			}
			siteStart, open = len(sites), false
		}
		for at, rec := range pdbSymbolRecords(syms, 4) {
			kind, data := le.Uint16(rec), rec[2:]
			for len(scopes) > 0 && at >= scopes[len(scopes)-1].end {
				scopes = scopes[:len(scopes)-1]
			}
			switch kind {
			case 0x1110, 0x110f, 0x1147, 0x1146: // S_GPROC32, S_LPROC32, S_GPROC32_ID, S_LPROC32_ID
				scopes = scopes[:0]
				endProc()
				if len(data) < 36 {
					continue
				}
				lo, ok := rva(le.Uint16(data[32:]), le.Uint32(data[28:]))
				if !ok {
					continue
				}
				name := cString(data[35:])
				if err := spend(96 + len(name)); err != nil {
					return nil, err
				}
				idx.procs = append(idx.procs, pdbProc{lo: lo, hi: lo + uint64(le.Uint32(data[12:])), name: name,
					typ: le.Uint32(data[24:]), isID: kind == 0x1147 || kind == 0x1146, first: -1})
				open = true
				scopes = append(scopes, scope{end: uint64(le.Uint32(data[4:])), site: -1, last: -1})
			case 0x114d, 0x115d: // S_INLINESITE, S_INLINESITE2
				ann := 12
				if kind == 0x115d {
					ann = 16 // after the invocation count
				}
				if len(scopes) == 0 || len(scopes) >= maxInlineDepth || len(data) < ann {
					continue
				}
				scratch = pdbAnnotations(data[ann:], scratch[:0])
				if err := spend(int(unsafe.Sizeof(pdbRange{})) * len(scratch)); err != nil {
					return nil, err
				}
				// k is the site's index among its procedure's.
				k := int32(len(sites) - siteStart)
				inlinee := le.Uint32(data[8:])
				sites = append(sites, pdbSite{inlinee: inlinee, id: inlinee, ranges: slices.Clone(scratch), kid: -1, next: -1})
				parent := &scopes[len(scopes)-1]
				switch {
				case parent.last >= 0:
					sites[siteStart+int(parent.last)].next = k
				case parent.site >= 0:
					sites[siteStart+int(parent.site)].kid = k
				default:
					idx.procs[len(idx.procs)-1].first = k
				}
				parent.last = k
				scopes = append(scopes, scope{end: uint64(le.Uint32(data[4:])), site: k, last: -1})
			}
		}
		endProc()
		procs := idx.procs[first:]
		sort.Slice(procs, func(i, j int) bool { return procs[i].lo < procs[j].lo })
		// Lines, and the file checksums they name files through.
		c13s := ms[symBytes+c11 : symBytes+c11+c13]
		var checksums, imported []byte
		type block struct {
			seg    uint16
			off    uint32
			data   []byte
			hasCol bool
		}
		var blocks []block
		for pos := 0; pos+8 <= len(c13s); {
			kind, n := le.Uint32(c13s[pos:]), int(le.Uint32(c13s[pos+4:]))
			if n < 0 || n > len(c13s)-pos-8 {
				break
			}
			body := c13s[pos+8 : pos+8+n]
			pos += (8 + n + 3) &^ 3
			switch kind {
			case 0xf4: // DEBUG_S_FILECHKSMS
				checksums = body
			case 0xf7: // DEBUG_S_CROSSSCOPEIMPORTS
				imported = body
			case 0xf8: // DEBUG_S_CROSSSCOPEEXPORTS: kept until every module is read
				if _, ok := exports[modName]; !ok {
					if err := p.budget.take(uint64(len(body))); err != nil {
						return nil, err
					}
					exports[modName] = slices.Clone(body)
				}
			case 0xf2: // DEBUG_S_LINES
				if len(body) >= 12 {
					blocks = append(blocks, block{seg: le.Uint16(body[4:]), off: le.Uint32(body), data: body[12:], hasCol: le.Uint16(body[6:])&1 != 0})
				}
			}
		}
		fileName := func(off uint32) string {
			if uint64(off)+4 > uint64(len(checksums)) {
				return ""
			}
			return str(le.Uint32(checksums[off:]))
		}
		for _, bl := range blocks {
			base, ok := rva(bl.seg, bl.off)
			if !ok {
				continue
			}
			for d := bl.data; len(d) >= 12; {
				fileOff, nLines, cb := le.Uint32(d), uint64(le.Uint32(d[4:])), uint64(le.Uint32(d[8:]))
				if cb < 12 || cb > uint64(len(d)) || nLines > (cb-12)/8 {
					break
				}
				file := fileName(fileOff)
				lines := d[12:cb]
				d = d[cb:]
				for k := range nLines {
					e := lines[8*k:]
					addr := base + uint64(le.Uint32(e))
					ln := le.Uint32(e[4:]) & 0xffffff
					j := sort.Search(len(procs), func(j int) bool { return procs[j].lo > addr }) - 1
					if j < 0 || addr >= procs[j].hi {
						continue
					}
					if err := spend(32); err != nil {
						return nil, err
					}
					procs[j].lines = append(procs[j].lines, pdbLine{addr: addr, line: ln, file: file})
				}
			}
		}
		if err := resolveInlinees(procs, c13s, fileName, spend); err != nil {
			return nil, err
		}
		if imports, err = importedInlinees(procs, imported, str, imports, p.budget); err != nil {
			return nil, err
		}
	}
	if err := resolveImports(imports, exports, p.budget); err != nil {
		return nil, err
	}
	sort.SliceStable(idx.procs, func(i, j int) bool { return idx.procs[i].lo < idx.procs[j].lo })
	if err := p.readPublics(idx, dbi, rva, sectionCode, sectionEnd, spend); err != nil {
		return nil, err
	}
	if err := p.nameFunctions(idx, le.Uint16(dbi[58:]), spend); err != nil {
		return nil, err
	}
	for i := range idx.procs {
		ls := idx.procs[i].lines
		sort.SliceStable(ls, func(a, b int) bool { return ls[a].addr < ls[b].addr })
	}
	return res, nil
}

// readPublics reads the public symbols (S_PUB32) of code sections from
// the DBI stream's symbol record stream into idx: each covers the code
// from its address to the next public's, in its section, where no
// procedure does. rva turns a section and an offset into an address;
// code and end say whether each section holds code and where it ends.
// A missing or damaged stream leaves the publics out.
func (p *pdbReader) readPublics(idx *pdbIndex, dbi []byte, rva func(uint16, uint32) (uint64, bool), code []bool, end []uint64, spend func(int) error) error {
	le := binary.LittleEndian
	recs, err := p.stream(uint64(le.Uint16(dbi[20:])))
	if errors.Is(err, ErrBudget) {
		return err
	}
	if err != nil {
		return nil
	}
	for _, rec := range pdbSymbolRecords(recs, 0) { // no signature

		kind, d := le.Uint16(rec), rec[2:]
		if kind != 0x110e || len(d) < 11 { // S_PUB32: flags, offset, section, name
			continue
		}
		seg := le.Uint16(d[8:])
		addr, ok := rva(seg, le.Uint32(d[4:]))
		if !ok || !code[seg-1] {
			continue
		}
		name := cString(d[10:])
		if err := spend(64 + len(name)); err != nil {
			return err
		}
		idx.publics = append(idx.publics, pdbPublic{addr: addr, end: end[seg-1], name: name})
	}
	pubs := idx.publics
	sort.SliceStable(pubs, func(i, j int) bool { return pubs[i].addr < pubs[j].addr })
	for i := range pubs {
		if i+1 < len(pubs) && pubs[i+1].addr < pubs[i].end {
			pubs[i].end = pubs[i+1].addr
		}
	}
	return nil
}

// pdbSymbolRecords yields each record of symbols syms from offset start
// (after the 4-byte signature of a module's): its offset, and its kind and
// bytes after the length, up to the first record that does not fit.
func pdbSymbolRecords(syms []byte, start int) iter.Seq2[uint64, []byte] {
	return func(yield func(uint64, []byte) bool) {
		for pos := start; pos+4 <= len(syms); {
			reclen := int(binary.LittleEndian.Uint16(syms[pos:]))
			if reclen < 2 || pos+2+reclen > len(syms) {
				return
			}
			if !yield(uint64(pos), syms[pos+2:pos+2+reclen]) {
				return
			}
			pos += 2 + reclen
		}
	}
}

// namesTable reads the string buffer of the /names stream, which the
// information stream's named stream map names.
func (p *pdbReader) namesTable() ([]byte, error) {
	le := binary.LittleEndian
	info, err := p.stream(1)
	if err != nil {
		return nil, err
	}
	if len(info) < 32 {
		return nil, errPDB
	}
	at := 28
	bufLen := int(le.Uint32(info[at:]))
	at += 4
	if bufLen < 0 || bufLen > len(info)-at {
		return nil, errPDB
	}
	strs := info[at : at+bufLen]
	at += bufLen
	if at+8 > len(info) {
		return nil, errPDB
	}
	at += 8 // size, capacity
	word := func() (uint32, bool) {
		if at+4 > len(info) {
			return 0, false
		}
		v := le.Uint32(info[at:])
		at += 4
		return v, true
	}
	nPresent, ok := word()
	if !ok || uint64(nPresent) > uint64(len(info)-at)/4 {
		return nil, errPDB
	}
	present := info[at : at+4*int(nPresent)]
	at += 4 * int(nPresent)
	nDeleted, ok := word()
	if !ok || uint64(nDeleted) > uint64(len(info)-at)/4 {
		return nil, errPDB
	}
	at += 4 * int(nDeleted)
	stream := uint64(1 << 63)
	for bit := 0; bit < 32*int(nPresent); bit++ {
		if present[bit/32*4+bit%32/8]&(1<<(bit%8)) == 0 {
			continue
		}
		key, ok1 := word()
		val, ok2 := word()
		if !ok1 || !ok2 {
			return nil, errPDB
		}
		if uint64(key) < uint64(len(strs)) {
			name := strs[key:]
			if i := bytes.IndexByte(name, 0); i >= 0 && string(name[:i]) == "/names" {
				stream = uint64(val)
			}
		}
	}
	if stream == 1<<63 {
		return nil, fmt.Errorf("dif: the PDB has no /names stream")
	}
	names, err := p.stream(stream)
	if err != nil {
		return nil, err
	}
	if len(names) < 12 || le.Uint32(names) != 0xeffeeffe {
		return nil, errPDB
	}
	n := uint64(le.Uint32(names[8:]))
	if n > uint64(len(names)-12) {
		return nil, errPDB
	}
	return names[12 : 12+n], nil
}

// maxSiteRanges bounds the inlined calls and their ranges that one lookup
// looks at (each call counts one more than its ranges): a procedure whose
// calls have more before the one that holds the address resolves to the
// calls found within them.
const maxSiteRanges = 1 << 16

// lookup resolves a relative virtual address: its inlined calls,
// innermost first, then its procedure.
func (idx *pdbIndex) lookup(addr uint64) ([]Frame, bool) {
	i := sort.Search(len(idx.procs), func(i int) bool { return idx.procs[i].lo > addr }) - 1
	if i < 0 || addr >= idx.procs[i].hi {
		return idx.public(addr, i)
	}
	p := &idx.procs[i]
	f := Frame{Function: p.fn, Symbol: p.name, SymAddr: p.lo}
	// The first line at the address, else the last before it, as
	// llvm-symbolizer picks among lines of one address (clang gives a
	// function's first address its opening line and the next one's).
	k := sort.Search(len(p.lines), func(k int) bool { return p.lines[k].addr >= addr })
	if k == len(p.lines) || p.lines[k].addr > addr {
		k--
	}
	if k >= 0 {
		f.File, f.Line = p.lines[k].file, int(p.lines[k].line)
	}
	// The inlined calls that hold the address, outermost first: at each
	// depth the first, in the order of the records, as llvm-symbolizer
	// finds them, looking at maxSiteRanges ranges at most.
	off := uint32(addr - p.lo)
	var chain []*pdbSite
	left := maxSiteRanges
	for k := p.first; k >= 0 && len(chain) < maxInlineDepth-1 && left > 0; {
		s := &p.sites[k]
		left -= 1 + len(s.ranges)
		if s.rangeAt(off) == nil {
			k = s.next
			continue
		}
		chain = append(chain, s)
		k = s.kid
	}
	frames := make([]Frame, 0, len(chain)+1)
	for i := len(chain) - 1; i >= 0; i-- {
		s := chain[i]
		if s.noLines { // llvm-symbolizer stops at a call without lines
			break
		}
		r := s.rangeAt(off)
		frames = append(frames, Frame{Function: s.name, Symbol: s.name, SymAddr: p.lo, File: r.file, Line: int(r.line)})
	}
	return append(frames, f), true
}

// public resolves addr, which no procedure holds, by the public symbol
// that covers it, as symbolic does: the last public at or before it,
// after the end of the procedure before it (prev, -1 for none), named
// without its C decoration (_malloc is malloc).
func (idx *pdbIndex) public(addr uint64, prev int) ([]Frame, bool) {
	k := sort.Search(len(idx.publics), func(k int) bool { return idx.publics[k].addr > addr }) - 1
	if k < 0 || addr >= idx.publics[k].end {
		return nil, false
	}
	pub := &idx.publics[k]
	if prev >= 0 && pub.addr < idx.procs[prev].hi {
		return nil, false
	}
	n := fnName{linkage: undecorateWindows(pub.name)}
	return []Frame{{Function: n.function(), Symbol: pub.name, SymAddr: pub.addr}}, true
}
