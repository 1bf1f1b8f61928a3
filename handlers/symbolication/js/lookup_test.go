package js

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSourceURLs resolves sources against their map's URL as a browser
// resolves a relative URL and Sentry writes it (no escaping), and cleans
// the file names of frames as Sentry does.
func TestSourceURLs(t *testing.T) {
	for _, tc := range []struct{ base, ref, abs, filename string }{
		{"~/static/app.min.js.map", "../src/cart.js", "~/src/cart.js", "../src/cart.js"},
		{"https://app.example/static/app.min.js.map", "../src/cart.js", "https://app.example/src/cart.js", "../src/cart.js"},
		{"https://app.example/static/app.min.js.map", "/src/cart.js", "https://app.example/src/cart.js", "/src/cart.js"},
		{"https://app.example/static/app.min.js.map?v=2#x", "cart.js", "https://app.example/static/cart.js", "cart.js"},
		{"https://app.example/app.min.js.map", "../../../src/cart.js", "https://app.example/src/cart.js", "../../../src/cart.js"},
		{"https://app.example/a/b.js.map", "//cdn.example/x.js", "https://cdn.example/x.js", "//cdn.example/x.js"},
		{"https://app.example/a/b.js.map", "./src/öut path.js?raw#l", "https://app.example/a/src/öut path.js?raw#l", "./src/öut path.js?raw#l"},
		{"https://app.example", "a.js", "https://app.example/a.js", "a.js"},
		{"app:///main.js.map", "./node_modules/x/index.js", "app:///node_modules/x/index.js", "./node_modules/x/index.js"},
		{"~/static/app.min.js.map", "webpack:///./src/cart.js", "webpack:///./src/cart.js", "./src/cart.js"},
		{"~/static/app.min.js.map", "webpack://shop/./src/cart.js", "webpack://shop/./src/cart.js", "./src/cart.js"},
		{"~/static/app.min.js.map", "webpack:///../node_modules/x.js", "webpack:///../node_modules/x.js", "../node_modules/x.js"},
		{"~/static/app.min.js.map", "webpack:///~/lodash/map.js", "webpack:///~/lodash/map.js", "~/lodash/map.js"},
		{"~/static/app.min.js.map", "webpack-internal:///./src/App.jsx", "webpack-internal:///./src/App.jsx", "./src/App.jsx"},
		{"~/static/app.min.js.map", "webpack:/node_modules/a.js", "webpack:/node_modules/a.js", "webpack:/node_modules/a.js"},
		{"~/static/app.min.js.map", "turbopack:///[project]/app/page.tsx", "turbopack:///[project]/app/page.tsx", "app/page.tsx"},
		{"dist/app.min.js.map", "../src/cart.js", "src/cart.js", "../src/cart.js"},
		{"dist/app.min.js.map", "../../src/cart.js", "../src/cart.js", "../../src/cart.js"},
		{"/home/dev/dist/app.js.map", "../src/cart.js", "/home/dev/src/cart.js", "../src/cart.js"},
	} {
		abs := joinSourceURL(tc.base, tc.ref)
		if abs != tc.abs || sourceFilename(tc.ref) != tc.filename {
			t.Errorf("%s against %s: %s, %s; want %s, %s", tc.ref, tc.base, abs, sourceFilename(tc.ref), tc.abs, tc.filename)
		}
	}
}

// TestCandidateURLs lists the names a file may be stored under in Sentry's
// order, ~/ and the exact path for any scheme and host.
func TestCandidateURLs(t *testing.T) {
	for u, want := range map[string][]string{
		"https://example.com/assets/bundle.min.js":         {"https://example.com/assets/bundle.min.js", "~/assets/bundle.min.js"},
		"https://example.com/assets/bundle.min.js?v=1#wat": {"https://example.com/assets/bundle.min.js?v=1", "https://example.com/assets/bundle.min.js", "~/assets/bundle.min.js?v=1", "~/assets/bundle.min.js"},
		"https://example.com/assets/bundle.min.js#wat":     {"https://example.com/assets/bundle.min.js", "~/assets/bundle.min.js"},
		"app:///main.js":                 {"app:///main.js", "~/main.js"},
		"app:///_next/server/pages/a.js": {"app:///_next/server/pages/a.js", "~/_next/server/pages/a.js"},
		"file:///Users/dev/app/main.js":  {"file:///Users/dev/app/main.js", "~/Users/dev/app/main.js"},
		"~/static/a.js":                  {"~/static/a.js"},
		"/var/app/main.js":               {"/var/app/main.js", "~/var/app/main.js"},
		"https://example.com":            {"https://example.com"},
	} {
		if diff := cmp.Diff(want, candidateURLs(u)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", u, diff)
		}
	}
}

