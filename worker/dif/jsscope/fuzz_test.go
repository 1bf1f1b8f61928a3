package jsscope

import (
	"testing"
)

// FuzzScopes scans arbitrary bytes and looks positions up in them: never
// a panic, scopes within the bounds, and an index's size within a small
// multiple of the input's.
func FuzzScopes(f *testing.F) {
	for _, seed := range []string{
		"var n=(t,e)=>{throw new Error(t+e)};function r(t){return n(t,1)}var o=class{run(t){return r(t)}};",
		"a = { get foo() {}, set foo(x) {}, [k]() {}, 1.7() {}, \"s\"() {}, 1n() {} }",
		"class A extends B { static #p = 1; constructor() { super(); } get x() { return `${() => 1}` } static { f = () => 2 } }",
		"x = a ? y => z : /re[/]/g.test(q) / 2, k = async (a = function(){}) => {}",
		"`${`${'}'}`}` ) ] } { ( [ function function class => => ; : ? ?. ...",
		"\u2028var é = function(){}\r\n//# sourceMappingURL=x.map",
		"(function () {})({ children: (function () {})({ onSubmitError () { throw new Error('wat') } }) })",
	} {
		f.Add([]byte(seed), 0, 10)
	}
	f.Fuzz(func(t *testing.T, src []byte, line, col int) {
		x := Build(src)
		if x.Len() > MaxScopes || len(x.parts) > MaxParts || len(x.text) > MaxTextBytes {
			t.Fatalf("%d scopes, %d parts, %d bytes of text", x.Len(), len(x.parts), len(x.text))
		}
		if x.Size() > 64*int64(len(src))+4096 {
			t.Fatalf("%d bytes of source take %d", len(src), x.Size())
		}
		for i := 1; i < len(x.starts); i++ {
			if !x.starts[i-1].before(x.starts[i]) {
				t.Fatalf("range %d at %v does not follow %v", i, x.starts[i], x.starts[i-1])
			}
		}
		m := fakeMap{line: {{Column: 0, Name: "a", HasName: true}, {Column: col, Name: "b", HasName: true}}}
		x.NameAt(line, col, m)
		x.NameAt(line, col, nil)
		x.NameAt(0, 0, m)
	})
}
