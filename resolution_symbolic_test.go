package main

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ianlancetaylor/demangle"
)

// symbolicFixtures is the folder of symbolic's fixtures in the resolution
// suites; symbolicSnapshots the folders of its expected answers.
const (
	symbolicFixtures          = "symbolic/symbolic-testutils/fixtures/"
	symbolicDebuginfoSnapshot = "symbolic/symbolic-debuginfo/tests/snapshots/"
	symbolicSymcacheSnapshot  = "symbolic/symbolic-symcache/tests/snapshots/"
	symbolicSymcacheTests     = "symbolic/symbolic-symcache/tests/"
)

// snapshotFunction is a function of a FunctionsDebug snapshot of
// symbolic-debuginfo (test_objects__*_functions.snap): its address and
// size, its name as symbolic gives it, its line records and the functions
// inlined into it, each printed one level deeper.
type snapshotFunction struct {
	Addr, Size uint64
	Name       string
	Lines      []snapshotLine
	Inlinees   []*snapshotFunction
}

// snapshotLine is a line record of a snapshotFunction: from Addr on (to the
// next record of its function), File's line Line, File in Dir.
type snapshotLine struct {
	Addr      uint64
	File, Dir string
	Line      int
}

var (
	snapshotFunctionLine = regexp.MustCompile(`^> 0x([0-9a-f]+): (.*) \(0x([0-9a-f]+)\)$`)
	snapshotRecordLine   = regexp.MustCompile(`^0x([0-9a-f]+): (.*):(\d+) \((.*)\)$`)
)

// parseFunctionsSnapshot parses the insta snapshot at path, symbolic's
// FunctionsDebug of a file's first functions: "> 0xADDR: NAME (0xSIZE)"
// opens a function, "0xADDR: FILE:LINE (DIR)" is one of its line records,
// two more spaces of indentation a level of inlining deeper; a
// function's "variables:" are passed over. It fails t on a line it does
// not read.
func parseFunctionsSnapshot(t *testing.T, path string) []*snapshotFunction {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	body := string(b)
	// The header ends at the second "---" line.
	if parts := strings.SplitN(body, "---\n", 3); len(parts) == 3 {
		body = parts[2]
	}
	var top []*snapshotFunction
	var open []*snapshotFunction // the functions open at each depth
	skip := -1                   // the indentation of the variables being passed over
	for n, raw := range strings.Split(body, "\n") {
		line := strings.TrimLeft(raw, " ")
		if line == "" {
			continue
		}
		indent := len(raw) - len(line)
		// A function's variables (a "variables:" line and the lines
		// indented under it) locate no code.
		if skip >= 0 && indent > skip {
			continue
		}
		skip = -1
		if line == "variables:" {
			skip = indent
			continue
		}
		if m := snapshotFunctionLine.FindStringSubmatch(line); m != nil {
			depth := indent / 2
			if indent%2 != 0 || depth > len(open) {
				t.Fatalf("%s:%d: function at indentation %d", path, n+1, indent)
			}
			f := &snapshotFunction{Addr: parseSnapshotHex(t, m[1]), Name: m[2], Size: parseSnapshotHex(t, m[3])}
			open = open[:depth]
			if depth == 0 {
				top = append(top, f)
			} else {
				open[depth-1].Inlinees = append(open[depth-1].Inlinees, f)
			}
			open = append(open, f)
			continue
		}
		if m := snapshotRecordLine.FindStringSubmatch(line); m != nil {
			depth := indent/2 - 1
			if indent%2 != 0 || depth < 0 || depth >= len(open) {
				t.Fatalf("%s:%d: line record at indentation %d", path, n+1, indent)
			}
			l, _ := strconv.Atoi(m[3])
			f := open[depth]
			f.Lines = append(f.Lines, snapshotLine{Addr: parseSnapshotHex(t, m[1]), File: m[2], Dir: m[4], Line: l})
			open = open[:depth+1]
			continue
		}
		t.Fatalf("%s:%d: %q is neither a function nor a line record", path, n+1, raw)
	}
	if len(top) == 0 {
		t.Fatalf("%s: no function", path)
	}
	return top
}

