package jsscope

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// names lists the names of x's scopes in the minified source, in the
// order they start ("" for an unnamed one).
func (x *Index) names() []string {
	out := []string{}
	for _, sc := range x.scopes {
		name := ""
		for _, pr := range x.parts[sc.p0:sc.p1] {
			name += x.text[pr.t0:pr.t1]
		}
		out = append(out, name)
	}
	return out
}

// TestScopeNames holds the scanner to js-source-scopes' own extraction
// tests (tests/extract.rs) and to the rules its scope_name.rs states.
func TestScopeNames(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"named functions", `
        function fn_decl() {
            return function fn_expr() {};
        }`, []string{"fn_decl", "fn_expr"}},
		{"named classes", `
        class class_decl {
            constructor() {
                return class class_expr {};
            }
        }`, []string{"new class_decl", "new class_expr"}},
		{"declarations", `
        var anon_fn = function () {};
        let anon_class = class {};
        const arrow = () => {};`, []string{"anon_fn", "new anon_class", "arrow"}},
		{"assignments", `
        assigned_fn = function () {};
        deep.assigned.klass = class {};`, []string{"assigned_fn", "new deep.assigned.klass"}},
		{"object literal", `
        const obj_literal = {
            named_prop: function named_fun() {},
            anon_prop: function () {},
            arrow_prop: () => {},
            method_prop() {},
        };`, []string{"obj_literal.named_fun", "obj_literal.anon_prop", "obj_literal.arrow_prop", "obj_literal.method_prop"}},
		{"methods", `
        class class_decl {
            static static_method() {}
            class_method() {}
            #private_method() {}
        }`, []string{"new class_decl", "class_decl.static_method", "class_decl.class_method", "class_decl.#private_method"}},
		{"class getter and setter", `
      class A {
        get foo() {}
        set foo(x) {}
      }`, []string{"new A", "get A.foo", "set A.foo"}},
		{"object getter and setter", `
      a = {
        get foo() {},
        set foo(x) {}
      }  `, []string{"get a.foo", "set a.foo"}},
		{"weird properties", `
      a = {
        ["foo" + 123]() {},
        1.7() {},
        "bar"() {},
        1n() {}
      }`, []string{"a.<computed>", "a.<1.7>", `a.<"bar">`, "a.<1n>"}},
		{"named class expression", `
      a = class B {
         foo() {}
         get bar() {}
      }  `, []string{"new a.B", "a.B.foo", "get a.B.bar"}},
		{"anonymous object literal", `
         ({
            named_prop: function named_fun() {},
            anon_prop: function () {},
            arrow_prop: () => {},
            method_prop() {},
        });`, []string{"<object>.named_fun", "<object>.anon_prop", "<object>.arrow_prop", "<object>.method_prop"}},
		{"empty function", `
        (function () {
          return () => {};
        })()`, []string{"", ""}},
		{"nested iife objects", `
        (function () {})({
          children: (function () {})({
            children: (function () {})({
              onSubmitError () {
                throw new Error('wat')
              }
            })
          })
        })`, []string{"", "<object>.children", "<object>.children.children", "<object>.children.children.onSubmitError"}},
		{"computed properties", `
        Klass.prototype[42] = () => {}
        Klass.prototype["method"] = () => {}
        Klass.prototype[method] = () => {}
        Klass.prototype[1 + 1] = () => {};`, []string{"Klass.prototype[42]", `Klass.prototype["method"]`, "Klass.prototype[method]", "Klass.prototype[<computed>]"}},
		// Cases of the rules beyond those tests.
		{"arrow with expression body", `const f = (a, b) => a + b, g = async x => x * 2;`, []string{"f", "g"}},
		{"callback takes the assigned name", `var x = foo(function () { return 1 }, () => 2);`, []string{"x", "x"}},
		{"inner function starts afresh", `a.b = function () { setTimeout(function () {}) }`, []string{"a.b", ""}},
		{"this member", `this.handler = function () {}`, []string{"this.handler"}},
		{"named function expression keeps its owner", `a.b = function c() {}`, []string{"a.c"}},
		{"class field arrow", `class K { f = () => 1; static g = function () {} }`, []string{"new K", "K", "K"}},
		{"constructor is the class", `class K extends B { constructor(a) { super(a); this.x = () => 1 } m() {} }`, []string{"new K", "this.x", "K.m"}},
		{"async and generator methods", `o = { async a() {}, *b() {}, async *c() {}, get: function () {} }`, []string{"o.a", "o.b", "o.c", "o.get"}},
		{"regex is no division", `var r = /[/{]/g, f = function () { return 1 / 2 / 3 }`, []string{"f"}},
		{"template literal with functions", "var t = `a${function () { return `}${() => 1}` }}b`, u = function () {}",
			[]string{"t", "", "u"}},
		{"strings and comments hide brackets", `var s = "}{", c = /* } */ function () { // }
		}`, []string{"c"}},
		{"unbalanced closer is ignored", `)) ]] var f = function () {}`, []string{"f"}},
		{"statement ends the assignment", `x = 1; function f() {} (function () {})`, []string{"f", ""}},
		{"ternary arrow", `var f = a ? x => 1 : y => { return 2 }`, []string{"f", "f"}},
		{"regex after a control header", `if (x) /}/.test(y); var f = function () {}`, []string{"f"}},
		{"division after a group and a name", "var a = (b) / 2 / (c), g = d\n/ 2 /\ne, f = function () {}", []string{"f"}},
		{"regex after a block", `{ } /{/.test(q); var f = function () {}`, []string{"f"}},
		{"keywords as property names", `a.class = function () {}; a.default = () => {}; x = { class: function () {}, if() {} }`,
			[]string{"a.class", "a.default", "x.class", "x.if"}},
		{"unnamed default export", `export default function () {}`, []string{""}},
		{"optional call breaks the target", `a?.b.c = function () {}`, []string{""}},
		{"class expression called at once", `x = new (class { m() {} })()`, []string{"new x", "x.m"}},
		{"destructuring names nothing", `var { a } = function () {}`, []string{""}},
		{"parameter default is no assignment", `function f(a = function () {}) {}`, []string{"f", ""}},
		{"catch without binding is a block", `try { a() } catch { function f() {} var g = () => {} }`, []string{"f", "g"}},
		{"minified esbuild shape", `var n=(t,e)=>{throw new Error(t+e)};function r(t){return n(t,1)}var o=class{run(t){return r(t)}};`,
			[]string{"n", "r", "new o", "o.run"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Build([]byte(tt.src)).names()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.src, diff)
			}
		})
	}
}
