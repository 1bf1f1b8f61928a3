package symbolication

import (
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// splitContext is the source context read from the whole text split into
// lines, as Context read it before Source (walking the text from its first
// line for each frame): the tests hold Source to its answers. A newline
// at the end of the text ends its last line and starts none, and a
// carriage return at a line's end is cut.
func splitContext(text string, line, column int) (pre []string, ctx *string, post []string) {
	pre, post = []string{}, []string{}
	lines := strings.Split(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // the newline that ends the text starts no line
	}
	if line < 0 || line >= len(lines) {
		return pre, nil, post
	}
	cut := func(i int) string { return trimContextLine(strings.TrimSuffix(lines[i], "\r"), column) }
	for i := max(line-ContextLines, 0); i < line; i++ {
		pre = append(pre, cut(i))
	}
	l := cut(line)
	for i := line + 1; i <= min(line+ContextLines, len(lines)-1); i++ {
		post = append(post, cut(i))
	}
	return pre, &l, post
}

// checkSourceContext fails t when s answers line and column otherwise
// than splitContext does.
func checkSourceContext(t *testing.T, text string, s *Source, line, column int) {
	t.Helper()
	pre, ctx, post := s.Context(line, column)
	wantPre, wantCtx, wantPost := splitContext(text, line, column)
	if (ctx == nil) != (wantCtx == nil) || ctx != nil && *ctx != *wantCtx || !cmp.Equal(pre, wantPre) || !cmp.Equal(post, wantPost) {
		t.Fatalf("%q line %d column %d: %q %v %q, want %q %v %q", text, line, column, pre, ctx, post, wantPre, wantCtx, wantPost)
	}
}

// TestSourceContextIsTheSplit: the context read through the index is the
// one read from the text split into lines, for every line of texts with and without
// a last newline, carriage returns, long lines and lines across chunks.
func TestSourceContextIsTheSplit(t *testing.T) {
	var long, short strings.Builder
	for i := range 40 {
		long.WriteString(strings.Repeat("x", i*37) + "\r\n")
	}
	for i := range 2000 {
		short.WriteString(strings.Repeat("y", i%7) + "\n")
	}
	texts := []string{"", "\n", "a", "a\n", "a\r", "a\nb\n\n", "\r\n\r\n", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12",
		long.String(), short.String(), strings.Repeat("z", 3*lineChunk) + "\n" + strings.Repeat("\n", lineChunk)}
	for _, text := range texts {
		s := NewSource(text)
		for line := 0; line < strings.Count(text, "\n")+3; line++ {
			for _, column := range []int{0, 200} {
				checkSourceContext(t, text, s, line, column)
			}
		}
	}
}

// FuzzSourceContext holds the index's context to the split's for any text,
// line and column.
func FuzzSourceContext(f *testing.F) {
	f.Add("a\nb\r\nc", 1, 0)
	f.Add(strings.Repeat("\n", 600)+"x", 599, 3)
	f.Add(strings.Repeat("w", 700)+"\n\n", 1, 650)
	f.Fuzz(func(t *testing.T, text string, line, column int) {
		if line < 0 {
			line = -(line + 1)
		}
		checkSourceContext(t, text, NewSource(text), line%(len(text)+8), column)
	})
}

// TestSourceContextReadsItsOwnLines: the context of a line near the end of
// a text of a million lines, or of long lines, reads its lines (not the
// long ones whole) and at most two times lineChunk bytes more for each, where walking the text from its start read all of it.
func TestSourceContextReadsItsOwnLines(t *testing.T) {
	for _, text := range []string{strings.Repeat("let a = 1;\n", 1<<20), strings.Repeat(strings.Repeat("x", 1<<20)+"\n", 16)} {
		s := NewSource(text)
		n := strings.Count(text, "\n")
		for _, line := range []int{0, n / 2, n - 1} {
			scanned := 0
			_, ctx, _ := s.context(line, 0, &scanned)
			if _, want, _ := splitContext(text, line, 0); ctx == nil || *ctx != *want {
				t.Fatalf("line %d: %v, want %q", line, ctx, *want)
			}
			if most := (2*(2*ContextLines+1) + 1) * lineChunk; scanned > most {
				t.Errorf("line %d of %d: %d bytes read, want at most %d", line, n, scanned, most)
			}
		}
	}
}

// TestSourceSizeIsWhatItHolds: what a Source is charged (Size) is at
// least what building it takes beside its text, and at most twice that,
// for a text of newlines (the most lines a text can have) and of code.
func TestSourceSizeIsWhatItHolds(t *testing.T) {
	for _, text := range []string{strings.Repeat("\n", 8<<20), strings.Repeat("int a = f(b, c); // the line\n", 1<<18), "int main() {}\n"} {
		const n = 64
		sources := make([]*Source, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range sources {
			sources[i] = NewSource(text)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		held := int64(after.HeapAlloc-before.HeapAlloc) / n
		charged := sources[0].Size() - int64(len(text)) // the text is held before, and charged too
		if charged < held || charged > 2*held {
			t.Errorf("a text of %d bytes: its index charged %d bytes, holds %d", len(text), charged, held)
		}
		runtime.KeepAlive(sources)
	}
}
