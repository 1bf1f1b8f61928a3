package dif

import (
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
	arches, fat, err := readFatArches(r, size)
	if !fat {
		return ReadMachODWARF(r, size)
	}
	if err != nil {
		return nil, err
	}
	for _, a := range arches {
		slice := io.NewSectionReader(r, a.off, a.length)
		o, err := machoObject(slice, a.length)
		if err != nil || !SameDebugID(o.DebugID, debugID) {
			continue
		}
		return ReadMachODWARF(slice, a.length)
	}
	return nil, fmt.Errorf("dif: no architecture of the fat Mach-O has the debug id %s", debugID)
}
