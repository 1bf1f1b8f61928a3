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

// TestContextNeverPastTheLastLine: a text's lines end at its last newline,
// which starts no line: a file that ends with a newline, as most do, shows
// no empty line after its last, native and JavaScript alike, and a line
// past the last has no context; carriage returns before a line's end are
// cut; ContextLines lines go on each side. (Native context once read a
// bundle's file as strings.Split does, with an empty line after a last
// newline.)
func TestContextNeverPastTheLastLine(t *testing.T) {
	for _, tc := range []struct {
		text  string
		lines []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"a\n", []string{"a"}},
		{"a\nb\n", []string{"a", "b"}},
		{"a\r\nb\r\n", []string{"a", "b"}},
		{"a\r", []string{"a"}},
		{"a\r\r\nb", []string{"a\r", "b"}},
		{"\n\n\n", []string{"", "", ""}},
		{"a\n\n", []string{"a", ""}},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n", strings.Fields("1 2 3 4 5 6 7 8 9 10 11 12 13")},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13", strings.Fields("1 2 3 4 5 6 7 8 9 10 11 12 13")},
	} {
		for k := range len(tc.lines) + 2 {
			pre, ctx, post := NewSource(tc.text).Context(k, 0)
			if k >= len(tc.lines) {
				if ctx != nil || len(pre) != 0 || len(post) != 0 {
					t.Errorf("%q line %d of %d: %q %v %q, want no context", tc.text, k, len(tc.lines), pre, ctx, post)
				}
				continue
			}
			wantPre, wantPost := tc.lines[max(0, k-ContextLines):k], tc.lines[k+1:min(len(tc.lines), k+1+ContextLines)]
			if ctx == nil || *ctx != tc.lines[k] || strings.Join(pre, "|") != strings.Join(wantPre, "|") || strings.Join(post, "|") != strings.Join(wantPost, "|") {
				t.Errorf("%q line %d: %q %v %q, want %q %q %q", tc.text, k, pre, ctx, post, wantPre, tc.lines[k], wantPost)
			}
		}
	}
}
