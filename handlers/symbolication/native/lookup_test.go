package native

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/store"
)

// TestCandidatesRankDWARFFirst keeps the files of a module by its debug id
// (in either form) or its code id, DWARF first, then PDB, then PE, then
// the others, newest first (the store's order) within each.
func TestCandidatesRankDWARFFirst(t *testing.T) {
	const id = "e0b56998-b1d1-652b-992f-fb3204bf4b45"
	code := "9869b5e0d1b12b65"
	other := "0000"
	file := func(n int64, format, debugID string, codeID *string) store.ResolutionFile {
		return store.ResolutionFile{DebugFile: store.DebugFile{ID: n, FileFormat: format, DebugID: debugID, CodeID: codeID}}
	}
	files := []store.ResolutionFile{ // newest first
		file(1, "breakpad", id, nil),
		file(2, "pe", id, nil),
		file(3, "sourcebundle", id, nil),
		file(4, "elf", "", &code),
		file(5, "pdb", id, nil),
		file(6, "macho", id+"-0", nil),
		file(7, "elf", "11111111-b1d1-652b-992f-fb3204bf4b45", &other),
		file(8, "elf", id, nil),
	}
	var got []int64
	for _, f := range candidates(&module{debugID: id, codeID: code}, files) {
		got = append(got, f.ID)
	}
	if diff := cmp.Diff([]int64{4, 6, 8, 5, 2, 1, 3}, got); diff != "" {
		t.Errorf("candidates (-want +got):\n%s", diff)
	}
}
