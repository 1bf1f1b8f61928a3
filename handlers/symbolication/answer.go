package symbolication

import (
	"unicode/utf8"

	"errata/handlers/appendjson"
)

// Bounds of one resolution's answer (docs/resolution.md). A frame repeats
// what its file says (a name, a path, an inline expansion) once for every
// input frame that falls there: without them a name of 256 KiB in an
// upload of a few hundred bytes, or a ProGuard line shared by 200,000
// methods, makes an answer of a gigabyte.
const (
	// MaxNameBytes bounds each name a frame answers from a file or
	// repeats from a module (function, symbol, abs_path, filename,
	// package, module, class, source map URL): a longer one is cut at a
	// character boundary and ends with NameCut, MaxNameBytes in all.
	MaxNameBytes = 1024
	// MaxFrameExpansion bounds the frames one input frame answers
	// (inlined calls, the methods of a ProGuard line): the first ones,
	// innermost first, are kept, and the outermost kept says how many
	// were left out (frames_omitted).
	MaxFrameExpansion = 64
	// MaxAnswerBytes bounds the JSON of one answer, counted as the engine
	// builds it: beyond, the request is a *LimitError of AnswerBytes
	// (422), before the answer is written.
	MaxAnswerBytes = 32 << 20
)

// NameCut ends a name cut to MaxNameBytes.
const NameCut = "..."

// CutName returns s, or s cut to MaxNameBytes (NameCut included) at a
// character boundary when it is longer.
func CutName(s string) string {
	if len(s) <= MaxNameBytes {
		return s
	}
	n := MaxNameBytes - len(NameCut)
	// Back to the start of the character cut, if it is one (invalid
	// UTF-8 is cut where it stands).
	for k := n; k > n-utf8.UTFMax && k > 0; k-- {
		if utf8.RuneStart(s[k]) {
			n = k
			break
		}
	}
	return s[:n] + NameCut
}

// Expansion returns the first MaxFrameExpansion of the n frames one input
// frame expands to (n, with none left out, when there are not more), and
// how many are left out.
func Expansion(n int) (kept, omitted int) {
	if n <= MaxFrameExpansion {
		return n, 0
	}
	return MaxFrameExpansion, n - MaxFrameExpansion
}

// Answer counts the bytes of one answer's JSON as an engine builds it, so
// that an answer past MaxAnswerBytes is refused before it is held whole.
// The zero value is an empty answer.
type Answer struct {
	bytes int64
}

// errAnswer stops an answer past MaxAnswerBytes.
var errAnswer = &LimitError{Limit: AnswerBytes, Max: MaxAnswerBytes}

// Charge counts fixed bytes (keys, numbers, punctuation) and the JSON
// strings of ss; past MaxAnswerBytes it is a *LimitError of AnswerBytes.
func (a *Answer) Charge(fixed int, ss ...string) error {
	n := int64(fixed)
	for _, s := range ss {
		n += int64(appendjson.StringLen(s))
	}
	a.bytes += n
	if a.bytes > MaxAnswerBytes {
		return errAnswer
	}
	return nil
}

// Bytes is what the answer has been charged.
func (a *Answer) Bytes() int64 { return a.bytes }
