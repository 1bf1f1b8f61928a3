package js

import "testing"

// TestSourceURLs resolves sources against their map's URL and cleans the
// file names of frames.
func TestSourceURLs(t *testing.T) {
	for _, tc := range []struct{ base, ref, abs, filename string }{
		{"~/static/app.min.js.map", "../src/cart.js", "~/src/cart.js", "/src/cart.js"},
		{"https://app.example/static/app.min.js.map", "../src/cart.js", "https://app.example/src/cart.js", "/src/cart.js"},
		{"https://app.example/static/app.min.js.map", "/src/cart.js", "https://app.example/src/cart.js", "/src/cart.js"},
		{"~/static/app.min.js.map", "webpack:///./src/cart.js", "webpack:///./src/cart.js", "src/cart.js"},
		{"~/static/app.min.js.map", "webpack://shop/./src/cart.js", "webpack://shop/./src/cart.js", "src/cart.js"},
		{"dist/app.min.js.map", "../src/cart.js", "src/cart.js", "src/cart.js"},
	} {
		abs := joinSourceURL(tc.base, tc.ref)
		if abs != tc.abs || filenameOf(abs) != tc.filename {
			t.Errorf("%s against %s: %s, %s; want %s, %s", tc.ref, tc.base, abs, filenameOf(abs), tc.abs, tc.filename)
		}
	}
}