// TestUndecorate reads off what stack traces' texts write around a URL.
func TestUndecorate(t *testing.T) {
	type pos struct {
		abs       string
		line, col int64 // col 0: none
	}
	for _, tc := range []struct {
		in   pos
		want pos
	}{
		{pos{"http://a.example/app.js", 3, 7}, pos{"http://a.example/app.js", 3, 7}},
		{pos{"async http://a.example/app.js", 3, 7}, pos{"http://a.example/app.js", 3, 7}},
		{pos{"async async app:///main.js", 3, 7}, pos{"app:///main.js", 3, 7}},
		{pos{"address at index.android.bundle", 1, 11940}, pos{"index.android.bundle", 1, 11940}},
		{pos{"eval at run (http://a.example/app.js:12:5), <anonymous>:1:9", 1, 9}, pos{"http://a.example/app.js", 12, 5}},
		{pos{"eval at f (eval at g (http://a.example/app.js:4:2)), <anonymous>:1:1", 1, 1}, pos{"http://a.example/app.js", 4, 2}},
		{pos{"http://a.example/app.js line 8 > eval", 1, 3}, pos{"http://a.example/app.js", 8, 0}},
		{pos{"http://a.example/app.js line 8 > eval line 2 > eval", 1, 3}, pos{"http://a.example/app.js", 8, 0}},
		{pos{"global code@http://a.example/app.js", 3, 7}, pos{"http://a.example/app.js", 3, 7}},
		{pos{"@http://a.example/app.js", 3, 7}, pos{"http://a.example/app.js", 3, 7}},
		{pos{"http://user@a.example/app.js", 3, 7}, pos{"http://user@a.example/app.js", 3, 7}},
		{pos{"webpack://@scope/pkg/a.js", 3, 7}, pos{"webpack://@scope/pkg/a.js", 3, 7}},
		{pos{"~/@scope/a.js", 3, 7}, pos{"~/@scope/a.js", 3, 7}},
		{pos{"new Foo", 3, 7}, pos{"new Foo", 3, 7}},
	} {
		abs, line, col := tc.in.abs, tc.in.line, tc.in.col
		f := undecorate(FrameIn{AbsPath: &abs, Lineno: &line, Colno: &col})
		got := pos{*f.AbsPath, *f.Lineno, 0}
		if f.Colno != nil {
			got.col = *f.Colno
		}
		if got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.in.abs, got, tc.want)
		}
	}
}

// FuzzFrameURLs reads hostile abs_path values and source names as a request
// and a map give them: undecorating, the candidate names, a source joined
// against a map's URL and its filename never panic, never grow past their
// inputs, and keep what the rules promise.
func FuzzFrameURLs(f *testing.F) {
	for _, seed := range [][2]string{
		{"async http://a.example/app.js?v=1#x", "../src/a.js"},
		{"eval at f (eval at g (app:///main.js:4:2)), <anonymous>:1:1", "webpack://ns/./src/b.js"},
		{"http://a.example/app.js line 8 > eval line 2 > eval", "//cdn.example/c.js"},
		{"global code@~/static/app.js", "turbopack:///[project]/app/~/p.tsx"},
		{"dist/app.min.js.map", "../../../x/./y//z.js?q#f"},
		{"https://example.com", "/"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, abs, source string) {
		line, col := int64(1), int64(1)
		fr := undecorate(FrameIn{AbsPath: &abs, Lineno: &line, Colno: &col})
		if fr.AbsPath == nil || len(*fr.AbsPath) > len(abs) {
			t.Fatalf("undecorate(%q) = %v", abs, fr.AbsPath)
		}
		urls := candidateURLs(abs)
		if len(urls) == 0 || len(urls) > 4 || strings.Contains(urls[0], "#") {
			t.Fatalf("candidateURLs(%q) = %q", abs, urls)
		}
		for _, u := range urls {
			if len(u) > len(abs)+1 {
				t.Fatalf("candidateURLs(%q) = %q", abs, urls)
			}
		}
		joined := joinSourceURL(abs, source)
		if len(joined) > len(abs)+len(source)+2 {
			t.Fatalf("joinSourceURL(%q, %q) = %q", abs, source, joined)
		}
		if hasScheme(source) && joined != source {
			t.Fatalf("joinSourceURL(%q, %q) = %q, want the absolute source kept", abs, source, joined)
		}
		if name := sourceFilename(source); len(name) > len(source) {
			t.Fatalf("sourceFilename(%q) = %q", source, name)
		}
	})
}
