package dif

import (
	"bytes"
	"compress/zlib"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/ianlancetaylor/demangle"
	"github.com/klauspost/compress/zstd"
)

// Budgets of the DWARF resolver. None depends on a count or a length
// written in the file: the DWARF bytes read (decompressed) from one file
// are at most dwarfBytesPerByte times the file's size plus dwarfBytesSlack,
// and never more than maxDWARFBytes; they are kept with the resolver
// (counted in its Size) until every unit is parsed, since its units are
// parsed on first use. The
// index of the units (at most maxDWARFUnits of them) and of the units
// parsed is at most maxDWARFIndex bytes, each unit charged at what it
// holds: beyond it, the units parsed before are dropped (dwarfunits.go).
// Parsing a unit walks at most maxWork steps of its request's Work
// (budget.go). A file beyond the budget before its first answer is
// ErrBudget (malformed for a resolution), a unit beyond it alone too.
const (
	maxDWARFBytes     = 160 << 20
	dwarfBytesPerByte = 8
	dwarfBytesSlack   = 1 << 20
	maxDWARFIndex     = 128 << 20
	// maxDWARFUnits bounds the units of .debug_info: debug/dwarf keeps
	// about a hundred bytes for each, and a unit takes 11 bytes of the
	// file at least. unitCost is what one counts against maxDWARFIndex.
	maxDWARFUnits = 1 << 19
	unitCost      = 128
	// maxLineFiles bounds the directories and the files of one line
	// table header; maxLinePaths the bytes of their joined paths.
	maxLineFiles = 1 << 16
	maxLinePaths = 8 << 20
	// maxOriginDepth bounds the abstract_origin/specification chain
	// followed for a name.
	maxOriginDepth = 8
	// maxInlineDepth bounds the frames one address expands to: the
	// outermost function and its inlined calls, the deepest cut.
	maxInlineDepth = 64
)

// UnsupportedError is a file whose debug information errata does not read
// (split DWARF, dwz): Reason says which.
type UnsupportedError struct{ Reason string }

func (e *UnsupportedError) Error() string { return "dif: unsupported: " + e.Reason }

// ErrNoDWARF is an object without DWARF debug information.
var ErrNoDWARF = errors.New("dif: the object has no DWARF debug information")

type span struct {
	lo, hi uint64
	fn     *fnNode // for a unit's functions
	cu     int32   // for the units' ranges
}

// dwarfUnit is a unit parsed: its line table, and its functions with
// their inlined calls. err is why it could not be.
type dwarfUnit struct {
	compDir string
	lines   *lineProgram // nil without one; shared by the units that point at its program
	funcs   []span       // top-level subprograms, sorted by lo
	size    int64        // bytes counted against maxDWARFIndex, its line table's included
	err     error
}

// lineProgram is a line program read: its files and its rows, in
// sequences. The units whose DW_AT_stmt_list points at one program share
// it, so that the program is walked once.
type lineProgram struct {
	files  []lineFile // as lineRow.file and DW_AT_call_file index them
	seqs   []lineSeq  // sorted by lo
	joined int        // bytes of the files' paths joined to their directories
	size   int64      // bytes it holds (charged as the parts are allocated)
	err    error      // why the units that point at it cannot be read
}

// lineFile is a file of a line table and the directory it is in, joined
// (with the unit's compilation directory) when an answer names it.
type lineFile struct{ dir, name string }

type lineSeq struct {
	lo, hi uint64
	rows   []lineRow
}

type lineRow struct {
	addr      uint64
	file      uint32
	line, col uint32
}

// The bytes of the structures a unit holds, as unsafe.Sizeof counts them
// (a test checks them): what they are charged.
const (
	lineFileSize    = 32
	lineSeqSize     = 40
	lineRowSize     = 24
	spanSize        = 32
	rangeSize       = 16
	fnNodeCost      = 96
	fnNameCost      = 48
	dwarfUnitCost   = 96
	lineProgramCost = 96
)

// allocBytes bounds from above what the runtime allocates for an object of
// n bytes: its size classes round up by less than a seventh plus 16
// bytes, and an object above 32 KiB to whole pages.
func allocBytes(n int) int64 {
	switch {
	case n == 0:
		return 0
	case n > 32<<10:
		return int64(n+8191) &^ 8191
	}
	return int64(n + n/7 + 16)
}

// sliceCost is what a slice of n elements of size bytes, allocated at its
// length, holds.
func sliceCost(n, size int) int64 { return allocBytes(n * size) }

// stringCost is what the bytes of s hold (its header is counted where it
// is kept).
func stringCost(s string) int64 { return allocBytes(len(s)) }

// path is the path of file i, joined to its directory and to compDir as
// llvm-symbolizer joins them; "" for a file the table does not have.
func (t *lineProgram) path(compDir string, i uint32) string {
	if t == nil || int(i) >= len(t.files) {
		return ""
	}
	f := t.files[i]
	if f.name == "" || isAbsPath(f.name) {
		return f.name
	}
	p := ""
	if compDir != "" && !isAbsPath(f.dir) {
		p = compDir
	}
	return appendPath(appendPath(p, f.dir), f.name)
}

type fnNode struct {
	ranges   [][2]uint64
	name     *fnName
	callFile uint32
	callLine uint32
	callCol  uint32
	children []*fnNode
	kids     []span // the children's ranges, sorted by lo (built after the walk)
}

