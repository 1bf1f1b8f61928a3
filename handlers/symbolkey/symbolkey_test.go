package symbolkey

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tinyBuildID is the GNU build id of worker/dif/testdata/tiny.elf.
const tinyBuildID = "1b0744b61e51db55ac271ee28d84d991a2cfc6fa"

// TestSymbolPathParsers checks the parsers on the paths of
// docs/symbol-server.md.
func TestSymbolPathParsers(t *testing.T) {
	q, err := ParseDebuginfod("/debuginfod/acme/buildid/ABCD/source/src dir/a+b/sub/../util.h")
	if err != nil || q.Org != "acme" || q.BuildID != "abcd" || q.Kind != "source" || q.Arg != "/src dir/a+b/util.h" {
		t.Errorf("source path: %+v %v", q, err)
	}
	if q, err := ParseDebuginfod("/debuginfod/acme/buildid/abcd/source//x//../../y"); err != nil || q.Arg != "/y" {
		t.Errorf("source path with // and ..: %+v %v", q, err)
	}
	k, err := ParseKey("/symbols/acme/crash.pdb/222D986FDE9D56714C4C44205044422E1/crash.pdb")
	if err != nil || k.Query.DebugID != "222d986f-de9d-5671-4c4c-44205044422e-1" || k.Query.ObjectName != "crash.pdb" {
		t.Errorf("PDB key: %+v %v", k, err)
	}
	k, err = ParseKey("/symbols/acme/crash.exe/6B06ADEE4000/crash.exe")
	if err != nil || k.Query.CodeID != "6b06adee4000" || k.Query.Formats[0] != "pe" {
		t.Errorf("PE key: %+v %v", k, err)
	}
	k, err = ParseKey("/symbols/acme/app/elf-buildid-1234000000000000000000000000000000000000/app")
	if err != nil || len(k.Query.CodeIDs) != 19 || k.Query.CodeIDs[len(k.Query.CodeIDs)-1] != "1234" {
		t.Errorf("padded ELF key: %+v %v", k, err)
	}
	k, err = ParseKey("/symbols/acme/crash.pdb/222D986FDE9D56714C4C44205044422E1/crash.src.zip")
	if err != nil || k.Query.Formats[0] != "sourcebundle" {
		t.Errorf("source bundle key: %+v %v", k, err)
	}
	if id := DebugIDOfBuildID(tinyBuildID); id != "b644071b-511e-55db-ac27-1ee28d84d991" {
		t.Errorf("debug id of the build id: %s", id)
	}
}

