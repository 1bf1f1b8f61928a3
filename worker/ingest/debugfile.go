package ingest

import (
	"io"

	"errata/store"
	"errata/worker/dif"
)

// DebugFileObjects are the store's records of objs, read from the file
// content of size bytes uploaded under name: an ELF object's record holds
// its section table, and a source bundle's the index of its sources, read
// here once, for the symbol routes.
func DebugFileObjects(objs []dif.Object, name string, content io.ReaderAt, size int64) []store.DebugFileObject {
	out := make([]store.DebugFileObject, len(objs))
	for i, o := range objs {
		out[i] = store.DebugFileObject{
			DebugID: o.DebugID, CodeID: o.CodeID, ObjectName: store.ObjectNameOf(name, o.Kind),
			CPUName: o.Arch, FileFormat: o.Kind, Type: o.Type, Features: o.Features,
		}
		switch o.Kind {
		case "elf":
			t := SectionTable(content, size)
			out[i].Sections = &t
		case "sourcebundle":
			x := SourceIndex(content, size)
			out[i].Sources = &x
		}
	}
	return out
}

// SourceIndex reads where each source of the source bundle content of
// size bytes lies, by canonical path, within the readers' budget: an index
// that cannot be read is Beyond (its sources are then not served).
func SourceIndex(content io.ReaderAt, size int64) store.SourceIndex {
	members, err := dif.SourceBundleIndex(content, size)
	if err != nil {
		return store.SourceIndex{Beyond: true}
	}
	x := store.SourceIndex{Members: make(map[string]store.SourceMember, len(members))}
	for p, m := range members {
		x.Members[p] = store.SourceMember{Offset: m.Offset, CSize: m.CSize, Size: m.Size, Method: m.Method, CRC: m.CRC}
	}
	return x
}

// SectionTable reads the section table of the ELF file content of size
// bytes within the readers' budget: a table beyond it, or that cannot be
// read at all, is Beyond (the file is then served whole, never by
// section).
func SectionTable(content io.ReaderAt, size int64) store.SectionTable {
	secs, err := dif.ReadELFSections(content, size)
	if err != nil {
		return store.SectionTable{Beyond: true}
	}
	t := store.SectionTable{Sections: make([]store.ELFSection, len(secs))}
	for i, s := range secs {
		t.Sections[i] = store.ELFSection{Name: s.Name, Type: uint32(s.Type), Flags: uint64(s.Flags),
			Offset: s.Offset, Size: s.Size, Damaged: s.Damaged}
	}
	return t
}