type fnName struct {
	linkage, name string
	demangled     string
}

// sectionBudget counts the DWARF bytes read from one file.
type sectionBudget struct{ left int64 }

func dwarfBudget(size int64) *sectionBudget {
	return &sectionBudget{left: min(maxDWARFBytes, dwarfBytesPerByte*size+dwarfBytesSlack)}
}

func (b *sectionBudget) take(n uint64) error {
	if n > uint64(b.left) {
		return ErrBudget
	}
	b.left -= int64(n)
	return nil
}

// dwarfSectionNames are the sections the resolver reads, without their
// ".debug_" prefix.
var dwarfSectionNames = []string{"abbrev", "info", "line", "str", "ranges", "addr", "line_str", "str_offsets", "rnglists"}

// ReadELFDWARF reads the DWARF debug information of the ELF object r of
// the given size (compressed sections, SHF_COMPRESSED or .zdebug, included)
// into a Resolver. An object without DWARF is ErrNoDWARF; split DWARF and
// dwz are an *UnsupportedError; a file beyond the budget ErrBudget.
func ReadELFDWARF(r io.ReaderAt, size int64) (*Resolver, error) {
	secs, err := ReadELFSections(r, size)
	if err != nil {
		return nil, err
	}
	h, err := readELFHeader(newBudgetReader(r, size))
	if err != nil {
		return nil, err
	}
	found := map[string]Section{}
	for _, s := range secs {
		if s.Name == ".gnu_debugaltlink" {
			return nil, &UnsupportedError{Reason: "dwz: the DWARF refers to a supplementary file (.gnu_debugaltlink)"}
		}
		if strings.HasSuffix(s.Name, ".dwo") {
			return nil, &UnsupportedError{Reason: "split DWARF: the object holds .dwo sections"}
		}
		var key string
		switch {
		case strings.HasPrefix(s.Name, ".debug_"):
			key = s.Name[len(".debug_"):]
		case strings.HasPrefix(s.Name, ".zdebug_"):
			key = s.Name[len(".zdebug_"):]
		default:
			continue
		}
		if _, seen := found[key]; seen || s.Damaged || s.Type == elf.SHT_NOBITS || s.Size == 0 {
			continue
		}
		found[key] = s
	}
	if _, ok := found["info"]; !ok {
		return nil, ErrNoDWARF
	}
	budget := dwarfBudget(size)
	syms, err := readELFSymbols(r, h, secs, budget)
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{}
	for _, name := range dwarfSectionNames {
		s, ok := found[name]
		if !ok {
			continue
		}
		b, err := readDWARFSection(r, h, s, budget)
		if err != nil {
			return nil, fmt.Errorf("dif: section %s: %w", s.Name, err)
		}
		data[name] = b
	}
	res, err := buildResolver(data)
	if err != nil {
		return nil, err
	}
	res.syms = syms
	res.size += int64(24*len(syms.syms) + len(syms.strtab))
	return res, nil
}

// readDWARFSection reads section s, decompressed, within budget.
func readDWARFSection(r io.ReaderAt, h elfHeader, s Section, budget *sectionBudget) ([]byte, error) {
	switch {
	case s.Flags&elf.SHF_COMPRESSED != 0:
		hdrSize := uint64(12)
		if h.is64 {
			hdrSize = 24
		}
		if s.Size < hdrSize {
			return nil, errors.New("short compression header")
		}
		hdr := make([]byte, hdrSize)
		if _, err := r.ReadAt(hdr, int64(s.Offset)); err != nil {
			return nil, err
		}
		var typ uint32
		var n uint64
		if h.is64 {
			typ, n = h.order.Uint32(hdr), h.order.Uint64(hdr[8:])
		} else {
			typ, n = h.order.Uint32(hdr), uint64(h.order.Uint32(hdr[4:]))
		}
		body := io.NewSectionReader(r, int64(s.Offset+hdrSize), int64(s.Size-hdrSize))
		switch elf.CompressionType(typ) {
		case elf.COMPRESS_ZLIB:
			return inflate(body, n, budget)
		case elf.COMPRESS_ZSTD:
			return unzstd(body, n, budget)
		}
		return nil, &UnsupportedError{Reason: fmt.Sprintf("section compression %v", elf.CompressionType(typ))}
	case strings.HasPrefix(s.Name, ".zdebug_"):
		var hdr [12]byte
		if s.Size < 12 {
			return nil, errors.New("short .zdebug header")
		}
		if _, err := r.ReadAt(hdr[:], int64(s.Offset)); err != nil {
			return nil, err
		}
		if string(hdr[:4]) != "ZLIB" {
			return nil, errors.New("bad .zdebug header")
		}
		return inflate(io.NewSectionReader(r, int64(s.Offset+12), int64(s.Size-12)), binary.BigEndian.Uint64(hdr[4:]), budget)
	}
	if err := budget.take(s.Size); err != nil {
		return nil, err
	}
	b := make([]byte, s.Size)
	if _, err := r.ReadAt(b, int64(s.Offset)); err != nil {
		return nil, err
	}
	return b, nil
}

