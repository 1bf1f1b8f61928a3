package main

import (
	"os"
	"path/filepath"
	"testing"
)

// sharedData is where the test data written by others is kept: beside the
// repository, in ../shared/data, never in it, each file or folder with its
// license and the commit it was copied from (docs/testing.md).
const sharedData = "shared/data"

// resolutionSuites is the folder of sharedData that holds the resolution
// suites (TC39's source-map tests, symbolic's fixtures and snapshots).
const resolutionSuites = "resolution-suites"

// sharedDataPath returns the path of rel, a file or folder of sharedData,
// found in the nearest parent directory of the tests that holds it. The test
// fails when none does: the data is never optional.
func sharedDataPath(t *testing.T, rel string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, sharedData, rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("%s is in no parent directory of the tests: it belongs next to the repository, in ../%s", rel, filepath.Join(sharedData, rel))
		}
		dir = parent
	}
}

// suitePath returns the path of rel, a file or folder of the resolution
// suites, found as sharedDataPath finds it.
func suitePath(t *testing.T, rel string) string {
	t.Helper()
	return sharedDataPath(t, filepath.Join(resolutionSuites, rel))
}
