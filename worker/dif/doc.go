// Package dif reads the identity of debug information files (debug id, code
// id, architecture, object kind) from their own bytes, so that an upload
// whose content contradicts the debug id it was sent with can be refused.
//
// It owns parsing only: it never touches the store or the network, and every
// read is bounded by the size of the input it is given.
package dif
