package symbolication

import (
	"errors"
	"fmt"
)

// Limits of a resolution request shared by the JavaScript and JVM engines,
// beside the body limit of the routes (docs/resolution.md).
const (
	// MaxFrames bounds the frames of a request, all stack traces together.
	MaxFrames = 10_000
	// MaxModules bounds the modules of a request.
	MaxModules = 1_000
	// MaxFiles bounds the distinct files a request resolves: the abs_path
	// values of JavaScript frames, the ProGuard mappings of JVM modules.
	MaxFiles = 200
	// MaxReadBytes bounds the bytes of stored files one request reads and
	// parses; a file found in a cache costs nothing.
	MaxReadBytes = 256 << 20
)

// ErrBudget is the error of a request that would read or parse more bytes
// of stored files than its budget: errors.Is finds it in a *LimitError of
// ReadBytes, ParseBytes or HeldBytes. The DebugFileCache keeps no failure
// of it.
var ErrBudget = errors.New("the request's budget of bytes is spent")

// Limit names one of a request's limits that a resolution enforces as it
// goes.
type Limit int

const (
	// ParseBytes: the bytes of debug files one native request parses.
	ParseBytes Limit = iota
	// ReadBytes: the bytes of stored files one JavaScript or JVM request
	// reads (MaxReadBytes).
	ReadBytes
	// Files: the distinct files one JavaScript request resolves
	// (MaxFiles).
	Files
	// AnswerBytes: the bytes of one answer's JSON (MaxAnswerBytes).
	AnswerBytes
	// HeldBytes: the bytes of parsed files one request holds (its
	// Budget's: the bound of the cache of its engine).
	HeldBytes
)

// LimitError stops a request that goes beyond Limit, whose bound is Max.
type LimitError struct {
	Limit Limit
	Max   int64
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case ParseBytes:
		return fmt.Sprintf("the request would parse more than %d bytes of debug files", e.Max)
	case ReadBytes:
		return fmt.Sprintf("the request reads more than %d bytes of stored files", e.Max)
	case AnswerBytes:
		return fmt.Sprintf("the answer would be larger than %d bytes", e.Max)
	case HeldBytes:
		return fmt.Sprintf("the request would hold more than %d bytes of parsed files", e.Max)
	}
	return fmt.Sprintf("the request resolves more than %d distinct files", e.Max)
}

// Is reports whether target is ErrBudget and e a budget of bytes.
func (e *LimitError) Is(target error) bool {
	return target == ErrBudget && e.Limit != Files && e.Limit != AnswerBytes
}

// InvalidError is a request whose value at Loc (a path from "body") is
// not one the engine takes; Msg says what it should be.
type InvalidError struct {
	Msg string
	Loc []any
}

func (e *InvalidError) Error() string { return fmt.Sprintf("%v: %s", e.Loc, e.Msg) }

// Invalid returns an *InvalidError.
func Invalid(msg string, loc ...any) error { return &InvalidError{Msg: msg, Loc: loc} }
