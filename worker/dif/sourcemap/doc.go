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
// than MaxSegments segments in a whole map (sections included). VLQ
// values beyond 32 bits, indexes outside sources or names, negative
// positions, sections that nest deeper than MaxDepth or are not in order
// are refused as ErrMalformed. A lookup halves the columns of its line,
// to the first of equal ones too: it reads about 2 log2(n) columns of a
// line of n segments, however many share a column. Sources,
// names and source contents are the JSON strings of the map, so their size
// is bounded by its size. Beside the input, a parsed map takes at most
// about 10 times the size of its mappings plus that of its strings: Size
// counts it, as a test measures it with the heap, and ParseWithin refuses
// (ErrTooLarge) a map that would hold more than a caller's bound, known
// from the separators before the mappings are decoded.
package sourcemap
