package dif

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
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
	var addrs []uint64
	step := max(1, len(res.funcs)/20_000)
	for i := 0; i < len(res.funcs); i += step {
		f := res.funcs[i]
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
}
