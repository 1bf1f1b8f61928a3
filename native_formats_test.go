package main

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// nativeStubHeaders writes the stdio.h and stdlib.h that the C program
// needs into a new folder, for targets without a system's headers.
func nativeStubHeaders(t *testing.T) string {
	t.Helper()
	stub := t.TempDir()
	for name, text := range map[string]string{
		"stdio.h":  "int printf(const char *, ...);\n",
		"stdlib.h": "#define NULL ((void *)0)\nint atoi(const char *);\n",
	} {
		if err := os.WriteFile(filepath.Join(stub, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return stub
}

// checkNativeAnswer compares the frames errata answered for pcs with
// llvm-symbolizer's wants, by original_index, and returns how many of the
// addresses expanded to inlined calls.
func checkNativeAnswer(t *testing.T, out symbolicated, pcs []uint64, wants [][]nativeWant, peer string) int {
	t.Helper()
	got := make([][]nativeWant, len(pcs))
	for _, fr := range out.Stacktraces[0].Frames {
		got[fr.OriginalIndex] = append(got[fr.OriginalIndex], nativeWant{fr.Function, fr.AbsPath, fr.Lineno, fr.Colno})
	}
	bad, inlined := 0, 0
	for i := range pcs {
		if len(got[i]) > 1 {
			inlined++
		}
		if diff := cmp.Diff(wants[i], got[i]); diff != "" {
			if bad++; bad <= 5 {
				t.Errorf("0x%x (-%s +errata):\n%s", pcs[i], peer, diff)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d addresses differ", bad, len(pcs))
	}
	return inlined
}

// TestNativeFormats builds the C program for the formats beyond ELF that
// TestNativeSymbolication does not cover, uploads them with sentry-cli and
// checks that errata resolves every instruction start of its own
// functions as llvm-symbolizer does.
func TestNativeFormats(t *testing.T) {
	t.Parallel()
	needNativeTools(t)
	if _, err := exec.LookPath("llvm-lipo-14"); err != nil {
		t.Fatal("llvm-lipo-14 is needed by this test: run it with ./dev.sh test, which installs it")
	}
	src := t.TempDir()
	for _, f := range []string{"crash.c", "util.h"} {
		b, err := os.ReadFile(filepath.Join("testdata/native", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stub := nativeStubHeaders(t)

	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	s.token = s.user(t, "formats@example.com", "project:releases,project:read,project:write,org:read")
	s.cli(t, "admin", "create-org", "--slug", "fmt", "--owner", "formats@example.com")
	cli := newSentryCLI(t, "SENTRY_CLI_2", s, "fmt").in(t.TempDir())
	upload := func(t *testing.T, project, dir string) sentryCLI {
		t.Helper()
		s.cli(t, "admin", "create-project", "--org", "fmt", "--slug", project)
		c := cli
		c.project = project
		c.run(t, "debug-files", "upload", "--wait", dir).expect(t, 0)
		return c
	}
	frames := func(pcs []uint64) []map[string]any {
		fs := make([]map[string]any, len(pcs))
		for i, pc := range pcs {
			fs[i] = map[string]any{"instruction_addr": fmt.Sprintf("0x%x", pc), "adjust_instruction_addr": false}
		}
		return fs
	}

	// A PE and its PDB built at -O2 (clang-14 for Windows, lld-link-14;
	// stub headers, as there is no Windows SDK): sum is inlined into
	// compute, and errata's inline chains equal llvm-symbolizer's with the
	// PDB beside the PE (names but for their parameter lists, which
	// llvm-symbolizer leaves out: withLLVMPDBNames).
	t.Run("pe-pdb-O2", func(t *testing.T) {
		dir := t.TempDir()
		nativeTool(t, src, "clang-14", "--target=x86_64-pc-windows-msvc", "-g", "-gcodeview", "-O2", "-nostdinc", "-I"+stub, "-c", "-o", "win2.obj", "crash.c")
		exe := filepath.Join(dir, "crash.exe")
		cmd := exec.Command("lld-link-14", "/debug", "/entry:main", "/nodefaultlib", "/subsystem:console", "/force:unresolved",
			filepath.Join(src, "win2.obj"), "/out:"+exe, "/pdb:"+filepath.Join(dir, "crash.pdb"))
		if out, err := cmd.CombinedOutput(); err != nil {
			if _, statErr := os.Stat(exe); statErr != nil {
				t.Fatalf("lld-link-14: %v\n%s", err, out)
			}
		}
		pcs, wants := instructionStarts(t, nativeFixture{nativeBuild: nativeBuild{name: "pe-O2"}, full: exe}, src)
		c := upload(t, "win", dir)
		debugID := checkedID(t, c, filepath.Join(dir, "crash.pdb"))
		out := symbolicateIn(t, s, "fmt/win", map[string]any{
			"modules":     []map[string]any{{"type": "pe", "debug_id": debugID, "image_addr": "0x140000000", "image_size": 1 << 20}},
			"stacktraces": []map[string]any{{"frames": frames(pcs)}},
		})
		if md := out.Modules[0]; md.DebugStatus != "found" {
			t.Fatalf("module %+v, want found in the PDB", md)
		}
		withLLVMPDBNames(&out, wants)
		inlined := checkNativeAnswer(t, out, pcs, wants, "llvm-symbolizer with the PDB")
		if inlined == 0 {
			t.Error("no address in an inlined call: the build does not test inlinees")
		}
		t.Logf("%d instruction starts, %d in inlined calls, as llvm-symbolizer", len(pcs), inlined)
	})

	// A PE image with DWARF, as MinGW builds it (clang-14 for
	// x86_64-w64-windows-gnu, ld.lld-14 -m i386pep with a build id for
	// its CodeView record; without a MinGW sysroot, the functions of libc
	// it calls are stubs built without debug information), uploaded with
	// sentry-cli: errata equals llvm-symbolizer on it.
	t.Run("pe-dwarf", func(t *testing.T) {
		dir := t.TempDir()
		libc := "void __main(void) {}\nint printf(const char *f, ...) { return 0; }\nint atoi(const char *s) { return 0; }\n"
		if err := os.WriteFile(filepath.Join(src, "libc.c"), []byte(libc), 0o644); err != nil {
			t.Fatal(err)
		}
		target := "--target=x86_64-w64-windows-gnu"
		nativeTool(t, src, "clang-14", target, "-g", "-O2", "-nostdinc", "-I"+stub, "-c", "-o", "gnu.o", "crash.c")
		nativeTool(t, src, "clang-14", target, "-O2", "-c", "-o", "libc.o", "libc.c")
		exe := filepath.Join(dir, "crash.exe")
		nativeTool(t, src, "ld.lld-14", "-m", "i386pep", "-e", "main", "--build-id", "-o", exe, "gnu.o", "libc.o")
		pcs, wants := instructionStarts(t, nativeFixture{nativeBuild: nativeBuild{name: "pe-dwarf"}, full: exe}, src)
		c := upload(t, "gnu", dir)
		debugID := checkedID(t, c, exe)
		out := symbolicateIn(t, s, "fmt/gnu", map[string]any{
			"modules":     []map[string]any{{"type": "pe", "debug_id": debugID, "image_addr": "0x140000000", "image_size": 1 << 20}},
			"stacktraces": []map[string]any{{"frames": frames(pcs)}},
		})
		if md := out.Modules[0]; md.DebugStatus != "found" || len(md.Candidates) != 1 || md.Candidates[0].FileFormat != "pe" {
			t.Fatalf("module %+v, want found in the PE image", md)
		}
		inlined := checkNativeAnswer(t, out, pcs, wants, "llvm-symbolizer")
		if inlined == 0 {
			t.Error("no address in an inlined call")
		}
		t.Logf("%d instruction starts, %d in inlined calls, as llvm-symbolizer", len(pcs), inlined)
	})

	// A fat dSYM joined by llvm-lipo-14 from the dSYMs (dsymutil-14) of
	// an x86_64 and an arm64 build (clang-14 for macOS, ld64.lld-14; stub
	// headers, as there is no macOS SDK), uploaded with sentry-cli: each
	// architecture, named by its UUID, resolves as llvm-symbolizer
	// resolves it on its thin dSYM.
	t.Run("macho-fat-dsym", func(t *testing.T) {
		dir := t.TempDir()
		fatDWARF := filepath.Join(dir, "mac.dSYM/Contents/Resources/DWARF/mac")
		if err := os.MkdirAll(filepath.Dir(fatDWARF), 0o755); err != nil {
			t.Fatal(err)
		}
		type slice struct {
			arch    string
			fixture nativeFixture
			uuid    string
		}
		var slices []slice
		var thin []string
		for _, arch := range []string{"x86_64", "arm64"} {
			target, prog := "--target="+arch+"-apple-macos11", "mac-"+arch
			nativeTool(t, src, "clang-14", target, "-g", "-O2", "-nostdinc", "-I"+stub, "-c", "-o", prog+".o", "crash.c")
			nativeTool(t, src, "clang-14", target, "-fuse-ld=lld", "-nostdlib", "-Wl,-undefined,dynamic_lookup", "-Wl,-e,_main", "-o", prog, prog+".o")
			dsym := filepath.Join(src, prog+".dSYM")
			nativeTool(t, src, "dsymutil-14", prog, "-o", dsym)
			m := regexp.MustCompile(`UUID: ([0-9A-F-]{36})`).FindStringSubmatch(nativeTool(t, src, "llvm-dwarfdump-14", "--uuid", prog))
			if m == nil {
				t.Fatalf("%s has no UUID", prog)
			}
			dwarf := filepath.Join(dsym, "Contents/Resources/DWARF", prog)
			thin = append(thin, dwarf)
			slices = append(slices, slice{arch, nativeFixture{nativeBuild: nativeBuild{name: prog}, full: filepath.Join(src, prog), symbolize: dwarf}, strings.ToLower(m[1])})
		}
		nativeTool(t, src, "llvm-lipo-14", append(append([]string{"-create"}, thin...), "-output", fatDWARF)...)
		// sentry-cli sends each architecture of a fat file on its own;
		// files/dsyms/ stores the fat file whole, as it is sent.
		upload(t, "mac", dir)
		s.cli(t, "admin", "create-project", "--org", "fmt", "--slug", "macfat")
		fat, err := os.ReadFile(fatDWARF)
		if err != nil {
			t.Fatal(err)
		}
		var form bytes.Buffer
		mw := multipart.NewWriter(&form)
		w, err := mw.CreateFormFile("file", "mac.dSYM.zip")
		if err != nil {
			t.Fatal(err)
		}
		w.Write(zipOf(t, "mac.dSYM/Contents/Resources/DWARF/mac", fat))
		mw.Close()
		if r := send(http.DefaultClient, s, "POST", "/api/0/projects/fmt/macfat/files/dsyms/", mw.FormDataContentType(), &form); r.status != http.StatusCreated {
			t.Fatalf("files/dsyms/: %v", r)
		}
		for _, project := range []string{"mac", "macfat"} {
			_, list := s.api(t, "GET", "/api/0/projects/fmt/"+project+"/files/dsyms/", nil)
			for _, sl := range slices {
				t.Run(project+"/"+sl.arch, func(t *testing.T) {
					if !strings.Contains(string(list), sl.uuid) {
						t.Fatalf("no debug file of %s: %s", sl.uuid, list)
					}
					pcs, wants := instructionStarts(t, sl.fixture, src)
					out := symbolicateIn(t, s, "fmt/"+project, map[string]any{
						"modules": []map[string]any{{"type": "macho", "debug_id": sl.uuid,
							"image_addr": "0x100000000", "image_vmaddr": "0x100000000", "image_size": 1 << 20}},
						"stacktraces": []map[string]any{{"frames": frames(pcs)}},
					})
					if md := out.Modules[0]; md.DebugStatus != "found" {
						t.Fatalf("module %+v, want found in the dSYM", md)
					}
					inlined := checkNativeAnswer(t, out, pcs, wants, "llvm-symbolizer on the thin dSYM")
					t.Logf("%d instruction starts, %d in inlined calls, as llvm-symbolizer", len(pcs), inlined)
				})
			}
		}
	})
}
