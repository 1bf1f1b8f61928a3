package dif

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReadELF builds an object with a known build id and checks the ids
// Sentry derives from it.
func TestReadELF(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "a.c")
	if err := os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "a.out")
	cmd := exec.Command("gcc", "-Wl,--build-id=0x00112233445566778899aabbccddeeff01020304", "-o", out, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadELF(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	want := Object{
		Kind:     "elf",
		DebugID:  "33221100-5544-7766-8899-aabbccddeeff",
		CodeID:   "00112233445566778899aabbccddeeff01020304",
		Arch:     "x86_64",
		Type:     "lib", // a position-independent executable
		Features: []string{"symtab", "unwind"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadELF (-want +got):\n%s", diff)
	}
}

func TestReadBreakpad(t *testing.T) {
	tests := []struct {
		name, in string
		want     Object
		wantErr  bool
	}{
		{name: "age 1", in: "MODULE Linux x86_64 33221100554477668899AABBCCDDEEFF1 a.out\nFILE 0 a.c\n",
			want: Object{Kind: "breakpad", DebugID: "33221100-5544-7766-8899-aabbccddeeff-1", Arch: "x86_64", Type: "dbg"}},
		{name: "age 0", in: "MODULE Linux x86_64 33221100554477668899AABBCCDDEEFF0 a.out",
			want: Object{Kind: "breakpad", DebugID: "33221100-5544-7766-8899-aabbccddeeff", Arch: "x86_64", Type: "dbg"}},
		{name: "records", in: "MODULE Linux x86_64 33221100554477668899AABBCCDDEEFF0 a.out\nFILE 0 a.c\n" +
			"FUNC 1130 b 0 main\n1130 4 1 0\nPUBLIC 1000 0 _init\nSTACK CFI INIT 1130 b .cfa: $rsp 8 +\n",
			want: Object{Kind: "breakpad", DebugID: "33221100-5544-7766-8899-aabbccddeeff", Arch: "x86_64", Type: "dbg",
				Features: []string{"debug", "symtab", "unwind"}}},
		{name: "not breakpad", in: "hello\n", wantErr: true},
		{name: "short id", in: "MODULE Linux x86_64 abc a.out\n", wantErr: true},
		{name: "not hex", in: "MODULE Linux x86_64 " + strings.Repeat("z", 33) + " a.out\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadBreakpad(strings.NewReader(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ReadBreakpad (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzRead checks that no reader panics, and that an id found has
// Sentry's form, whatever the bytes and the name they come under.
func FuzzRead(f *testing.F) {
	f.Add([]byte("MODULE Linux x86_64 33221100554477668899AABBCCDDEEFF1 a.out\n"), "a.sym")
	f.Add([]byte("\x7fELF\x02\x01\x01"), "a.out")
	f.Add([]byte("\xcf\xfa\xed\xfe\x0c\x00\x00\x01"), "a.dylib")
	f.Add([]byte("\xca\xfe\xba\xbe\x00\x00\x00\x02"), "fat")
	f.Add([]byte("MZ\x90\x00"), "a.exe")
	f.Add([]byte(pdbMagic+"\x00\x10\x00\x00"), "a.pdb")
	f.Add([]byte("SYSB\x02\x00\x00\x00PK\x05\x06"), "a.src.zip")
	f.Add([]byte("a.B -> c:\n    1:1:void d():1:1 -> e\n"), "proguard/12a2e4ee-8705-5f91-8369-3a5b10a48225.txt")
	f.Add([]byte(`["a","b"]`), "dartsymbolmap.json")
	for path := range testdataFiles {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, path)
	}
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		var objs []Object
		var err error
		checkBudget(t, "Read", fuzzBudget+maxBundleManifest, func() {
			objs, err = Read(bytes.NewReader(data), int64(len(data)), name, "33221100-5544-7766-8899-aabbccddeeff")
		})
		if err != nil {
			return
		}
		if len(objs) == 0 {
			t.Fatal("no objects and no error")
		}
		for _, o := range objs {
			if c, ok := CanonicalDebugID(o.DebugID); !ok || c != o.DebugID {
				t.Errorf("debug id %q is not in Sentry's form", o.DebugID)
			}
			if o.Kind == "" || o.Arch == "" {
				t.Errorf("object %+v lacks a kind or an architecture", o)
			}
		}
	})
}
