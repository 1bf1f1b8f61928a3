package symbolication

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTrimContextLine(t *testing.T) {
	line := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteByte('a' + byte(i%26))
		}
		return b.String()
	}
	l300 := line(300)
	for _, tc := range []struct {
		name   string
		line   string
		column int
		want   string
	}{
		{"150 bytes stay whole", line(150), 149, line(150)},
		{"the start", l300, 3, l300[:140] + " {snip}"},
		{"the middle", l300, 200, "{snip} " + l300[140:280] + " {snip}"},
		{"the end, a whole width", l300, 290, "{snip} " + l300[160:]},
		{"a column past the end", l300, 1 << 30, "{snip} " + l300[160:]},
		{"a negative column", l300, -5, l300[:140] + " {snip}"},
	} {
		if got := trimContextLine(tc.line, tc.column); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// Cuts fall on rune boundaries.
	wide := strings.Repeat("é", 200)
	for col := range len(wide) {
		if got := trimContextLine(wide, col); !utf8.ValidString(got) || len(got) > maxContextLine+len(" {snip}")*2 {
			t.Fatalf("column %d: %q", col, got)
		}
	}
}

// TestContextReadsTheEndOfATextEitherWay: a source bundle's file is read
// as strings.Split reads it (a newline at its end starts an empty line, a
// carriage return goes only before a newline), a JavaScript source as
// lines that a newline ends; both keep ContextLines lines on each side.
func TestContextReadsTheEndOfATextEitherWay(t *testing.T) {
	texts := []string{"", "a", "a\n", "a\nb\n", "a\r\nb\r\n", "a\r", "a\r\r\nb", "\n\n\n",
		"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13"}
	for _, text := range texts {
		lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
		for k := range len(lines) + 2 {
			pre, ctx, post := NewSource(text, StartsEmptyLine).Context(k, 0)
			if k >= len(lines) {
				if ctx != nil || len(pre) != 0 || len(post) != 0 {
					t.Errorf("%q line %d of %d: %q %v %q", text, k, len(lines), pre, ctx, post)
				}
				continue
			}
			wantPre, wantPost := lines[max(0, k-ContextLines):k], lines[k+1:min(len(lines), k+1+ContextLines)]
			if ctx == nil || *ctx != lines[k] || strings.Join(pre, "|") != strings.Join(wantPre, "|") || strings.Join(post, "|") != strings.Join(wantPost, "|") {
				t.Errorf("%q line %d: %q %v %q, want %q %q %q", text, k, pre, ctx, post, wantPre, lines[k], wantPost)
			}
		}
	}
	// A JavaScript source's last newline ends its last line.
	if pre, ctx, post := NewSource("a\nb\n", EndsLastLine).Context(0, 0); len(pre) != 0 || ctx == nil || *ctx != "a" || strings.Join(post, "|") != "b" {
		t.Errorf("%q %v %q, want [] a [b]", pre, ctx, post)
	}
	if _, ctx, _ := NewSource("a\r", EndsLastLine).Context(0, 0); ctx == nil || *ctx != "a" {
		t.Errorf("%v, want a", ctx)
	}
}
