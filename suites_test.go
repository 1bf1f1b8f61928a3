package main

import (
	"os"
	"path/filepath"
	"testing"
)

// resolutionSuites is where the resolution suites written by others (TC39's
// source-map tests, symbolic's fixtures and snapshots) are kept: beside the
// repository, in ../shared/data, never in it, each with its license and
// the commit it was copied from (docs/testing.md).
const resolutionSuites = "shared/data/resolution-suites"

// suitePath returns the path of rel, a file or folder of the resolution
// suites, found in the nearest parent directory of the tests that holds
// them.
func suitePath(t *testing.T, rel string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, resolutionSuites, rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("%s of the resolution suites is in no parent directory of the tests: they belong next to the repository, in ../%s", rel, resolutionSuites)
		}
		dir = parent
	}
}
