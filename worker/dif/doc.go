// Package dif reads the identity of debug information files (debug id, code
// id, architecture, object kind) from their own bytes, so that an upload
// whose content contradicts the debug id it was sent with can be refused.
//
// Formats: ELF, Mach-O (thin and fat), PE, PDB, Breakpad, source bundles,
// ProGuard mappings and Dart symbol maps (read.go dispatches on the bytes;
// ReadUpload checks an upload's debug id). zipdir.go checks a zip's central
// directory before archive/zip reads it, for every zip errata opens.
// ReadELFSections lists an ELF object's section table.
//
// It owns parsing only: it never touches the store or the network, and every
// read is bounded by the size of the input it is given.
//
// It is a leaf library of file-format readers, used by the HTTP handlers
// (uploads, the symbol routes, stack-trace resolution) and by the jobs of
// package worker alike: it imports nothing of errata, takes an io.ReaderAt
// (or an io.Reader) and a size, and returns plain values (Object, Section,
// Resolver, Frame). Turning them into the store's records is package
// ingest's work (worker/ingest).
//
// Budget: what a reader takes does not depend on any count or length
// written in the file. The readers of ELF, Mach-O and PE are errata's own,
// never debug/elf, debug/macho or debug/pe: they read headers, section
// tables, load commands, names and notes through small fixed buffers, at
// most maxObjectRead bytes of one object, at most maxELFSections ELF
// sections, maxFatArches architectures and maxMachOCommands bytes of load
// commands; they never read a symbol table (budget.go). A PDB is read a
// few words of its directory at a time, a Breakpad file a line into one
// buffer, a source bundle's zip directory walked and not kept, its
// manifest at most maxBundleManifest bytes. A file whose identity cannot
// be read within the budget is refused (ErrBudget); damage elsewhere (a
// section header outside the file, a name outside the name table) is
// passed over, and the file keeps its identity.
package dif
