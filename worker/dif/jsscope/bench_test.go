package jsscope

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkBuild reads the scopes of a minified bundle of 15,000 small
// functions (about 3 MB), the shape of BenchmarkSymbolicateJS's.
func BenchmarkBuild(b *testing.B) {
	var src strings.Builder
	for i := range 15000 {
		fmt.Fprintf(&src, `function s%d(t,e){let n=0;for(let r=0;r<t.length;r++){const o=t[r];n+=o.price*o.quantity*e+%d}return n>%d*1e3?{total:n,label:"module %d step",discounted:n*.9}:{total:n,label:"small",discounted:n}}`, i, i, i, i)
	}
	data := []byte(src.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Build(data)
	}
}
