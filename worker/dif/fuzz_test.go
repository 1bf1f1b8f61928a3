package dif

import (
	"archive/zip"
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/worker/dif/diftest"
)

// testdataFiles are small files built by gcc and objcopy (a static
// program, gcc -Os -nostdlib -static -Wl,--build-id -Wl,-n, and its debug
// companion, objcopy --only-keep-debug) and the objects their identity
// is, as the readers of debug/elf read it before these readers.
var testdataFiles = map[string]Object{
	"testdata/tiny.elf": {Kind: "elf", DebugID: "b644071b-511e-55db-ac27-1ee28d84d991", CodeID: "1b0744b61e51db55ac271ee28d84d991a2cfc6fa",
		Arch: "x86_64", Type: "exe", Features: []string{"symtab"}},
	"testdata/tiny.debug": {Kind: "elf", DebugID: "b644071b-511e-55db-ac27-1ee28d84d991", CodeID: "1b0744b61e51db55ac271ee28d84d991a2cfc6fa",
		Arch: "x86_64", Type: "dbg", Features: []string{"symtab"}},
}

func TestReadTestdata(t *testing.T) {
	for path, want := range testdataFiles {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Read(bytes.NewReader(data), int64(len(data)), path, "")
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if diff := cmp.Diff([]Object{want}, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", path, diff)
		}
	}
}

// addTestdata adds the files of testdataFiles to f's corpus.
func addTestdata(f *testing.F) {
	for path := range testdataFiles {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// fuzzBudget is what one read of a fuzzed input may allocate; a source
// bundle may also hold its manifest, of up to maxBundleManifest bytes.
const fuzzBudget = 4 << 20

// fuzzRead reads data with read within budget bytes, and checks the ids of
// the objects it returns.
func fuzzRead(t *testing.T, data []byte, budget uint64, read func(r *bytes.Reader, size int64) ([]Object, error)) {
	var objs []Object
	var err error
	checkBudget(t, "reading", budget, func() { objs, err = read(bytes.NewReader(data), int64(len(data))) })
	if err != nil {
		return
	}
	if len(objs) == 0 || len(objs) > maxFatArches {
		t.Fatalf("%d objects and no error", len(objs))
	}
	for _, o := range objs {
		if c, ok := CanonicalDebugID(o.DebugID); !ok || c != o.DebugID {
			t.Errorf("debug id %q is not in Sentry's form", o.DebugID)
		}
		if o.Kind == "" || o.Arch == "" {
			t.Errorf("object %+v lacks a kind or an architecture", o)
		}
	}
}

func one(o Object, err error) ([]Object, error) {
	if err != nil {
		return nil, err
	}
	return []Object{o}, nil
}

// FuzzReadELF reads ELF objects and their section tables within their
// budgets: a section that is not damaged has its bytes in the file.
func FuzzReadELF(f *testing.F) {
	addTestdata(f)
	f.Add(diftest.ELF(8, 64))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRead(t, data, fuzzBudget, func(r *bytes.Reader, size int64) ([]Object, error) {
			return one(ReadELF(r, size))
		})
		var secs []Section
		var err error
		checkBudget(t, "ReadELFSections", sectionsBudget, func() { secs, err = ReadELFSections(bytes.NewReader(data), int64(len(data))) })
		for _, s := range secs {
			if !s.Damaged && s.Type != 8 && (s.Offset > uint64(len(data)) || s.Size > uint64(len(data))-s.Offset) {
				t.Errorf("section %+v is outside the file and not damaged", s)
			}
			if len(s.Name) > maxSectionName {
				t.Errorf("a section name of %d bytes", len(s.Name))
			}
		}
		if err != nil && secs != nil {
			t.Error("sections and an error")
		}
	})
}

func FuzzReadMachO(f *testing.F) {
	f.Add(diftest.MachO(1, 2, 8))
	f.Add(diftest.MachO(3, 0, 0))
	f.Add(diftest.FatMachO(2, diftest.MachO(1, 1, 4)))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRead(t, data, fuzzBudget, func(r *bytes.Reader, size int64) ([]Object, error) {
			return ReadMachO(r, size)
		})
	})
}

func FuzzReadPE(f *testing.F) {
	f.Add(diftest.PE(2, 2, 8, 28))
	f.Add(diftest.PE(1, 0, 0, 1<<32-1))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRead(t, data, fuzzBudget, func(r *bytes.Reader, size int64) ([]Object, error) {
			return one(ReadPE(r, size))
		})
	})
}

func FuzzReadPDB(f *testing.F) {
	f.Add(pdbFile([16]byte(diftest.BuildID), 3))
	f.Add(diftest.PDB(512))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRead(t, data, fuzzBudget, func(r *bytes.Reader, size int64) ([]Object, error) {
			return one(ReadPDB(r, size))
		})
	})
}

func FuzzReadSourceBundle(f *testing.F) {
	f.Add(diftest.SourceBundle(2, 8))
	var buf bytes.Buffer
	buf.WriteString("SYSB\x02\x00\x00\x00")
	zw := zip.NewWriter(&buf)
	zw.SetOffset(8)
	w, _ := zw.Create("manifest.json")
	w.Write([]byte(`{"files":{},"debug_id":"` + diftest.DebugID + `","arch":"x86_64"}`))
	if err := zw.Close(); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRead(t, data, fuzzBudget+maxBundleManifest, func(r *bytes.Reader, size int64) ([]Object, error) {
			o, err := ReadSourceBundle(r, size)
			if errors.Is(err, ErrNoDebugID) {
				return nil, err
			}
			return one(o, err)
		})
	})
}

func FuzzSourceBundleIndex(f *testing.F) {
	f.Add(diftest.SourceBundle(2, 8))
	var buf bytes.Buffer
	buf.WriteString("SYSB\x02\x00\x00\x00")
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("files/_/a.c")
	w.Write([]byte("int a;\n"))
	w, _ = zw.Create("manifest.json")
	w.Write([]byte(`{"files":{"files/_/a.c":{"path":"/a.c"}},"debug_id":"` + diftest.DebugID + `"}`))
	zw.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		var idx map[string]ZipMember
		n := allocated(func() { idx, _ = SourceBundleIndex(bytes.NewReader(data), int64(len(data))) })
		if n > fuzzBudget+3*maxBundleManifest {
			t.Fatalf("SourceBundleIndex allocated %d bytes", n)
		}
		for p, m := range idx {
			if p != CanonicalSourcePath(p) || m.Offset < 0 || m.CSize < 0 || m.Size < 0 {
				t.Fatalf("index entry %q %+v", p, m)
			}
		}
	})
}
