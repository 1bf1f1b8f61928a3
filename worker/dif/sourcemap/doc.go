// Package sourcemap decodes source maps (revision 3: VLQ mappings,
// sources, names, sourcesContent, sourceRoot, and index maps with
// sections) and looks up a generated position's original position, with
// the semantics of Mozilla source-map's originalPositionFor under its
// default bias (the segment of the same generated line with the greatest
// column not after the asked one) and of @jridgewell/trace-mapping's
// originalPositionFor.
//
// It owns parsing only: it imports nothing of errata, never touches the
// store or the network, and returns plain values.
//
// Budget: Parse reads a map of at most MaxSize bytes held in memory by the
// caller. The mappings are decoded into one array of 16-byte segments, one
// of their 4-byte generated columns (and one of every 16th of these, the
// blocks a lookup halves first) and one of 4-byte line starts, each sized
// by counting the separators of the mappings string before anything is
// allocated, so none grows with a number written in the file: at most
// (len(mappings)+1)/2 segments and len(mappings)+1 lines, and never more
// than MaxSegments segments in a whole map (sections included).
//
// Validity, as the specification (ECMA-426) and TC39's source-map tests
// state it, refused as ErrMalformed: a version other than the number 3 (or
// none); fields of another type than the specification's (sources and
// sourcesContent lists of strings or nulls, names a list of strings, file
// and sourceRoot strings, mappings a string, ignoreList and
// x_google_ignoreList lists of indexes of sources); a regular map without
// sources or mappings, an index map with mappings; an empty segment (a
// comma with no segment before or after it in its line), a segment of 2,
// 3 or more than 5 fields; VLQ values beyond 32-bit signed ones (any
// number of digits of zeros may pad a value: they cost a step each, and
// hold nothing); indexes outside sources or names, negative positions or
// positions beyond 2^31-1; sections that nest deeper than MaxDepth, are not
// in order, or start at or before the last mapping of the one before.
// Unknown fields are ignored. A position's source is Ignored when the
// ignoreList (else x_google_ignoreList) names it: one byte a source. A lookup halves the columns of its line,
// to the first of equal ones too: it reads about 2 log2(n) columns of a
// line of n segments, however many share a column. Sources,
// names and source contents are the JSON strings of the map, so their size
// is bounded by its size. Beside the input, a parsed map takes at most
// about 10 times the size of its mappings plus that of its strings: Size
// counts it, as a test measures it with the heap, and ParseWithin refuses
// (ErrTooLarge) a map that would hold more than a caller's bound, known
// from the separators before the mappings are decoded.
package sourcemap
