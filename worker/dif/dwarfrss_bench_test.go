package dif

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"

	"errata/worker/dif/diftest"
)

// maxDWARFGrowth is how much the peak resident set may grow while a
// 100 MB debug file is read and resolved.
const maxDWARFGrowth = 256 << 20

// BenchmarkDWARF100MB builds, once, a C program of about 100 MB of
// uncompressed DWARF (18 units of 100 functions and 200,000 struct
// members each, gcc -O0 -g, two compilers at a time), then reads it as
// the server does (from an open file) and reports how much the process's
// peak resident set (VmHWM, reset through /proc/self/clear_refs) grows
// over its resident set before: for the first answer (reading the file,
// resolving one address) and once an address in every unit is resolved
// (every unit parsed). It fails when either reaches maxDWARFGrowth.
// ERRATA_DWARF100MB_FILE names a program built before, instead.
func BenchmarkDWARF100MB(b *testing.B) {
	path := os.Getenv("ERRATA_DWARF100MB_FILE")
	if path == "" {
		path = buildDWARF100MB(b)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	secs, err := ReadELFSections(f, st.Size())
	if err != nil {
		b.Fatal(err)
	}
	var debugBytes uint64
	for _, s := range secs {
		if strings.HasPrefix(s.Name, ".debug_") {
			debugBytes += s.Size
		}
	}
	if debugBytes < 95<<20 {
		b.Fatalf("%s holds %d bytes of DWARF, want about 100 MB", path, debugBytes)
	}
	b.Logf("%s: %d bytes, %d of DWARF", path, st.Size(), debugBytes)
	var first, all int64
	for b.Loop() {
		start := resetPeakRSS(b)
		res, err := ReadELFDWARF(f, st.Size())
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := res.Lookup(res.dw.spans[len(res.dw.spans)/2].lo); !ok {
			b.Fatal("nothing at the middle unit's start")
		}
		first = max(first, peakRSS(b)-start)
		for _, s := range res.dw.spans {
			if _, _, err := res.Resolve(s.lo); err != nil {
				b.Fatal(err)
			}
		}
		all = max(all, peakRSS(b)-start)
		b.Logf("%d units, resolver Size %d bytes", len(res.dw.units), res.Size())
		runtime.KeepAlive(res)
	}
	b.ReportMetric(float64(first)/(1<<20), "MB-first")
	b.ReportMetric(float64(all)/(1<<20), "MB-all")
	if first >= maxDWARFGrowth || all >= maxDWARFGrowth {
		b.Errorf("the peak resident set grew by %d MB (first answer) and %d MB (every unit), want less than %d",
			first>>20, all>>20, maxDWARFGrowth>>20)
	}
}

// buildDWARF100MB writes and compiles the program of BenchmarkDWARF100MB
// in a temporary folder and returns its path.
func buildDWARF100MB(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	srcs, err := diftest.CProgram(dir, 18, 100, 2000)
	if err != nil {
		b.Fatal(err)
	}
	objs := make([]string, len(srcs))
	errs := make([]error, len(srcs))
	work := make(chan int)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for i := range work {
				objs[i] = strings.TrimSuffix(srcs[i], ".c") + ".o"
				if out, err := exec.Command("gcc", "-O0", "-g", "-c", "-o", objs[i], srcs[i]).CombinedOutput(); err != nil {
					errs[i] = fmt.Errorf("gcc %s: %v\n%s", srcs[i], err, out)
				}
			}
		})
	}
	for i := range srcs {
		work <- i
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	exe := filepath.Join(dir, "big")
	if out, err := exec.Command("gcc", append([]string{"-o", exe}, objs...)...).CombinedOutput(); err != nil {
		b.Fatalf("gcc: %v\n%s", err, out)
	}
	return exe
}

// resetPeakRSS returns the memory the runtime holds to the system, resets
// the process's peak resident set to its resident set, and returns that.
func resetPeakRSS(b *testing.B) int64 {
	b.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Fatalf("resetting the peak resident set: %v", err)
	}
	return procStatus(b, "VmRSS:")
}

// peakRSS is the process's peak resident set (VmHWM) since the last reset.
func peakRSS(b *testing.B) int64 { return procStatus(b, "VmHWM:") }

func procStatus(b *testing.B, field string) int64 {
	b.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				b.Fatalf("%s %q: %v", field, rest, err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
