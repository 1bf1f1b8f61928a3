package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// needTools fails the test (never skips it) when one of the tools is
// missing: ./dev.sh test installs them.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed: run the tests with ./dev.sh test, which installs it", tool)
		}
	}
}

// run runs a command and returns its standard output, failing the test
// when it fails.
func runTool(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// symbolFixture is a C program built by the test: unstripped, stripped,
// its debug companion, and its source files.
type symbolFixture struct {
	dir                        string
	unstripped, stripped, dbg  string
	buildID                    string
	mainC, utilH               string // absolute source paths, as DWARF names them
	gz, gzStripped, gzDebug    string // a -gz=zlib build
	gzBuildID                  string
	utilInlineLine, answerLine int
}

// buildSymbolFixture compiles a C program with an inline function, in a
// source directory whose path holds a space and a "+", with -g (and a
// -gz=zlib variant), and splits each into a stripped executable and a
// debug companion as distributions do (objcopy --only-keep-debug, strip,
// --add-gnu-debuglink).
func buildSymbolFixture(t *testing.T) symbolFixture {
	t.Helper()
	f := symbolFixture{dir: t.TempDir()}
	src := filepath.Join(f.dir, "src dir", "a+b")
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.utilH = filepath.Join(src, "util.h")
	f.mainC = filepath.Join(src, "main.c")
	util := "static inline __attribute__((always_inline)) int twice(int x)\n{\n\tvolatile int k = 2; return x * k; /* inline */\n}\n"
	main := "#include \"sub/../util.h\"\n#include <stdlib.h>\n\n__attribute__((noinline)) int answer(int x)\n{\n" +
		"\tint y = twice(x);\n\tif (y == 42)\n\t\tabort();\n\treturn y;\n}\n\nint main(int argc, char **argv)\n{\n" +
		"\t(void)argv;\n\treturn answer(argc + 20);\n}\n"
	f.utilInlineLine, f.answerLine = 3, 8
	if err := os.WriteFile(f.utilH, []byte(util), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.mainC, []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	build := func(name string, flags ...string) (unstripped, stripped, dbg, id string) {
		out := filepath.Join(f.dir, "build", name)
		os.MkdirAll(filepath.Dir(out), 0o755)
		args := append([]string{"-g", "-O1", "-Wl,--build-id"}, flags...)
		// Compiled from the source directory, so that DWARF names the
		// paths relative to a compilation directory with a space and a +.
		cmd := exec.Command("gcc", append(args, "-o", out, "main.c")...)
		cmd.Dir = src
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, b)
		}
		dbg = out + ".debug"
		stripped = filepath.Join(f.dir, "dist", name)
		os.MkdirAll(filepath.Dir(stripped), 0o755)
		runTool(t, nil, "objcopy", "--only-keep-debug", out, dbg)
		runTool(t, nil, "strip", "--strip-all", "-o", stripped, out)
		runTool(t, nil, "objcopy", "--add-gnu-debuglink="+dbg, stripped)
		return out, stripped, dbg, elfBuildID(t, out)
	}
	f.unstripped, f.stripped, f.dbg, f.buildID = build("crash")
	f.gz, f.gzStripped, f.gzDebug, f.gzBuildID = build("crashgz", "-gz=zlib")
	return f
}

