package native

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/handlers/symbolication"
)

// TestSourceTextContext: the context of a line, read from the first line
// it shows, is symbolication.Context of the whole file, for lines before,
// at and past the end of files with and without a last newline.
func TestSourceTextContext(t *testing.T) {
	var long strings.Builder
	for i := range 40 {
		long.WriteString(strings.Repeat("x", i*7) + "\r\n")
	}
	for _, text := range []string{"", "a", "a\n", "a\nb\n\n", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12", long.String()} {
		s := newSourceText(text)
		for line := range strings.Count(text, "\n") + 3 {
			for _, column := range []int{0, 200} {
				pre, ctx, post := s.context(line, column)
				wantPre, wantCtx, wantPost := symbolication.Context(text, line, column, symbolication.StartsEmptyLine)
				if wantCtx == nil {
					if ctx != nil {
						t.Errorf("%q line %d: %q, want none", text, line, *ctx)
					}
					continue
				}
				if ctx == nil || *ctx != *wantCtx || !cmp.Equal(pre, wantPre) || !cmp.Equal(post, wantPost) {
					t.Errorf("%q line %d column %d: %q %v %q, want %q %q %q", text, line, column, pre, ctx, post, wantPre, *wantCtx, wantPost)
				}
			}
		}
	}
}
