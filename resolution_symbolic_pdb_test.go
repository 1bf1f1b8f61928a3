package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// snapshotFrames is what the snapshot says an address resolves to,
// innermost first, for each address of its line records: the deepest
// function (or inlined call) with a line record at the address, and the
// calls around it, each at its own line record at or before the address.
// Only line records' addresses are looked up: the snapshot does not give
// their ends, nor where an inlined call's ranges have gaps.
func snapshotFrames(top []*snapshotFunction) (addrs []uint64, want map[uint64][]nativeWant) {
	want = map[uint64][]nativeWant{}
	lineAt := func(f *snapshotFunction, addr uint64) snapshotLine {
		var l snapshotLine
		for _, r := range f.Lines {
			if r.Addr <= addr {
				l = r
			}
		}
		return l
	}
	has := func(f *snapshotFunction, addr uint64) bool {
		return slices.ContainsFunc(f.Lines, func(l snapshotLine) bool { return l.Addr == addr })
	}
	for _, fn := range top {
		// deepest is the longest chain from fn to a call with a record
		// at addr, the first found at each depth.
		var deepest func(chain []*snapshotFunction, addr uint64) []*snapshotFunction
		deepest = func(chain []*snapshotFunction, addr uint64) []*snapshotFunction {
			var best []*snapshotFunction
			if last := chain[len(chain)-1]; has(last, addr) {
				best = chain
			}
			for _, k := range chain[len(chain)-1].Inlinees {
				if c := deepest(append(slices.Clip(chain), k), addr); len(c) > len(best) {
					best = c
				}
			}
			return best
		}
		var walk func(f *snapshotFunction)
		walk = func(f *snapshotFunction) {
			for _, l := range f.Lines {
				if _, ok := want[l.Addr]; ok {
					continue
				}
				chain := deepest([]*snapshotFunction{fn}, l.Addr)
				var w []nativeWant
				for i := len(chain) - 1; i >= 0; i-- {
					at := lineAt(chain[i], l.Addr)
					w = append(w, nativeWant{Function: chain[i].Name, File: at.path(), Line: at.Line})
				}
				want[l.Addr] = w
				addrs = append(addrs, l.Addr)
			}
			for _, k := range f.Inlinees {
				walk(k)
			}
		}
		walk(fn)
	}
	return addrs, want
}

// knownPDBDifferences are the addresses of the crash.pdb snapshot where
// errata differs from symbolic and agrees with llvm-symbolizer, and why.
// The test checks both: errata differs from the snapshot there, and
// llvm-symbolizer (on crash.exe, with crash.pdb beside it) gives errata's
// file and line.
var knownPDBDifferences = map[uint64]string{
	0x12d0: "two line records at the function's first address, the first (xstring:3918) of no bytes: symbolic skips it, llvm-symbolizer and errata give it",
	0x2690: "two line records at the function's first address, the first (scoped_ptr.h:96) of no bytes: symbolic skips it, llvm-symbolizer and errata give it",
	0x27d0: "two line records at the function's first address, the first (list:761) of no bytes: symbolic skips it, llvm-symbolizer and errata give it",
}

