package handlers

import (
	"path"
	"strings"
	"testing"
)

// FuzzDebuginfodPath holds parseDebuginfodPath to what the routes rely on:
// a parsed build id is lower-case hex of even length, 2 to 128 digits; a
// source path is rooted, clean (no dot segments, no //) and without NUL;
// a section name holds no /.
func FuzzDebuginfodPath(f *testing.F) {
	for _, s := range []string{
		"/debuginfod/acme/buildid/ABCD/debuginfo",
		"/debuginfod/acme/buildid/abcd/executable",
		"/debuginfod/acme/buildid/abcd/source/src dir/a+b/sub/../util.h",
		"/debuginfod/acme/buildid/abcd/source//x//../../y",
		"/debuginfod/acme/buildid/abcd/source/a\x00b",
		"/debuginfod/acme/buildid/abcd/section/.debug_info",
		"/debuginfod/acme/buildid/abc/section/.debug_info",
		"/debuginfod//buildid//",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		q, err := parseDebuginfodPath(p)
		if err != nil {
			if _, ok := err.(*symbolError); !ok {
				t.Fatalf("%q: error %T %v, not an answer", p, err, err)
			}
			return
		}
		if !isBuildID(q.buildID) || q.buildID != strings.ToLower(q.buildID) || q.org == "" || strings.Contains(q.org, "/") {
			t.Fatalf("%q: parsed %+v", p, q)
		}
		switch q.kind {
		case "source":
			if !strings.HasPrefix(q.arg, "/") || path.Clean(q.arg) != q.arg || strings.ContainsRune(q.arg, 0) {
				t.Fatalf("%q: source path %q is not canonical", p, q.arg)
			}
		case "section":
			if q.arg == "" || strings.ContainsAny(q.arg, "/\x00") {
				t.Fatalf("%q: section %q", p, q.arg)
			}
		case "debuginfo", "executable":
		default:
			t.Fatalf("%q: kind %q", p, q.kind)
		}
	})
}

// FuzzSymbolPath holds parseSymbolPath to selecting by at least a format
// and an id, and to refusing compressed variants.
func FuzzSymbolPath(f *testing.F) {
	for _, s := range []string{
		"/symbols/acme/crash.pdb/222D986FDE9D56714C4C44205044422E1/crash.pdb",
		"/symbols/acme/crash.exe/6B06ADEE4000/crash.exe",
		"/symbols/acme/app/elf-buildid-1234000000000000000000000000000000000000/app",
		"/symbols/acme/_.debug/elf-buildid-sym-abcd/_.debug",
		"/symbols/acme/app/mach-uuid-0123456789abcdef0123456789abcdef/app",
		"/symbols/acme/_.dwarf/mach-uuid-sym-0123456789abcdef0123456789abcdef/_.dwarf",
		"/symbols/acme/crash.pdb/222D986FDE9D56714C4C44205044422E1/crash.src.zip",
		"/symbols/acme/libapp.so/B644071B1E51DB55AC271EE28D84D9910/libapp.so.sym",
		"/symbols/acme/crash.pdb/222D986FDE9D56714C4C44205044422E1/crash.pd_",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		k, err := parseSymbolPath(p)
		if err != nil {
			if _, ok := err.(*symbolError); !ok {
				t.Fatalf("%q: error %T %v, not an answer", p, err, err)
			}
			return
		}
		q := k.query
		if len(q.Formats) == 0 || q.DebugID == "" && q.CodeID == "" && len(q.CodeIDs) == 0 {
			t.Fatalf("%q: a query of no file: %+v", p, q)
		}
		if strings.HasSuffix(k.name, "_") || k.org == "" {
			t.Fatalf("%q: parsed %+v", p, k)
		}
	})
}
