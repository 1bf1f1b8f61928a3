package symbolication

import (
	"strings"
	"unicode/utf8"
)

// Lines of source context are cut as symbolicator cuts them: a line longer
// than maxContextLine bytes keeps contextLineWidth bytes around the frame's
// column (contextLineLead of them before it), marked "{snip}" where it was
// cut. An answer is then bounded by its frames, not by the length of a line
// in an uploaded file: a bundle's one-line source would otherwise repeat in
// full in each of thousands of frames.
const (
	maxContextLine   = 150
	contextLineWidth = 140
	contextLineLead  = 60
)

// trimContextLine cuts line around column (0-based, in bytes), on rune
// boundaries.
func trimContextLine(line string, column int) string {
	n := len(line)
	if n <= maxContextLine {
		return line
	}
	column = min(max(column, 0), n)
	start := max(column-contextLineLead, 0)
	if start < 5 { // close to the edge: keep the edge
		start = 0
	}
	end := min(start+contextLineWidth, n)
	if end > n-5 {
		end = n
	}
	if end == n { // at the end: still a whole width
		start = max(end-contextLineWidth, 0)
	}
	start, end = runeStart(line, start), runeStart(line, end)
	out := line[start:end]
	if start > 0 {
		out = "{snip} " + out
	}
	if end < n {
		out += " {snip}"
	}
	return out
}

// runeStart moves i back to the first byte of the rune it falls in.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// ContextLines is how many lines of source context go on each side of a
// frame's line.
const ContextLines = 5

// TextEnd says how Context reads a newline that ends a text.
type TextEnd int

const (
	// EndsLastLine: a newline at the end of the text ends its last line,
	// and starts no line after it as post context (JavaScript sources).
	EndsLastLine TextEnd = iota
	// StartsEmptyLine: a newline at the end of the text starts one more,
	// empty line, as strings.Split reads it (the files of a source
	// bundle); a carriage return is cut only before a newline.
	StartsEmptyLine
)

// Context returns up to ContextLines lines of text before line (0-based),
// the line and up to ContextLines after it, each cut around column
// (0-based) when long (trimContextLine). ctx is nil when text has no such
// line. It is the source context of native and JavaScript frames alike
// (docs/resolution.md); it walks to the lines wanted without splitting the
// whole text.
func Context(text string, line, column int, end TextEnd) (pre []string, ctx *string, post []string) {
	pre, post = []string{}, []string{}
	first := max(line-ContextLines, 0)
	rest := text
	for i := 0; i < first; i++ {
		j := strings.IndexByte(rest, '\n')
		if j < 0 {
			return pre, nil, post
		}
		rest = rest[j+1:]
	}
	for i := first; i <= line+ContextLines; i++ {
		if rest == "" && i > line && end == EndsLastLine {
			break
		}
		l, next, found := strings.Cut(rest, "\n")
		if found || end == EndsLastLine {
			l = strings.TrimSuffix(l, "\r")
		}
		l = trimContextLine(l, column)
		switch {
		case i < line:
			pre = append(pre, l)
		case i == line:
			ctx = &l
		default:
			post = append(post, l)
		}
		if !found {
			if i < line {
				return []string{}, nil, []string{}
			}
			break
		}
		rest = next
	}
	return pre, ctx, post
}
