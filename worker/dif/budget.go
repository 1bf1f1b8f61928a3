package dif

import (
	"errors"
	"fmt"
	"io"
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
