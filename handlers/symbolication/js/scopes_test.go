package js

import (
	"testing"

	"errata/handlers/symbolication"
	"errata/store"
)

// TestScopeIndexNeedsRoomForTheFile: a minified file larger than what the
// request may still hold is not read for its scopes, though its index
// would be smaller: the file is held while it is scanned.
func TestScopeIndexNeedsRoomForTheFile(t *testing.T) {
	budget := symbolication.NewBudget(t.Context(), 1<<20)
	if err := budget.Charge(budget.Left() - 1000); err != nil {
		t.Fatal(err)
	}
	rs := &resolver{e: &Engine{}, budget: budget}
	file := &jsFile{minified: &store.SourceFile{Size: 4096, SHA1: "da39a3ee5e6b4b0d3255bfef95601890afd80709"}}
	x, err := rs.scopeIndex(file)
	if err != nil || x != nil {
		t.Fatalf("scopeIndex = %v, %v; want no index and no error", x, err)
	}
	if rs.read != 0 {
		t.Errorf("read %d bytes of a file the request has no room to hold", rs.read)
	}
}
