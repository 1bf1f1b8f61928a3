// Package proguard reads ProGuard and R8 mapping files (-printmapping) and
// remaps obfuscated classes, methods and line numbers to the original
// ones, inlined methods included: one obfuscated frame whose line falls in
// an inlining range becomes the chain of original frames, innermost first,
// as ProGuard's own retrace prints it.
//
// It owns parsing only: it imports nothing of errata, never touches the
// store or the network, and returns plain values.
//
// Budget: Parse reads a mapping of at most MaxSize bytes held in memory by
// the caller and keeps it: every name is a substring of it. Per class it
// takes one map entry, per method line one 40-byte record; a record needs
// a line of at least 8 bytes, so the parsed mapping takes at most about 10
// times the size of its input whatever the numbers in it say. Size counts
// what it holds, the text included, as a test measures it with the heap;
// ParseWithin refuses (ErrTooLarge) a mapping that would hold more than a
// caller's bound, before copying its text when the text alone is over.
// Line numbers
// beyond 2^31 make a line unreadable; lines it cannot read are skipped
// (a damaged line costs only its own frames), as symbolicator does.
// A line that many methods share remaps to them all: RemapIn builds
// only the first frames a caller keeps, and counts the others. A frame
// reads every line of its obfuscated method's name: RemapIn takes them
// from the caller's Context.Work (MaxWork a request), so that a mapping
// whose lines all share a name costs a bounded time over many frames.
//
// R8's metadata, the JSON comments below a class or method line that R8's
// retrace documents, is read as R8's retrace reads it (RemapIn):
// sourceFile names a class's file; com.android.tools.r8.synthesized marks
// a class or a method the compiler made, whose frames a caller may leave
// out; com.android.tools.r8.outline marks an outline, whose frame gives
// its position to the frame that called it, remapped at the line its
// outlineCallsite gives for that position; rewriteFrame rules remove the
// innermost frames of the top frame of a stack trace that threw the
// exception they name. Method lines without a range, or with 0:0, and
// frames without a line remap as R8's retrace does. A comment is read as
// metadata only when it is at most 64 KiB of JSON (or of gson's lenient
// form, which R8's documentation writes); one errata cannot read or does
// not know is a comment and changes nothing. What the metadata holds (a
// mark, a rule, an outline position, a file name) is charged to Size at
// what it takes in memory, as a test measures it, so the bound above
// holds with metadata too.
package proguard
