// Package symbolkey reads the paths that debuggers send to errata's
// symbol routes (docs/symbol-server.md): a debuginfod path (an
// organization, a build id, and the debug file, executable, source or
// section it asks for) and a symbol-server key ({file}/{key}/{file} of
// SSQP and Microsoft's symbol store), and says which stored file each
// selects, in plain values.
//
// It owns the grammar only: it imports nothing of errata, never touches
// the store or HTTP, and holds no state. The handlers package serves what
// it reads; its errors (ErrNotFound, *MalformedError) say what is wrong
// in words a debugger may show, and handlers/errors.go gives them their
// statuses.
//
// Budget: a parse takes time and memory linear in the path and allocates
// at most a few strings of it; a build id is at most 128 hex digits, a
// key's debug id 40. The forms of stored ids it produces (debug ids in
// Sentry's form, canonical source paths) are those that worker/dif gives
// the files it reads; the package's tests check that they agree.
package symbolkey
