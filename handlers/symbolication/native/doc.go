// Package native is the engine of native stack-trace resolution
// (docs/resolution.md): the frames of a crashed process, given as
// instruction addresses in the images (modules) it had loaded, resolved
// to functions, files and lines through the debug files a project
// uploaded (ELF and Mach-O with DWARF, PDB, PE, Breakpad), inlined calls
// given back as frames of their own, with source context from the
// module's source bundle.
//
// It owns the request and answer types of the route symbolicate/, their
// validation (Request.Validate), the ranking of a module's candidate files
// (DWARF first, then PDB, then a PE image's DWARF, then Breakpad; newest
// first in each), the resolution of each frame (absolute or rel:N
// addresses, return addresses moved back one byte) and the source
// context. Files are read through errata/store and parsed by
// errata/worker/dif; a parsed file is kept in the DebugFileCache by its
// SHA-1 (and debug id, for an architecture of a fat Mach-O), which parses
// one file at a time per organization and two in all, and parses a file
// wanted by several requests at once once.
//
// Budgets, per request: at most 500 modules and 5,000 frames (all stack
// traces together), checked before any file is read; no debug file larger
// than 4 GiB is parsed (its candidate is malformed); at most 8 GiB of
// debug files parsed, files found in the cache costing nothing
// (*symbolication.LimitError of ParseBytes beyond); at most 32 MiB of
// sources read from source bundles for context, the index of their lines
// counted (symbolication.Source: 4 bytes for 256 bytes of text). Each
// source bundle is read once a request, its manifest decoded once,
// however many modules share it; each frame's context reads its own lines
// through the index, never its file from the start. Held: what the resolvers
// keep is bounded by the readers of worker/dif and counted by the cache
// (DEBUG_FILE_CACHE_BYTES), units parsed during a resolution included;
// the resolvers one request holds, found cached or parsed, are charged to
// its symbolication.Budget (the cache's bound) at dif.Resolver.Size when
// it takes them: a module whose resolver would take it past is malformed
// (its candidate says why) and no file is parsed after it. The frame loop
// stops once the request's context ends. Context lines are cut to 140
// bytes around the column.
// Answered: each name a frame repeats from a file or a module (function,
// symbol, abs_path, filename, package) cut to symbolication.MaxNameBytes (1
// KiB, ending with "..."); at most symbolication.MaxFrameExpansion (64)
// frames for an input frame's inlined calls, the innermost, the outermost
// kept saying how many were left out (frames_omitted); and at most
// symbolication.MaxAnswerBytes (32 MiB) of JSON, counted as the modules
// (their candidates included), the frames and their context are made
// (*symbolication.LimitError of AnswerBytes beyond, before the answer is
// written).
package native