// TestSymbolicPDB resolves, through the native symbolicate route, the
// addresses of symbolic's snapshot of windows/crash.pdb's functions
// (test_objects__pdb_functions.snap) and of the assertions of its tests
// on that PDB (test_pdb_anonymous_namespace, the symcache's
// test_undecorate_windows_symbols), after uploading crash.exe, crash.pdb,
// CrashWithException.exe and CrashWithException.pdb with sentry-cli; and
// checks that each PDB is stored with the features sentry-cli's check
// reports for it.
func TestSymbolicPDB(t *testing.T) {
	t.Parallel()
	windows := suitePath(t, "symbolic/symbolic-testutils/fixtures/windows")
	addrs, want := snapshotFrames(parseFunctionsSnapshot(t, suitePath(t, symbolicDebuginfoSnapshot+"test_objects__pdb_functions.snap")))
	if len(addrs) == 0 {
		t.Fatal("no address in the snapshot")
	}
	for a := range knownPDBDifferences {
		if _, ok := want[a]; !ok {
			t.Errorf("known difference 0x%x is no address of the snapshot", a)
		}
	}

	// The four files alone: the folder also holds crash.sym, a Breakpad
	// file of crash.pdb's debug id.
	upload := t.TempDir()
	for _, name := range []string{"crash.exe", "crash.pdb", "CrashWithException.exe", "CrashWithException.pdb"} {
		b, err := os.ReadFile(filepath.Join(windows, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(upload, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	s.token = s.user(t, "pdb@example.com", "project:releases,project:read,project:write,org:read")
	s.cli(t, "admin", "create-org", "--slug", "sym", "--owner", "pdb@example.com")
	s.cli(t, "admin", "create-project", "--org", "sym", "--slug", "web")
	cli := newSentryCLI(t, "SENTRY_CLI_2", s, "sym").in(t.TempDir())
	cli.run(t, "debug-files", "upload", "--wait", upload).expect(t, 0)
	pdbID, _ := checkedIDs(t, cli, filepath.Join(upload, "crash.pdb"))
	// sentry-cli calls crash.exe unusable (it has no debug information)
	// but prints its code id.
	m := regexp.MustCompile(`Code ID: +([0-9a-f]+)`).FindStringSubmatch(cli.run(t, "debug-files", "check", filepath.Join(upload, "crash.exe")).stdout)
	if m == nil {
		t.Fatal("debug-files check crash.exe printed no code id")
	}
	codeID := m[1]
	const image = 0x400000 // crash.exe's image base
	module := map[string]any{"type": "pe", "debug_id": pdbID, "code_id": codeID, "code_file": "crash.exe",
		"image_addr": fmt.Sprintf("0x%x", image), "image_size": 1 << 20}
	resolve := func(t *testing.T, rvas []uint64) [][]nativeWant {
		t.Helper()
		got := make([][]nativeWant, len(rvas))
		for start := 0; start < len(rvas); start += 1000 {
			batch := rvas[start:min(len(rvas), start+1000)]
			frames := make([]map[string]any, len(batch))
			for i, a := range batch {
				frames[i] = map[string]any{"instruction_addr": fmt.Sprintf("0x%x", image+a), "adjust_instruction_addr": false}
			}
			out := symbolicateIn(t, s, "sym/web", map[string]any{"modules": []any{module}, "stacktraces": []any{map[string]any{"frames": frames}}})
			if m := out.Modules[0]; m.DebugStatus != "found" {
				t.Fatalf("module %+v, want found in crash.pdb", m)
			}
			for _, fr := range out.Stacktraces[0].Frames {
				if fr.Status != "symbolicated" {
					t.Errorf("0x%x: frame %+v, want symbolicated", batch[fr.OriginalIndex], fr)
				}
				got[start+fr.OriginalIndex] = append(got[start+fr.OriginalIndex], nativeWant{fr.Function, fr.AbsPath, fr.Lineno, fr.Colno})
			}
		}
		return got
	}

	t.Run("functions snapshot", func(t *testing.T) {
		got := resolve(t, addrs)
		equal, frames, inlined, named, withParams := 0, 0, 0, 0, 0
		var known []uint64
		for i, a := range addrs {
			for k, f := range got[i] {
				frames++
				if strings.HasSuffix(f.Function, ")") || strings.HasSuffix(f.Function, ") const") {
					withParams++
				}
				if k < len(got[i])-1 {
					inlined++
					if f.Function != "" {
						named++
					}
				}
			}
			diff := cmp.Diff(want[a], got[i])
			switch _, isKnown := knownPDBDifferences[a]; {
			case diff == "":
				equal++
				if isKnown {
					t.Errorf("0x%x equals the snapshot: it is no longer a known difference", a)
				}
			case isKnown:
				known = append(known, a)
			default:
				t.Errorf("0x%x (-snapshot +errata):\n%s", a, diff)
			}
		}
		checkLLVMAgrees(t, filepath.Join(upload, "crash.exe"), image, known, func(a uint64) nativeWant {
			return got[slices.Index(addrs, a)][0]
		})
		t.Logf("%d of %d addresses equal the snapshot, %d known differences; %d frames, %d with a parameter list; %d of %d inlined frames named",
			equal, len(addrs), len(known), frames, withParams, named, inlined)
	})

	// test_pdb_anonymous_namespace: main (0x2910) has an inlined call
	// at 0x2a3d named `anonymous namespace'::start().
	t.Run("anonymous namespace", func(t *testing.T) {
		out := symbolicateIn(t, s, "sym/web", map[string]any{"modules": []any{module},
			"stacktraces": []any{map[string]any{"frames": []any{map[string]any{"instruction_addr": fmt.Sprintf("0x%x", image+0x2a3d)}}}}})
		fr := out.Stacktraces[0].Frames
		if len(fr) < 2 || fr[len(fr)-2].Function != "`anonymous namespace'::start()" || fr[len(fr)-1].SymAddr != fmt.Sprintf("0x%x", image+0x2910) {
			t.Errorf("frames %+v, want `anonymous namespace'::start() inlined into the function at 0x%x", fr, image+0x2910)
		}
	})

	// test_undecorate_windows_symbols: 0x3756, in no procedure, is the
	// public symbol _malloc, named malloc.
	t.Run("public symbol", func(t *testing.T) {
		out := symbolicateIn(t, s, "sym/web", map[string]any{"modules": []any{module},
			"stacktraces": []any{map[string]any{"frames": []any{map[string]any{"instruction_addr": fmt.Sprintf("0x%x", image+0x3756)}}}}})
		if fr := out.Stacktraces[0].Frames; len(fr) != 1 || fr[0].Status != "symbolicated" || fr[0].Function != "malloc" {
			t.Errorf("frames %+v, want one symbolicated frame of malloc", fr)
		}
	})

	// The features and architecture stored for each PDB are those
	// sentry-cli's check reports (symtab, debug, and unwind for the
	// 32-bit one, whose architecture is x86).
	t.Run("features", func(t *testing.T) {
		for _, name := range []string{"crash.pdb", "CrashWithException.pdb"} {
			p := filepath.Join(upload, name)
			check := cli.run(t, "debug-files", "check", p).stdout
			m := regexp.MustCompile(`Contained debug information:\n\s+> (.*)`).FindStringSubmatch(check)
			arch := regexp.MustCompile(`Arch: +(\S+)`).FindStringSubmatch(check)
			if m == nil || arch == nil {
				t.Fatalf("debug-files check %s printed no features or no architecture:\n%s", p, check)
			}
			wantFeatures := strings.Split(m[1], ", ")
			slices.Sort(wantFeatures)
			id, _ := checkedIDs(t, cli, p)
			d := difOfType(t, s, "sym", id, "pdb")
			got := slices.Sorted(slices.Values(d.Data.Features))
			if !slices.Equal(got, wantFeatures) || d.CPUName != arch[1] {
				t.Errorf("%s: features %v of %s, want %v of %s as sentry-cli reports", name, got, d.CPUName, wantFeatures, arch[1])
			}
		}
	})
}

// checkLLVMAgrees checks, for each address (relative to image) where
// errata differs from the snapshot, that llvm-symbolizer on exe gives the
// file and line errata gives (innermost frame, from innermost).
func checkLLVMAgrees(t *testing.T, exe string, image uint64, rvas []uint64, errata func(uint64) nativeWant) {
	t.Helper()
	if len(rvas) == 0 {
		return
	}
	var in strings.Builder
	for _, a := range rvas {
		fmt.Fprintf(&in, "0x%x\n", image+a)
	}
	cmd := exec.Command("llvm-symbolizer", "--obj="+exe, "--output-style=JSON")
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("llvm-symbolizer: %v", err)
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if len(lines) != len(rvas) {
		t.Fatalf("llvm-symbolizer answered %d addresses of %d", len(lines), len(rvas))
	}
	for i, a := range rvas {
		var ans struct{ Symbol []llvmFrame }
		if err := json.Unmarshal(lines[i], &ans); err != nil || len(ans.Symbol) == 0 {
			t.Fatalf("llvm-symbolizer at 0x%x: %s", a, lines[i])
		}
		l, e := ans.Symbol[0], errata(a)
		if l.FileName != e.File || l.Line != e.Line {
			t.Errorf("0x%x, a known difference (%s): llvm-symbolizer gives %s:%d, errata %s:%d", a, knownPDBDifferences[a], l.FileName, l.Line, e.File, e.Line)
		}
	}
}

// withLLVMPDBNames rewrites, in the frames of out, each function name that
// is the name llvm-symbolizer gives at the same input frame (wants, by
// original index) followed by a parameter list, to that name:
// llvm-symbolizer names a C function and an inlined call of a PDB without
// the parameter list errata writes from the type stream as symbolic does
// (TestSymbolicPDB holds those lists against symbolic's snapshot).
func withLLVMPDBNames(out *symbolicated, wants [][]nativeWant) {
	for i := range out.Stacktraces[0].Frames {
		fr := &out.Stacktraces[0].Frames[i]
		if fr.OriginalIndex < 0 || fr.OriginalIndex >= len(wants) {
			continue
		}
		for _, w := range wants[fr.OriginalIndex] {
			if params, ok := strings.CutPrefix(fr.Function, w.Function+"("); ok && w.Function != "" &&
				!strings.Contains(w.Function, "(") && strings.HasSuffix(params, ")") {
				fr.Function = w.Function
				break
			}
		}
	}
}