// inflate decompresses exactly n bytes of zlib from r, n taken from budget
// before anything is allocated.
func inflate(r io.Reader, n uint64, budget *sectionBudget) ([]byte, error) {
	if err := budget.take(n); err != nil {
		return nil, err
	}
	zr, err := zlib.NewReader(r)
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(zr, b); err != nil {
		return nil, fmt.Errorf("decompressing: %w", err)
	}
	var one [1]byte
	if k, _ := zr.Read(one[:]); k > 0 {
		return nil, errors.New("decompressing: more bytes than the header says")
	}
	return b, nil
}

// unzstd decompresses exactly n bytes of zstd from r (the body of an
// SHF_COMPRESSED section of type ELFCOMPRESS_ZSTD, one frame or several),
// n taken from budget before anything is allocated. The compressed bytes,
// at most the section's size in the file, are charged too while they are
// held. The decoder writes into the n bytes and keeps no window of its
// own (DecodeAll uses its output as the window), so a frame that declares
// a larger window or content size than n is refused rather than allocated
// for; it runs in the calling goroutine and starts none.
func unzstd(r *io.SectionReader, n uint64, budget *sectionBudget) ([]byte, error) {
	if err := budget.take(n); err != nil {
		return nil, err
	}
	held := uint64(r.Size())
	if err := budget.take(held); err != nil {
		return nil, err
	}
	defer func() { budget.left += int64(held) }()
	in := make([]byte, held)
	if _, err := io.ReadFull(r, in); err != nil {
		return nil, err
	}
	// The smallest window a frame may declare is zstd.MinWindowSize; below
	// it, DecodeAll's cap keeps the output within n all the same.
	limit := max(n, zstd.MinWindowSize)
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(limit), zstd.WithDecoderMaxWindow(limit), zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	b, err := d.DecodeAll(in, make([]byte, 0, n))
	switch {
	case err != nil:
		return nil, fmt.Errorf("decompressing: %w", err)
	case uint64(len(b)) != n:
		return nil, fmt.Errorf("decompressing: %d bytes where the header says %d", len(b), n)
	}
	return b, nil
}

// buildResolver indexes DWARF sections (keyed without ".debug_"): the
// units and their ranges, each unit parsed on first use (dwarfunits.go).
// The resolver keeps the sections.
func buildResolver(sec map[string][]byte) (*Resolver, error) {
	ends, err := checkUnits(sec["info"], sec["abbrev"])
	if err != nil {
		return nil, err
	}
	d, err := dwarf.New(sec["abbrev"], nil, nil, sec["info"], sec["line"], nil, sec["ranges"], sec["str"])
	if err != nil {
		return nil, fmt.Errorf("dif: DWARF: %w", err)
	}
	for _, n := range []string{"addr", "line_str", "str_offsets", "rnglists"} {
		if b := sec[n]; b != nil {
			if err := d.AddSection(".debug_"+n, b); err != nil {
				return nil, fmt.Errorf("dif: DWARF: %w", err)
			}
		}
	}
	x := &dwarfIndex{d: d, order: dwarfOrder(sec["info"]), infoLen: len(sec["info"]), line: sec["line"], lineStr: sec["line_str"], str: sec["str"],
		ends: ends, limit: maxDWARFIndex}
	if err := x.scan(); err != nil {
		return nil, err
	}
	var held int64
	for _, b := range sec {
		held += int64(len(b))
	}
	x.sections.Store(held)
	x.work = fileWork*held + maxWork
	return &Resolver{dw: x, size: x.base}, nil
}

// indexBuilder parses one unit (or, scanning, the units' entries) within
// limit bytes of index.
type indexBuilder struct {
	d                  *dwarf.Data
	order              binary.ByteOrder // of the line tables
	line, lineStr, str []byte
	names              map[dwarf.Offset]*fnName
	nameReader         *dwarf.Reader
	size, limit        int64
	infoLen, entries   int          // the bytes of .debug_info, the entries next returned
	read               bool         // next has returned an entry
	last               dwarf.Offset // the offset of that entry
	work               *Work        // the request's, charged for what the parse walks
	// tables are the line tables the index holds, by offset; fresh those
	// read by this parse; shared the bytes of b.size that tables already
	// held count; programs the line programs read.
	tables   map[int64]*lineProgram
	fresh    map[int64]*lineProgram
	shared   int64
	programs int
}

func (b *indexBuilder) spend(n int) error { return b.spend64(int64(n)) }

func (b *indexBuilder) spend64(n int64) error {
	b.size += n
	if b.size > b.limit {
		return ErrBudget
	}
	return nil
}

// parseUnit parses the unit whose unit entry is at off and whose bytes end
// at end into u.
func (b *indexBuilder) parseUnit(off, end dwarf.Offset, u *dwarfUnit) error {
	r := b.d.Reader()
	r.Seek(off)
	b.nameReader = b.d.Reader()
	cu, err := b.next(r)
	if err != nil {
		return err
	}
	if cu == nil || cu.Offset != off {
		return errors.New("dif: DWARF: the unit entry is not where it was")
	}
	u.compDir, _ = cu.Val(dwarf.AttrCompDir).(string)
	if err := b.spend64(dwarfUnitCost + stringCost(u.compDir)); err != nil {
		return err
	}
	if err := b.lines(cu, u); err != nil {
		return err
	}
	if cu.Children {
		if err := b.unit(r, end, u); err != nil {
			return err
		}
	}
	for _, f := range u.funcs {
		if err := b.indexKids(f.fn); err != nil {
			return err
		}
	}
	u.funcs = append(make([]span, 0, len(u.funcs)), u.funcs...) // at its length, as charged
	if err := b.spend64(sliceCost(len(u.funcs), spanSize) - spanSize*int64(len(u.funcs))); err != nil {
		return err
	}
	sort.Slice(u.funcs, func(i, j int) bool { return u.funcs[i].lo < u.funcs[j].lo })
	return nil
}

