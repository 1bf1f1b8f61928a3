package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMemoryLimit: MEMORY_LIMIT=auto is 80% of the cgroup's limit (v2,
// then v1), 1 GiB without one; off is none; bytes are taken from 64 MiB
// up; anything else is refused.
func TestMemoryLimit(t *testing.T) {
	cgroup := func(files map[string]string) string {
		dir := t.TempDir()
		for name, content := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, tc := range []struct {
		name, value string
		root        string
		want        int64
		bad         bool
	}{
		{"auto, cgroup v2 limit", "auto", cgroup(map[string]string{"memory.max": "1073741824\n"}), 858993459, false},
		{"auto, cgroup v2 without a limit", "auto", cgroup(map[string]string{"memory.max": "max\n"}), defaultMemoryLimit, false},
		{"auto, cgroup v1 limit", "auto", cgroup(map[string]string{"memory/memory.limit_in_bytes": "2147483648\n"}), 1717986918, false},
		{"auto, cgroup v1 without a limit", "auto", cgroup(map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}), defaultMemoryLimit, false},
		{"auto, no cgroup", "auto", t.TempDir(), defaultMemoryLimit, false},
		{"off", "off", t.TempDir(), -1, false},
		{"bytes", "536870912", t.TempDir(), 536870912, false},
		{"too few bytes", "1048576", t.TempDir(), 0, true},
		{"a size with a unit", "512MiB", t.TempDir(), 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := memoryLimit(tc.value, tc.root)
			if (err != nil) != tc.bad || !tc.bad && got != tc.want {
				t.Errorf("memoryLimit(%q) = %d, %v; want %d (refused: %v)", tc.value, got, err, tc.want, tc.bad)
			}
		})
	}
}

// TestGOMEMLIMITWins: with GOMEMLIMIT set, which the runtime read at
// start, MEMORY_LIMIT sets nothing.
func TestGOMEMLIMITWins(t *testing.T) {
	env := map[string]string{"GOMEMLIMIT": "3GiB"}
	if got := applyMemoryLimit(1<<30, func(k string) string { return env[k] }); got != "GOMEMLIMIT=3GiB" {
		t.Errorf("applyMemoryLimit with GOMEMLIMIT: %s", got)
	}
	if got := applyMemoryLimit(-1, func(string) string { return "" }); got != "off" {
		t.Errorf("applyMemoryLimit(-1): %s", got)
	}
}
