package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"errata/worker/dif"
)

// nativeTools are the programs the native resolution tests build and
// check with (dev.sh test installs them).
var nativeTools = []string{"gcc", "g++", "clang-14", "clang++-14", "objcopy", "strip", "llvm-objdump", "llvm-symbolizer", "gdb",
	"ld64.lld-14", "dsymutil-14", "llvm-dwarfdump-14", "lld-link-14", "nm", "readelf", "eu-addr2line"}

func needNativeTools(t *testing.T) {
	t.Helper()
	for _, tool := range nativeTools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed by this test: run it with ./dev.sh test, which installs it", tool)
		}
	}
}

// nativeBuild is one build of a fixture program.
type nativeBuild struct {
	name string
	cc   string
	src  string
	args []string
}

// nativeBuilds cover C and C++, gcc and clang-14, DWARF 4 and 5 and
// compressed sections.
var nativeBuilds = []nativeBuild{
	{"gcc-cpp-dwarf5", "g++", "crash.cpp", []string{"-O2", "-g"}},
	{"gcc-cpp-dwarf4-gz", "g++", "crash.cpp", []string{"-O2", "-g", "-gdwarf-4", "-gz=zlib"}},
	{"gcc-c-dwarf5", "gcc", "crash.c", []string{"-O2", "-g"}},
	{"clang-cpp-dwarf5", "clang++-14", "crash.cpp", []string{"-O2", "-g", "-gdwarf-5"}},
	{"clang-cpp-dwarf4-gz", "clang++-14", "crash.cpp", []string{"-O2", "-g", "-gdwarf-4", "-gz=zlib"}},
	{"clang-c-dwarf4", "clang-14", "crash.c", []string{"-O2", "-g", "-gdwarf-4"}},
	{"gcc-cpp-O0", "g++", "crash.cpp", []string{"-O0", "-g"}},
	// For eu-addr2line's vote: elfutils 0.188 answers ?? for clang-14's
	// DWARF 5 without .debug_aranges (errata does not need them).
	{"clang-cpp-dwarf5-aranges", "clang++-14", "crash.cpp", []string{"-O2", "-g", "-gdwarf-5", "-gdwarf-aranges"}},
}

// euVotes reports whether eu-addr2line votes on build b: a build with
// .debug_aranges (gcc writes them, clang-14 when asked).
func (b nativeBuild) euVotes() bool {
	return b.cc == "gcc" || b.cc == "g++" || slices.Contains(b.args, "-gdwarf-aranges")
}

// nativeFixture is a built program: the unstripped file, and a folder
// with its stripped executable and its debug companion.
type nativeFixture struct {
	nativeBuild
	full, stripped string
	buildID        string
	// symbolize, when set, is the file llvm-symbolizer reads instead of
	// full (a dSYM's DWARF file).
	symbolize string
}

