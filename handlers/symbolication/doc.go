// Package symbolication holds what the three stack-trace resolution
// engines share (docs/resolution.md): the caches of parsed files, each
// bounded in bytes, the source context of a frame, and the limits and
// typed errors of a request. The engines are the packages below it:
// native (debug files: ELF, Mach-O, PE, PDB, Breakpad), js (source maps)
// and jvm (ProGuard mappings).
//
// DebugFileCache keeps parsed debug files (their resolvers) by SHA-1; it
// admits parses one at a time per organization and two at a time in all,
// and a file wanted by several requests at once is parsed once. MapCache
// keeps parsed source maps, the sourceMappingURL of minified files,
// original sources and ProGuard mappings by what they are and SHA-1.
// Source is a text with the index of its lines, built once per source
// (NewSource: 4 bytes for every 256 bytes of text, whatever its number of
// lines; Size charges both): its Context cuts the lines around a frame's
// line, for native and JavaScript frames alike, reading those lines and
// at most 512 bytes more for each, so that the work of a frame never grows
// with the source.
//
// The bounds of an answer are here for the three
// engines: CutName cuts a name a frame repeats to MaxNameBytes, Expansion
// keeps MaxFrameExpansion of the frames one input frame becomes, and
// Answer counts the bytes of an answer as it is made, up to
// MaxAnswerBytes.
//
// Each cache counts an entry at what its parser says it holds
// (sourcemap.Map.Size, proguard.Mapping.Size, dif.Resolver.Size), sizes
// that tests hold between what the heap holds and twice that, so that its
// bound is the memory it holds. A request's Budget is its cache's bound:
// what it holds of the files it parsed or found cached, charged at the
// same sizes, a parse given what is left as its own bound; a file larger
// than the cache takes is refused, and the refusal kept by SHA-1. Slots
// bound the work that runs at once, per organization and in all: the
// DebugFileCache's parses, and the routes' resolutions and inflated
// sources.
//
// The package and the engines read stored files through errata/store and
// parse them with the readers of errata/worker/dif; they know nothing of
// HTTP. An engine's errors are store's, *LimitError (a budget spent, too
// many files) and *InvalidError (a value of the request it does not
// take): the routes in errata/handlers map them to their answers.
package symbolication
