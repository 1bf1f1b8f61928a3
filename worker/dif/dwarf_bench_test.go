package dif

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"
)

// BenchmarkNativeVsLLVMSymbolizer resolves addresses of a Go binary with
// DWARF (this test binary, or ERRATA_NATIVE_BENCH_FILE) beside
// llvm-symbolizer reading the same addresses from its standard input:
// warm (the file parsed, all addresses in a batch) and cold (parsing the
// file and answering one address). It reports frames per second.
func BenchmarkNativeVsLLVMSymbolizer(b *testing.B) {
	file := os.Getenv("ERRATA_NATIVE_BENCH_FILE")
	if file == "" {
		var err error
		if file, err = os.Executable(); err != nil {
			b.Fatal(err)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	res, err := ReadELFDWARF(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		b.Fatal(err)
	}
	// One address in the middle of each function, at most 20,000.
	funcs := allFuncs(res)
	var addrs []uint64
	step := max(1, len(funcs)/20_000)
	for i := 0; i < len(funcs); i += step {
		f := funcs[i]
		addrs = append(addrs, f.lo+(f.hi-f.lo)/2)
	}
	var input strings.Builder
	for _, a := range addrs {
		fmt.Fprintf(&input, "0x%x\n", a)
	}
	llvm := func(b *testing.B, in string) {
		cmd := exec.Command("llvm-symbolizer", "--obj="+file, "--inlining", "--output-style=JSON")
		cmd.Stdin = strings.NewReader(in)
		if out, err := cmd.Output(); err != nil || len(out) == 0 {
			b.Fatalf("llvm-symbolizer: %v", err)
		}
	}
	b.Logf("%s: %d bytes, %d addresses", file, len(data), len(addrs))
	b.Run("errata-warm", func(b *testing.B) {
		for b.Loop() {
			for _, a := range addrs {
				res.Lookup(a)
			}
		}
		b.ReportMetric(float64(len(addrs)*b.N)/b.Elapsed().Seconds(), "frames/s")
	})
	b.Run("llvm-symbolizer-batch", func(b *testing.B) {
		if _, err := exec.LookPath("llvm-symbolizer"); err != nil {
			b.Fatal("llvm-symbolizer is needed beside errata")
		}
		for b.Loop() {
			llvm(b, input.String())
		}
		b.ReportMetric(float64(len(addrs)*b.N)/b.Elapsed().Seconds(), "frames/s")
	})
	b.Run("errata-cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, err := ReadELFDWARF(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				b.Fatal(err)
			}
			r.Lookup(addrs[len(addrs)/2])
		}
	})
	b.Run("llvm-symbolizer-cold", func(b *testing.B) {
		for b.Loop() {
			llvm(b, fmt.Sprintf("0x%x\n", addrs[len(addrs)/2]))
		}
	})
	// Both cold, one after the other, ten pairs in each iteration, so
	// that the load of a shared machine weighs on both alike: ratio is
	// errata's time over llvm-symbolizer's.
	b.Run("cold-pair", func(b *testing.B) {
		const pairs = 10
		var ours, theirs time.Duration
		for b.Loop() {
			for range pairs {
				start := time.Now()
				r, err := ReadELFDWARF(bytes.NewReader(data), int64(len(data)))
				if err != nil {
					b.Fatal(err)
				}
				r.Lookup(addrs[len(addrs)/2])
				mid := time.Now()
				llvm(b, fmt.Sprintf("0x%x\n", addrs[len(addrs)/2]))
				ours, theirs = ours+mid.Sub(start), theirs+time.Since(mid)
			}
		}
		b.ReportMetric(float64(ours.Milliseconds())/float64(pairs*b.N), "errata-ms")
		b.ReportMetric(float64(theirs.Milliseconds())/float64(pairs*b.N), "llvm-ms")
		b.ReportMetric(float64(ours)/float64(theirs), "ratio")
	})
}

// allFuncs parses every DWARF unit of res and returns the functions of
// those it could read, sorted by address.
func allFuncs(res *Resolver) []span {
	var funcs []span
	for i := range res.dw.units {
		if u, err := res.dw.unit(int32(i), nil); err == nil {
			funcs = append(funcs, u.funcs...)
		}
	}
	sort.Slice(funcs, func(i, j int) bool { return funcs[i].lo < funcs[j].lo })
	return funcs
}
