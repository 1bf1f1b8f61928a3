package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// The runtime's soft memory limit (docs/configuration.md, MEMORY_LIMIT):
// past it the garbage collector runs as often as it must to stay under
// it, so that a server whose heap grows collects before its container's
// limit kills it, rather than after the heap doubled (GOGC's pace).
const (
	// memoryLimitShare is the part of a container's memory limit that
	// MEMORY_LIMIT=auto gives the Go runtime: the rest is for what the
	// runtime does not count (goroutine stacks above their heap share,
	// the binary, the kernel's page cache charged to the container).
	memoryLimitShare = 0.8
	// defaultMemoryLimit is MEMORY_LIMIT=auto's limit outside a container
	// with a memory limit: about four times what the server's budgets
	// let its requests and caches hold together.
	defaultMemoryLimit = 1 << 30
)

// memoryLimit reads MEMORY_LIMIT: "auto" (memoryLimitShare of the memory
// limit of the cgroup under root, else defaultMemoryLimit), "off" (no
// limit: the runtime's default) or a number of bytes (at least 64 MiB).
// It returns the limit, or -1 for none.
func memoryLimit(v, root string) (int64, error) {
	switch v {
	case "off":
		return -1, nil
	case "auto":
		if n, ok := cgroupMemoryLimit(root); ok {
			return int64(float64(n) * memoryLimitShare), nil
		}
		return defaultMemoryLimit, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 64<<20 {
		return 0, badValue{v, `"auto", "off" or a number of bytes of at least 64 MiB`}
	}
	return n, nil
}

// cgroupMemoryLimit returns the memory limit of this process's cgroup
// under root (/sys/fs/cgroup): cgroup v2's memory.max, else v1's
// memory/memory.limit_in_bytes; ok is false when there is none ("max", or
// v1's page-rounded largest number).
func cgroupMemoryLimit(root string) (n int64, ok bool) {
	for _, f := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		n, err := strconv.ParseInt(s, 10, 64)
		if s == "max" || err != nil || n <= 0 || n >= math.MaxInt64/2 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// applyMemoryLimit sets the runtime's soft memory limit to limit (-1: none)
// unless GOMEMLIMIT is set, which the runtime read at start and which
// wins. It returns what it set, for the start-up log.
func applyMemoryLimit(limit int64, getenv func(string) string) string {
	switch {
	case getenv("GOMEMLIMIT") != "":
		return "GOMEMLIMIT=" + getenv("GOMEMLIMIT")
	case limit < 0:
		return "off"
	}
	debug.SetMemoryLimit(limit)
	return fmt.Sprintf("%d bytes", limit)
}
