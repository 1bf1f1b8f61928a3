package handlers

import "unicode/utf8"

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

// trimContextLines cuts each of lines around column, in a new slice.
func trimContextLines(lines []string, column int) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = trimContextLine(l, column)
	}
	return out
}
