// Package dif reads the identity of debug information files (debug id, code
// id, architecture, object kind) from their own bytes, so that an upload
// whose content contradicts the debug id it was sent with can be refused.
//
// Formats: ELF, Mach-O (thin and fat), PE, PDB, Breakpad, source bundles,
// ProGuard mappings and Dart symbol maps (read.go dispatches on the bytes;
// ReadUpload checks an upload's debug id). zipdir.go checks a zip's central
// directory before archive/zip reads it, for every zip errata opens.
//
// It owns parsing only: it never touches the store or the network, and every
// read is bounded by the size of the input it is given.
package dif