// path is the record's file joined to its directory, as the debug
// information joins them, by the directory's separator.
func (l snapshotLine) path() string {
	if l.Dir == "" {
		return l.File
	}
	sep := "/"
	if strings.Contains(l.Dir, `\`) {
		sep = `\`
	}
	return l.Dir + sep + l.File
}

func parseSnapshotHex(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// symbolicFrame is a frame symbolic's answers state: the function's name
// (mangled or not, as symbolic prints it), and, when known, its file (a
// path or a base name with the directory it is in) and line.
type symbolicFrame struct {
	Name string
	File string // "" when the answer does not say
	Dir  string
	Line int
}

// symbolicAnyName is the name of a frame whose name an assertion does not state.
const symbolicAnyName = "*"

// symbolicCheck is what one address must resolve to: its frames,
// innermost first. With OutermostOnly, only the outermost frame's name is
// stated (a symcache's function list says no more); with Leading, only
// the first len(Frames) frames (an assertion on some frames of a lookup);
// with None, the address must resolve to nothing. SymAddr, when set, is
// the innermost frame's function's start.
type symbolicCheck struct {
	Addr          uint64
	Frames        []symbolicFrame
	OutermostOnly bool
	Leading       bool
	None          bool
	SymAddr       uint64
	From          string // the snapshot or test that states it
}

// snapshotChecks turns a FunctionsDebug snapshot into its checks: every
// address it prints (a function's start, a line record's) resolves to the
// function holding it and the inlined calls around it, innermost first,
// each at the line of its own line record in force there (the call site,
// for a function whose inlinee holds the address).
func snapshotChecks(funcs []*snapshotFunction, from string) []symbolicCheck {
	addrs := map[uint64]bool{}
	var walk func(f *snapshotFunction)
	walk = func(f *snapshotFunction) {
		addrs[f.Addr] = true
		for _, l := range f.Lines {
			addrs[l.Addr] = true
		}
		for _, in := range f.Inlinees {
			walk(in)
		}
	}
	for _, f := range funcs {
		walk(f)
	}
	var checks []symbolicCheck
	for _, a := range sortedSymbolicAddrs(addrs) {
		var chain []*snapshotFunction
		for _, level := range funcs {
			if a >= level.Addr && a < level.Addr+level.Size {
				chain = append(chain, level)
				break
			}
		}
		for len(chain) > 0 {
			var deeper *snapshotFunction
			for _, in := range chain[len(chain)-1].Inlinees {
				if a >= in.Addr && a < in.Addr+in.Size {
					deeper = in
					break
				}
			}
			if deeper == nil {
				break
			}
			chain = append(chain, deeper)
		}
		if len(chain) == 0 {
			continue // a line record past its function's end: symbolic states nothing there
		}
		c := symbolicCheck{Addr: a, From: from}
		for i := len(chain) - 1; i >= 0; i-- {
			w := symbolicFrame{Name: chain[i].Name}
			for _, l := range chain[i].Lines {
				if l.Addr <= a {
					w.File, w.Dir, w.Line = l.File, l.Dir, l.Line
				}
			}
			c.Frames = append(c.Frames, w)
		}
		checks = append(checks, c)
	}
	return checks
}

func sortedSymbolicAddrs(set map[uint64]bool) []uint64 {
	out := make([]uint64, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

var symcacheFunctionLine = regexp.MustCompile(`^\s*([0-9a-f]+) (.+)$`)

// parseSymcacheFunctions parses the insta snapshot at path, symbolic's
// FunctionsDebug of a symcache: "ADDR NAME" for each function with an
// entry address. Each is a check of the outermost function at ADDR.
func parseSymcacheFunctions(t *testing.T, path string) []symbolicCheck {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.SplitN(string(b), "---\n", 3)
	if len(parts) != 3 {
		t.Fatalf("%s: no insta header", path)
	}
	var checks []symbolicCheck
	for n, line := range strings.Split(parts[2], "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		m := symcacheFunctionLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%s:%d: %q is not a function", path, n+1, line)
		}
		checks = append(checks, symbolicCheck{Addr: parseSnapshotHex(t, m[1]), Frames: []symbolicFrame{{Name: m[2]}}, OutermostOnly: true, From: filepath.Base(path)})
	}
	return checks
}

var symcacheLookupFrame = regexp.MustCompile(`\(\s*"([^"]*)",\s*(\d+),\s*Function \{\s*name: "([^"]*)"`)

// parseLookupSnapshot parses test_cache__lookup.snap, the Debug of a
// lookup's frames (file, line and function), innermost first.
func parseLookupSnapshot(t *testing.T, path string) []symbolicFrame {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var frames []symbolicFrame
	for _, m := range symcacheLookupFrame.FindAllStringSubmatch(string(b), -1) {
		l, _ := strconv.Atoi(m[2])
		frames = append(frames, symbolicFrame{Name: m[3], File: m[1], Line: l})
	}
	if len(frames) == 0 {
		t.Fatalf("%s: no frame", path)
	}
	return frames
}

// rustTest returns the body of the test function fn of the Rust file at
// path, from its "fn fn(" to the next "#[test]", without its comments.
func rustTest(t *testing.T, path, fn string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "fn "+fn+"(")
	if i < 0 {
		t.Fatalf("%s: no fn %s", path, fn)
	}
	s = s[i:]
	if j := strings.Index(s, "#[test]"); j >= 0 {
		s = s[:j]
	}
	return rustComment.ReplaceAllString(s, "")
}

var (
	rustComment   = regexp.MustCompile(`(?m)^\s*//.*$`)
	rustLookup    = regexp.MustCompile(`\.lookup\(([0-9a-fx_ -]+)\)`)
	rustSymText   = regexp.MustCompile(`(?s)br#"(.*?)"#`)
	rustAssertEq  = regexp.MustCompile(`(?s)assert_eq!\(\s*([^;]*?),\s*("(?:[^"\\]|\\.)*"|[0-9a-fx_]+)\s*,?\s*\);`)
	rustLet       = regexp.MustCompile(`(?s)let (?:mut )?(\w+)\s*=\s*([^;]*);`)
	rustFrameIdx  = regexp.MustCompile(`\[(\d+)\]`)
	rustStringEsc = regexp.MustCompile(`\\\n\s*`)
)

// rustString reads a Rust string literal (with its quotes) as Rust
// does: a backslash before a newline drops it and the indentation after
// it; \\ and \" are a backslash and a quote.
func rustString(lit string) string {
	s := rustStringEsc.ReplaceAllString(lit[1:len(lit)-1], "")
	return strings.NewReplacer(`\\`, `\`, `\"`, `"`).Replace(s)
}

// rustNumber reads a lookup's address: a hex or decimal number, or a
// difference of two.
func rustNumber(t *testing.T, expr string) uint64 {
	t.Helper()
	var v uint64
	for i, term := range strings.Split(expr, " - ") {
		n, err := strconv.ParseUint(strings.ReplaceAll(strings.TrimSpace(term), "_", ""), 0, 64)
		if err != nil {
			t.Fatalf("lookup(%s): %v", expr, err)
		}
		if i == 0 {
			v = n
		} else {
			v -= n
		}
	}
	return v
}

// rustLookupChecks reads the lookups of a Rust test's body and the
// assertions that follow each (up to the next), through the values a
// "let" names: the frames' count
// ("len(), N"), a frame's function name, file (full_path) and line, its
// function's entry_pc, or that nothing is found ("is_none()").
func rustLookupChecks(t *testing.T, src, from string) []symbolicCheck {
	t.Helper()
	locs := rustLookup.FindAllStringSubmatchIndex(src, -1)
	var checks []symbolicCheck
	for i, loc := range locs {
		end := len(src)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		seg := src[loc[1]:end]
		c := symbolicCheck{Addr: rustNumber(t, src[loc[2]:loc[3]]), From: from, Leading: true}
		frame := func(k int) *symbolicFrame {
			for len(c.Frames) <= k {
				c.Frames = append(c.Frames, symbolicFrame{Name: symbolicAnyName})
			}
			return &c.Frames[k]
		}
		if strings.Contains(seg, "is_none()") {
			c.None = true
		}
		lets := map[string]string{}
		for _, m := range rustLet.FindAllStringSubmatch(seg, -1) {
			lets[m[1]] = strings.TrimSpace(m[2])
		}
		for _, m := range rustAssertEq.FindAllStringSubmatch(seg, -1) {
			expr, value := strings.TrimSpace(m[1]), m[2]
			if bound, ok := lets[expr]; ok {
				expr = bound
			}
			k := 0
			if idx := rustFrameIdx.FindStringSubmatch(expr); idx != nil {
				k, _ = strconv.Atoi(idx[1])
			}
			switch {
			case strings.HasSuffix(expr, ".len()"):
				n, _ := strconv.Atoi(value)
				frame(n - 1)
				c.Leading = false
			case strings.HasSuffix(expr, ".name()"):
				frame(k).Name = rustString(value)
			case strings.HasSuffix(expr, "full_path()"):
				frame(k).File = rustString(value)
			case strings.HasSuffix(expr, ".line()"):
				frame(k).Line, _ = strconv.Atoi(value)
			case strings.HasSuffix(expr, ".entry_pc()"):
				c.SymAddr = rustNumber(t, value)
			default:
				t.Fatalf("%s: an assertion on %s", from, expr)
			}
		}
		if len(c.Frames) == 0 && !c.None {
			t.Fatalf("%s: lookup(0x%x) asserts nothing the test reads", from, c.Addr)
		}
		checks = append(checks, c)
	}
	if len(checks) == 0 {
		t.Fatalf("%s: no lookup", from)
	}
	return checks
}

// breakpadLineChecks is test_macos_all of breakpad.rs on the Breakpad
// file named file: every address of every line record resolves to one frame,
// its FUNC's name, its FILE's path cleaned, and its line.
func breakpadLineChecks(t *testing.T, file string) []symbolicCheck {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	var fn string
	var checks []symbolicCheck
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
		case fields[0] == "FILE":
			files[fields[1]] = strings.SplitN(line, " ", 3)[2]
		case fields[0] == "FUNC":
			rest := strings.TrimPrefix(strings.TrimPrefix(line, "FUNC "), "m ")
			fn = strings.SplitN(rest, " ", 4)[3]
		case strings.ToUpper(fields[0]) == fields[0] && !isHex(fields[0]):
			fn = "" // PUBLIC, STACK and the others end a FUNC's lines
		case fn != "" && len(fields) == 4:
			addr, size := parseSnapshotHex(t, fields[0]), parseSnapshotHex(t, fields[1])
			l, _ := strconv.Atoi(fields[2])
			for a := addr; a < addr+size; a++ {
				checks = append(checks, symbolicCheck{Addr: a, Frames: []symbolicFrame{{Name: fn, File: path.Clean(files[fields[3]]), Line: l}}, From: "test_macos_all"})
			}
		}
	}
	return checks
}

func isHex(s string) bool {
	_, err := strconv.ParseUint(s, 16, 64)
	return err == nil
}

// symbolicModule is a debug file of symbolic's fixtures, uploaded (with
// the files it goes with) to a project of its own, since the copies of
// one program (plain, zlib, zstd, Breakpad) share its debug id.
type symbolicModule struct {
	project string
	files   map[string]string // zip entry name -> path in the suites, or the text itself for inline files
	inline  bool              // files hold the text
	typ     string
	debugID string
	vmaddr  uint64
}

// uploadSymbolic uploads each of m's files, zipped, to files/dsyms/ of
// sym/m.project.
func uploadSymbolic(t *testing.T, s *errataServer, m symbolicModule) {
	t.Helper()
	for name, src := range m.files {
		data := []byte(src)
		if !m.inline {
			var err error
			if data, err = os.ReadFile(suitePath(t, src)); err != nil {
				t.Fatal(err)
			}
		}
		var form bytes.Buffer
		mw := multipart.NewWriter(&form)
		w, err := mw.CreateFormFile("file", path.Base(name)+".zip")
		if err != nil {
			t.Fatal(err)
		}
		w.Write(zipOf(t, name, data))
		mw.Close()
		if r := send(http.DefaultClient, s, "POST", "/api/0/projects/sym/"+m.project+"/files/dsyms/", mw.FormDataContentType(), &form); r.status != http.StatusCreated {
			t.Fatalf("files/dsyms/ of %s: %v", m.project, r)
		}
	}
}

// symbolicImageAddr is where the requests say each module is loaded.
const symbolicImageAddr = 0x7f0000000000

// symbolicGot is a frame of errata's answer, as compared.
type symbolicGot struct {
	Status, Function, Symbol, AbsPath, Filename string
	Lineno                                      int
	SymAddr                                     string
}

// resolveSymbolic resolves addrs, relative to m's image as symbolic's
// addresses are (to the vmaddr of its first segment), through the route,
// at most 1,000 frames a request, and returns the frames of each,
// innermost first.
func resolveSymbolic(t *testing.T, s *errataServer, m symbolicModule, addrs []uint64) [][]symbolicGot {
	t.Helper()
	out := make([][]symbolicGot, len(addrs))
	for start := 0; start < len(addrs); start += 1000 {
		batch := addrs[start:min(start+1000, len(addrs))]
		frames := make([]map[string]any, len(batch))
		for i, a := range batch {
			frames[i] = map[string]any{"instruction_addr": fmt.Sprintf("0x%x", symbolicImageAddr+a), "adjust_instruction_addr": false}
		}
		ans := symbolicateIn(t, s, "sym/"+m.project, map[string]any{
			"modules": []map[string]any{{"type": m.typ, "debug_id": m.debugID, "image_addr": fmt.Sprintf("0x%x", uint64(symbolicImageAddr)),
				"image_vmaddr": fmt.Sprintf("0x%x", m.vmaddr), "image_size": 1 << 32}},
			"stacktraces": []map[string]any{{"frames": frames}},
			"options":     map[string]any{"apply_source_context": false},
		})
		if len(ans.Modules) != 1 || ans.Modules[0].DebugStatus != "found" {
			t.Fatalf("%s: modules %+v, want the debug file found", m.project, ans.Modules)
		}
		for _, f := range ans.Stacktraces[0].Frames {
			out[start+f.OriginalIndex] = append(out[start+f.OriginalIndex], symbolicGot{Status: f.Status, Function: f.Function, Symbol: f.Symbol,
				AbsPath: f.AbsPath, Filename: f.Filename, Lineno: f.Lineno, SymAddr: f.SymAddr})
		}
	}
	return out
}

// symbolicSameName reports whether errata's frame carries the name symbolic
// gives: its function (demangled) or its symbol (as in the file), as
// symbolic prints a DWARF function's linkage name and a Breakpad file's
// demangled one; a mangled name symbolic gives from the DWARF of a
// program is the demangled one of its Breakpad file.
func symbolicSameName(want string, got symbolicGot) bool {
	return want == got.Function || want == got.Symbol || demangle.Filter(want) == got.Function
}

// symbolicSameFile reports whether errata's path is symbolic's file.
// Both answer paths cleaned ("a/../b" is "b": symbolic's symcache joins
// and cleans them, and its own tests compare with clean_path). Where
// symbolic prints a
// base name and its directory, the path must end with them, joined by the
// directory's separator (the directory as written, or without the "../"
// it starts with).
func symbolicSameFile(w symbolicFrame, got symbolicGot) bool {
	abs := got.AbsPath
	if w.Dir == "" {
		return w.File == abs
	}
	sep := "/"
	if strings.Contains(w.Dir, `\`) {
		sep = `\`
	}
	dir := w.Dir
	for strings.HasPrefix(dir, "../") {
		dir = dir[len("../"):]
	}
	return abs == w.Dir+sep+w.File || strings.HasSuffix(abs, "/"+dir+sep+w.File)
}

// compareSymbolicCheck returns what differs between errata's frames and
// c, "" when nothing does.
func compareSymbolicCheck(c symbolicCheck, got []symbolicGot) string {
	if c.None {
		if len(got) == 1 && got[0].Status != "symbolicated" {
			return ""
		}
		return fmt.Sprintf("%+v, want nothing", got)
	}
	if len(got) == 0 || got[0].Status != "symbolicated" {
		return fmt.Sprintf("%+v, want %+v", got, c.Frames)
	}
	if c.OutermostOnly {
		if last := got[len(got)-1]; !symbolicSameName(c.Frames[0].Name, last) {
			return fmt.Sprintf("outermost %q (%q), want %q", last.Function, last.Symbol, c.Frames[0].Name)
		}
		return ""
	}
	if len(got) != len(c.Frames) && !(c.Leading && len(got) > len(c.Frames)) {
		return fmt.Sprintf("%d frames %+v, want %d %+v", len(got), got, len(c.Frames), c.Frames)
	}
	for i, w := range c.Frames {
		g := got[i]
		if w.Name != symbolicAnyName && !symbolicSameName(w.Name, g) || w.File != "" && !symbolicSameFile(w, g) || w.Line != 0 && w.Line != g.Lineno {
			return fmt.Sprintf("frame %d: %q (%q) %s:%d, want %q %s %s:%d", i, g.Function, g.Symbol, g.AbsPath, g.Lineno, w.Name, w.Dir, w.File, w.Line)
		}
	}
	if c.SymAddr != 0 {
		if sym, err := strconv.ParseUint(strings.TrimPrefix(got[0].SymAddr, "0x"), 16, 64); err != nil || sym-symbolicImageAddr != c.SymAddr {
			return fmt.Sprintf("sym_addr %s, want the image's 0x%x", got[0].SymAddr, c.SymAddr)
		}
	}
	return ""
}

// knownDifferences are the addresses where errata and symbolic differ and
// llvm-symbolizer (Debian's llvm 14, on the same file) answers as errata
// does, by case and address, with the reason (docs/testing.md lists
// them). Any other difference fails the test.
var knownDifferences = map[string]map[uint64]string{
	"linux/crash.debug":      {0x9700: localAlias},
	"linux/crash.debug-zlib": {0x9700: localAlias},
	"linux/crash.debug-zstd": {0x9700: localAlias},
}

// localAlias is why the outermost function at 0x409700 of linux/crash
// differs: two symbols start there, the global
// _ZNK15google_breakpad17LinuxPtraceDumper13BuildProcPathEPciPKc (T) and
// its local alias ...EPciPKc.localalias.19 (t); symbolic's symcache names
// the local alias, llvm-symbolizer and errata the global function, which
// is also the DWARF's linkage name.
const localAlias = "two symbols at 0x409700: llvm-symbolizer and errata name the global BuildProcPath, symbolic its local alias .localalias.19"

// TestSymbolicSuite resolves the addresses of symbolic's snapshots and
// test assertions (symbolic's own test suite: docs/testing.md) through
// the native route, each debug file uploaded to files/dsyms/ of a project
// of its own, and compares function names, files, lines and inlined
// frames with what symbolic states, read from its snapshots and tests.
func TestSymbolicSuite(t *testing.T) {
	t.Parallel()
	const (
		elfDebugID = "c0bcc3f1-9827-fe65-3058-404b2831d9e6"
		macDebugID = "67e9247c-814e-392b-a027-dbde6748fcbf"
	)
	elf := func(project, debug string) symbolicModule {
		return symbolicModule{project: project, typ: "elf", debugID: elfDebugID, vmaddr: 0x400000,
			files: map[string]string{"crash": symbolicFixtures + "linux/crash", "crash.debug": symbolicFixtures + debug}}
	}
	breakpad := func(project, file, typ, debugID string) symbolicModule {
		return symbolicModule{project: project, typ: typ, debugID: debugID, files: map[string]string{path.Base(file): symbolicFixtures + file}}
	}
	dsym := func(project, file, debugID string) symbolicModule {
		return symbolicModule{project: project, typ: "macho", debugID: debugID, vmaddr: 0x100000000,
			files: map[string]string{path.Base(file) + ".dSYM/Contents/Resources/DWARF/" + path.Base(file): file}}
	}
	type checks func(t *testing.T) []symbolicCheck
	debuginfo := func(snap string) checks {
		return func(t *testing.T) []symbolicCheck {
			return snapshotChecks(parseFunctionsSnapshot(t, suitePath(t, symbolicDebuginfoSnapshot+snap)), snap)
		}
	}
	symcache := func(snap string) checks {
		return func(t *testing.T) []symbolicCheck {
			return parseSymcacheFunctions(t, suitePath(t, symbolicSymcacheSnapshot+snap))
		}
	}
	rust := func(file, fn string) checks {
		return func(t *testing.T) []symbolicCheck {
			return rustLookupChecks(t, rustTest(t, suitePath(t, symbolicSymcacheTests+file), fn), fn)
		}
	}
	all := func(cs ...checks) checks {
		return func(t *testing.T) []symbolicCheck {
			var out []symbolicCheck
			for _, c := range cs {
				out = append(out, c(t)...)
			}
			return out
		}
	}
	linux := all(debuginfo("test_objects__elf_functions.snap"), symcache("test_writer__functions_linux.snap"))
	type suiteCase struct {
		name   string
		module symbolicModule
		checks checks
	}
	cases := []suiteCase{
		{"linux/crash.debug", elf("elf", "linux/crash.debug"), linux},
		{"linux/crash.debug-zlib", elf("elfzlib", "linux/crash.debug-zlib"), linux},
		{"linux/crash.debug-zstd", elf("elfzstd", "linux/crash.debug-zstd"), linux},
		{"macos/crash.dSYM", dsym("mac", symbolicFixtures+"macos/crash.dSYM/Contents/Resources/DWARF/crash", macDebugID),
			all(debuginfo("test_objects__mach_functions.snap"), symcache("test_writer__functions_macos.snap"),
				rust("test_writer.rs", "test_lookup_second_line_in_inlinee"), func(t *testing.T) []symbolicCheck {
					// test_cache.rs test_lookup, whose answer is the snapshot
					// test_cache__lookup (of a symcache of this dSYM).
					src := rustTest(t, suitePath(t, symbolicSymcacheTests+"test_cache.rs"), "test_lookup")
					m := rustLookup.FindStringSubmatch(src)
					if m == nil {
						t.Fatal("test_cache.rs test_lookup: no lookup")
					}
					return []symbolicCheck{{Addr: rustNumber(t, m[1]), From: "test_cache__lookup.snap",
						Frames: parseLookupSnapshot(t, suitePath(t, symbolicSymcacheSnapshot+"test_cache__lookup.snap"))}}
				})},
		{"macos/overlapping_funcs.dSYM", dsym("overlap", symbolicFixtures+"macos/overlapping_funcs.dSYM/Contents/Resources/DWARF/overlapping_funcs",
			"546d0132-0e06-3b7a-8640-be4046513445"), symcache("test_writer__overlapping_funcs.snap")},
		{"CrashLibiOS.dSYM", symbolicModule{project: "ios", typ: "macho", debugID: "3cd3e3cc-281e-3af3-84eb-cde6d56f0559",
			files: map[string]string{"CrashLibiOS.dSYM/Contents/Resources/DWARF/CrashLibiOS": "symbolic/py/tests/res/ext/1.4.1/release/dSYMs/3CD3E3CC-281E-3AF3-84EB-CDE6D56F0559.dSYM/Contents/Resources/DWARF/CrashLibiOS"}},
			rust("test_writer.rs", "test_lookup_between_functions")},
		{"linux/crash.sym", breakpad("bplinux", "linux/crash.sym", "elf", elfDebugID), symcache("test_writer__functions_linux.snap")},
		{"macos/crash.sym", breakpad("bpmac", "macos/crash.sym", "macho", macDebugID), all(rust("breakpad.rs", "test_macos"),
			func(t *testing.T) []symbolicCheck {
				return breakpadLineChecks(t, suitePath(t, symbolicFixtures+"macos/crash.sym"))
			})},
		{"macos/crash.inlines.sym", breakpad("bpinline", "macos/crash.inlines.sym", "macho", macDebugID),
			debuginfo("test_objects__breakpad_functions_mac_with_inlines.snap")},
		{"windows/crash.sym", breakpad("bpwin", "windows/crash.sym", "pe", "3249d99d-0c40-4931-8610-f4e4fb0b6936-1"),
			all(debuginfo("test_objects__breakpad_functions.snap"), rust("breakpad.rs", "test_windows"))},
		{"xul.sym", breakpad("xul", "xul.sym", "pe", "09f9d7ec-f31f-60e3-4c4c-44205044422e-1"), rust("test_writer.rs", "test_lookup_no_lines")},
		{"xul2.sym", breakpad("xul2", "xul2.sym", "pe", "88fd4912-57b2-e0f5-4c4c-44205044422e-1"), rust("test_writer.rs", "test_lookup_modulo_u16")},
		{"libgallium_dri.sym", breakpad("gallium", "libgallium_dri.sym", "elf", "5a5f3291-4295-a4fa-22b5-91670a49fbef"), rust("test_writer.rs", "test_lookup_no_size")},
	}
	// The Breakpad texts written in breakpad.rs, each with the lookups
	// that follow it.
	for _, fn := range []string{"test_func_end", "test_func_no_lines"} {
		src := rustTest(t, suitePath(t, symbolicSymcacheTests+"breakpad.rs"), fn)
		texts := rustSymText.FindAllStringSubmatchIndex(src, -1)
		for i, loc := range texts {
			end := len(src)
			if i+1 < len(texts) {
				end = texts[i+1][0]
			}
			name := fmt.Sprintf("%s/%d", fn, i+1)
			seg := src[loc[1]:end]
			cases = append(cases, suiteCase{name,
				symbolicModule{project: strings.ReplaceAll(fmt.Sprintf("%s-%d", fn, i+1), "_", "-"), typ: "macho", debugID: macDebugID, inline: true,
					files: map[string]string{"crash.sym": src[loc[2]:loc[3]] + "\n"}},
				func(t *testing.T) []symbolicCheck { return rustLookupChecks(t, seg, name) }})
		}
	}

	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	s.token = s.user(t, "symbolic@example.com", "project:releases,project:read,project:write,org:read")
	s.cli(t, "admin", "create-org", "--slug", "sym", "--owner", "symbolic@example.com")
	for _, tc := range cases {
		s.cli(t, "admin", "create-project", "--org", "sym", "--slug", tc.module.project)
		uploadSymbolic(t, s, tc.module)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checks := tc.checks(t)
			addrs := make([]uint64, len(checks))
			for i, c := range checks {
				addrs[i] = c.Addr
			}
			got := resolveSymbolic(t, s, tc.module, addrs)
			equal, known := 0, 0
			for i, c := range checks {
				diff := compareSymbolicCheck(c, got[i])
				reason, ok := knownDifferences[tc.name][c.Addr]
				switch {
				case diff == "":
					equal++
				case ok:
					known++
					t.Logf("0x%x (%s): %s: known: %s", c.Addr, c.From, diff, reason)
				default:
					t.Errorf("0x%x (%s): %s", c.Addr, c.From, diff)
				}
			}
			t.Logf("%d of %d addresses as symbolic states them, %d known differences", equal, len(checks), known)
		})
	}
}
