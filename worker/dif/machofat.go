package dif

import (
	"debug/macho"
	"encoding/binary"
	"fmt"
	"io"
)

// ReadMachODWARFFor reads the DWARF of the Mach-O object whose debug id is
// debugID into a Resolver, as ReadMachODWARF does: the file itself when it
// is thin, else the architecture of the fat file (a universal dSYM or
// executable) whose LC_UUID is debugID, found as ReadMachO finds them (at
// most maxFatArches architectures, each identified within maxObjectRead
// bytes) and read within the budgets of ReadMachODWARF as a file of its
// own size. A fat file without that architecture is an error.
func ReadMachODWARFFor(r io.ReaderAt, size int64, debugID string) (*Resolver, error) {
	var head [8]byte
	if _, err := r.ReadAt(head[:], 0); err != nil || binary.BigEndian.Uint32(head[:]) != macho.MagicFat {
		return ReadMachODWARF(r, size)
	}
	n := binary.BigEndian.Uint32(head[4:])
	if n == 0 || n > maxFatArches {
		return nil, fmt.Errorf("dif: a fat Mach-O of %d architectures", n)
	}
	arches := make([]byte, 20*n)
	if _, err := r.ReadAt(arches, 8); err != nil {
		return nil, fmt.Errorf("dif: not a fat Mach-O object: %w", err)
	}
	for i := range n {
		a := arches[20*i:]
		off, length := int64(binary.BigEndian.Uint32(a[8:])), int64(binary.BigEndian.Uint32(a[12:]))
		if off > size || length > size-off {
			return nil, fmt.Errorf("dif: fat Mach-O architecture %d is outside the file", i)
		}
		slice := io.NewSectionReader(r, off, length)
		o, err := machoObject(slice, length)
		if err != nil || !SameDebugID(o.DebugID, debugID) {
			continue
		}
		return ReadMachODWARF(slice, length)
	}
	return nil, fmt.Errorf("dif: no architecture of the fat Mach-O has the debug id %s", debugID)
}
