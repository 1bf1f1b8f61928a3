package ingest

import (
	"archive/zip"
	"bytes"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/store"
	"errata/worker/dif"
)

// TestDebugFileObjectsCopyTheIdentity holds a record to its object's
// identity, under the object name Sentry gives the upload's name, with no
// section table and no source index for the formats that have neither.
func TestDebugFileObjectsCopyTheIdentity(t *testing.T) {
	objs := []dif.Object{
		{Kind: "pdb", DebugID: "0b3b9c57-05d3-4e2f-9b4a-0d2c6f8e1a11-1", CodeID: "5f8c2a1b3000", Arch: "x86_64", Type: "dbg", Features: []string{"debug"}},
		{Kind: "breakpad", DebugID: "0b3b9c57-05d3-4e2f-9b4a-0d2c6f8e1a11-1", Arch: "x86", Features: []string{"symtab", "unwind"}},
	}
	got := DebugFileObjects(objs, "symbols/crash.sym", bytes.NewReader(nil), 0)
	want := []store.DebugFileObject{
		{DebugID: objs[0].DebugID, CodeID: objs[0].CodeID, ObjectName: "crash.sym", CPUName: "x86_64", FileFormat: "pdb", Type: "dbg", Features: []string{"debug"}},
		{DebugID: objs[1].DebugID, ObjectName: "crash", CPUName: "x86", FileFormat: "breakpad", Features: []string{"symtab", "unwind"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DebugFileObjects (-want +got):\n%s", diff)
	}
}

// TestDebugFileObjectsReadTheSectionTable holds an ELF object's record to
// the section table dif reads from the file, and a file whose table cannot
// be read to a table beyond the budget.
func TestDebugFileObjectsReadTheSectionTable(t *testing.T) {
	elf, err := os.ReadFile("../dif/testdata/tiny.elf")
	if err != nil {
		t.Fatal(err)
	}
	secs, err := dif.ReadELFSections(bytes.NewReader(elf), int64(len(elf)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range secs {
		names = append(names, s.Name)
	}
	tests := []struct {
		name    string
		content []byte
		want    []string // the section names, nil when beyond
	}{
		{"read", elf, names},
		{"beyond when the file is no ELF", []byte("not an ELF file"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs := DebugFileObjects([]dif.Object{{Kind: "elf"}}, "tiny.elf", bytes.NewReader(tt.content), int64(len(tt.content)))
			st := recs[0].Sections
			if st == nil || recs[0].Sources != nil {
				t.Fatalf("Sections %v, Sources %v: want a section table only", st, recs[0].Sources)
			}
			if st.Beyond != (tt.want == nil) {
				t.Fatalf("Beyond = %v, want %v", st.Beyond, tt.want == nil)
			}
			var got []string
			for _, s := range st.Sections {
				got = append(got, s.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("section names (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDebugFileObjectsReadTheSourceIndex holds a source bundle's record to
// where each of its sources lies, by canonical path, and a file whose index
// cannot be read to an index beyond the budget.
func TestDebugFileObjectsReadTheSourceIndex(t *testing.T) {
	const source = "int main(void) { return 0; }\n"
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range []struct{ name, body string }{
		{"manifest.json", `{"files":{"files/_/src/main.c":{"type":"source","path":"/src/main.c"}}}`},
		{"files/_/src/main.c", source},
	} {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m.name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(m.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	bundle := buf.Bytes()
	tests := []struct {
		name    string
		content []byte
		want    map[string]int64 // the sources' sizes by path, nil when beyond
	}{
		{"read", bundle, map[string]int64{dif.CanonicalSourcePath("/src/main.c"): int64(len(source))}},
		{"beyond when the file is no zip", []byte("not a zip"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs := DebugFileObjects([]dif.Object{{Kind: "sourcebundle"}}, "main.src.zip", bytes.NewReader(tt.content), int64(len(tt.content)))
			x := recs[0].Sources
			if x == nil || recs[0].Sections != nil {
				t.Fatalf("Sources %v, Sections %v: want a source index only", x, recs[0].Sections)
			}
			if x.Beyond != (tt.want == nil) {
				t.Fatalf("Beyond = %v, want %v", x.Beyond, tt.want == nil)
			}
			var got map[string]int64
			for p, m := range x.Members {
				if got == nil {
					got = map[string]int64{}
				}
				got[p] = m.Size
				if m.Method != 0 || m.CSize != m.Size {
					t.Errorf("%s: method %d, %d bytes of %d: want stored", p, m.Method, m.CSize, m.Size)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
		})
	}
}
