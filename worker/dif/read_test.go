package dif

import (
	"archive/zip"
	"bytes"
	"debug/pe"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// goBuild builds an empty Go program for goos/goarch and returns its bytes.
func goBuild(t *testing.T, goos, goarch string) []byte {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\ngo 1.22\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\nfunc main() {}\n"), 0o600)
	out := filepath.Join(dir, "bin")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestReadMachO(t *testing.T) {
	data := goBuild(t, "darwin", "arm64")
	objs, err := Read(bytes.NewReader(data), int64(len(data)), "bin", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 {
		t.Fatalf("%d objects, want 1", len(objs))
	}
	o := objs[0]
	if o.Kind != "macho" || o.Arch != "arm64" || o.Type != "exe" {
		t.Errorf("object %+v, want a macho arm64 executable", o)
	}
	// A Mach-O UUID is its debug id as it is.
	if strings.ReplaceAll(o.DebugID, "-", "") != o.CodeID || len(o.CodeID) != 32 {
		t.Errorf("debug id %q and code id %q are not the same UUID", o.DebugID, o.CodeID)
	}
}

// withCodeView returns a copy of the PE image data with a debug directory
// of one CodeView record naming a.pdb with guid and age, written over the
// start of its .rdata section.
func withCodeView(t *testing.T, data []byte, guid [16]byte, age uint32) []byte {
	t.Helper()
	f, err := pe.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	rdata := f.Section(".rdata")
	if rdata == nil {
		t.Fatal("no .rdata section")
	}
	out := bytes.Clone(data)
	le := binary.LittleEndian
	off := rdata.Offset
	entry := out[off:]
	le.PutUint32(entry[12:], 2) // IMAGE_DEBUG_TYPE_CODEVIEW
	le.PutUint32(entry[16:], 24+6)
	le.PutUint32(entry[20:], rdata.VirtualAddress+28)
	le.PutUint32(entry[24:], off+28)
	cv := out[off+28:]
	copy(cv, "RSDS")
	copy(cv[4:], guid[:])
	le.PutUint32(cv[20:], age)
	copy(cv[24:], "a.pdb\x00")
	// The debug entry of the optional header's data directories.
	lfanew := le.Uint32(out[0x3c:])
	dirs := int(lfanew) + 4 + 20 + 112
	le.PutUint32(out[dirs+6*8:], rdata.VirtualAddress)
	le.PutUint32(out[dirs+6*8+4:], 28)
	return out
}

// TestReadPE reads the CodeView record of a PE image. sentry-cli 3.8.0's
// debug-files check reads the same image as debug id
// 13121110-1514-1716-1819-1a1b1c1d1e1f-7, code id 00000000208000 (the
// image size varies with the toolchain), x86_64, unwind.
func TestReadPE(t *testing.T) {
	var guid [16]byte
	for i := range guid {
		guid[i] = byte(0x10 + i)
	}
	data := withCodeView(t, goBuild(t, "windows", "amd64"), guid, 7)
	objs, err := Read(bytes.NewReader(data), int64(len(data)), "bin.exe", "")
	if err != nil {
		t.Fatal(err)
	}
	f, _ := pe.NewFile(bytes.NewReader(data))
	want := []Object{{Kind: "pe", DebugID: "13121110-1514-1716-1819-1a1b1c1d1e1f-7",
		CodeID: fmt.Sprintf("%08x%x", f.TimeDateStamp, f.OptionalHeader.(*pe.OptionalHeader64).SizeOfImage),
		Arch:   "x86_64", Type: "exe", Features: []string{"unwind"}}}
	if diff := cmp.Diff(want, objs); diff != "" {
		t.Errorf("Read (-want +got):\n%s", diff)
	}
}

// TestReadFatMachO joins an x86_64 and an arm64 program into a fat Mach-O:
// each architecture is an object of its own.
func TestReadFatMachO(t *testing.T) {
	thin := [][]byte{goBuild(t, "darwin", "amd64"), goBuild(t, "darwin", "arm64")}
	cpus := [][2]uint32{{0x01000007, 3}, {0x0100000c, 0}} // x86_64, arm64 (all)
	const align = 1 << 14
	be := binary.BigEndian
	fat := make([]byte, align)
	be.PutUint32(fat, 0xcafebabe)
	be.PutUint32(fat[4:], uint32(len(thin)))
	for i, b := range thin {
		arch := fat[8+20*i:]
		be.PutUint32(arch, cpus[i][0])
		be.PutUint32(arch[4:], cpus[i][1])
		be.PutUint32(arch[8:], uint32(len(fat)))
		be.PutUint32(arch[12:], uint32(len(b)))
		be.PutUint32(arch[16:], 14)
		fat = append(fat, b...)
		fat = append(fat, make([]byte, (align-len(fat)%align)%align)...)
	}
	objs, err := Read(bytes.NewReader(fat), int64(len(fat)), "app", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].Arch != "x86_64" || objs[1].Arch != "arm64" || objs[0].DebugID == objs[1].DebugID {
		t.Fatalf("objects %+v, want x86_64 and arm64 with their own ids", objs)
	}
	// An upload that names one of them keeps that one.
	kept, err := ReadUpload(bytes.NewReader(fat), int64(len(fat)), "app", objs[1].DebugID)
	if err != nil || len(kept) != 1 || kept[0].Arch != "arm64" {
		t.Errorf("ReadUpload naming the arm64 id: %+v %v", kept, err)
	}
}

func TestReadPEWithoutCodeView(t *testing.T) {
	// Go's linker writes no CodeView record: there is no debug id to read.
	data := goBuild(t, "windows", "amd64")
	_, err := Read(bytes.NewReader(data), int64(len(data)), "bin.exe", "")
	if !errors.Is(err, ErrNoDebugID) {
		t.Fatalf("err = %v, want ErrNoDebugID", err)
	}
}

// pdbFile builds a minimal MSF 7.00 file of 512-byte blocks whose
// information stream holds guid and age 5 and whose DBI stream holds age
// dbiAge and machine x86_64.
func pdbFile(guid [16]byte, dbiAge uint32) []byte {
	const bs = 512
	le := binary.LittleEndian
	file := make([]byte, 7*bs)
	copy(file, pdbMagic)
	le.PutUint32(file[32:], bs)
	le.PutUint32(file[36:], 1)
	le.PutUint32(file[40:], 7)
	le.PutUint32(file[44:], 4+4*4+2*4) // streams, four sizes, two blocks
	le.PutUint32(file[52:], 3)         // the block map
	le.PutUint32(file[3*bs:], 4)       // the directory is in block 4
	dir := file[4*bs:]
	for i, v := range []uint32{4, 0, 28, 0, 64, 5, 6} {
		le.PutUint32(dir[4*i:], v)
	}
	info := file[5*bs:]
	le.PutUint32(info, 20000404)
	le.PutUint32(info[8:], 5)
	copy(info[12:], guid[:])
	dbi := file[6*bs:]
	le.PutUint32(dbi, 0xffffffff)
	le.PutUint32(dbi[8:], dbiAge)
	le.PutUint16(dbi[58:], 0x8664)
	return file
}

func TestReadPDB(t *testing.T) {
	guid := [16]byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}
	data := pdbFile(guid, 3)
	got, err := Read(bytes.NewReader(data), int64(len(data)), "a.pdb", "")
	if err != nil {
		t.Fatal(err)
	}
	want := []Object{{Kind: "pdb", DebugID: "33221100-5544-7766-8899-aabbccddeeff-3", Arch: "x86_64", Type: "dbg", Features: []string{"debug", "symtab"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Read (-want +got):\n%s", diff)
	}
	if _, err := Read(bytes.NewReader(data[:5*512]), 5*512, "a.pdb", ""); err == nil {
		t.Error("a truncated PDB was read")
	}
}

// sourceBundle builds a source bundle with manifest.
func sourceBundle(t *testing.T, manifest string) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString("SYSB\x02\x00\x00\x00")
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("files/src/a.c")
	w.Write([]byte("int main(void) { return 0; }\n"))
	if manifest != "" {
		w, _ = zw.Create("manifest.json")
		w.Write([]byte(manifest))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadSourceBundle(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		want     []Object
		wantErr  bool
	}{
		{name: "bundle-sources", manifest: `{"files":{"files/src/a.c":{"type":"source","path":"/src/a.c"}},
			"arch":"x86_64","code_id":"00112233445566778899aabbccddeeff01020304",
			"debug_id":"33221100-5544-7766-8899-aabbccddeeff","object_name":"a.out"}`,
			want: []Object{{Kind: "sourcebundle", DebugID: "33221100-5544-7766-8899-aabbccddeeff",
				CodeID: "00112233445566778899aabbccddeeff01020304", Arch: "x86_64", Type: "src", Features: []string{"sources"}}}},
		{name: "without an architecture", manifest: `{"files":{},"debug_id":"33221100554477668899AABBCCDDEEFF"}`,
			want: []Object{{Kind: "sourcebundle", DebugID: "33221100-5544-7766-8899-aabbccddeeff",
				Arch: "any", Type: "src", Features: []string{"sources"}}}},
		{name: "no debug id", manifest: `{"files":{}}`, wantErr: true},
		{name: "no manifest", wantErr: true},
		{name: "bad manifest", manifest: `{"debug_id":`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := sourceBundle(t, tt.manifest)
			got, err := Read(bytes.NewReader(data), int64(len(data)), "a.src.zip", "")
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Read (-want +got):\n%s", diff)
			}
		})
	}
}

// mapping is a ProGuard mapping whose UUID sentry-cli 3.8.0 computes as
// 12a2e4ee-8705-5f91-8369-3a5b10a48225 (sentry-cli proguard uuid).
const mapping = "# compiler: R8\ncom.example.MainActivity -> a.a:\n" +
	"    1:1:void <init>():10:10 -> <init>\n    2:5:void onCreate(android.os.Bundle):14:17 -> a\n"

func TestProGuardUUID(t *testing.T) {
	got, err := ProGuardUUID(strings.NewReader(mapping))
	if err != nil {
		t.Fatal(err)
	}
	if want := "12a2e4ee-8705-5f91-8369-3a5b10a48225"; got != want {
		t.Errorf("ProGuardUUID = %s, want %s", got, want)
	}
}

func TestReadMappings(t *testing.T) {
	const id = "12a2e4ee-8705-5f91-8369-3a5b10a48225"
	tests := []struct {
		name, file, content, debugID string
		want                         []Object
		wantErr                      bool
	}{
		{name: "proguard", file: "/proguard/" + id + ".txt", content: mapping,
			want: []Object{{Kind: "proguard", DebugID: id, Arch: "any", Features: []string{"mapping"}}}},
		{name: "proguard in a zip", file: "proguard/mapping-" + id + ".txt", content: mapping,
			want: []Object{{Kind: "proguard", DebugID: id, Arch: "any", Features: []string{"mapping"}}}},
		{name: "proguard named without its UUID", file: "mapping.txt", content: mapping,
			want: []Object{{Kind: "proguard", DebugID: id, Arch: "any", Features: []string{"mapping"}}}},
		{name: "text that is no mapping", file: "mapping.txt", content: "hello -> world\n", wantErr: true},
		{name: "proguard without lines", file: "proguard/" + id + ".txt",
			content: "com.example.A -> a.a:\n    void run() -> a\n", wantErr: true},
		{name: "not proguard", file: "proguard/" + id + ".txt", content: "hello\n", wantErr: true},
		{name: "dart", file: "dartsymbolmap.json", content: `["MaterialApp","a","Scaffold","b"]`,
			debugID: "33221100-5544-7766-8899-AABBCCDDEEFF",
			want: []Object{{Kind: "dartsymbolmap", DebugID: "33221100-5544-7766-8899-aabbccddeeff", Arch: "any",
				Features: []string{"mapping"}}}},
		{name: "dart without a debug id", file: "map.json", content: `["a","b"]`, wantErr: true},
		{name: "dart odd", file: "map.json", content: `["a","b","c"]`, debugID: id, wantErr: true},
		{name: "dart not strings", file: "map.json", content: `["a",1]`, debugID: id, wantErr: true},
		{name: "dart trailing", file: "map.json", content: `["a","b"] x`, debugID: id, wantErr: true},
		{name: "unknown", file: "a.bin", content: "hello", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Read(strings.NewReader(tt.content), int64(len(tt.content)), tt.file, tt.debugID)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Read (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCanonicalDebugID(t *testing.T) {
	for in, want := range map[string]string{
		"33221100-5544-7766-8899-AABBCCDDEEFF":   "33221100-5544-7766-8899-aabbccddeeff",
		"33221100554477668899aabbccddeeff0":      "33221100-5544-7766-8899-aabbccddeeff",
		"33221100554477668899aabbccddeeff1a":     "33221100-5544-7766-8899-aabbccddeeff-1a",
		"{33221100-5544-7766-8899-aabbccddeeff}": "33221100-5544-7766-8899-aabbccddeeff",
		"33221100-5544-7766-8899-aabbccddeeff-2": "33221100-5544-7766-8899-aabbccddeeff-2",
		"nope":                                   "",
	} {
		got, _ := CanonicalDebugID(in)
		if got != want {
			t.Errorf("CanonicalDebugID(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReadUploadKeepsWhatSentryStores checks the values that the store's
// columns bound: a code id longer than Sentry keeps is left out, and an
// architecture that is no name is "unknown".
func TestReadUploadKeepsWhatSentryStores(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "a.c")
	os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o600)
	out := filepath.Join(dir, "a.out")
	long := strings.Repeat("0123456789", 8) // a 40-byte build id
	if b, err := exec.Command("gcc", "-Wl,--build-id=0x"+long, "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := ReadUpload(bytes.NewReader(data), int64(len(data)), "a.out", "")
	if err != nil || len(objs) != 1 || objs[0].CodeID != "" || objs[0].DebugID != "67452301-0189-4523-6789-012345678901" {
		t.Errorf("ReadUpload of an ELF with a 40-byte build id: %+v %v", objs, err)
	}
	sym := "MODULE Linux " + strings.Repeat("x", 100) + " 33221100554477668899AABBCCDDEEFF0 a\n"
	objs, err = ReadUpload(strings.NewReader(sym), int64(len(sym)), "a.sym", "")
	if err != nil || len(objs) != 1 || objs[0].Arch != "unknown" {
		t.Errorf("ReadUpload of a Breakpad file with a long architecture: %+v %v", objs, err)
	}
}
