package native

import "testing"

func TestCleanPath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"/src/build/../a.c", "/src/a.c"},
		{"/src/./a.c", "/src/a.c"},
		{"/../a.c", "/a.c"},
		{"src//a.c", "src/a.c"},
		{"../../a.c", "../../a.c"},
		{"a/../../b.c", "../b.c"},
		{`C:\src\build\..\a.c`, `C:\src\a.c`},
		{`C:\src/build/..\.\a.c`, `C:\src\a.c`},
		{`C:\..\a.c`, `C:\a.c`},
		{`\\server\share\x\..\a.c`, `\\server\share\a.c`},
		{`..\a\..\..\b.c`, `..\..\b.c`},
		{`\a\..\b.c`, `\b.c`},
	} {
		if got := cleanPath(c.in); got != c.want {
			t.Errorf("cleanPath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
