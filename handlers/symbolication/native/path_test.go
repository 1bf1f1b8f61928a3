package native

import (
	"strings"
	"testing"

	"errata/handlers/symbolication"
)

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

// TestFramePathsCleanedOnce: a frame's abs_path and filename are its
// file cleaned and cut, and relative to its unit's directory, cleaned
// once for all the frames of a request that name the same file.
func TestFramePathsCleanedOnce(t *testing.T) {
	m := &module{}
	long := "/src/" + strings.Repeat("d/", 1<<16) + "../a.c"
	if got := m.framePaths("/src/build/../a.c", "/src/"); got != [2]string{"/src/a.c", "a.c"} {
		t.Errorf("got %q", got)
	}
	want := symbolication.CutName(cleanPath(long))
	if got := m.framePaths(long, ""); got != [2]string{want, want} {
		t.Errorf("got %.40q", got)
	}
	if a := testing.AllocsPerRun(10, func() { m.framePaths(long, "") }); a != 0 {
		t.Errorf("%v allocations for a file cleaned already", a)
	}
}