// elfBuildID reads the GNU build id of the ELF file at path, as readelf
// prints it.
func elfBuildID(t *testing.T, path string) string {
	t.Helper()
	out := runTool(t, nil, "readelf", "-n", path)
	m := regexp.MustCompile(`Build ID: ([0-9a-f]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no build id in %s:\n%s", path, out)
	}
	return m[1]
}

// debuginfodEnv is the environment of a debuginfod client pointed at org
// of errata s with token in the URL (libcurl sends it as Basic), with a
// cache of its own.
func debuginfodEnv(t *testing.T, s *errataServer, org, token string) []string {
	return []string{
		"DEBUGINFOD_URLS=" + strings.Replace(s.url, "://", "://gdb:"+token+"@", 1) + "/debuginfod/" + org,
		"DEBUGINFOD_CACHE_PATH=" + t.TempDir(),
		"DEBUGINFOD_TIMEOUT=30",
		"DEBUGINFOD_PROGRESS=0",
	}
}

// sameFile fails the test unless the files at a and b are byte for byte
// equal (cmp).
func sameFile(t *testing.T, what, a, b string) {
	t.Helper()
	if out, err := exec.Command("cmp", a, b).CombinedOutput(); err != nil {
		t.Errorf("%s: %s differs from %s: %v %s", what, a, b, err, out)
	}
}

// TestSymbolRoutesWithRealClients uploads a program's stripped executable,
// its debug companion and its sources with the real sentry-cli, then
// fetches them back through errata's debuginfod routes with elfutils'
// debuginfod-find (compared byte for byte with cmp, and sections with
// objcopy --dump-section), debugs the stripped program with gdb (the same
// backtrace and source lines as the unstripped one), symbolizes with
// llvm-symbolizer, and reads symbol server keys in upper and lower case
// with Basic and Bearer credentials.
func TestSymbolRoutesWithRealClients(t *testing.T) {
	t.Parallel()
	needTools(t, "gcc", "objcopy", "strip", "readelf", "cmp", "debuginfod-find", "debuginfod", "gdb", "valgrind", "llvm-symbolizer")
	fx := buildSymbolFixture(t)
	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	s.token = s.user(t, "dev@example.com", "project:releases,project:read,project:write,org:read")
	s.cli(t, "admin", "create-org", "--slug", "acme", "--owner", "dev@example.com")
	s.cli(t, "admin", "create-project", "--org", "acme", "--slug", "web")
	cli := newSentryCLI(t, "SENTRY_CLI_2", s, "acme").in(t.TempDir())
	for _, p := range []string{fx.stripped, fx.dbg, fx.gzStripped, fx.gzDebug} {
		cli.run(t, "debug-files", "upload", "--include-sources", p).expect(t, 0)
	}
	env := debuginfodEnv(t, s, "acme", s.token)

	t.Run("debuginfod-find debuginfo, executable, source, section", func(t *testing.T) {
		for _, c := range []struct{ id, dbg, exe string }{{fx.buildID, fx.dbg, fx.stripped}, {fx.gzBuildID, fx.gzDebug, fx.gzStripped}} {
			got := strings.TrimSpace(runTool(t, env, "debuginfod-find", "debuginfo", c.id))
			sameFile(t, "debuginfo", got, c.dbg)
			got = strings.TrimSpace(runTool(t, env, "debuginfod-find", "executable", c.id))
			sameFile(t, "executable", got, c.exe)
			for _, src := range []string{fx.mainC, fx.utilH} {
				got = strings.TrimSpace(runTool(t, env, "debuginfod-find", "source", c.id, src))
				sameFile(t, "source", got, src)
			}
			// The path as gdb asks for it, with its dot segments.
			odd := filepath.Dir(fx.utilH) + "/sub/../util.h"
			got = strings.TrimSpace(runTool(t, env, "debuginfod-find", "source", c.id, odd))
			sameFile(t, "source with ..", got, fx.utilH)
			for _, sec := range []string{".debug_info", ".debug_line", ".debug_str", ".text"} {
				want := filepath.Join(t.TempDir(), "section")
				from := c.dbg
				if sec == ".text" {
					from = c.exe // NOBITS in the companion
				}
				runTool(t, nil, "objcopy", "--dump-section", sec+"="+want, from, filepath.Join(t.TempDir(), "out"))
				got = strings.TrimSpace(runTool(t, env, "debuginfod-find", "section", c.id, sec))
				sameFile(t, "section "+sec, got, want)
			}
		}
		// The -gz=zlib build's .debug_info is compressed (flag C), and
		// was served so, byte for byte, above.
		if !regexp.MustCompile(`\.debug_info +PROGBITS +\S+ +\S+ +\S+ +\S+ +\S*C`).MatchString(runTool(t, nil, "readelf", "-S", "-W", fx.gzDebug)) {
			t.Errorf("the -gz=zlib build's .debug_info is not compressed")
		}
	})

	t.Run("a federating elfutils debuginfod in front of errata serves the same files", func(t *testing.T) {
		port := freePort(t)
		ctx, cancel := context.WithCancel(context.Background())
		cmd := exec.CommandContext(ctx, "debuginfod", "-p", fmt.Sprint(port), "-d", filepath.Join(t.TempDir(), "db.sqlite"))
		// Its upstream is errata, with the token; it caches in a folder
		// of its own.
		cmd.Env = append(os.Environ(), env...)
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); cmd.Wait() })
		front := []string{fmt.Sprintf("DEBUGINFOD_URLS=http://127.0.0.1:%d", port), "DEBUGINFOD_CACHE_PATH=" + t.TempDir()}
		waitFor(t, 10*time.Second, "the federating debuginfod", func() bool {
			res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
			if err == nil {
				res.Body.Close()
			}
			return err == nil
		})
		got := strings.TrimSpace(runTool(t, front, "debuginfod-find", "debuginfo", fx.buildID))
		sameFile(t, "debuginfo through the federating server", got, fx.dbg)
		got = strings.TrimSpace(runTool(t, front, "debuginfod-find", "executable", fx.buildID))
		sameFile(t, "executable through the federating server", got, fx.stripped)
		got = strings.TrimSpace(runTool(t, front, "debuginfod-find", "source", fx.buildID, fx.mainC))
		sameFile(t, "source through the federating server", got, fx.mainC)
		if t.Failed() {
			t.Logf("debuginfod's log:\n%s", logs.String())
		}
	})

	t.Run("gdb on the stripped program shows what it shows on the unstripped one", func(t *testing.T) {
		// A breakpoint in the inline function (its file named through
		// sub/..), then the abort's backtrace, the source around answer
		// and main's source file.
		script := []string{"-batch", "-nx", "-iex", "set debuginfod enabled on", "-ex", "break util.h:3", "-ex", "run",
			"-ex", "bt", "-ex", "list", "-ex", "continue", "-ex", "bt", "-ex", "list answer", "-ex", "up 5", "-ex", "info source"}
		clean := func(out string) string {
			var keep []string
			for _, l := range strings.Split(out, "\n") {
				l = regexp.MustCompile(`0x[0-9a-f]+`).ReplaceAllString(l, "ADDR")
				l = strings.ReplaceAll(l, fx.unstripped, "PROGRAM")
				l = strings.ReplaceAll(l, fx.stripped, "PROGRAM")
				// Where gdb found the source: its disk, or errata's
				// answer in the client's cache.
				if strings.HasPrefix(l, "Located in ") {
					continue
				}
				if strings.HasPrefix(l, "Download") || strings.Contains(l, "debuginfod") || strings.HasPrefix(l, "[") ||
					strings.HasPrefix(l, "Using host libthread") || strings.Contains(l, "process ") {
					continue
				}
				keep = append(keep, l)
			}
			return strings.Join(keep, "\n")
		}
		want := clean(runTool(t, []string{"DEBUGINFOD_URLS="}, "gdb", append(script, fx.unstripped)...))
		// gdb must read the sources from errata too: they are moved away.
		srcDir := filepath.Dir(fx.mainC)
		if err := os.Rename(srcDir, srcDir+".away"); err != nil {
			t.Fatal(err)
		}
		got := clean(runTool(t, env, "gdb", append(script, fx.stripped)...))
		if err := os.Rename(srcDir+".away", srcDir); err != nil {
			t.Fatal(err)
		}
		t.Logf("gdb through errata:\n%s", got)
		if !strings.Contains(want, "#0  twice (x=21) at sub/../util.h:3\n#1  answer (x=21) at main.c:6") || !strings.Contains(want, "main.c:8") ||
			!strings.Contains(want, "3\t\tvolatile int k = 2; return x * k; /* inline */") || !strings.Contains(want, "8\t\t\tabort();") {
			t.Fatalf("gdb on the unstripped program shows no source lines:\n%q", want)
		}
		if got != want {
			t.Errorf("gdb on the stripped program through errata:\n%s\nwant, as on the unstripped one:\n%s", got, want)
		}
		// Without errata, gdb knows nothing of the stripped program.
		if alone := clean(runTool(t, []string{"DEBUGINFOD_URLS="}, "gdb", append(script, fx.stripped)...)); alone == want {
			t.Errorf("gdb shows the source lines of the stripped program without errata: the test proves nothing")
		}
	})

	t.Run("valgrind names the stripped program's frames through errata", func(t *testing.T) {
		frames := func(env []string, prog string) string {
			cmd := exec.Command("valgrind", prog)
			cmd.Env = append(os.Environ(), env...)
			out, _ := cmd.CombinedOutput() // the program aborts
			var keep []string
			for _, l := range strings.Split(string(out), "\n") {
				if m := regexp.MustCompile(`^==\d+== +((?:at|by) 0x[0-9A-F]+: .*)`).FindStringSubmatch(l); m != nil {
					keep = append(keep, strings.ReplaceAll(m[1], prog, "PROGRAM"))
				}
			}
			return strings.Join(keep, "\n")
		}
		want := frames([]string{"DEBUGINFOD_URLS="}, fx.unstripped)
		if !strings.Contains(want, ": answer (main.c:8)") || !strings.Contains(want, ": main (main.c:15)") {
			t.Fatalf("valgrind on the unstripped program:\n%s", want)
		}
		if got := frames(env, fx.stripped); got != want {
			t.Errorf("valgrind on the stripped program through errata:\n%s\nwant, as on the unstripped one:\n%s", got, want)
		}
		if alone := frames([]string{"DEBUGINFOD_URLS="}, fx.stripped); alone == want {
			t.Errorf("valgrind names the stripped program's frames without errata: the test proves nothing")
		}
	})

	t.Run("llvm-symbolizer resolves through errata", func(t *testing.T) {
		addr := strings.Fields(runTool(t, nil, "nm", fx.unstripped))
		var answer string
		for i := 0; i+2 < len(addr); i++ {
			if addr[i+2] == "answer" {
				answer = "0x" + strings.TrimLeft(addr[i], "0")
			}
		}
		if answer == "" {
			t.Fatal("no symbol answer in the unstripped program")
		}
		want := runTool(t, nil, "llvm-symbolizer", "--obj="+fx.unstripped, answer)
		got := runTool(t, env, "llvm-symbolizer", "--obj="+fx.stripped, answer)
		t.Logf("llvm-symbolizer through errata: %q", got)
		if !strings.Contains(want, "answer") || got != want {
			t.Errorf("llvm-symbolizer on the stripped program: %q, want %q", got, want)
		}
		if alone := runTool(t, []string{"DEBUGINFOD_URLS="}, "llvm-symbolizer", "--obj="+fx.stripped, answer); alone == want {
			t.Errorf("llvm-symbolizer resolves the stripped program without errata: the test proves nothing")
		}
	})

	t.Run("Basic and Bearer credentials, and a wrong token", func(t *testing.T) {
		path := "/debuginfod/acme/buildid/" + fx.buildID + "/executable"
		want, _ := os.ReadFile(fx.stripped)
		for _, auth := range []func(*http.Request){
			func(r *http.Request) { r.SetBasicAuth("anyone", s.token) },
			func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+s.token) },
		} {
			status, body, _ := symbolGet(t, s, path, auth)
			if status != http.StatusOK || !bytes.Equal(body, want) {
				t.Errorf("GET %s: %d, %d bytes, want 200 and %d", path, status, len(body), len(want))
			}
		}
		// A range, as symbolicator starts with, of a file served from
		// errata's cache after the requests above.
		status, body, _ := symbolGet(t, s, path, func(r *http.Request) {
			r.SetBasicAuth("anyone", s.token)
			r.Header.Set("Range", "bytes=1-3")
		})
		if status != http.StatusPartialContent || string(body) != "ELF" {
			t.Errorf("GET %s with a range: %d %q, want 206 ELF", path, status, body)
		}
		status, _, h := symbolGet(t, s, path, func(r *http.Request) { r.SetBasicAuth("x", "sntrys_wrong") })
		if status != http.StatusUnauthorized || h.Get("WWW-Authenticate") != `Basic realm="errata"` {
			t.Errorf("a wrong token: %d %v, want 401 with WWW-Authenticate", status, h)
		}
		bad := debuginfodEnv(t, s, "acme", "wrongtoken")
		cmd := exec.Command("debuginfod-find", "executable", fx.buildID)
		cmd.Env = append(os.Environ(), bad...)
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("debuginfod-find with a wrong token succeeded: %s", out)
		}
	})

	t.Run("symbol server keys in upper and lower case", func(t *testing.T) {
		exe, _ := os.ReadFile(fx.stripped)
		dbg, _ := os.ReadFile(fx.dbg)
		bearer := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+s.token) }
		for _, c := range []struct {
			path string
			want []byte
		}{
			{"crash/elf-buildid-" + fx.buildID + "/crash", exe},
			{"_.debug/elf-buildid-sym-" + fx.buildID + "/_.debug", dbg},
		} {
			for _, p := range []string{c.path, strings.ToUpper(c.path)} {
				status, body, _ := symbolGet(t, s, "/symbols/acme/"+p, bearer)
				if status != http.StatusOK || !bytes.Equal(body, c.want) {
					t.Errorf("GET /symbols/acme/%s: %d, %d bytes, want 200 and %d", p, status, len(body), len(c.want))
				}
			}
		}
	})
}

// symbolGet sends GET path to s with the credentials auth sets and returns
// the answer.
func symbolGet(t *testing.T, s *errataServer, path string, auth func(*http.Request)) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest("GET", s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	auth(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body, resp.Header
}

// checkedIDs are the debug id and code id sentry-cli debug-files check
// reads from path.
func checkedIDs(t *testing.T, c sentryCLI, path string) (debugID, codeID string) {
	t.Helper()
	out := c.run(t, "debug-files", "check", path)
	out.expect(t, 0)
	if m := regexp.MustCompile(`Debug ID: ([0-9a-f-]+)`).FindStringSubmatch(out.stdout); m != nil {
		debugID = m[1]
	}
	if m := regexp.MustCompile(`Code ID: +([0-9a-f]+)`).FindStringSubmatch(out.stdout); m != nil {
		codeID = m[1]
	}
	if debugID == "" {
		t.Fatalf("debug-files check %s printed no debug id:\n%s", path, out.stdout)
	}
	return debugID, codeID
}

// TestSymbolServerWithRealFiles builds a PE with its PDB (clang-14,
// lld-link-14) and a Mach-O with its dSYM (clang-14, ld64.lld-14,
// dsymutil-14), uploads them with sentry-cli and reads each back by its
// symbol server key (docs/symbol-server.md), in upper and lower case, as WinDbg
// and SSQP clients ask.
func TestSymbolServerWithRealFiles(t *testing.T) {
	t.Parallel()
	needTools(t, "clang-14", "lld-link-14", "ld64.lld-14", "dsymutil-14")
	dir := t.TempDir()
	src := filepath.Join(dir, "crash.c")
	if err := os.WriteFile(src, []byte("static int twice(int x) { return x * 2; }\nint main(void) { return twice(21) - 42; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	at := func(name string) string { return filepath.Join(dir, name) }
	runTool(t, nil, "clang-14", "--target=x86_64-pc-windows-msvc", "-g", "-gcodeview", "-c", src, "-o", at("crash.obj"))
	runTool(t, nil, "lld-link-14", "/debug", "/out:"+at("crash.exe"), "/pdb:"+at("crash.pdb"), "/entry:main",
		"/subsystem:console", "/nodefaultlib", at("crash.obj"))
	runTool(t, nil, "clang-14", "--target=x86_64-apple-macos11", "-g", "-c", src, "-o", at("crash.o"))
	runTool(t, nil, "ld64.lld-14", "-arch", "x86_64", "-platform_version", "macos", "11.0", "11.0", "-e", "_main",
		"-o", at("crashmac"), at("crash.o"))
	runTool(t, nil, "dsymutil-14", at("crashmac"), "-o", at("crashmac.dSYM"))
	dwarf := at("crashmac.dSYM/Contents/Resources/DWARF/crashmac")

	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	s.token = s.user(t, "dev@example.com", "project:releases,project:read,project:write,org:read")
	s.cli(t, "admin", "create-org", "--slug", "acme", "--owner", "dev@example.com")
	s.cli(t, "admin", "create-project", "--org", "acme", "--slug", "web")
	cli := newSentryCLI(t, "SENTRY_CLI_2", s, "acme").in(t.TempDir())
	// The dSYM before the executable: a debug file supersedes an older
	// one of its debug id whose features it covers, as in Sentry, and
	// the dSYM's (symtab, debug, unwind) cover the executable's.
	for _, p := range []string{at("crash.exe"), at("crash.pdb"), dwarf, at("crashmac")} {
		cli.run(t, "debug-files", "upload", p).expect(t, 0)
	}
	pdbID, _ := checkedIDs(t, cli, at("crash.pdb"))
	_, peCode := checkedIDs(t, cli, at("crash.exe"))
	macID, _ := checkedIDs(t, cli, at("crashmac"))
	// The PDB key: the GUID's 32 hex digits, then the age in hex.
	guid, age, _ := strings.Cut(strings.ReplaceAll(pdbID[:36], "-", "")+pdbID[36:], "-")
	pdbKey := strings.ToUpper(guid + strings.TrimPrefix(age, "-"))
	if len(pdbID) == 36 {
		pdbKey = strings.ToUpper(guid) + "0"
	}
	uuid := strings.ReplaceAll(macID, "-", "")
	bearer := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+s.token) }
	for _, c := range []struct{ key, file string }{
		{"crash.pdb/" + pdbKey + "/crash.pdb", at("crash.pdb")},
		{"crash.exe/" + strings.ToUpper(peCode) + "/crash.exe", at("crash.exe")},
		{"crashmac/mach-uuid-" + uuid + "/crashmac", at("crashmac")},
		{"_.dwarf/mach-uuid-sym-" + uuid + "/_.dwarf", dwarf},
	} {
		want, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{c.key, strings.ToUpper(c.key), strings.ToLower(c.key)} {
			status, body, _ := symbolGet(t, s, "/symbols/acme/"+k, bearer)
			if status != http.StatusOK || !bytes.Equal(body, want) {
				t.Errorf("GET /symbols/acme/%s: %d, %d bytes, want 200 and the %d bytes of %s", k, status, len(body), len(want), c.file)
			}
		}
	}
	// The features stored for each file are those sentry-cli's check
	// reports (a PDB's are symtab and debug).
	for _, p := range []string{at("crash.pdb"), at("crash.exe")} {
		out := cli.run(t, "debug-files", "check", p)
		m := regexp.MustCompile(`Contained debug information:\n\s+> (.*)`).FindStringSubmatch(out.stdout)
		id, _ := checkedIDs(t, cli, p)
		if m == nil {
			t.Fatalf("debug-files check %s printed no features:\n%s", p, out.stdout)
		}
		want := strings.Split(m[1], ", ")
		slices.Sort(want)
		found := false
		for _, d := range difsOf(t, s, "acme", id) {
			if strings.EqualFold(d.ObjectName, filepath.Base(p)) {
				found = true
				got := slices.Clone(d.Data.Features)
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("%s: features %v, want %v as sentry-cli reports", d.ObjectName, got, want)
				}
			}
		}
		if !found {
			t.Errorf("no debug file %s listed", filepath.Base(p))
		}
	}

	// The compressed variant WinDbg tries first is 404.
	if status, _, _ := symbolGet(t, s, "/symbols/acme/crash.pdb/"+pdbKey+"/crash.pd_", bearer); status != http.StatusNotFound {
		t.Errorf("GET crash.pd_: %d, want 404", status)
	}
}

// TestDebuginfodOnS3Blobs serves a stripped executable and its debug
// companion whose blobs are in an S3 store (a real versitygw), with the
// cache of served files off, in a directory (sent with sendfile) and in
// memory: whole files, HEAD, ranges, a conditional GET and a section,
// byte for byte. The cache's directory is private and gone once the
// server stopped.
func TestDebuginfodOnS3Blobs(t *testing.T) {
	t.Parallel()
	needTools(t, "gcc", "objcopy", "strip", "readelf")
	fx := buildSymbolFixture(t)
	exe, _ := os.ReadFile(fx.stripped)
	dbg, _ := os.ReadFile(fx.dbg)
	out := filepath.Join(t.TempDir(), "section")
	runTool(t, nil, "objcopy", "--dump-section", ".debug_info="+out, fx.dbg, filepath.Join(t.TempDir(), "x"))
	info, _ := os.ReadFile(out)
	cacheDir := t.TempDir()
	for _, cache := range []struct{ name, size, dir string }{
		{"off", "0", cacheDir},
		{"directory", "67108864", cacheDir},
		{"memory", "67108864", "memory"},
	} {
		t.Run(cache.name, func(t *testing.T) {
			s, _, _ := s3Errata(t, map[string]string{"SYMBOL_CACHE_SIZE": cache.size, "SYMBOL_CACHE_DIR": cache.dir})
			s.token = s.user(t, "dev@example.com", "project:releases,project:read,project:write,org:read")
			s.cli(t, "admin", "create-org", "--slug", "acme", "--owner", "dev@example.com")
			s.cli(t, "admin", "create-project", "--org", "acme", "--slug", "web")
			cli := newSentryCLI(t, "SENTRY_CLI_2", s, "acme").in(t.TempDir())
			cli.run(t, "debug-files", "upload", fx.stripped, fx.dbg).expect(t, 0)
			base := "/debuginfod/acme/buildid/" + fx.buildID
			auth := func(h map[string]string) func(*http.Request) {
				return func(r *http.Request) {
					r.SetBasicAuth("gdb", s.token)
					for k, v := range h {
						r.Header.Set(k, v)
					}
				}
			}
			for i := 0; i < 2; i++ { // the second time from the cache, when on
				for _, c := range []struct {
					path string
					want []byte
				}{{base + "/executable", exe}, {base + "/debuginfo", dbg}, {base + "/section/.debug_info", info}} {
					if status, body, _ := symbolGet(t, s, c.path, auth(nil)); status != 200 || !bytes.Equal(body, c.want) {
						t.Errorf("GET %s: %d, %d bytes, want 200 and %d", c.path, status, len(body), len(c.want))
					}
					rng := fmt.Sprintf("bytes=%d-%d", len(c.want)/3, len(c.want)/2)
					if status, body, _ := symbolGet(t, s, c.path, auth(map[string]string{"Range": rng})); status != 206 ||
						!bytes.Equal(body, c.want[len(c.want)/3:len(c.want)/2+1]) {
						t.Errorf("GET %s %s: %d, %d bytes", c.path, rng, status, len(body))
					}
				}
			}
			req, _ := http.NewRequest("HEAD", s.url+base+"/debuginfo", nil)
			req.SetBasicAuth("gdb", s.token)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != 200 || res.ContentLength != int64(len(dbg)) || res.Header.Get("X-Debuginfod-Size") != fmt.Sprint(len(dbg)) {
				t.Errorf("HEAD debuginfo: %d, Content-Length %d", res.StatusCode, res.ContentLength)
			}
			etag := res.Header.Get("Etag")
			if status, body, _ := symbolGet(t, s, base+"/debuginfo", auth(map[string]string{"If-None-Match": etag})); status != 304 || len(body) != 0 {
				t.Errorf("GET debuginfo If-None-Match %s: %d, %d bytes, want 304", etag, status, len(body))
			}

			kept, _ := filepath.Glob(filepath.Join(cacheDir, "errata-symbols-*", "*"))
			want := map[string]int{"off": 0, "directory": 2, "memory": 0}[cache.name]
			if len(kept) != want {
				t.Errorf("%d files in the cache's directory, want %d: %v", len(kept), want, kept)
			}
			if want > 0 {
				if fi, err := os.Stat(filepath.Dir(kept[0])); err != nil || fi.Mode().Perm() != 0o700 {
					t.Errorf("the cache's directory: %v %v, want 0700", fi.Mode(), err)
				}
			}
			if err := s.stop(); err != nil {
				t.Fatal(err)
			}
			if left, _ := os.ReadDir(cacheDir); len(left) != 0 {
				t.Errorf("left in the cache's folder after the server stopped: %v", left)
			}
		})
	}
}