// indexKids sorts the ranges of n's inlined calls, and theirs, once: a
// lookup then finds the call holding an address by a search, not a scan.
// A function with several ranges is reached from each; kids are built
// once per node.
func (b *indexBuilder) indexKids(n *fnNode) error {
	stack := []*fnNode{n}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.kids != nil || len(n.children) == 0 {
			continue
		}
		k := 0
		for _, c := range n.children {
			for _, rg := range c.ranges {
				if rg[0] < rg[1] {
					k++
				}
			}
		}
		if err := b.spend64(sliceCost(k, spanSize)); err != nil {
			return err
		}
		kids := make([]span, 0, k)
		for _, c := range n.children {
			for _, rg := range c.ranges {
				if rg[0] < rg[1] {
					kids = append(kids, span{lo: rg[0], hi: rg[1], fn: c})
				}
			}
			stack = append(stack, c)
		}
		sort.Slice(kids, func(i, j int) bool { return kids[i].lo < kids[j].lo })
		n.kids = kids
		n.children = nil
	}
	return nil
}

// unit reads the entries of one unit into u (r just past its unit entry),
// up to the unit's end.
func (b *indexBuilder) unit(r *dwarf.Reader, end dwarf.Offset, u *dwarfUnit) error {
	// stack holds, for each open entry with children, the function node
	// its children nest in (nil outside functions).
	stack := []*fnNode{nil}
	for len(stack) > 0 {
		e, err := b.next(r)
		if err != nil {
			return err
		}
		if e == nil {
			return nil
		}
		if e.Tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		if e.Offset >= end {
			return nil // the unit's children do not end within it
		}
		parent := stack[len(stack)-1]
		cur := parent
		switch e.Tag {
		case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine:
			if e.Tag == dwarf.TagInlinedSubroutine && parent == nil {
				break
			}
			rs, err := b.d.Ranges(e)
			if werr := b.work.spend(int64(len(rs))); werr != nil {
				return werr
			}
			if err != nil || len(rs) == 0 {
				break
			}
			n := &fnNode{ranges: append(make([][2]uint64, 0, len(rs)), rs...)}
			if e.Tag == dwarf.TagInlinedSubroutine {
				n.callFile = uintAttr(e, dwarf.AttrCallFile)
				n.callLine = uintAttr(e, dwarf.AttrCallLine)
				n.callCol = uintAttr(e, dwarf.AttrCallColumn)
			}
			if n.name, err = b.nameOf(e); err != nil {
				return err
			}
			if err := b.spend64(fnNodeCost + sliceCost(len(rs), rangeSize)); err != nil {
				return err
			}
			if e.Tag == dwarf.TagSubprogram {
				for _, rg := range rs {
					if rg[0] < rg[1] {
						u.funcs = append(u.funcs, span{lo: rg[0], hi: rg[1], fn: n})
					}
				}
				if err := b.spend(spanSize * len(rs)); err != nil {
					return err
				}
			} else {
				parent.children = append(parent.children, n)
			}
			cur = n
		}
		if e.Children {
			stack = append(stack, cur)
		}
	}
	return nil
}

// errNoProgress is damage that makes debug/dwarf's reader return the
// same entry again, or empty entries without end.
var errNoProgress = errors.New("dif: DWARF: the entries do not advance")

// next is r.Next, refusing a reader that does not move forward (debug/dwarf
// returns empty entries again and again past some damage).
func (b *indexBuilder) next(r *dwarf.Reader) (*dwarf.Entry, error) {
	e, err := r.Next()
	switch {
	case err != nil:
		return nil, fmt.Errorf("dif: DWARF: %w", err)
	case e == nil:
		return nil, nil
	}
	// Every entry takes a byte of .debug_info at least; a null entry
	// (Tag 0) has no offset of its own.
	if b.entries++; b.entries > b.infoLen {
		return nil, errNoProgress
	}
	if err := b.work.spend(1); err != nil {
		return nil, err
	}
	if e.Tag != 0 {
		if b.read && e.Offset <= b.last {
			return nil, errNoProgress
		}
		b.read, b.last = true, e.Offset
	}
	return e, nil
}

func uintAttr(e *dwarf.Entry, a dwarf.Attr) uint32 {
	switch v := e.Val(a).(type) {
	case int64:
		if v >= 0 && v <= 1<<32-1 {
			return uint32(v)
		}
	case uint64:
		if v <= 1<<32-1 {
			return uint32(v)
		}
	}
	return 0
}

// nameOf is the name of a function entry: its linkage name, else its name,
// looked for on the entry and then along DW_AT_abstract_origin and
// DW_AT_specification, as llvm-symbolizer looks.
func (b *indexBuilder) nameOf(e *dwarf.Entry) (*fnName, error) {
	return b.nameDepth(e, 0)
}

