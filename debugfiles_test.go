package main

import (
	"bytes"
	"debug/pe"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// e2eDif is a debug file as the list of files/dsyms/ answers it.
type e2eDif struct {
	ID         string  `json:"id"`
	UUID       string  `json:"uuid"`
	DebugID    string  `json:"debugId"`
	CodeID     *string `json:"codeId"`
	CPUName    string  `json:"cpuName"`
	ObjectName string  `json:"objectName"`
	SymbolType string  `json:"symbolType"`
	Size       int64   `json:"size"`
	SHA1       string  `json:"sha1"`
	Data       struct {
		Type     *string  `json:"type"`
		Features []string `json:"features"`
	} `json:"data"`
}

// difsOf lists the debug files of project web of org with debug id id.
func difsOf(t *testing.T, s *errataServer, org, id string) []e2eDif {
	t.Helper()
	var got []e2eDif
	path := "/api/0/projects/" + org + "/web/files/dsyms/?debug_id=" + url.QueryEscape(id)
	if status := s.getJSON(t, path, &got); status != http.StatusOK {
		t.Fatalf("GET %s: %d", path, status)
	}
	return got
}

// difOfType returns the debug file of project web with debug id id and
// symbol type typ, failing the test when there is none.
func difOfType(t *testing.T, s *errataServer, org, id, typ string) e2eDif {
	t.Helper()
	all := difsOf(t, s, org, id)
	for _, d := range all {
		if d.SymbolType == typ {
			return d
		}
	}
	t.Fatalf("no %s debug file with debug id %s listed; the project has %+v", typ, id, all)
	return e2eDif{}
}

// checkDownload downloads debug file d and compares it with the file at path.
func checkDownload(t *testing.T, s *errataServer, org string, d e2eDif, path string) {
	t.Helper()
	local, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	status, body := s.api(t, "GET", "/api/0/projects/"+org+"/web/files/dsyms/?id="+d.ID, nil)
	if status != http.StatusOK || !bytes.Equal(body, local) {
		t.Errorf("download of %s (%s): %d, %d bytes, want the %d bytes of %s", d.ID, d.ObjectName, status, len(body), len(local), path)
	}
}

// buildELF compiles a C program with debug information and the GNU build
// id buildID (40 hex digits) in dir and returns its path.
func buildELF(t *testing.T, dir, buildID string) string {
	t.Helper()
	src := filepath.Join(dir, "hello.c")
	if err := os.WriteFile(src, []byte("int answer(void) { return 42; }\nint main(void) { return answer() - 42; }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hello")
	if b, err := exec.Command("gcc", "-g", "-O0", "-Wl,--build-id=0x"+buildID, "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	return out
}

// debugIDOfBuildID is the debug id Sentry derives from a GNU build id: its
// first 16 bytes as a little-endian GUID.
func debugIDOfBuildID(buildID string) string {
	b := buildID[:32]
	swap := func(s string) string {
		var out strings.Builder
		for i := len(s) - 2; i >= 0; i -= 2 {
			out.WriteString(s[i : i+2])
		}
		return out.String()
	}
	return swap(b[0:8]) + "-" + swap(b[8:12]) + "-" + swap(b[12:16]) + "-" + b[16:20] + "-" + b[20:32]
}

// checkedID is the debug id sentry-cli debug-files check reads from path.
func checkedID(t *testing.T, c sentryCLI, path string) string {
	t.Helper()
	out := c.run(t, "debug-files", "check", path)
	out.expect(t, 0)
	m := regexp.MustCompile(`Debug ID: ([0-9a-f-]+)`).FindStringSubmatch(out.stdout)
	if m == nil {
		t.Fatalf("debug-files check %s printed no debug id:\n%s", path, out.stdout)
	}
	return m[1]
}

// mappingText is a ProGuard mapping with line information.
func mappingText(variant int) string {
	return fmt.Sprintf("# compiler: R8\ncom.example.MainActivity%d -> a.a:\n"+
		"    1:1:void <init>():10:10 -> <init>\n    2:5:void onCreate(android.os.Bundle):14:17 -> a\n", variant)
}

// TestDebugFilesEndToEnd uploads debug information files of every kind
// errata reads with the real sentry-cli 2.58.6 and 3.8.0, and checks
// through the API that each is listed under the debug id the file
// carries, with content that downloads as it was.
func TestDebugFilesEndToEnd(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatal("gcc is needed to build the ELF objects this test uploads")
	}
	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	s.token = s.user(t, "dev@example.com", "project:releases,project:read,project:write,org:read")
	for i, tc := range []struct{ env, version, org string }{
		{"SENTRY_CLI_2", "2.58.6", "difs2"},
		{"SENTRY_CLI_3", "3.8.0", "difs3"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			s.cli(t, "admin", "create-org", "--slug", tc.org, "--owner", "dev@example.com")
			s.cli(t, "admin", "create-project", "--org", tc.org, "--slug", "web")
			cli := newSentryCLI(t, tc.env, s, tc.org).in(t.TempDir())
			if out := cli.run(t, "--version"); !strings.Contains(out.stdout, tc.version) {
				t.Fatalf("%s is not sentry-cli %s: %q", cli.bin, tc.version, out.stdout)
			}
			buildID := fmt.Sprintf("%02x112233445566778899aabbccddeeff01020304", i)
			elf := buildELF(t, cli.home, buildID)
			debugID := debugIDOfBuildID(buildID)
			if got := checkedID(t, cli, elf); got != debugID {
				t.Fatalf("sentry-cli reads debug id %s from the ELF, want %s", got, debugID)
			}

			t.Run("debug-files upload of an ELF", func(t *testing.T) {
				cli.run(t, "debug-files", "upload", elf).expect(t, 0)
				d := difOfType(t, s, tc.org, debugID, "elf")
				if d.CodeID == nil || *d.CodeID != buildID || d.CPUName != "x86_64" || d.ObjectName != "hello" {
					t.Errorf("ELF debug file %+v, want code id %s, x86_64, hello", d, buildID)
				}
				checkDownload(t, s, tc.org, d, elf)

				// The same file again: nothing to upload, nothing new stored.
				blobs := s.count(t, `SELECT count(*) FROM blobs`)
				out := cli.run(t, "debug-files", "upload", elf)
				out.expect(t, 0)
				if n := s.count(t, `SELECT count(*) FROM blobs`); n != blobs {
					t.Errorf("%d blobs after the second upload, want %d", n, blobs)
				}
				if n := len(difsOf(t, s, tc.org, debugID)); n != 1 {
					t.Errorf("%d debug files after the second upload, want 1", n)
				}
			})

			t.Run("debug-files upload --include-sources", func(t *testing.T) {
				cli.run(t, "debug-files", "upload", "--include-sources", elf).expect(t, 0)
				d := difOfType(t, s, tc.org, debugID, "sourcebundle")
				if !strings.Contains(strings.Join(d.Data.Features, ","), "sources") {
					t.Errorf("source bundle %+v has no sources feature", d)
				}
			})

			t.Run("upload-dsym of a Mach-O", func(t *testing.T) {
				mac := filepath.Join(cli.home, "mac")
				os.WriteFile(mac, goProgram(t, "darwin", "arm64", i), 0o600)
				id := checkedID(t, cli, mac)
				cli.run(t, "upload-dsym", mac).expect(t, 0)
				d := difOfType(t, s, tc.org, id, "macho")
				if d.CPUName != "arm64" {
					t.Errorf("Mach-O debug file %+v, want arm64", d)
				}
				checkDownload(t, s, tc.org, d, mac)
			})

			t.Run("debug-files upload of a fat Mach-O", func(t *testing.T) {
				fat := filepath.Join(cli.home, "fat")
				os.WriteFile(fat, fatMachO(goProgram(t, "darwin", "amd64", 10+i), goProgram(t, "darwin", "arm64", 10+i)), 0o600)
				out := cli.run(t, "debug-files", "check", fat)
				out.expect(t, 0)
				ids := regexp.MustCompile(`Debug ID: ([0-9a-f-]+)`).FindAllStringSubmatch(out.stdout, -1)
				if len(ids) != 2 {
					t.Fatalf("debug-files check of the fat file:\n%s", out.stdout)
				}
				cli.run(t, "debug-files", "upload", fat).expect(t, 0)
				for j, arch := range []string{"x86_64", "arm64"} {
					if d := difOfType(t, s, tc.org, ids[j][1], "macho"); d.CPUName != arch {
						t.Errorf("object %d of the fat file: %+v, want %s", j, d, arch)
					}
				}
			})

			t.Run("debug-files upload of a PE image", func(t *testing.T) {
				exe := filepath.Join(cli.home, "app.exe")
				os.WriteFile(exe, goProgram(t, "windows", "amd64", i), 0o600)
				addCodeView(t, exe, byte(0x10+i), 7)
				id := checkedID(t, cli, exe)
				cli.run(t, "debug-files", "upload", exe).expect(t, 0)
				d := difOfType(t, s, tc.org, id, "pe")
				if d.CPUName != "x86_64" || d.ObjectName != "app.exe" {
					t.Errorf("PE debug file %+v, want x86_64 app.exe", d)
				}
				checkDownload(t, s, tc.org, d, exe)
			})

			t.Run("upload-dif --wait of a Breakpad file", func(t *testing.T) {
				sym := filepath.Join(cli.home, "hello.sym")
				id := fmt.Sprintf("%02X0102030405060708090A0B0C0D0E0F1", i)
				os.WriteFile(sym, []byte("MODULE Linux x86_64 "+id+" hello\nFILE 0 hello.c\nFUNC 1130 b 0 main\n1130 4 1 0\n"), 0o600)
				cli.run(t, "upload-dif", "--wait", sym).expect(t, 0, "OK")
				d := difOfType(t, s, tc.org, checkedID(t, cli, sym), "breakpad")
				if d.ObjectName != "hello" {
					t.Errorf("Breakpad debug file %+v, want the object name hello", d)
				}
			})

			t.Run("debug-files upload --type jvm", func(t *testing.T) {
				src := filepath.Join(cli.home, "jvm", "com", "example")
				os.MkdirAll(src, 0o755)
				os.WriteFile(filepath.Join(src, "Main.java"), []byte("package com.example;\nclass Main {}\n"), 0o600)
				id := fmt.Sprintf("%08x-1111-4222-8333-444455556666", i+1)
				out := filepath.Join(cli.home, "jvmout")
				cli.run(t, "debug-files", "bundle-jvm", "--output", out, "--debug-id", id, filepath.Join(cli.home, "jvm")).expect(t, 0)
				cli.run(t, "debug-files", "upload", "--type", "jvm", out).expect(t, 0)
				difOfType(t, s, tc.org, id, "sourcebundle")
			})

			t.Run("ProGuard mapping", func(t *testing.T) {
				for j, cmd := range [][]string{{"upload-proguard"}, {"proguard", "upload"}} {
					if tc.version == "2.58.6" && len(cmd) == 2 {
						continue // 2.x has only upload-proguard
					}
					mapping := filepath.Join(cli.home, fmt.Sprintf("mapping%d.txt", j))
					os.WriteFile(mapping, []byte(mappingText(10*i+j)), 0o600)
					uuid := proguardUUID(t, mapping)
					cli.run(t, append(cmd, mapping)...).expect(t, 0)
					d := difOfType(t, s, tc.org, uuid, "proguard")
					if d.ObjectName != "proguard-mapping" || d.CPUName != "any" {
						t.Errorf("ProGuard debug file %+v, want proguard-mapping, any", d)
					}
					checkDownload(t, s, tc.org, d, mapping)
				}
				if tc.version != "2.58.6" {
					return // 3.x has no --app-id
				}
				// The deprecated --app-id names the release the mapping
				// was built for.
				mapping := filepath.Join(cli.home, "mapping-app.txt")
				os.WriteFile(mapping, []byte(mappingText(10*i+5)), 0o600)
				uuid := proguardUUID(t, mapping)
				cli.run(t, "upload-proguard", "--app-id", "com.example", "--version", "1.0", "--version-code", "5", mapping).expect(t, 0)
				var got struct{ Releases []string }
				if status := s.getJSON(t, "/api/0/projects/"+tc.org+"/web/files/proguard-artifact-releases?proguard_uuid="+uuid, &got); status != http.StatusOK ||
					!slices.Equal(got.Releases, []string{"com.example@1.0+5"}) {
					t.Errorf("releases of the mapping: %d %v, want com.example@1.0+5", status, got.Releases)
				}
			})

			t.Run("dart-symbol-map upload", func(t *testing.T) {
				m := filepath.Join(cli.home, "dartsymbolmap.json")
				os.WriteFile(m, []byte(`["MaterialApp","ax","Scaffold","bx"]`), 0o600)
				cli.run(t, "dart-symbol-map", "upload", m, elf).expect(t, 0)
				d := difOfType(t, s, tc.org, debugID, "dartsymbolmap")
				checkDownload(t, s, tc.org, d, m)
			})

			t.Run("delete", func(t *testing.T) {
				d := difOfType(t, s, tc.org, debugID, "elf")
				status, _ := s.api(t, "DELETE", "/api/0/projects/"+tc.org+"/web/files/dsyms/?id="+d.ID, nil)
				if status != http.StatusNoContent {
					t.Fatalf("DELETE: %d, want 204", status)
				}
				for _, left := range difsOf(t, s, tc.org, debugID) {
					if left.ID == d.ID {
						t.Errorf("debug file %s is still listed after its delete", d.ID)
					}
				}
				// Uploaded again, it is stored again.
				cli.run(t, "debug-files", "upload", elf).expect(t, 0)
				difOfType(t, s, tc.org, debugID, "elf")
			})
		})
	}
}

// goProgram builds a Go program for goos/goarch that prints n and returns
// its bytes.
func goProgram(t *testing.T, goos, goarch string, n int) []byte {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module app\ngo 1.22\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(fmt.Sprintf("package main\nfunc main() { println(%d) }\n", n)), 0o600)
	build := exec.Command("go", "build", "-o", "app", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	data, err := os.ReadFile(filepath.Join(dir, "app"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// fatMachO joins an x86_64 and an arm64 Mach-O into a fat one.
func fatMachO(x86, arm []byte) []byte {
	const align = 1 << 14
	be := binary.BigEndian
	fat := make([]byte, align)
	be.PutUint32(fat, 0xcafebabe)
	be.PutUint32(fat[4:], 2)
	for i, thin := range []struct {
		cpu, sub uint32
		data     []byte
	}{{0x01000007, 3, x86}, {0x0100000c, 0, arm}} {
		arch := fat[8+20*i:]
		be.PutUint32(arch, thin.cpu)
		be.PutUint32(arch[4:], thin.sub)
		be.PutUint32(arch[8:], uint32(len(fat)))
		be.PutUint32(arch[12:], uint32(len(thin.data)))
		be.PutUint32(arch[16:], 14)
		fat = append(fat, thin.data...)
		fat = append(fat, make([]byte, (align-len(fat)%align)%align)...)
	}
	return fat
}

// addCodeView gives the PE image at path (a Go program, which has none) a
// debug directory with one CodeView record, written over the start of its
// .rdata section: GUID bytes first, first+1, ... and age, naming app.pdb.
func addCodeView(t *testing.T, path string, first byte, age uint32) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := pe.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	rdata := f.Section(".rdata")
	if rdata == nil {
		t.Fatal("no .rdata section")
	}
	le := binary.LittleEndian
	off := rdata.Offset
	le.PutUint32(data[off+12:], 2) // IMAGE_DEBUG_TYPE_CODEVIEW
	le.PutUint32(data[off+16:], 24+8)
	le.PutUint32(data[off+20:], rdata.VirtualAddress+28)
	le.PutUint32(data[off+24:], off+28)
	copy(data[off+28:], "RSDS")
	for i := range 16 {
		data[off+32+uint32(i)] = first + byte(i)
	}
	le.PutUint32(data[off+48:], age)
	copy(data[off+52:], "app.pdb\x00")
	dirs := le.Uint32(data[0x3c:]) + 4 + 20 + 112 // PE32+ data directories
	le.PutUint32(data[dirs+6*8:], rdata.VirtualAddress)
	le.PutUint32(data[dirs+6*8+4:], 28)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// proguardUUID is the UUID sentry-cli 3.x gives the mapping at path.
func proguardUUID(t *testing.T, path string) string {
	t.Helper()
	bin := os.Getenv("SENTRY_CLI_3")
	out, err := exec.Command(bin, "proguard", "uuid", path).Output()
	if err != nil {
		t.Fatalf("sentry-cli proguard uuid: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestSentryCLI1UploadsDebugFiles runs upload-dif --include-sources of
// sentry-cli 1.77.2, which assembles through the same difs/assemble: the
// ELF and its source bundle are listed under the ELF's debug id.
func TestSentryCLI1UploadsDebugFiles(t *testing.T) {
	t.Parallel()
	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	s.token = s.user(t, "dev@example.com", "project:releases,project:read,project:write,org:read")
	s.cli(t, "admin", "create-org", "--slug", "one", "--owner", "dev@example.com")
	s.cli(t, "admin", "create-project", "--org", "one", "--slug", "web")
	cli := newSentryCLI(t, "SENTRY_CLI_1", s, "one").in(t.TempDir())
	if out := cli.run(t, "--version"); !strings.Contains(out.stdout, "1.77.2") {
		t.Fatalf("%s is not sentry-cli 1.77.2: %q", cli.bin, out.stdout)
	}
	buildID := "aa112233445566778899aabbccddeeff01020304"
	elf := buildELF(t, cli.home, buildID)
	cli.run(t, "upload-dif", "--include-sources", elf).expect(t, 0, "OK")
	debugID := debugIDOfBuildID(buildID)
	checkDownload(t, s, "one", difOfType(t, s, "one", debugID, "elf"), elf)
	difOfType(t, s, "one", debugID, "sourcebundle")
}
