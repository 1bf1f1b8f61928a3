package symbolication

import (
	"sort"
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

// lineChunk is how many bytes of a Source each entry of its line index
// stands for: finding where a line starts reads at most that many bytes
// of the text, after a binary search of the index.
const lineChunk = 256

// sourceOverhead is what a *Source takes beside its text and its index:
// the struct and its allocation's rounding.
const sourceOverhead = 64

// Source is a text whose lines frames show as source context, with an
// index of its lines built once (NewSource), so that the context of each
// frame reads its own lines and a few hundred bytes around them, never
// the text from its start: the work of a frame does not grow with the
// file, nor what the index holds with its number of lines (4 bytes for
// every lineChunk bytes of text).
type Source struct {
	text string
	// newlines[c] counts the newlines of text[:c*lineChunk]; the last
	// entry counts those of the whole text.
	newlines []uint32
}

// NewSource indexes the lines of text. A newline at the end of the text
// ends its last line and starts no line after it as post context, so that
// no frame shows a line past the end of its file; a carriage return before
// a line's end is cut. It is how Sentry reads native and JavaScript
// sources alike (docs/resolution.md). A text is at most 4 GiB.
func NewSource(text string) *Source {
	chunks := (len(text) + lineChunk - 1) / lineChunk
	newlines := make([]uint32, chunks+1)
	var n uint32
	for c := range chunks {
		n += uint32(strings.Count(text[c*lineChunk:min((c+1)*lineChunk, len(text))], "\n"))
		newlines[c+1] = n
	}
	return &Source{text: text, newlines: newlines}
}

// IndexSize is what NewSource holds beside a text of textLen bytes: its
// index, as the runtime rounds its allocation up (to a size class of at
// most an eighth more, or to whole 8 KiB pages past 32 KiB), and the
// Source itself.
func IndexSize(textLen int) int64 {
	n := 4 * int64((textLen+lineChunk-1)/lineChunk+1)
	if n > 32<<10 {
		n = (n + 8<<10 - 1) &^ (8<<10 - 1)
	} else {
		n += n / 8
	}
	return n + sourceOverhead
}

// Size is what s holds: its text and IndexSize.
func (s *Source) Size() int64 { return int64(len(s.text)) + IndexSize(len(s.text)) }

// lines is how many lines s has: one more than its newlines, but for a
// newline at its end, which ends its last line (an empty text has none).
func (s *Source) lines() int {
	n := int(s.newlines[len(s.newlines)-1]) + 1
	if strings.HasSuffix(s.text, "\n") || s.text == "" {
		n--
	}
	return n
}

// start returns where line (0-based, below s.lines()) begins: after the
// line-th newline, found in the last chunk that has fewer before it. It
// adds the bytes it reads to *scanned when scanned is not nil.
func (s *Source) start(line int, scanned *int) int {
	if line == 0 {
		return 0
	}
	c := sort.Search(len(s.newlines), func(c int) bool { return int(s.newlines[c]) >= line }) - 1
	i, seen := c*lineChunk, int(s.newlines[c])
	for {
		j := strings.IndexByte(s.text[i:], '\n')
		if scanned != nil {
			*scanned += j + 1
		}
		i += j + 1
		if seen++; seen == line {
			return i
		}
	}
}

// lineEnd returns where line i, which starts at start and is not the
// last, ends (its newline): found in the lineChunk bytes after start, as
// most lines are shorter, else through the index, so that a long line is
// not read whole.
func (s *Source) lineEnd(start, i int, scanned *int) int {
	window := s.text[start:min(start+lineChunk, len(s.text))]
	j := strings.IndexByte(window, '\n')
	if j >= 0 {
		if scanned != nil {
			*scanned += j + 1
		}
		return start + j
	}
	if scanned != nil {
		*scanned += len(window)
	}
	return s.start(i+1, scanned) - 1
}

// Context returns up to ContextLines lines of s before line (0-based),
// the line and up to ContextLines after it, each cut around column
// (0-based) when long (trimContextLine). ctx is nil when s has no such
// line. It is the source context of native and JavaScript frames alike
// (docs/resolution.md): it reads the lines it returns, found through the
// index of s, and at most two times lineChunk bytes more for each.
func (s *Source) Context(line, column int) (pre []string, ctx *string, post []string) {
	return s.context(line, column, nil)
}

func (s *Source) context(line, column int, scanned *int) (pre []string, ctx *string, post []string) {
	pre, post = []string{}, []string{}
	n := s.lines()
	if line < 0 || line >= n {
		return pre, nil, post
	}
	first, last := max(line-ContextLines, 0), min(line+ContextLines, n-1)
	start := s.start(first, scanned)
	for i := first; i <= last; i++ {
		end := len(strings.TrimSuffix(s.text, "\n")) // of the last line
		if i < n-1 {
			end = s.lineEnd(start, i, scanned)
		}
		l := trimContextLine(strings.TrimSuffix(s.text[start:end], "\r"), column)
		switch {
		case i < line:
			pre = append(pre, l)
		case i == line:
			ctx = &l
		default:
			post = append(post, l)
		}
		start = end + 1
	}
	return pre, ctx, post
}