// nameDepth is nameOf for an entry reached after depth references. An
// entry that names nothing itself shares the name of the entry it refers
// to (an inlined call, its abstract origin), decoded once.
func (b *indexBuilder) nameDepth(e *dwarf.Entry, depth int) (*fnName, error) {
	if n, ok := b.names[e.Offset]; ok {
		return n, nil
	}
	linkage := strAttr(e, dwarf.AttrLinkageName)
	if linkage == "" {
		linkage = strAttr(e, dwarf.Attr(0x2007))
	}
	name := strAttr(e, dwarf.AttrName)
	var ref *fnName
	if linkage == "" || name == "" {
		next, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
		if !ok {
			next, ok = e.Val(dwarf.AttrSpecification).(dwarf.Offset)
		}
		if ok && depth < maxOriginDepth {
			if c, seen := b.names[next]; seen {
				ref = c
			} else {
				b.nameReader.Seek(next)
				if ne, err := b.nameReader.Next(); err == nil && ne != nil && ne.Offset == next && ne.Tag != 0 {
					if ref, err = b.nameDepth(ne, depth+1); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	var n *fnName
	switch {
	case ref != nil && linkage == "" && name == "":
		n = ref // shared
		if err := b.spend(16); err != nil {
			return nil, err
		}
	default:
		n = &fnName{linkage: linkage, name: name}
		if ref != nil {
			if n.linkage == "" {
				n.linkage = ref.linkage
			}
			if n.name == "" {
				n.name = ref.name
			}
		}
		if err := b.spend64(fnNameCost + stringCost(n.linkage) + stringCost(n.name)); err != nil {
			return nil, err
		}
	}
	b.names[e.Offset] = n
	return n, nil
}

func strAttr(e *dwarf.Entry, a dwarf.Attr) string {
	s, _ := e.Val(a).(string)
	return s
}

// lines sets the line table of unit cu: the one the index holds when
// another unit points at the same program, or the program read now (and
// kept in b.fresh, for the index to share once the unit is parsed).
func (b *indexBuilder) lines(cu *dwarf.Entry, u *dwarfUnit) error {
	off, ok := cu.Val(dwarf.AttrStmtList).(int64)
	if !ok {
		return nil
	}
	t, shared := b.tables[off]
	if !shared {
		var err error
		if t, err = b.readLines(cu, off); err != nil {
			if b.work.stopped(err) {
				return err
			}
			t = &lineProgram{err: err, size: lineProgramCost}
		}
		if b.fresh == nil {
			b.fresh = map[int64]*lineProgram{}
		}
		b.fresh[off] = t
	}
	if err := b.spend64(t.size); err != nil {
		return err
	}
	if shared {
		b.shared += t.size
	}
	if t.err != nil {
		return t.err
	}
	if len(t.files) == 0 {
		return nil // a damaged line table leaves the unit without lines
	}
	if t.joined+len(t.files)*(len(u.compDir)+2) > maxLinePaths {
		return errLinePaths
	}
	u.lines = t
	return nil
}

// readLines reads the line table at off, which unit cu points at: its
// files and its rows, each row counted as work and charged at what it
// holds. A table debug/dwarf cannot read is one without files.
func (b *indexBuilder) readLines(cu *dwarf.Entry, off int64) (*lineProgram, error) {
	b.programs++
	t, err := readLineHeader(b.order, b.line, b.lineStr, b.str, uint64(off), b.work)
	if err != nil {
		return nil, err
	}
	lr, lerr := b.d.LineReader(cu)
	if t == nil || lerr != nil || lr == nil {
		return &lineProgram{size: lineProgramCost}, nil
	}
	// The rows' files are entries of lr.Files(), which are the entries
	// of the table (DW_LNE_define_file is refused).
	fileIdx := map[*dwarf.LineFile]uint32{}
	for i, f := range lr.Files() {
		if f != nil && i < len(t.files) {
			fileIdx[f] = uint32(i)
		}
	}
	// The rows of all sequences are read into one slice; a sequence
	// without rows (an end of sequence alone) answers no address and is
	// not kept.
	type bound struct {
		lo, hi      uint64
		first, last int // its rows, rows[first:last]
	}
	var rows []lineRow
	var bounds []bound
	first, lo := -1, uint64(0) // the open sequence's first row and address
	room := b.limit - b.size - t.size
	var le dwarf.LineEntry
	for {
		if err := lr.Next(&le); err != nil {
			break // io.EOF, or damage: keep what was read
		}
		if err := b.work.spend(1); err != nil {
			return nil, err
		}
		if le.EndSequence {
			if first >= 0 {
				bounds = append(bounds, bound{lo: lo, hi: le.Address, first: first, last: len(rows)})
				first = -1
			}
			continue
		}
		if first < 0 {
			first, lo = len(rows), le.Address
		}
		fi, ok := fileIdx[le.File]
		if !ok {
			fi = uint32(len(t.files)) // none
		}
		rows = append(rows, lineRow{addr: le.Address, file: fi, line: uint32(le.Line), col: uint32(le.Column)})
		if sliceCost(len(rows), lineRowSize)+sliceCost(len(bounds)+1, lineSeqSize) > room {
			return nil, ErrBudget
		}
	}
	if first >= 0 { // a sequence without its end: drop it
		rows = rows[:first]
	}
	// Kept in slices of their exact length: what the table holds is what
	// it is charged.
	kept := make([]lineRow, len(rows))
	copy(kept, rows)
	t.seqs = make([]lineSeq, len(bounds))
	for i, bd := range bounds {
		s := kept[bd.first:bd.last:bd.last]
		sort.SliceStable(s, func(x, y int) bool { return s[x].addr < s[y].addr })
		t.seqs[i] = lineSeq{lo: bd.lo, hi: bd.hi, rows: s}
	}
	sort.SliceStable(t.seqs, func(x, y int) bool { return t.seqs[x].lo < t.seqs[y].lo })
	t.size += sliceCost(len(kept), lineRowSize) + sliceCost(len(t.seqs), lineSeqSize)
	return t, nil
}

func (n *fnNode) start() uint64 {
	lo := n.ranges[0][0]
	for _, r := range n.ranges {
		lo = min(lo, r[0])
	}
	return lo
}

func contains(rs [][2]uint64, addr uint64) bool {
	for _, r := range rs {
		if r[0] <= addr && addr < r[1] {
			return true
		}
	}
	return false
}

// spanLookback bounds the spans before an address that a lookup looks at
// for one holding it (spans that start earlier and end later).
const spanLookback = 64

// findSpan is the span of ss (sorted by lo) that holds addr, the one that
// starts last when several do.
func findSpan(ss []span, addr uint64) *span {
	i := sort.Search(len(ss), func(i int) bool { return ss[i].lo > addr })
	for j := i - 1; j >= 0 && j >= i-spanLookback; j-- {
		if ss[j].lo <= addr && addr < ss[j].hi {
			return &ss[j]
		}
	}
	return nil
}

// row is the line table row that holds addr, or nil.
func (t *lineProgram) row(addr uint64) *lineRow {
	if t == nil {
		return nil
	}
	i := sort.Search(len(t.seqs), func(i int) bool { return t.seqs[i].lo > addr })
	for j := i - 1; j >= 0 && j >= i-spanLookback; j-- {
		s := &t.seqs[j]
		if s.lo <= addr && addr < s.hi {
			k := sort.Search(len(s.rows), func(k int) bool { return s.rows[k].addr > addr })
			if k == 0 {
				return nil
			}
			return &s.rows[k-1]
		}
	}
	return nil
}

func (n *fnName) symbol() string {
	if n.linkage != "" {
		return n.linkage
	}
	return n.name
}

// function is the demangled name, parameters included; a name that is
// not mangled stays as it is.
func (n *fnName) function() string {
	if n.linkage == "" {
		return n.name
	}
	if s, err := demangle.ToString(n.linkage); err == nil {
		return s
	}
	return n.linkage
}

// checkUnits refuses, before debug/dwarf parses every unit's header and
// abbreviation table, info of more than maxDWARFUnits units, or whose
// units would make it parse more than twice the abbreviation section
// (plus a MiB) in tables: many units pointing at overlapping tables. It
// returns the end of each unit, as debug/dwarf counts them (a unit of no
// bytes is none).
func checkUnits(info, abbrev []byte) (ends []dwarf.Offset, err error) {
	seen := map[uint64]bool{}
	left := 2*len(abbrev) + 1<<20
	order := dwarfOrder(info)
	for off := 0; off < len(info); {
		rest := info[off:]
		if len(rest) >= 4 && order.Uint32(rest) == 0 {
			off += 4
			continue
		}
		if len(rest) < 11 {
			return ends, nil
		}
		n := uint64(order.Uint32(rest))
		hdr := 4
		dwarf64 := false
		if n == 0xffffffff {
			if len(rest) < 23 {
				return ends, nil
			}
			n, hdr, dwarf64 = order.Uint64(rest[4:]), 12, true
			if n == 0 {
				off += hdr
				continue
			}
		}
		if n > uint64(len(rest)-hdr) {
			return ends, nil // debug/dwarf reports the damage
		}
		vers := order.Uint16(rest[hdr:])
		p := hdr + 2
		if vers >= 5 {
			p += 2
		}
		aoLen := 4 // the abbreviation offset's
		if dwarf64 {
			aoLen = 8
		}
		if p+aoLen > len(rest) {
			return ends, nil // the header is cut short: debug/dwarf reports the damage
		}
		if len(ends) == maxDWARFUnits {
			return nil, ErrBudget
		}
		ends = append(ends, dwarf.Offset(off+hdr+int(n)))
		var ao uint64
		if dwarf64 {
			ao = order.Uint64(rest[p:])
		} else {
			ao = uint64(order.Uint32(rest[p:]))
		}
		off += hdr + int(n)
		if seen[ao] || ao >= uint64(len(abbrev)) {
			continue
		}
		seen[ao] = true
		used, ok := abbrevTableLen(abbrev[ao:], left)
		if !ok {
			return nil, ErrBudget
		}
		left -= used
	}
	return ends, nil
}

// dwarfOrder is the byte order of info as debug/dwarf tells it: from the
// first unit's version, two bytes of which one is 0.
func dwarfOrder(info []byte) binary.ByteOrder {
	v := 4
	if len(info) >= 4 && binary.LittleEndian.Uint32(info) == 0xffffffff {
		v = 12
	}
	if len(info) >= v+2 && info[v] == 0 && info[v+1] != 0 {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// abbrevTableLen is the bytes of the abbreviation table at the start of b,
// walked no further than max bytes (ok false beyond).
func abbrevTableLen(b []byte, max int) (int, bool) {
	p := 0
	uleb := func() uint64 {
		var v uint64
		for shift := 0; p < len(b); shift += 7 {
			c := b[p]
			p++
			if shift < 64 {
				v |= uint64(c&0x7f) << shift
			}
			if c&0x80 == 0 {
				break
			}
		}
		return v
	}
	for p < len(b) && p <= max {
		if uleb() == 0 {
			break
		}
		uleb()
		p++ // children
		for p < len(b) && p <= max {
			at, form := uleb(), uleb()
			if at == 0 && form == 0 {
				break
			}
			if form == 0x21 { // DW_FORM_implicit_const
				uleb()
			}
		}
	}
	return p, p <= max
}

// readLineHeader reads the header of the line table at off: its files,
// each with the directory it is in, and the bytes of its program. It
// refuses a line table that debug/dwarf would read with allocations that a
// few bytes of the file decide: more than maxLineFiles directories or
// files, their joined paths beyond maxLinePaths bytes, path forms that take
// no bytes, and DW_LNE_define_file in the program (each adds a joined
// path). A table it cannot read is nil: damage it does not understand is
// left to debug/dwarf, which reports it. The caller charges work for the
// program's bytes before this scans them.
func readLineHeader(order binary.ByteOrder, line, lineStr, str []byte, off uint64, w *Work) (t *lineProgram, err error) {
	if off >= uint64(len(line)) {
		return nil, nil
	}
	c := lineCursor{order: order, b: line, p: int(off)}
	n := uint64(c.u32())
	dwarf64 := false
	if n == 0xffffffff {
		n, dwarf64 = c.u64(), true
	}
	if c.bad || n > uint64(len(line)-c.p) {
		return nil, nil
	}
	end := c.p + int(n)
	// The header and the program are read twice (here, and by
	// debug/dwarf's line reader): their bytes are work.
	if err := w.spend(2 * int64(end-int(off))); err != nil {
		return nil, err
	}
	c.b = line[:end]
	vers := c.u16()
	if vers < 2 || vers > 5 {
		return nil, nil
	}
	if vers >= 5 {
		c.p += 2
	}
	var hlen uint64
	if dwarf64 {
		hlen = c.u64()
	} else {
		hlen = uint64(c.u32())
	}
	if c.bad || hlen > uint64(end-c.p) {
		return nil, nil
	}
	program := c.p + int(hlen)
	c.p++ // minimum_instruction_length
	if vers >= 4 {
		c.p++
	}
	c.p += 3 // default_is_stmt, line_base, line_range
	opBase := int(c.u8())
	if c.bad || c.p+max(opBase-1, 0) > end {
		return nil, nil
	}
	opLens := line[c.p : c.p+max(opBase-1, 0)]
	c.p += len(opLens)
	// The file table, each file with its directory (joined as
	// llvm-symbolizer joins them when an answer names the file).
	t = &lineProgram{}
	var dirs []string
	var files []lineFile
	paths := 0
	if vers < 5 {
		for {
			s := c.str()
			if c.bad {
				return nil, nil
			}
			if s == "" {
				break
			}
			dirs = append(dirs, s)
			t.size += stringCost(s)
			paths += len(s)
			if len(dirs) > maxLineFiles || paths > maxLinePaths {
				return nil, errLinePaths
			}
		}
		files = append(files, lineFile{}) // files count from 1
		for {
			s := c.str()
			if c.bad {
				return nil, nil
			}
			if s == "" {
				break
			}
			d := c.uleb()
			c.uleb()
			c.uleb()
			f := lineFile{name: s}
			t.size += stringCost(s)
			paths += len(s) // and the directory it is joined to
			if d > 0 && d <= uint64(len(dirs)) {
				f.dir = dirs[d-1]
				paths += len(f.dir)
			}
			files = append(files, f)
			if len(files) > maxLineFiles || paths > maxLinePaths {
				return nil, errLinePaths
			}
		}
	} else {
		for list := 0; list < 2; list++ {
			nf := int(c.u8())
			type lf struct{ lnct, form uint64 }
			forms := make([]lf, nf)
			for i := range forms {
				forms[i] = lf{c.uleb(), c.uleb()}
			}
			count := c.uleb()
			if c.bad {
				return nil, nil
			}
			if count > 0 && nf == 0 || count > maxLineFiles {
				return nil, errLinePaths
			}
			for i := uint64(0); i < count; i++ {
				var path string
				var dir uint64
				for _, f := range forms {
					s, v, ok := c.lnct(f.form, dwarf64, lineStr, str, maxLinePaths-paths)
					if !ok {
						return nil, errLinePaths
					}
					switch f.lnct {
					case 1: // DW_LNCT_path
						path = s
					case 2: // DW_LNCT_directory_index
						dir = v
					}
					paths += len(s)
				}
				if c.bad {
					return nil, nil
				}
				t.size += stringCost(path)
				if list == 0 {
					dirs = append(dirs, path)
				} else {
					f := lineFile{name: path}
					if dir < uint64(len(dirs)) {
						f.dir = dirs[dir]
						paths += len(f.dir) // joined to it
					}
					files = append(files, f)
					if paths > maxLinePaths {
						return nil, errLinePaths
					}
				}
			}
		}
	}
	t.files = make([]lineFile, len(files))
	copy(t.files, files)
	t.joined = paths
	t.size += lineProgramCost + sliceCost(len(files), lineFileSize)
	// The program: no DW_LNE_define_file, and no DW_LNS_set_file of a
	// file past the largest int (debug/dwarf's line reader indexes its
	// files with it, negative, and panics).
	c.p = program
	for c.p < end && !c.bad {
		op := int(c.u8())
		switch {
		case op == 0:
			l := c.uleb()
			if l == 0 || l > uint64(end-c.p) {
				return nil, nil
			}
			if line[c.p] == 3 { // DW_LNE_define_file
				return nil, &UnsupportedError{Reason: "DW_LNE_define_file in a line table"}
			}
			c.p += int(l)
		case op == 9: // DW_LNS_fixed_advance_pc
			c.p += 2
		case op == 4 && op < opBase: // DW_LNS_set_file
			if c.uleb() > math.MaxInt32 {
				return nil, nil
			}
		case op < opBase:
			for k := 0; k < int(opLens[op-1]); k++ {
				c.uleb()
			}
		}
	}
	return t, nil
}

// errLinePaths is the error of a line table whose files are beyond the
// reading budget.
var errLinePaths = errors.New("dif: DWARF line table header is beyond the reading budget")

// lineCursor reads a line table header; bad is set past its end.
type lineCursor struct {
	order binary.ByteOrder
	b     []byte
	p     int
	bad   bool
}

func (c *lineCursor) take(n int) []byte {
	if c.bad || n > len(c.b)-c.p {
		c.bad = true
		return make([]byte, 8)
	}
	s := c.b[c.p : c.p+n]
	c.p += n
	return s
}

func (c *lineCursor) u8() uint8   { return c.take(1)[0] }
func (c *lineCursor) u16() uint16 { return c.order.Uint16(c.take(2)) }
func (c *lineCursor) u32() uint32 { return c.order.Uint32(c.take(4)) }
func (c *lineCursor) u64() uint64 { return c.order.Uint64(c.take(8)) }

func (c *lineCursor) uleb() uint64 {
	var v uint64
	for shift := 0; ; shift += 7 {
		b := c.u8()
		if c.bad {
			return 0
		}
		if shift < 64 {
			v |= uint64(b&0x7f) << shift
		}
		if b&0x80 == 0 {
			return v
		}
	}
}

// str reads a NUL-terminated string.
func (c *lineCursor) str() string {
	i := bytes.IndexByte(c.b[min(c.p, len(c.b)):], 0)
	if c.bad || i < 0 {
		c.bad = true
		return ""
	}
	s := string(c.b[c.p : c.p+i])
	c.p += i + 1
	return s
}

// lnct reads one field of form form: the string it names (at most left+1
// bytes of it) and the value of a constant; ok false for a form
// debug/dwarf would read as taking no bytes.
func (c *lineCursor) lnct(form uint64, dwarf64 bool, lineStr, str []byte, left int) (s string, v uint64, ok bool) {
	strAt := func(sec []byte, off uint64) string {
		if off >= uint64(len(sec)) {
			return ""
		}
		b := sec[off:]
		b = b[:min(len(b), max(left, 0)+1)]
		if i := bytes.IndexByte(b, 0); i >= 0 {
			return string(b[:i])
		}
		return string(b) // longer than left: the caller refuses it
	}
	switch form {
	case 0x08: // string
		return c.str(), 0, true
	case 0x0e, 0x1f: // strp, line_strp
		var o uint64
		if dwarf64 {
			o = c.u64()
		} else {
			o = uint64(c.u32())
		}
		if form == 0x0e {
			return strAt(str, o), 0, true
		}
		return strAt(lineStr, o), 0, true
	case 0x1d: // strp_sup
		if dwarf64 {
			c.u64()
		} else {
			c.u32()
		}
		return "", 0, true
	case 0x1a, 0x0f: // strx, udata
		return "", c.uleb(), true
	case 0x25, 0x0b: // strx1, data1
		return "", uint64(c.u8()), true
	case 0x26, 0x05: // strx2, data2
		return "", uint64(c.u16()), true
	case 0x27: // strx3
		c.take(3)
		return "", 0, true
	case 0x28, 0x06: // strx4, data4
		return "", uint64(c.u32()), true
	case 0x07: // data8
		return "", c.u64(), true
	case 0x1e: // data16
		c.take(16)
		return "", 0, true
	case 0x09: // block
		c.take(int(min(c.uleb(), uint64(len(c.b)))))
		return "", 0, true
	}
	return "", 0, false
}

func isAbsPath(p string) bool {
	return strings.HasPrefix(p, "/") || len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') || strings.HasPrefix(p, "\\\\")
}

// appendPath joins c to p as llvm's sys::path::append does (POSIX style):
// one separator between them, no cleaning.
func appendPath(p, c string) string {
	switch {
	case c == "":
		return p
	case p == "":
		return c
	case strings.HasSuffix(p, "/"):
		return p + strings.TrimLeft(c, "/")
	case strings.HasPrefix(c, "/"):
		return p + c
	}
	return p + "/" + c
}
