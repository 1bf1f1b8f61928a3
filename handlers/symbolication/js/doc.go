// Package js is the engine of JavaScript stack-trace resolution
// (docs/resolution.md): minified frames resolved through source maps,
// found by the debug id of the frame's module among the project's artifact
// bundles, then among the files of the request's release by URL (the
// minified file's Sourcemap header or sourceMappingURL comment, a map
// inline in it as a data: URL included), with the source context of each
// frame's line from the map's sourcesContent or the stored original
// source.
//
// It owns the request and answer types of the route symbolicate-js/, the
// lookup rules (decorations read off abs_path, candidate URLs, ~/ paths,
// source URLs joined against the map's, as Sentry has them), the resolution and the answer's hand-written JSON
// (Response.AppendJSON, with the JSON of each file's and source's names
// made once and kept with the parsed map). Stored files are read through
// errata/store and maps parsed by errata/worker/dif/sourcemap; parsed maps,
// the map references of minified files and original sources are kept in
// the MapCache by SHA-1, so that a second request over the same bundle
// parses nothing, and a cached file counts as used at most every ten
// minutes.
//
// Budgets, per request: at most symbolication.MaxFrames frames and
// symbolication.MaxModules modules (the route checks these before the
// engine runs); at most symbolication.MaxFiles (200) distinct abs_path
// values and symbolication.MaxReadBytes (256 MiB) of stored files read
// and parsed, inline maps' decoded bytes included, a file found in the
// cache costing nothing (*symbolication.LimitError beyond either). No
// minified file larger than 32 MiB is read for its reference
// (missing_sourcemap), no map larger than sourcemap.MaxSize (64 MiB)
// (malformed_sourcemap) and no original source larger than 8 MiB (no
// context: missing_source_content), nor a script without its map larger
// than 8 MiB for its own lines of context (none then). Held: a parsed map is charged to the
// cache and to the request's symbolication.Budget (the cache's bound:
// MapCache.EntryBound) at its size and the budget of the source names it
// keeps for two URLs (a quarter of the map's size each, and 64 KiB), an
// original source at its length; a map is parsed within two thirds of
// what the request has left (sourcemap.ParseWithin): one larger than the
// cache takes is malformed_sourcemap, kept so under its SHA-1, one larger
// than what the request has left a *symbolication.LimitError of
// HeldBytes. The frame loop stops once the request's context ends.
// The scope index of a minified file (scopes.go, for the frames no caller
// names) is read within the same bytes, cached under the file's SHA-1 and
// charged to the cache and the request at its size (jsscope.Index.Size);
// a file larger than jsscope.MaxBytes, or one the request has no budget
// left for (its bytes, held while they are scanned, or its index), has
// none.
// The index of the lines of every source a map carries counts in its
// cache entry (symbolication.IndexSize), made on first use; an original
// source is cached with the index of its lines, charged at both. Per
// frame: a lookup halves the segments of its line (sourcemap.Map.Lookup)
// and its context reads its own lines through the index
// (symbolication.Source.Context), so neither grows with the map or the
// source. Context lines are cut to 140 bytes around the column. A position
// whose source is a stored file with its own map is followed into it
// (transitive.go): at most 3 maps further, each file looked up once a
// request and at most symbolication.MaxFiles of them, its map read and
// held within the same budgets.
// Answered: each name a frame takes from a map (function, abs_path,
// filename, the map's URL in data.sourcemap) cut to
// symbolication.MaxNameBytes (1 KiB, ending with "...": a source is still
// looked up by its whole URL), and at most symbolication.MaxAnswerBytes (32
// MiB) of JSON, raw_stacktraces and errors included, counted as the frames
// are made (*symbolication.LimitError of AnswerBytes beyond, before the
// answer is written).
package js
