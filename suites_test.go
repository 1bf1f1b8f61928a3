package main

import (
	"path/filepath"
	"testing"

	"errata/shareddata"
)

// resolutionSuites is the folder of the shared test data (shareddata) that
// holds the resolution suites (TC39's source-map tests, symbolic's fixtures
// and snapshots).
const resolutionSuites = "resolution-suites"

// suitePath returns the path of rel, a file or folder of the resolution
// suites, found by shareddata.Path: the test fails when it is missing.
func suitePath(t *testing.T, rel string) string {
	t.Helper()
	return shareddata.Path(t, filepath.Join(resolutionSuites, rel))
}
