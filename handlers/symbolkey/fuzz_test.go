package symbolkey

import (
	"errors"
	"path"
	"strings"
	"testing"

	"errata/worker/dif"
)

// FuzzDebuginfodPath holds ParseDebuginfod to what the routes rely on:
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
		q, err := ParseDebuginfod(p)
		if err != nil {
			if !isAnswer(err) {
				t.Fatalf("%q: error %T %v, not an answer", p, err, err)
			}
			return
		}
		if !IsBuildID(q.BuildID) || q.BuildID != strings.ToLower(q.BuildID) || q.Org == "" || strings.Contains(q.Org, "/") {
			t.Fatalf("%q: parsed %+v", p, q)
		}
		switch q.Kind {
		case "source":
			if !strings.HasPrefix(q.Arg, "/") || path.Clean(q.Arg) != q.Arg || strings.ContainsRune(q.Arg, 0) {
				t.Fatalf("%q: source path %q is not canonical", p, q.Arg)
			}
		case "section":
			if q.Arg == "" || strings.ContainsAny(q.Arg, "/\x00") {
				t.Fatalf("%q: section %q", p, q.Arg)
			}
		case "debuginfo", "executable":
		default:
			t.Fatalf("%q: kind %q", p, q.Kind)
		}
	})
}

// isAnswer reports whether err is one of the errors the parsers answer
// with.
func isAnswer(err error) bool {
	var malformed *MalformedError
	return errors.Is(err, ErrNotFound) || errors.As(err, &malformed)
}

// FuzzSymbolPath holds ParseKey to selecting by at least a format and an
// id, and to refusing compressed variants.
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
		k, err := ParseKey(p)
		if err != nil {
			if !isAnswer(err) {
				t.Fatalf("%q: error %T %v, not an answer", p, err, err)
			}
			return
		}
		q := k.Query
		if len(q.Formats) == 0 || q.DebugID == "" && q.CodeID == "" && len(q.CodeIDs) == 0 {
			t.Fatalf("%q: a query of no file: %+v", p, q)
		}
		if strings.HasSuffix(k.Name, "_") || k.Org == "" {
			t.Fatalf("%q: parsed %+v", p, k)
		}
	})
}

// FuzzDebugID holds the debug id of a key to worker/dif's form of the
// same id, which the stored debug files carry: a key selects the file
// whose id it spells.
func FuzzDebugID(f *testing.F) {
	for _, s := range []string{
		"222d986fde9d56714c4c44205044422e1",
		"222d986fde9d56714c4c44205044422e00000000",
		"0123456789abcdef0123456789abcdef",
		"0123456789abcdef0123456789abcdefffffffff",
		"0123456789abcdef0123456789abcdef0",
		"0123456789ABCDEF0123456789abcdef",
		"{0123456789abcdef-0123456789abcdef}",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		key = strings.ToLower(key) // as ParseKey reads a key
		id, ok := debugID(key)
		want, wantOK := dif.CanonicalDebugID(key)
		if ok && (!wantOK || id != want) {
			t.Fatalf("%q: debug id %q, dif reads %q (%v)", key, id, want, wantOK)
		}
		if !ok && wantOK && isHex(key) {
			t.Fatalf("%q: no debug id, dif reads %q", key, want)
		}
	})
}

// FuzzSourcePath holds the source path of a debuginfod request to
// worker/dif's canonical form, by which a source bundle's index names its
// sources; a path it refuses holds NUL or names no file.
func FuzzSourcePath(f *testing.F) {
	for _, s := range []string{
		"src dir/a+b/sub/../util.h",
		"/x//../../y",
		`C:\src\main.c`,
		"a\x00b",
		"//",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := canonicalSourcePath(p)
		if err != nil {
			if !isAnswer(err) || !strings.ContainsRune(p, 0) && strings.Trim(p, "/") != "" {
				t.Fatalf("%q: refused with %v", p, err)
			}
			return
		}
		if want := dif.CanonicalSourcePath(p); got != want {
			t.Fatalf("%q: %q, dif indexes %q", p, got, want)
		}
	})
}

// FuzzDebugIDOfBuildID holds the debug id derived from a build id to
// Sentry's form (a debug id that worker/dif reads as itself), and to the
// build id's first 16 bytes.
func FuzzDebugIDOfBuildID(f *testing.F) {
	for _, s := range []string{tinyBuildID, "ab", "0000", strings.Repeat("f", 128)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if !IsBuildID(id) {
			return
		}
		got := DebugIDOfBuildID(id)
		if canon, ok := dif.CanonicalDebugID(got); !ok || canon != got || len(got) != 36 {
			t.Fatalf("%q: debug id %q is not in Sentry's form (%q)", id, got, canon)
		}
		lower := strings.ToLower(id)
		h := strings.ReplaceAll(got, "-", "")
		swapped := h[6:8] + h[4:6] + h[2:4] + h[0:2] + h[10:12] + h[8:10] + h[14:16] + h[12:14] + h[16:]
		if n := min(len(lower), 32); swapped[:n] != lower[:n] || strings.Trim(swapped[n:], "0") != "" {
			t.Fatalf("%q: debug id %q is not its first 16 bytes", id, got)
		}
	})
}
