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
		Kind:    "elf",
		DebugID: "33221100-5544-7766-8899-aabbccddeeff",
		CodeID:  "00112233445566778899aabbccddeeff01020304",
		Arch:    "x86_64",
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
			want: Object{Kind: "breakpad", DebugID: "33221100-5544-7766-8899-aabbccddeeff-1", Arch: "x86_64"}},
		{name: "age 0", in: "MODULE Linux x86_64 33221100554477668899AABBCCDDEEFF0 a.out",
			want: Object{Kind: "breakpad", DebugID: "33221100-5544-7766-8899-aabbccddeeff", Arch: "x86_64"}},
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

// FuzzRead checks that neither parser panics, and that an id found has
// Sentry's form.
func FuzzRead(f *testing.F) {
	f.Add([]byte("MODULE Linux x86_64 33221100554477668899AABBCCDDEEFF1 a.out\n"))
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, read := range []func() (Object, error){
			func() (Object, error) { return ReadELF(bytes.NewReader(data), int64(len(data))) },
			func() (Object, error) { return ReadBreakpad(bytes.NewReader(data)) },
		} {
			o, err := read()
			if err != nil {
				continue
			}
			if len(o.DebugID) < 36 || o.DebugID != strings.ToLower(o.DebugID) {
				t.Errorf("debug id %q is not a lowercase GUID", o.DebugID)
			}
		}
	})
}