// TestParseKey reads a key of each stored format, and refuses what no
// stored file answers.
func TestParseKey(t *testing.T) {
	const guid = "0123456789abcdef0123456789abcdef"
	const debugID = "01234567-89ab-cdef-0123-456789abcdef"
	for _, tc := range []struct {
		name, path string
		want       Query // zero: ErrNotFound
	}{
		{"a PDB", "/symbols/acme/crash.pdb/" + guid + "2/crash.pdb",
			Query{Formats: []string{"pdb", "portablepdb"}, DebugID: debugID + "-2", ObjectName: "crash.pdb"}},
		{"a Portable PDB", "/symbols/acme/App.pdb/" + guid + "FFFFFFFF/App.pdb",
			Query{Formats: []string{"pdb", "portablepdb"}, DebugID: debugID, ObjectName: "app.pdb"}},
		{"a PE", "/symbols/acme/crash.exe/6B06ADEE4000/crash.exe",
			Query{Formats: []string{"pe"}, CodeID: "6b06adee4000", ObjectName: "crash.exe"}},
		{"an ELF", "/symbols/acme/app/elf-buildid-abcd/app",
			Query{Formats: []string{"elf"}, CodeIDs: []string{"abcd"}, Types: []string{"exe", "lib"}}},
		{"an ELF's debug file", "/symbols/acme/_.debug/elf-buildid-sym-ABCD/_.debug",
			Query{Formats: []string{"elf"}, CodeIDs: []string{"abcd"}, Feature: "debug"}},
		{"a Mach-O", "/symbols/acme/app/mach-uuid-" + guid + "/app",
			Query{Formats: []string{"macho"}, DebugID: debugID, Types: []string{"exe", "lib"}}},
		{"a Mach-O's dSYM", "/symbols/acme/_.dwarf/mach-uuid-sym-" + guid + "/_.dwarf",
			Query{Formats: []string{"macho"}, DebugID: debugID, Feature: "debug"}},
		{"a Breakpad file", "/symbols/acme/crash.pdb/" + guid + "1/crash.sym",
			Query{Formats: []string{"breakpad"}, DebugID: debugID + "-1"}},
		{"a source bundle", "/symbols/acme/crash.dll/" + guid + "0/crash.src.zip",
			Query{Formats: []string{"sourcebundle"}, DebugID: debugID}},
		{"a compressed variant", "/symbols/acme/crash.pdb/" + guid + "1/crash.pd_", Query{}},
		{"a pointer file", "/symbols/acme/crash.pdb/" + guid + "1/file.ptr", Query{}},
		{"names that differ", "/symbols/acme/crash.pdb/" + guid + "1/other.pdb", Query{}},
		{"a Mach-O UUID too short", "/symbols/acme/app/mach-uuid-0123/app", Query{}},
		{"an ELF build id of odd length", "/symbols/acme/app/elf-buildid-abc/app", Query{}},
		{"a PE key too short", "/symbols/acme/crash.exe/6B06ADEE/crash.exe", Query{}},
		{"three segments", "/symbols/acme/crash.exe/6B06ADEE4000", Query{}},
		{"no organization", "/symbols//crash.exe/6B06ADEE4000/crash.exe", Query{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := ParseKey(tc.path)
			if tc.want.Formats == nil {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("%+v %v, want ErrNotFound", k, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, k.Query); diff != "" {
				t.Errorf("query (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseDebuginfod tells a path of no route (ErrNotFound) from a
// malformed build id or source path (*MalformedError, with its words).
func TestParseDebuginfod(t *testing.T) {
	const base = "/debuginfod/acme/buildid/"
	for _, tc := range []struct {
		path string
		want Debuginfod
		err  string // "" none; ErrNotFound's text, or a MalformedError's
	}{
		{base + "ABCD/executable", Debuginfod{Org: "acme", BuildID: "abcd", Kind: Executable}, ""},
		{base + "abcd/debuginfo", Debuginfod{Org: "acme", BuildID: "abcd", Kind: Debuginfo}, ""},
		{base + "abcd/section/.debug_info", Debuginfod{Org: "acme", BuildID: "abcd", Kind: Section, Arg: ".debug_info"}, ""},
		{base + `abcd/source/C:\src\main.c`, Debuginfod{Org: "acme", BuildID: "abcd", Kind: Source, Arg: "/C:/src/main.c"}, ""},
		{base + "abc/executable", Debuginfod{}, "The build id is not 2 to 128 hex digits"},
		{base + "xyzz/executable", Debuginfod{}, "The build id is not 2 to 128 hex digits"},
		{base + "abcd/source/a\x00.c", Debuginfod{}, "The source path holds a NUL character"},
		{base + "abcd/source//", Debuginfod{}, "The source path is empty"},
		{base + "abcd/executable/", Debuginfod{}, ErrNotFound.Error()},
		{base + "abcd/section/a/b", Debuginfod{}, ErrNotFound.Error()},
		{base + "abcd/other", Debuginfod{}, ErrNotFound.Error()},
		{"/debuginfod//buildid/abcd/executable", Debuginfod{}, ErrNotFound.Error()},
		{"/debuginfod/acme/other/abcd/executable", Debuginfod{}, ErrNotFound.Error()},
	} {
		t.Run(tc.path, func(t *testing.T) {
			q, err := ParseDebuginfod(tc.path)
			if tc.err != "" {
				if !isAnswer(err) || err.Error() != tc.err {
					t.Fatalf("%+v %v, want %q", q, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, q); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
