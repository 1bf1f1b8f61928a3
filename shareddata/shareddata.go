package shareddata

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir is the folder, relative to a parent directory of the tests, that
// holds the shared test data.
const Dir = "shared/data"

// Path returns the path of rel, a file or folder of Dir, found in the
// nearest parent directory of the tests that holds it. The test fails when
// none does: the data is never optional.
func Path(t testing.TB, rel string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, Dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("%s is in no parent directory of the tests: it belongs next to the repository, in ../%s", rel, filepath.Join(Dir, rel))
		}
		dir = parent
	}
}