func nativeTool(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// buildNative builds every program of nativeBuilds once, from a copy of
// testdata/native in src, with each build's stripped executable and debug
// companion in upload/<name>/.
func buildNative(t *testing.T, src, upload string) []nativeFixture {
	t.Helper()
	for _, f := range []string{"crash.c", "crash.cpp", "util.h"} {
		b, err := os.ReadFile(filepath.Join("testdata/native", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out []nativeFixture
	idRe := regexp.MustCompile(`Build ID: ([0-9a-f]+)`)
	for _, b := range nativeBuilds {
		f := nativeFixture{nativeBuild: b, full: filepath.Join(src, b.name)}
		args := append(append([]string{}, b.args...), "-Wl,--build-id=sha1", "-o", b.name, b.src)
		nativeTool(t, src, b.cc, args...)
		dir := filepath.Join(upload, b.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		f.stripped = filepath.Join(dir, b.name)
		nativeTool(t, src, "objcopy", "--only-keep-debug", f.full, f.stripped+".debug")
		nativeTool(t, src, "strip", "--strip-all", "-o", f.stripped, f.full)
		m := idRe.FindStringSubmatch(nativeTool(t, src, "readelf", "-n", f.full))
		if m == nil {
			t.Fatalf("%s has no build id", b.name)
		}
		f.buildID = m[1]
		out = append(out, f)
	}
	return out
}

// oraclePath is an oracle's path as errata answers it: cleaned, as Sentry
// answers paths ("/src/./util.h" is "/src/util.h"), where llvm-symbolizer
// and eu-addr2line keep them as the debug information joins them
// (docs/resolution.md).
func oraclePath(p string) string {
	if p == "" {
		return p
	}
	return path.Clean(p)
}

// llvmFrame is a frame as llvm-symbolizer --output-style=JSON writes it.
type llvmFrame struct {
	FunctionName string
	FileName     string
	Line, Column int
}

// nativeWant is a frame to compare: function, file, line and column.
type nativeWant struct {
	Function string
	File     string
	Line     int
	Column   int
}

// instructionStarts returns the instruction starts of the program's own
// functions (those llvm-symbolizer places in a file of src) with
// llvm-symbolizer's answer for each, innermost first.
func instructionStarts(t *testing.T, f nativeFixture, src string) ([]uint64, [][]nativeWant) {
	t.Helper()
	re := regexp.MustCompile(`^\s*([0-9a-f]+):`)
	var addrs []string
	for l := range strings.SplitSeq(nativeTool(t, src, "llvm-objdump", "-d", "--no-show-raw-insn", f.full), "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			addrs = append(addrs, "0x"+m[1])
		}
	}
	obj := f.full
	if f.symbolize != "" {
		obj = f.symbolize
	}
	cmd := exec.Command("llvm-symbolizer", "--obj="+obj, "--inlining", "--output-style=JSON")
	cmd.Stdin = strings.NewReader(strings.Join(addrs, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("llvm-symbolizer: %v", err)
	}
	var pcs []uint64
	var wants [][]nativeWant
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var a struct {
			Address string
			Symbol  []llvmFrame
		}
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatalf("llvm-symbolizer answer %q: %v", sc.Text(), err)
		}
		if len(a.Symbol) == 0 || !strings.HasPrefix(a.Symbol[0].FileName, src+"/") {
			continue
		}
		pc, err := strconv.ParseUint(strings.TrimPrefix(a.Address, "0x"), 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		var w []nativeWant
		for _, s := range a.Symbol {
			w = append(w, nativeWant{s.FunctionName, oraclePath(s.FileName), s.Line, s.Column})
		}
		pcs, wants = append(pcs, pc), append(wants, w)
	}
	if len(pcs) < 20 {
		t.Fatalf("%s: only %d instructions of its own functions", f.name, len(pcs))
	}
	return pcs, wants
}

// checkEuAddr2line is the second vote: errata's frames at pcs (got,
// innermost first) equal eu-addr2line -f -i -C's on the unstripped file,
// function, file, line, column and the inline chain. eu-addr2line names a
// function by its DW_AT_name when its entry has no linkage name (gcc
// writes none for a static C++ function), without scope or parameters,
// where errata names the outermost frame from the symbol table as
// llvm-symbolizer does ("square(int)"): there, the vote is on the name
// without them. Its ?? is no function or file.
func checkEuAddr2line(t *testing.T, f nativeFixture, src string, pcs []uint64, got [][]nativeWant) {
	t.Helper()
	if !strings.Contains(nativeTool(t, src, "readelf", "-S", "-W", f.full), ".debug_aranges") {
		t.Fatalf("%s has no .debug_aranges: eu-addr2line cannot vote", f.name)
	}
	var in strings.Builder
	for _, pc := range pcs {
		fmt.Fprintf(&in, "0x%x\n", pc)
	}
	cmd := exec.Command("eu-addr2line", "-a", "-f", "-i", "-C", "-e", f.full)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("eu-addr2line: %v", err)
	}
	// -a writes each address before its frames: a name line ("f", or
	// "f inlined at file:line:col in g" for the innermost of several) and
	// a place line ("file:line:col", "file:line" without a column, ??:0).
	eu := map[uint64][]nativeWant{}
	var cur uint64
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		if a, ok := strings.CutPrefix(lines[i], "0x"); ok {
			if cur, err = strconv.ParseUint(a, 16, 64); err != nil {
				t.Fatalf("eu-addr2line address %q", lines[i])
			}
			eu[cur] = []nativeWant{}
			continue
		}
		if i+1 >= len(lines) {
			t.Fatalf("eu-addr2line: a name without its place: %q", lines[i])
		}
		name, _, _ := strings.Cut(lines[i], " inlined at ")
		place := strings.Split(lines[i+1], ":")
		i++
		w := nativeWant{Function: strings.TrimPrefix(name, "??")}
		nums := []*int{&w.Line, &w.Column}
		if len(place) < 3 {
			nums = nums[:1]
		}
		for k, n := range nums {
			if *n, err = strconv.Atoi(place[len(place)-len(nums)+k]); err != nil {
				t.Fatalf("eu-addr2line place %q", lines[i])
			}
		}
		w.File = oraclePath(strings.TrimPrefix(strings.Join(place[:len(place)-len(nums)], ":"), "??"))
		eu[cur] = append(eu[cur], w)
	}
	bad, names := 0, 0
	for i, pc := range pcs {
		want, ok := eu[pc]
		if !ok {
			t.Fatalf("eu-addr2line did not answer 0x%x", pc)
		}
		mine := slices.Clone(got[i])
		for k := range mine {
			if k < len(want) && !strings.Contains(want[k].Function, "(") && strings.Contains(mine[k].Function, "(") {
				base, _, _ := strings.Cut(mine[k].Function, "(")
				if j := strings.LastIndex(base, "::"); j >= 0 {
					base = base[j+2:]
				}
				mine[k].Function = base
				names++
			}
		}
		if diff := cmp.Diff(want, mine); diff != "" {
			if bad++; bad <= 5 {
				t.Errorf("0x%x: errata and eu-addr2line differ (-eu-addr2line +errata):\n%s", pc, diff)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d addresses differ from eu-addr2line", bad, len(pcs))
	}
	t.Logf("%d instruction starts as eu-addr2line (%d names compared without scope and parameters)", len(pcs), names)
}

// symbolicated is the answer of the route, as the tests read it.
type symbolicated struct {
	Status      string `json:"status"`
	Stacktraces []struct {
		Frames []struct {
			Status          string   `json:"status"`
			OriginalIndex   int      `json:"original_index"`
			InstructionAddr string   `json:"instruction_addr"`
			SymAddr         string   `json:"sym_addr"`
			Function        string   `json:"function"`
			Symbol          string   `json:"symbol"`
			Package         string   `json:"package"`
			AbsPath         string   `json:"abs_path"`
			Filename        string   `json:"filename"`
			Lineno          int      `json:"lineno"`
			Colno           int      `json:"colno"`
			PreContext      []string `json:"pre_context"`
			ContextLine     *string  `json:"context_line"`
			PostContext     []string `json:"post_context"`
		} `json:"frames"`
	} `json:"stacktraces"`
	Modules []struct {
		DebugStatus string `json:"debug_status"`
		DebugReason string `json:"debug_reason"`
		Features    struct {
			HasDebugInfo bool `json:"has_debug_info"`
			HasSources   bool `json:"has_sources"`
		} `json:"features"`
		Candidates []struct {
			FileFormat string `json:"file_format"`
			Status     string `json:"status"`
		} `json:"candidates"`
	} `json:"modules"`
}

func symbolicate(t *testing.T, s *errataServer, org string, body any) symbolicated {
	t.Helper()
	return symbolicateIn(t, s, org+"/web", body)
}

func symbolicateIn(t *testing.T, s *errataServer, project string, body any) symbolicated {
	t.Helper()
	status, b := s.api(t, "POST", "/api/0/projects/"+project+"/symbolicate/", body)
	if status != http.StatusOK {
		t.Fatalf("symbolicate: %d %s", status, b)
	}
	var out symbolicated
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("symbolicate answer %s: %v", b, err)
	}
	if out.Status != "completed" {
		t.Fatalf("symbolicate status %q", out.Status)
	}
	return out
}

// nativeBase is where the tests say the programs are loaded.
const nativeBase = 0x555555554000

// TestNativeSymbolication builds C and C++ programs with gcc and clang-14,
// uploads them stripped, with their debug companions and sources, with
// sentry-cli, and checks that errata resolves every instruction start of
// their own functions as llvm-symbolizer does on the unstripped files.
func TestNativeSymbolication(t *testing.T) {
	t.Parallel()
	needNativeTools(t)
	src, upload := t.TempDir(), t.TempDir()
	fixtures := buildNative(t, src, upload)

	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	s.token = s.user(t, "native@example.com", "project:releases,project:read,project:write,org:read")
	s.cli(t, "admin", "create-org", "--slug", "nat", "--owner", "native@example.com")
	s.cli(t, "admin", "create-project", "--org", "nat", "--slug", "web")
	cli := newSentryCLI(t, "SENTRY_CLI_2", s, "nat").in(t.TempDir())
	cli.run(t, "debug-files", "upload", "--wait", "--include-sources", upload).expect(t, 0)

	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			pcs, wants := instructionStarts(t, f, src)
			frames := make([]map[string]any, len(pcs))
			for i, pc := range pcs {
				frames[i] = map[string]any{"instruction_addr": fmt.Sprintf("0x%x", nativeBase+pc), "adjust_instruction_addr": false}
			}
			out := symbolicate(t, s, "nat", map[string]any{
				"modules": []map[string]any{{"type": "elf", "code_id": f.buildID, "debug_id": debugIDOfBuildID(f.buildID),
					"code_file": "/usr/bin/" + f.name, "image_addr": fmt.Sprintf("0x%x", nativeBase), "image_size": 1 << 20}},
				"stacktraces": []map[string]any{{"frames": frames}},
			})
			m := out.Modules[0]
			if m.DebugStatus != "found" || !m.Features.HasDebugInfo || !m.Features.HasSources {
				t.Errorf("module %+v, want found with debug info and sources", m)
			}
			got := make([][]nativeWant, len(pcs))
			contexts := 0
			for _, fr := range out.Stacktraces[0].Frames {
				if fr.Status != "symbolicated" || fr.Package != "/usr/bin/"+f.name {
					t.Errorf("frame %+v", fr)
				}
				// Source context from the bundle sentry-cli uploaded:
				// the file's own lines, none past its last (its
				// final newline ends that line and starts none).
				if fr.Lineno > 0 {
					b, err := os.ReadFile(fr.AbsPath)
					if err != nil {
						t.Fatal(err)
					}
					lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
					k := fr.Lineno - 1
					if fr.ContextLine == nil || *fr.ContextLine != lines[k] ||
						!cmp.Equal(fr.PreContext, lines[max(0, k-5):k], cmpopts.EquateEmpty()) ||
						!cmp.Equal(fr.PostContext, lines[k+1:min(len(lines), k+6)], cmpopts.EquateEmpty()) {
						t.Errorf("%s:%d: source context %q %v %q", fr.AbsPath, fr.Lineno, fr.PreContext, fr.ContextLine, fr.PostContext)
					}
					contexts++
				}
				got[fr.OriginalIndex] = append(got[fr.OriginalIndex], nativeWant{fr.Function, fr.AbsPath, fr.Lineno, fr.Colno})
			}
			bad := 0
			for i := range pcs {
				if diff := cmp.Diff(wants[i], got[i]); diff != "" {
					if bad++; bad <= 5 {
						t.Errorf("0x%x: errata and llvm-symbolizer differ (-llvm-symbolizer +errata):\n%s", pcs[i], diff)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d addresses differ", bad, len(pcs))
			}
			if f.euVotes() {
				checkEuAddr2line(t, f, src, pcs, got)
			}
			if contexts == 0 {
				t.Error("no frame with source context")
			}
			t.Logf("%d instruction starts, %d frames, as llvm-symbolizer, %d with source context", len(pcs), len(out.Stacktraces[0].Frames), contexts)
		})
		t.Run(f.name+"/crash", func(t *testing.T) { checkCrash(t, s, f) })
	}

	// Breakpad symbol files of two programs, written from
	// llvm-symbolizer's answers (Debian has no dump_syms), in a project
	// of their own: the same functions and lines (Breakpad has no
	// columns).
	s.cli(t, "admin", "create-project", "--org", "nat", "--slug", "bp")
	bpDir := t.TempDir()
	type bpCase struct {
		f     nativeFixture
		pcs   []uint64
		wants [][]nativeWant
	}
	var bps []bpCase
	for _, f := range []nativeFixture{fixtures[0], fixtures[3]} {
		pcs, wants := instructionStarts(t, f, src)
		pcs, wants = writeBreakpad(t, filepath.Join(bpDir, f.name+".sym"), f, src, pcs, wants)
		bps = append(bps, bpCase{f, pcs, wants})
	}
	bpCLI := cli
	bpCLI.project = "bp"
	bpCLI.run(t, "debug-files", "upload", "--wait", bpDir).expect(t, 0)
	for _, bc := range bps {
		t.Run(bc.f.name+"/breakpad", func(t *testing.T) {
			frames := make([]map[string]any, len(bc.pcs))
			for i, pc := range bc.pcs {
				frames[i] = map[string]any{"instruction_addr": fmt.Sprintf("0x%x", pc), "addr_mode": "rel:0", "adjust_instruction_addr": false}
			}
			out := symbolicateIn(t, s, "nat/bp", map[string]any{
				"modules":     []map[string]any{{"type": "elf", "debug_id": debugIDOfBuildID(bc.f.buildID), "image_addr": "0x0"}},
				"stacktraces": []map[string]any{{"frames": frames}},
			})
			if m := out.Modules[0]; m.DebugStatus != "found" || len(m.Candidates) != 1 || m.Candidates[0].FileFormat != "breakpad" {
				t.Fatalf("module %+v, want found in the Breakpad file", m)
			}
			got := make([][]nativeWant, len(bc.pcs))
			for _, fr := range out.Stacktraces[0].Frames {
				got[fr.OriginalIndex] = append(got[fr.OriginalIndex], nativeWant{fr.Function, fr.AbsPath, fr.Lineno, fr.Colno})
			}
			bad := 0
			for i := range bc.pcs {
				want := slices.Clone(bc.wants[i])
				for k := range want {
					want[k].Column = 0
				}
				if diff := cmp.Diff(want, got[i]); diff != "" {
					if bad++; bad <= 5 {
						t.Errorf("0x%x (-llvm-symbolizer +errata from Breakpad):\n%s", bc.pcs[i], diff)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d addresses differ", bad, len(bc.pcs))
			}
		})
	}

	// A program of two units whose second unit's function entry names an
	// abbreviation its table does not have: errata reads the unit entries
	// only, then a unit when an address first falls in it, so the damage
	// shows for the second unit's addresses alone (malformed), and the
	// first unit resolves.
	t.Run("a damaged unit", func(t *testing.T) {
		dir, up := t.TempDir(), t.TempDir()
		os.WriteFile(filepath.Join(dir, "a.c"), []byte("int fa(int x) { return x * 3 + 1; }\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "b.c"), []byte("int fa(int);\nint fb(int x) { return x * 5 + 2; }\nint main(int c, char **v) { return fa(c) + fb(c); }\n"), 0o644)
		nativeTool(t, dir, "gcc", "-O0", "-g", "-Wl,--build-id=sha1", "-o", "two", "a.c", "b.c")
		data, err := os.ReadFile(filepath.Join(dir, "two"))
		if err != nil {
			t.Fatal(err)
		}
		secs, err := dif.ReadELFSections(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		var info uint64
		for _, sec := range secs {
			if sec.Name == ".debug_info" {
				info = sec.Offset
			}
		}
		// The offset of fb's entry in .debug_info, as llvm-dwarfdump
		// lists it: "0x...: DW_TAG_subprogram", then its DW_AT_name.
		var entry, fb uint64
		for l := range strings.SplitSeq(nativeTool(t, dir, "llvm-dwarfdump-14", "--debug-info", "two"), "\n") {
			if off, ok := strings.CutSuffix(strings.TrimSpace(l), ":   DW_TAG_subprogram"); ok {
				entry, _ = strconv.ParseUint(strings.TrimPrefix(off, "0x"), 16, 64)
			}
			if strings.Contains(l, `DW_AT_name	("fb")`) {
				fb = entry
			}
		}
		if info == 0 || fb == 0 {
			t.Fatalf(".debug_info at %d, fb's entry at %d", info, fb)
		}
		data[info+fb] = 0x7f
		if err := os.WriteFile(filepath.Join(up, "two"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		addrs := map[string]uint64{}
		for l := range strings.SplitSeq(nativeTool(t, dir, "nm", "two"), "\n") {
			if f := strings.Fields(l); len(f) == 3 && (f[2] == "fa" || f[2] == "fb") {
				addrs[f[2]], _ = strconv.ParseUint(f[0], 16, 64)
			}
		}
		m := regexp.MustCompile(`Build ID: ([0-9a-f]+)`).FindStringSubmatch(nativeTool(t, dir, "readelf", "-n", "two"))
		if m == nil {
			t.Fatal("the program has no build id")
		}
		buildID := m[1]
		s.cli(t, "admin", "create-project", "--org", "nat", "--slug", "dmg")
		dmgCLI := cli
		dmgCLI.project = "dmg"
		dmgCLI.run(t, "debug-files", "upload", "--wait", up).expect(t, 0)
		out := symbolicateIn(t, s, "nat/dmg", map[string]any{
			"modules": []map[string]any{{"type": "elf", "code_id": buildID, "debug_id": debugIDOfBuildID(buildID),
				"image_addr": fmt.Sprintf("0x%x", nativeBase), "image_size": 1 << 20}},
			"stacktraces": []map[string]any{{"frames": []map[string]any{
				{"instruction_addr": fmt.Sprintf("0x%x", nativeBase+addrs["fa"]+1), "adjust_instruction_addr": false},
				{"instruction_addr": fmt.Sprintf("0x%x", nativeBase+addrs["fb"]+1), "adjust_instruction_addr": false},
			}}},
		})
		var got []string
		for _, fr := range out.Stacktraces[0].Frames {
			got = append(got, fr.Status+" "+fr.Function)
		}
		if diff := cmp.Diff([]string{"symbolicated fa", "malformed "}, got); diff != "" {
			t.Errorf("frames (-want +got):\n%s", diff)
		}
	})

	// A Mach-O of the C program (clang-14 for macOS, ld64.lld-14; stub
	// headers, as there is no macOS SDK) and its dSYM (dsymutil-14),
	// uploaded with sentry-cli: errata equals llvm-symbolizer on the dSYM.
	t.Run("macho-dsym", func(t *testing.T) {
		stub, dsymDir := t.TempDir(), t.TempDir()
		os.WriteFile(filepath.Join(stub, "stdio.h"), []byte("int printf(const char *, ...);\n"), 0o644)
		os.WriteFile(filepath.Join(stub, "stdlib.h"), []byte("#define NULL ((void *)0)\nint atoi(const char *);\n"), 0o644)
		target := "--target=x86_64-apple-macos11"
		nativeTool(t, src, "clang-14", target, "-g", "-O2", "-nostdinc", "-I"+stub, "-c", "-o", "mac.o", "crash.c")
		nativeTool(t, src, "clang-14", target, "-fuse-ld=lld", "-nostdlib", "-Wl,-undefined,dynamic_lookup", "-Wl,-e,_main", "-o", "mac", "mac.o")
		dsym := filepath.Join(dsymDir, "mac.dSYM")
		nativeTool(t, src, "dsymutil-14", "mac", "-o", dsym)
		m := regexp.MustCompile(`UUID: ([0-9A-F-]{36})`).FindStringSubmatch(nativeTool(t, src, "llvm-dwarfdump-14", "--uuid", "mac"))
		if m == nil {
			t.Fatal("the Mach-O has no UUID")
		}
		f := nativeFixture{nativeBuild: nativeBuild{name: "macho"}, full: filepath.Join(src, "mac"),
			symbolize: filepath.Join(dsym, "Contents/Resources/DWARF/mac")}
		pcs, wants := instructionStarts(t, f, src)
		s.cli(t, "admin", "create-project", "--org", "nat", "--slug", "mac")
		macCLI := cli
		macCLI.project = "mac"
		macCLI.run(t, "debug-files", "upload", "--wait", dsymDir).expect(t, 0)
		frames := make([]map[string]any, len(pcs))
		for i, pc := range pcs {
			frames[i] = map[string]any{"instruction_addr": fmt.Sprintf("0x%x", pc), "adjust_instruction_addr": false}
		}
		out := symbolicateIn(t, s, "nat/mac", map[string]any{
			"modules": []map[string]any{{"type": "macho", "debug_id": strings.ToLower(m[1]),
				"image_addr": "0x100000000", "image_vmaddr": "0x100000000", "image_size": 1 << 20}},
			"stacktraces": []map[string]any{{"frames": frames}},
		})
		if md := out.Modules[0]; md.DebugStatus != "found" {
			t.Fatalf("module %+v, want found in the dSYM", md)
		}
		got := make([][]nativeWant, len(pcs))
		for _, fr := range out.Stacktraces[0].Frames {
			got[fr.OriginalIndex] = append(got[fr.OriginalIndex], nativeWant{fr.Function, fr.AbsPath, fr.Lineno, fr.Colno})
		}
		bad := 0
		for i := range pcs {
			if diff := cmp.Diff(wants[i], got[i]); diff != "" {
				if bad++; bad <= 5 {
					t.Errorf("0x%x (-llvm-symbolizer on the dSYM +errata):\n%s", pcs[i], diff)
				}
			}
		}
		if bad > 0 {
			t.Errorf("%d of %d addresses differ", bad, len(pcs))
		}
	})

	// A PE and its PDB of the C program (clang-14 for Windows at -O0, no
	// inlined calls: TestNativeFormats builds it at -O2; lld-link-14;
	// stub headers, as there is no Windows SDK), uploaded with sentry-cli:
	// errata equals llvm-symbolizer on the PE with the PDB beside it
	// (names but for their parameter lists: withLLVMPDBNames).
	t.Run("pe-pdb", func(t *testing.T) {
		stub, dir := t.TempDir(), t.TempDir()
		os.WriteFile(filepath.Join(stub, "stdio.h"), []byte("int printf(const char *, ...);\n"), 0o644)
		os.WriteFile(filepath.Join(stub, "stdlib.h"), []byte("#define NULL ((void *)0)\nint atoi(const char *);\n"), 0o644)
		nativeTool(t, src, "clang-14", "--target=x86_64-pc-windows-msvc", "-g", "-gcodeview", "-O0", "-nostdinc", "-I"+stub, "-c", "-o", "win.obj", "crash.c")
		exe := filepath.Join(dir, "crash.exe")
		cmd := exec.Command("lld-link-14", "/debug", "/entry:main", "/nodefaultlib", "/subsystem:console", "/force:unresolved",
			filepath.Join(src, "win.obj"), "/out:"+exe, "/pdb:"+filepath.Join(dir, "crash.pdb"))
		if out, err := cmd.CombinedOutput(); err != nil {
			if _, statErr := os.Stat(exe); statErr != nil {
				t.Fatalf("lld-link-14: %v\n%s", err, out)
			}
		}
		f := nativeFixture{nativeBuild: nativeBuild{name: "pe"}, full: exe}
		pcs, wants := instructionStarts(t, f, src)
		s.cli(t, "admin", "create-project", "--org", "nat", "--slug", "win")
		winCLI := cli
		winCLI.project = "win"
		winCLI.run(t, "debug-files", "upload", "--wait", dir).expect(t, 0)
		debugID := checkedID(t, winCLI, filepath.Join(dir, "crash.pdb"))
		frames := make([]map[string]any, len(pcs))
		for i, pc := range pcs {
			frames[i] = map[string]any{"instruction_addr": fmt.Sprintf("0x%x", pc), "adjust_instruction_addr": false}
		}
		out := symbolicateIn(t, s, "nat/win", map[string]any{
			"modules":     []map[string]any{{"type": "pe", "debug_id": debugID, "image_addr": "0x140000000", "image_size": 1 << 20}},
			"stacktraces": []map[string]any{{"frames": frames}},
		})
		if md := out.Modules[0]; md.DebugStatus != "found" {
			_, list := s.api(t, "GET", "/api/0/projects/nat/win/files/dsyms/", nil)
			t.Fatalf("module %+v, want found in the PDB; stored: %s", md, list)
		}
		withLLVMPDBNames(&out, wants)
		got := make([][]nativeWant, len(pcs))
		for _, fr := range out.Stacktraces[0].Frames {
			got[fr.OriginalIndex] = append(got[fr.OriginalIndex], nativeWant{fr.Function, fr.AbsPath, fr.Lineno, fr.Colno})
		}
		bad := 0
		for i := range pcs {
			if diff := cmp.Diff(wants[i], got[i]); diff != "" {
				if bad++; bad <= 5 {
					t.Errorf("0x%x (-llvm-symbolizer with the PDB +errata):\n%s", pcs[i], diff)
				}
			}
		}
		if bad > 0 {
			t.Errorf("%d of %d addresses differ", bad, len(pcs))
		}
	})

	// A module whose only file is a stripped executable: its frames are
	// missing_symbol, the module missing, with that file as a candidate.
	t.Run("stripped only", func(t *testing.T) {
		dir := t.TempDir()
		prog := filepath.Join(dir, "bare")
		nativeTool(t, src, "gcc", "-O2", "-Wl,--build-id=sha1", "-o", prog+".full", "crash.c")
		nativeTool(t, src, "strip", "--strip-all", "-o", prog, prog+".full")
		os.Remove(prog + ".full")
		id := regexp.MustCompile(`Build ID: ([0-9a-f]+)`).FindStringSubmatch(nativeTool(t, src, "readelf", "-n", prog))
		if id == nil {
			t.Fatal("no build id")
		}
		s.cli(t, "admin", "create-project", "--org", "nat", "--slug", "bare")
		bareCLI := cli
		bareCLI.project = "bare"
		bareCLI.run(t, "debug-files", "upload", "--wait", dir).expect(t, 0)
		out := symbolicateIn(t, s, "nat/bare", map[string]any{
			"modules":     []map[string]any{{"type": "elf", "code_id": id[1], "image_addr": "0x1000", "image_size": 1 << 16}},
			"stacktraces": []map[string]any{{"frames": []map[string]any{{"instruction_addr": "0x1100"}}}},
		})
		m := out.Modules[0]
		if m.DebugStatus != "missing" || len(m.Candidates) != 1 || m.Candidates[0].Status != "no_debug_info" {
			t.Errorf("module %+v, want missing with the executable as a candidate without debug information", m)
		}
		if fr := out.Stacktraces[0].Frames; len(fr) != 1 || fr[0].Status != "missing_symbol" {
			t.Errorf("frames %+v, want one missing_symbol", fr)
		}
	})

	t.Run("limits", func(t *testing.T) {
		f := fixtures[0]
		module := map[string]any{"type": "elf", "debug_id": debugIDOfBuildID(f.buildID), "image_addr": "0x0"}
		frames := func(n int) []map[string]any {
			fs := make([]map[string]any, n)
			for i := range fs {
				fs[i] = map[string]any{"instruction_addr": i}
			}
			return fs
		}
		// 1,000 frames are answered.
		out := symbolicate(t, s, "nat", map[string]any{"modules": []any{module}, "stacktraces": []any{map[string]any{"frames": frames(1000)}}})
		if n := len(out.Stacktraces[0].Frames); n < 1000 {
			t.Errorf("%d frames for 1,000", n)
		}
		for _, tc := range []struct {
			name string
			body any
			want int
		}{
			{"5,001 frames", map[string]any{"modules": []any{module}, "stacktraces": []any{
				map[string]any{"frames": frames(2500)}, map[string]any{"frames": frames(2501)}}}, http.StatusUnprocessableEntity},
			{"501 modules", map[string]any{"modules": slices.Repeat([]any{module}, 501)}, http.StatusUnprocessableEntity},
			{"a body over 1 MiB", map[string]any{"pad": strings.Repeat("x", 1<<20)}, http.StatusRequestEntityTooLarge},
			{"a module of no type", map[string]any{"modules": []any{map[string]any{"image_addr": "0x0"}}}, http.StatusUnprocessableEntity},
			{"an address that is not one", map[string]any{"modules": []any{module}, "stacktraces": []any{
				map[string]any{"frames": []any{map[string]any{"instruction_addr": "main+4"}}}}}, http.StatusUnprocessableEntity},
			{"rel:N of no module", map[string]any{"modules": []any{module}, "stacktraces": []any{
				map[string]any{"frames": []any{map[string]any{"instruction_addr": 1, "addr_mode": "rel:1"}}}}}, http.StatusUnprocessableEntity},
			{"modules of the wrong type", map[string]any{"modules": "elf"}, http.StatusUnprocessableEntity},
			{"an unknown frame order", map[string]any{"options": map[string]any{"frame_order": "random"}}, http.StatusUnprocessableEntity},
		} {
			status, body := s.api(t, "POST", "/api/0/projects/nat/web/symbolicate/", tc.body)
			if status != tc.want {
				t.Errorf("%s: %d %.200s, want %d", tc.name, status, body, tc.want)
			}
		}
	})

	t.Run("statuses, order and retention", func(t *testing.T) {
		f := fixtures[0]
		pcs, wants := instructionStarts(t, f, src)
		// An instruction with an inlined call whose next instruction
		// resolves otherwise: the next one's address, as a return
		// address, is looked up a byte earlier, in it.
		var pc, next uint64
		var want []nativeWant
		for i := range len(pcs) - 1 {
			if len(wants[i]) > 1 && pcs[i+1]-pcs[i] < 16 && !cmp.Equal(wants[i], wants[i+1]) {
				pc, next, want = pcs[i], pcs[i+1], wants[i]
				break
			}
		}
		if want == nil {
			t.Fatal("no instruction of an inlined call")
		}
		ctx := t.Context()
		if _, err := s.db(t).Exec(ctx, `UPDATE files SET date_used = now() - interval '10 days'`); err != nil {
			t.Fatal(err)
		}
		out := symbolicate(t, s, "nat", map[string]any{
			"modules": []map[string]any{
				{"type": "elf", "debug_id": debugIDOfBuildID(f.buildID), "image_addr": "0x10000", "image_size": 1 << 20},
				{"type": "elf", "debug_id": "11111111-2222-3333-4444-555555555555", "image_addr": "0x200000", "image_size": 4096},
			},
			"stacktraces": []map[string]any{{"frames": []map[string]any{
				{"instruction_addr": "0x9000"},                                      // below every module
				{"instruction_addr": "0x200010"},                                    // a module errata has no file for
				{"instruction_addr": fmt.Sprintf("0x%x", 0x10000+next)},             // a return address
				{"instruction_addr": fmt.Sprintf("0x%x", pc), "addr_mode": "rel:0"}, // the crashing frame under caller_first
			}}},
			"options": map[string]any{"frame_order": "caller_first"},
		})
		fr := out.Stacktraces[0].Frames
		var statuses []string
		for _, x := range fr {
			statuses = append(statuses, fmt.Sprintf("%d:%s", x.OriginalIndex, x.Status))
		}
		n := len(want)
		wantStatuses := []string{"0:unknown_image", "1:missing"}
		for range 2 {
			for range n {
				wantStatuses = append(wantStatuses, "")
			}
		}
		for i := range 2 * n {
			wantStatuses[2+i] = fmt.Sprintf("%d:symbolicated", 2+i/n)
		}
		if diff := cmp.Diff(wantStatuses, statuses); diff != "" {
			t.Fatalf("statuses (-want +got):\n%s", diff)
		}
		// caller_first: the outermost call first, in both expansions.
		for k := range 2 {
			for i := range n {
				got := fr[2+k*n+i]
				w := want[n-1-i]
				if got.Function != w.Function || got.AbsPath != w.File || got.Lineno != w.Line {
					t.Errorf("frame %d of %d: %+v, want %+v", i, 2+k, got, w)
				}
			}
		}
		if m := out.Modules[1]; m.DebugStatus != "missing" || len(m.Candidates) != 0 {
			t.Errorf("unknown module %+v, want missing without candidates", m)
		}
		var cands []string
		for _, c := range out.Modules[0].Candidates {
			cands = append(cands, c.FileFormat+":"+c.Status)
		}
		if !strings.Contains(strings.Join(cands, ","), "elf:ok") || !strings.Contains(strings.Join(cands, ","), "sourcebundle:no_debug_info") {
			t.Errorf("candidates %v, want the debug companion ok and the source bundle", cands)
		}
		if n := s.count(t, `SELECT count(*) FROM files WHERE date_used > now() - interval '1 hour'`); n != 2 {
			t.Errorf("%d files used by the resolution, want 2 (the debug companion and the source bundle)", n)
		}
		// Another organization's project, and no project: 404.
		if status, _ := s.api(t, "POST", "/api/0/projects/nat/nothing/symbolicate/", map[string]any{}); status != http.StatusNotFound {
			t.Errorf("a missing project: %d, want 404", status)
		}
	})
}

// gdbFrame is a frame of gdb's bt: the function (without parameters),
// the file's base name and the line.
type gdbFrame struct {
	Function string
	File     string
	Line     int
}

var (
	gdbSourceFrame = regexp.MustCompile(`^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(.*\) at (\S+):(\d+)$`)
	gdbAddrFrame   = regexp.MustCompile(`^#\d+\s+0x([0-9a-f]+) in `)
	gdbMapping     = regexp.MustCompile(`^\s*0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+\S+\s+(\S+)$`)
)

// gdbCrash runs prog with arguments that make it crash under gdb and
// returns what bt printed and the process's mappings.
func gdbCrash(t *testing.T, prog string) string {
	t.Helper()
	return nativeTool(t, filepath.Dir(prog), "gdb", "-nx", "-batch", "-ex", "set width 0", "-ex", "run", "-ex", "bt",
		"-ex", "info proc mappings", "--args", prog, "3", "crash")
}

// checkCrash crashes the stripped program under gdb, has errata resolve
// the addresses of its backtrace, and compares the frames with gdb's bt
// of the unstripped program.
func checkCrash(t *testing.T, s *errataServer, f nativeFixture) {
	var want []gdbFrame
	for l := range strings.SplitSeq(gdbCrash(t, f.full), "\n") {
		if m := gdbSourceFrame.FindStringSubmatch(l); m != nil && strings.HasPrefix(l, "#") {
			line, _ := strconv.Atoi(m[3])
			want = append(want, gdbFrame{m[1], filepath.Base(m[2]), line})
		}
	}
	if len(want) < 2 {
		t.Fatalf("gdb's bt of %s has %d frames of the program", f.full, len(want))
	}
	var base, end uint64
	var frames []map[string]any
	for l := range strings.SplitSeq(gdbCrash(t, f.stripped), "\n") {
		if m := gdbAddrFrame.FindStringSubmatch(l); m != nil && strings.HasPrefix(l, "#") {
			frames = append(frames, map[string]any{"instruction_addr": "0x" + m[1]})
		}
		if m := gdbMapping.FindStringSubmatch(l); m != nil && m[4] == f.stripped {
			lo, _ := strconv.ParseUint(m[1], 16, 64)
			hi, _ := strconv.ParseUint(m[2], 16, 64)
			if m[3] == "0" || base == 0 {
				base = lo
			}
			end = max(end, hi)
		}
	}
	if base == 0 || len(frames) < 2 {
		t.Fatalf("gdb's bt of the stripped %s: %d frames, base 0x%x", f.stripped, len(frames), base)
	}
	out := symbolicate(t, s, "nat", map[string]any{
		"modules": []map[string]any{{"type": "elf", "code_id": f.buildID, "code_file": f.stripped,
			"image_addr": fmt.Sprintf("0x%x", base), "image_size": end - base}},
		"stacktraces": []map[string]any{{"frames": frames}},
	})
	var got []gdbFrame
	for _, fr := range out.Stacktraces[0].Frames {
		if fr.Status == "symbolicated" {
			name, _, _ := strings.Cut(fr.Function, "(")
			got = append(got, gdbFrame{name, filepath.Base(fr.AbsPath), fr.Lineno})
			if name == "main" {
				break // gdb's bt stops at main (backtrace past-main is off)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the crash of the stripped program, resolved by errata, differs from gdb's bt (-gdb +errata):\n%s", diff)
	}
}

// writeBreakpad writes a Breakpad symbol file of f at path from
// llvm-symbolizer's answers for every instruction start of its own
// functions (pcs, wants) and the sizes of its symbols (nm -S): FUNC, line,
// FILE, INLINE_ORIGIN and INLINE records, as dump_syms would. It returns
// the instructions it wrote, those of a function (not the padding between
// functions, which the line table covers).
func writeBreakpad(t *testing.T, path string, f nativeFixture, src string, pcs []uint64, wants [][]nativeWant) ([]uint64, [][]nativeWant) {
	t.Helper()
	type sym struct{ addr, size uint64 }
	var syms []sym
	for l := range strings.SplitSeq(nativeTool(t, src, "nm", "-S", "--defined-only", f.full), "\n") {
		fs := strings.Fields(l)
		if len(fs) == 4 && (fs[2] == "T" || fs[2] == "t") {
			a, _ := strconv.ParseUint(fs[0], 16, 64)
			n, _ := strconv.ParseUint(fs[1], 16, 64)
			syms = append(syms, sym{a, n})
		}
	}
	symOf := func(pc uint64) (sym, bool) {
		for _, s := range syms {
			if s.addr <= pc && pc < s.addr+s.size {
				return s, true
			}
		}
		return sym{}, false
	}
	var keptPCs []uint64
	var keptWants [][]nativeWant
	files, origins := map[string]int{}, map[string]int{}
	id := func(m map[string]int, k string) int {
		if _, ok := m[k]; !ok {
			m[k] = len(m)
		}
		return m[k]
	}
	var body strings.Builder
	var cur sym
	for i, pc := range pcs {
		w := wants[i]
		s, ok := symOf(pc)
		if !ok {
			continue
		}
		keptPCs, keptWants = append(keptPCs, pc), append(keptWants, w)
		if s != cur {
			cur = s
			fmt.Fprintf(&body, "FUNC %x %x 0 %s\n", s.addr, s.size, w[len(w)-1].Function)
		}
		end := s.addr + s.size
		if i+1 < len(pcs) && pcs[i+1] < end {
			end = pcs[i+1]
		}
		for d := 0; d < len(w)-1; d++ {
			in, caller := w[len(w)-2-d], w[len(w)-1-d]
			fmt.Fprintf(&body, "INLINE %d %d %d %d %x %x\n", d, caller.Line, id(files, caller.File), id(origins, in.Function), pc, end-pc)
		}
		fmt.Fprintf(&body, "%x %x %d %d\n", pc, end-pc, w[0].Line, id(files, w[0].File))
	}
	var out strings.Builder
	fmt.Fprintf(&out, "MODULE Linux x86_64 %s0 %s\nINFO CODE_ID %s\n",
		strings.ToUpper(strings.ReplaceAll(debugIDOfBuildID(f.buildID), "-", "")), f.name, strings.ToUpper(f.buildID))
	for _, m := range []struct {
		rec string
		ids map[string]int
	}{{"FILE", files}, {"INLINE_ORIGIN", origins}} {
		names := make([]string, len(m.ids))
		for k, v := range m.ids {
			names[v] = k
		}
		for i, n := range names {
			fmt.Fprintf(&out, "%s %d %s\n", m.rec, i, n)
		}
	}
	out.WriteString(body.String())
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if len(keptPCs) < 20 {
		t.Fatalf("%s: only %d instructions in functions", f.name, len(keptPCs))
	}
	return keptPCs, keptWants
}
