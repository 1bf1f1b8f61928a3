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
//
// The DWARF resolver (dwarf.go, dwarfunits.go) reads at most eight times
// the file's size plus 1 MiB of sections, decompressed, and never more
// than 160 MiB (maxDWARFBytes); it keeps them until every unit is parsed.
// A compressed section (zlib, or zstd through klauspost/compress, since
// the standard library has no zstd decoder) is charged its declared size
// before it is decoded into exactly that size: a zstd frame's own window
// or content size cannot raise it, and its compressed bytes are charged
// while they are held.
// Its index of units and the units it parses, each charged at what it
// holds (paths, rows, sequences, functions and names, as the runtime
// allocates them; a test measures each with the heap), take at most
// 128 MiB (maxDWARFIndex): past it, the units parsed before are dropped,
// and a unit beyond it alone is ErrBudget. Size reports all of it, so that
// a cache charged with Size holds what it says. A unit is parsed the first
// time an address falls in it, charged to the Work of the request whose
// lookup triggers it: at most maxWork steps (a byte of line program read,
// a row, an entry, a range), stopped when the request's context is done,
// in the parse slots the request names; a parse stopped leaves the unit
// for the next request. The parses of one file, all requests together,
// take at most fileWork steps a byte of its sections plus maxWork; its
// units left then are ErrBudget. A line program is read once however many
// units point at it, and the units without ranges are found through one
// index of their functions, built once.
package dif
