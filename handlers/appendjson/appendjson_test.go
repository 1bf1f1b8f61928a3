package appendjson

import (
	"strings"
	"testing"
)

// FuzzStringLen: StringLen is the length of what String appends, which is
// how an answer's bytes are counted before it is written.
func FuzzStringLen(f *testing.F) {
	for _, s := range []string{"", "main", `"\<>&`, "\x00\x1f\t\n", "é😀", "\xff\xfe", "\u2028\u2029", strings.Repeat("a<", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := StringLen(s), len(String(nil, s)); got != want {
			t.Errorf("StringLen(%q) = %d, String appends %d bytes", s, got, want)
		}
	})
}
