// Package ingest turns what the readers of package dif find in a debug
// file into the store's records of it: one store.DebugFileObject per
// object, with the section table of an ELF object and the index of a
// source bundle's sources, read once so that the symbol routes never read
// them again (see docs/symbol-server.md).
//
// Both sides of an upload call it: the HTTP handler of files/dsyms/ for
// each member of its zip, and the worker's DifAssembler for each file it
// assembles from chunks; the migrate command calls SectionTable and
// SourceIndex for files stored before errata read them.
//
// It owns the conversion only: it reads through package dif, within dif's
// budget, takes an io.ReaderAt and a size, and returns plain store values.
// It never calls the store, never runs a job and knows nothing of HTTP.
package ingest
