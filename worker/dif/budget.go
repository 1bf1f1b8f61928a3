package dif

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// Budgets of the object-file readers (ELF, Mach-O, PE). None depends on a
// number written in the file: a count or a length read from it is checked
// against them before anything is read or allocated for it.
const (
	// maxObjectRead bounds the bytes one reader reads from one object
	// (one architecture of a fat Mach-O): headers, section tables, load
	// commands, names and notes together. Most are read into small fixed
	// buffers and never kept, so it bounds time more than memory.
	maxObjectRead = 8 << 20
	// maxELFSections bounds an ELF object's section count, the most the
	// format counts in its header (extended numbering may claim more).
	maxELFSections = 65535
	// maxSectionName bounds one section name that ReadELFSections reads;
	// a longer name is damage.
	maxSectionName = 1024
	// maxSectionNames bounds the name bytes ReadELFSections keeps.
	maxSectionNames = 1 << 20
	// maxMachOCommands bounds a Mach-O object's load commands (sizeofcmds).
	maxMachOCommands = 4 << 20
)

// ErrBudget is the error of a file that cannot be read within the budget
// of these readers: what they must read to know it is larger than they read.
var ErrBudget = errors.New("dif: the file's headers are beyond the reading budget")

// errOutside is the error of a read past the end of the file.
var errOutside = errors.New("dif: a header points outside the file")

// budgetReader reads an object file within maxObjectRead bytes.
type budgetReader struct {
	r    io.ReaderAt
	size int64
	left int64 // bytes that may still be read
}

func newBudgetReader(r io.ReaderAt, size int64) *budgetReader {
	return &budgetReader{r: r, size: size, left: maxObjectRead}
}

// readAt fills buf from offset off: errOutside when that is past the end
// of the file, ErrBudget when the budget is spent.
func (b *budgetReader) readAt(buf []byte, off uint64) error {
	n := uint64(len(buf))
	if off > uint64(b.size) || n > uint64(b.size)-off {
		return errOutside
	}
	if int64(n) > b.left {
		return ErrBudget
	}
	b.left -= int64(n)
	if k, err := b.r.ReadAt(buf, int64(off)); k < len(buf) {
		return fmt.Errorf("dif: reading: %w", err)
	}
	return nil
}

// table reads a table of count entries of entSize bytes from offset off,
// a window of entries at a time into one small buffer, and calls fn with
// each entry's bytes (valid until fn returns) until fn returns false.
type table struct {
	b              *budgetReader
	off            uint64
	count, entSize uint64
}

// tableWindow is the most bytes of a table read at once.
const tableWindow = 4 << 10

func (t table) each(fn func(i uint64, ent []byte) bool) error {
	size := uint64(t.b.size)
	if t.entSize == 0 || t.entSize > tableWindow || t.count > size/t.entSize || t.off > size-t.count*t.entSize {
		return errOutside
	}
	per := tableWindow / t.entSize
	buf := make([]byte, per*t.entSize)
	for i := uint64(0); i < t.count; i += per {
		n := min(per, t.count-i)
		w := buf[:n*t.entSize]
		if err := t.b.readAt(w, t.off+i*t.entSize); err != nil {
			return err
		}
		for k := range n {
			if !fn(i+k, w[k*t.entSize:(k+1)*t.entSize]) {
				return nil
			}
		}
	}
	return nil
}

// Work is what one request may spend parsing DWARF units on first use
// (dwarfunits.go): the steps it may still take (a byte of a line program
// read, a row of one, an entry of .debug_info, a range), and the context
// that stops a parse when the request ends. A request makes one and passes
// it to each of its lookups (Resolver.ResolveWork): the parses its lookups
// trigger are charged to it, and run in the slots it names.
type Work struct {
	ctx   context.Context
	slots func() (release func(), err error)
	left  atomic.Int64
}

// maxWork bounds the steps of one Work: one to three seconds of one core
// (a step of a line program takes about 50 ns, an entry up to 170 ns),
// six times the steps of parsing every unit of a 9 MB Go binary. A request
// that spends it answers the frames it has not parsed as beyond the
// budget; the units it parsed stay for the next request.
const maxWork = 1 << 24

// workCheck is the steps between two looks at the context.
const workCheck = 1 << 12

// errWorkSpent is the error of a lookup whose request has spent its Work:
// the unit stays unparsed, for a lookup of another request.
var errWorkSpent = fmt.Errorf("%w: the request has spent its DWARF parsing budget", ErrBudget)

// NewWork returns the Work of a request whose context is ctx. slots, when
// not nil, is called before a unit is parsed and its release after: the
// parse slots the caller bounds parses with.
func NewWork(ctx context.Context, slots func() (release func(), err error)) *Work {
	w := &Work{ctx: ctx, slots: slots}
	w.left.Store(maxWork)
	return w
}

// Spent is the steps w has taken.
func (w *Work) Spent() int64 { return maxWork - w.left.Load() }

// spend takes n steps: errWorkSpent past the budget, the context's error
// once it is done (looked at every workCheck steps). A nil Work is the
// reading of a file, bounded by its parse slot and its budgets.
func (w *Work) spend(n int64) error {
	if w == nil {
		return nil
	}
	left := w.left.Add(-n)
	if left < 0 {
		return errWorkSpent
	}
	if (left+n)/workCheck != left/workCheck {
		return w.ctx.Err()
	}
	return nil
}

// stopped reports whether err is the request's rather than the file's:
// its Work spent or its context done.
func (w *Work) stopped(err error) bool {
	return w != nil && (errors.Is(err, errWorkSpent) || w.ctx.Err() != nil && errors.Is(err, w.ctx.Err()))
}

// enter waits for the slots of a parse.
func (w *Work) enter() (release func(), err error) {
	if err := w.ctx.Err(); err != nil {
		return nil, err
	}
	if w.slots == nil {
		return func() {}, nil
	}
	return w.slots()
}
