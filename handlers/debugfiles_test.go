package handlers

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// breakpadFile is a Breakpad symbol file of module moduleID (32 hex digits
// of GUID then the age).
func breakpadFile(moduleID string) []byte {
	return []byte("MODULE Linux x86_64 " + moduleID + " hello\nFILE 0 hello.c\nFUNC 1130 b 0 main\n1130 4 1 0\n")
}

// difState is one file's answer of difs/assemble.
type difState struct {
	State         string   `json:"state"`
	MissingChunks []string `json:"missingChunks"`
	Detail        *string  `json:"detail"`
	Dif           *struct {
		ID         string `json:"id"`
		DebugID    string `json:"debugId"`
		ObjectName string `json:"objectName"`
		SymbolType string `json:"symbolType"`
		CPUName    string `json:"cpuName"`
		SHA1       string `json:"sha1"`
	} `json:"dif"`
}

// assembleDif asks difs/assemble about one file until its state is final
// (or not_found) and returns it.
func (f assembleFixture) assembleDif(t *testing.T, sum, name, debugID string, chunks []string) difState {
	t.Helper()
	in := map[string]any{"name": name, "chunks": chunks}
	if debugID != "" {
		in["debug_id"] = debugID
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		res := f.do("POST", "/api/0/projects/acme/web/files/difs/assemble/", f.owner, map[string]any{sum: in})
		res.expect(t, http.StatusOK, nil)
		var out map[string]difState
		if err := json.Unmarshal(res.body, &out); err != nil || len(out) != 1 {
			t.Fatalf("answer %s: %v", res.body, err)
		}
		st, ok := out[sum]
		if !ok {
			t.Fatalf("answer %s lacks %s", res.body, sum)
		}
		if st.State != "created" && st.State != "assembling" {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("assembly still %s", st.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDifAssemble(t *testing.T) {
	f := newAssembleFixture(t)
	f.startWorker()

	t.Run("not_found lists the missing chunks, then ok with the debug file", func(t *testing.T) {
		data := breakpadFile("33221100554477668899AABBCCDDEEFF1")
		sum := sha1Hex(data)
		st := f.assembleDif(t, sum, "hello.sym", "33221100-5544-7766-8899-aabbccddeeff-1", []string{sum})
		if diff := cmp.Diff(difState{State: "not_found", MissingChunks: []string{sum}}, st); diff != "" {
			t.Fatalf("before the upload (-want +got):\n%s", diff)
		}
		f.uploadChunk(t, data)
		st = f.assembleDif(t, sum, "hello.sym", "33221100-5544-7766-8899-aabbccddeeff-1", []string{sum})
		if st.State != "ok" || st.Dif == nil || st.Dif.DebugID != "33221100-5544-7766-8899-aabbccddeeff-1" ||
			st.Dif.ObjectName != "hello" || st.Dif.SymbolType != "breakpad" || st.Dif.CPUName != "x86_64" || st.Dif.SHA1 != sum {
			t.Fatalf("after the upload: %+v %+v", st, st.Dif)
		}
		// Asked again with other chunks (that nobody uploaded): the
		// project has the file, so there is nothing to send.
		again := f.assembleDif(t, sum, "hello.sym", "", []string{strings.Repeat("b", 40)})
		if again.State != "ok" || again.Dif == nil || again.Dif.ID != st.Dif.ID {
			t.Errorf("the same file again: %+v", again)
		}
	})

	refused := []struct {
		name, debugID string
		data          []byte
		checksum      string // "" is the data's
		detail        string
	}{
		{name: "a debug id the content contradicts", debugID: "ffffffff-5544-7766-8899-aabbccddeeff",
			data:   breakpadFile("44221100554477668899AABBCCDDEEFF1"),
			detail: `The file "hello.sym" has the debug id 44221100-5544-7766-8899-aabbccddeeff-1, not ffffffff-5544-7766-8899-aabbccddeeff as uploaded`},
		{name: "a file that is no debug file", data: []byte("just some text\n"),
			detail: `The file "hello.sym" is not a supported debug information file`},
		{name: "chunks that do not hash to the checksum", data: breakpadFile("55221100554477668899AABBCCDDEEFF1"),
			checksum: strings.Repeat("0", 40), detail: "Checksum mismatch"},
	}
	for _, tt := range refused {
		t.Run(tt.name+" ends in error with a detail", func(t *testing.T) {
			chunk := f.uploadChunk(t, tt.data)
			sum := tt.checksum
			if sum == "" {
				sum = chunk
			}
			st := f.assembleDif(t, sum, "hello.sym", tt.debugID, []string{chunk})
			if st.State != "error" || st.Detail == nil || !strings.HasPrefix(*st.Detail, tt.detail) || st.Dif != nil {
				t.Errorf("state %+v, want error with %q", st, tt.detail)
			}
			if n := f.count(`SELECT count(*) FROM debug_files WHERE checksum = $1`, sum); n != 0 {
				t.Errorf("%d debug files stored", n)
			}
		})
	}

	t.Run("an upload may set the age of a matching debug id", func(t *testing.T) {
		data := breakpadFile("66221100554477668899AABBCCDDEEFF1")
		sum := f.uploadChunk(t, data)
		st := f.assembleDif(t, sum, "hello.sym", "66221100-5544-7766-8899-aabbccddeeff-2", []string{sum})
		if st.State != "ok" || st.Dif == nil || st.Dif.DebugID != "66221100-5544-7766-8899-aabbccddeeff-2" {
			t.Errorf("state %+v %+v, want ok with the upload's age", st, st.Dif)
		}
	})

	t.Run("a newer file of the same debug id with all the features replaces the older", func(t *testing.T) {
		const module = "99221100554477668899AABBCCDDEEFF0"
		symbols := []byte("MODULE Linux x86_64 " + module + " hello\nPUBLIC 1000 0 main\n")
		full := []byte("MODULE Linux x86_64 " + module + " hello\nFILE 0 a.c\nFUNC 1000 4 0 main\n1000 4 1 0\nSTACK CFI INIT 1000 4 .cfa: $rsp 8 +\n")
		for _, data := range [][]byte{symbols, full, symbols} {
			sum := f.uploadChunk(t, data)
			if st := f.assembleDif(t, sum, "hello.sym", "", []string{sum}); st.State != "ok" {
				t.Fatalf("upload: %+v", st)
			}
		}
		res := f.do("GET", "/api/0/projects/acme/web/files/dsyms/?debug_id=99221100-5544-7766-8899-aabbccddeeff", f.owner, nil)
		var got []struct {
			SHA1 string
			Data struct{ Features []string }
		}
		json.Unmarshal(res.body, &got)
		// The symbols-only file came first and went when the full one
		// came; asked again, it is stored anew, beside the full one.
		want := []string{sha1Hex(symbols) + " symtab", sha1Hex(full) + " debug,symtab,unwind"}
		var have []string
		for _, d := range got {
			have = append(have, d.SHA1+" "+strings.Join(d.Data.Features, ","))
		}
		if diff := cmp.Diff(want, have); diff != "" {
			t.Errorf("debug files of the id (-want +got):\n%s", diff)
		}
	})

	sum := strings.Repeat("a", 40)
	invalid := []struct {
		name string
		body any
		want string
	}{
		{"a key that is not a SHA-1", map[string]any{"hello": map[string]any{"name": "a", "chunks": []string{}}},
			`{"detail":[{"type":"value_error","loc":["body","hello"],"msg":"Expected a SHA-1 in hex"}]}`},
		{"a file without a name", map[string]any{sum: map[string]any{"chunks": []string{sum}}},
			`{"detail":[{"type":"missing","loc":["body","` + sum + `","name"],"msg":"Field required"}]}`},
		{"a chunk that is not a SHA-1", map[string]any{sum: map[string]any{"name": "a", "chunks": []string{"x"}}},
			`{"detail":[{"type":"value_error","loc":["body","` + sum + `","chunks",0],"msg":"Expected a SHA-1 in hex"}]}`},
		{"a debug id that is none", map[string]any{sum: map[string]any{"name": "a", "debug_id": "x", "chunks": []string{sum}}},
			`{"detail":[{"type":"value_error","loc":["body","` + sum + `","debug_id"],"msg":"Expected a debug id"}]}`},
		{"a file that is not an object", map[string]any{sum: []string{}},
			`{"detail":[{"type":"type_error","loc":["body","` + sum + `"],"msg":"Input should be an object"}]}`},
	}
	for _, tt := range invalid {
		t.Run(tt.name+" is 422", func(t *testing.T) {
			f.do("POST", "/api/0/projects/acme/web/files/difs/assemble/", f.owner, tt.body).expect(t, http.StatusUnprocessableEntity, tt.want)
		})
	}
	t.Run("an outsider is 404", func(t *testing.T) {
		f.do("POST", "/api/0/projects/acme/web/files/difs/assemble/", f.outsider,
			map[string]any{sum: map[string]any{"name": "a", "chunks": []string{sum}}}).expect(t, http.StatusNotFound, `{"detail":"Not Found"}`)
	})
}

// dsymsZip is a files/dsyms/ upload of members, a map from name to content.
func dsymsZip(t *testing.T, members map[string][]byte) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, content := range members {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(content)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return multipartBody(t, nil, []filePart{{"file", "symbols.zip", buf.Bytes()}})
}

func TestDebugFilesWithoutChunks(t *testing.T) {
	f := newAssembleFixture(t)
	const uuid = "12a2e4ee-8705-5f91-8369-3a5b10a48225"
	mapping := []byte("# compiler: R8\ncom.example.MainActivity -> a.a:\n" +
		"    1:1:void <init>():10:10 -> <init>\n    2:5:void onCreate(android.os.Bundle):14:17 -> a\n")
	sym := breakpadFile("33221100554477668899AABBCCDDEEFF0")
	unknown := "/api/0/projects/acme/web/files/dsyms/unknown/?checksums=" + sha1Hex(mapping) + "&checksums=" + sha1Hex(sym)
	both := []string{sha1Hex(mapping), sha1Hex(sym)}
	if both[0] > both[1] {
		both[0], both[1] = both[1], both[0]
	}
	f.do("GET", unknown, f.owner, nil).expect(t, http.StatusOK, map[string]any{"missing": both})

	body, ct := dsymsZip(t, map[string][]byte{"proguard/" + uuid + ".txt": mapping, "README": []byte("not a debug file")})
	res := f.doMultipart("POST", "/api/0/projects/acme/web/files/dsyms/", f.owner, body, ct)
	res.expect(t, http.StatusCreated, nil)
	var created []struct {
		ID, DebugID, ObjectName, SymbolType, CPUName, SHA1 string
	}
	json.Unmarshal(res.body, &created)
	if len(created) != 1 || created[0].DebugID != uuid || created[0].SymbolType != "proguard" ||
		created[0].ObjectName != "proguard-mapping" || created[0].CPUName != "any" || created[0].SHA1 != sha1Hex(mapping) {
		t.Fatalf("created %s, want the mapping alone", res.body)
	}
	f.do("GET", unknown, f.owner, nil).expect(t, http.StatusOK, map[string]any{"missing": []string{sha1Hex(sym)}})

	t.Run("the file downloads as it was", func(t *testing.T) {
		res := f.do("GET", "/api/0/projects/acme/web/files/dsyms/?id="+created[0].ID, f.owner, nil)
		if res.status != http.StatusOK || !bytes.Equal(res.body, mapping) {
			t.Errorf("download: %d %q", res.status, res.body)
		}
	})

	t.Run("filters", func(t *testing.T) {
		body, ct := dsymsZip(t, map[string][]byte{"hello.sym": sym})
		f.doMultipart("POST", "/api/0/projects/acme/web/files/dsyms/", f.owner, body, ct).expect(t, http.StatusCreated, nil)
		for query, want := range map[string][]string{
			"":                                   {"breakpad", "proguard"},
			"?query=HELLO":                       {"breakpad"},
			"?query=" + uuid:                     {"proguard"},
			"?debug_id=" + strings.ToUpper(uuid): {"proguard"},
			"?debug_id=33221100554477668899aabbccddeeff": {"breakpad"},
			"?file_formats=breakpad&file_formats=elf":    {"breakpad"},
			"?query=nothing": {},
		} {
			res := f.do("GET", "/api/0/projects/acme/web/files/dsyms/"+query, f.owner, nil)
			res.expect(t, http.StatusOK, nil)
			var got []struct{ SymbolType string }
			json.Unmarshal(res.body, &got)
			types := []string{}
			for _, d := range got {
				types = append(types, d.SymbolType)
			}
			if diff := cmp.Diff(want, sortedCopy(types)); diff != "" {
				t.Errorf("GET %s (-want +got):\n%s", query, diff)
			}
		}
	})

	for _, tt := range []struct{ name, query, want string }{
		{"a debug id that is none", "?debug_id=x", `{"detail":[{"type":"value_error","loc":["query","debug_id"],"msg":"Expected a debug id"}]}`},
		{"an unknown format", "?file_formats=zip", `{"detail":[{"type":"value_error","loc":["query","file_formats"],"msg":"Unknown file format"}]}`},
		{"an id that is none", "?id=one", `{"detail":[{"type":"type_error","loc":["query","id"],"msg":"Input should be a valid integer"}]}`},
	} {
		t.Run(tt.name+" is 422", func(t *testing.T) {
			f.do("GET", "/api/0/projects/acme/web/files/dsyms/"+tt.query, f.owner, nil).expect(t, http.StatusUnprocessableEntity, tt.want)
		})
	}
	t.Run("members under names no file can have are skipped", func(t *testing.T) {
		body, ct := dsymsZip(t, map[string][]byte{
			strings.Repeat("d/", 600) + "hello.sym": breakpadFile("77221100554477668899AABBCCDDEEFF0"),
			"bad\xffname.sym":                       breakpadFile("88221100554477668899AABBCCDDEEFF0"),
		})
		f.doMultipart("POST", "/api/0/projects/acme/web/files/dsyms/", f.owner, body, ct).expect(t, http.StatusCreated, `[]`)
	})
	// A zip's end record that claims 65535 members in a 22-byte file.
	bomb := []byte("PK\x05\x06\x00\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	for name, content := range map[string][]byte{"not a zip": []byte("nope"), "a directory bomb": bomb} {
		t.Run("an upload that is "+name+" is 400", func(t *testing.T) {
			body, ct := multipartBody(t, nil, []filePart{{"file", "symbols.zip", content}})
			f.doMultipart("POST", "/api/0/projects/acme/web/files/dsyms/", f.owner, body, ct).
				expect(t, http.StatusBadRequest, `{"detail":"The upload is not a zip archive of at most 10000 members"}`)
		})
	}

	const releases = "/api/0/projects/acme/web/files/proguard-artifact-releases"
	t.Run("proguard artifact releases", func(t *testing.T) {
		assoc := func(name, id string) string {
			return `{"release_name": "` + name + `", "proguard_uuid": "` + id + `"}`
		}
		// sentry-cli 2.x posts without the trailing slash.
		f.do("POST", releases, f.owner, assoc("com.example@1.0+5", uuid)).
			expect(t, http.StatusCreated, map[string]any{"releaseName": "com.example@1.0+5", "proguardUuid": uuid})
		f.do("POST", releases+"/", f.owner, assoc("com.example@1.1", strings.ToUpper(uuid))).expect(t, http.StatusCreated, nil)
		f.do("POST", releases, f.owner, assoc("com.example@1.0+5", uuid)).expect(t, http.StatusConflict,
			`{"detail":"Proguard artifact release with this name in this project already exists."}`)
		f.do("GET", releases+"?proguard_uuid="+uuid, f.owner, nil).
			expect(t, http.StatusOK, map[string]any{"releases": []string{"com.example@1.0+5", "com.example@1.1"}})
		f.do("GET", releases+"/?proguard_uuid=00000000-0000-0000-0000-000000000001", f.owner, nil).
			expect(t, http.StatusOK, map[string]any{"releases": []string{}})
		for _, tt := range []struct{ name, body, want string }{
			{"no mapping of that UUID", assoc("a", "00000000-0000-0000-0000-000000000001"),
				`{"detail":[{"type":"value_error","loc":["body","proguard_uuid"],"msg":"No matching proguard mapping file with this uuid found"}]}`},
			{"a UUID that is none", assoc("a", "nope"),
				`{"detail":[{"type":"value_error","loc":["body","proguard_uuid"],"msg":"Input should be a valid UUID"}]}`},
			{"a native debug id", assoc("a", uuid+"-1"),
				`{"detail":[{"type":"value_error","loc":["body","proguard_uuid"],"msg":"Input should be a valid UUID"}]}`},
			{"no release name", `{"proguard_uuid": "` + uuid + `"}`,
				`{"detail":[{"type":"missing","loc":["body","release_name"],"msg":"Field required"}]}`},
			{"an empty release name", assoc("", uuid),
				`{"detail":[{"type":"value_error","loc":["body","release_name"],"msg":"Input should be a non-empty string"}]}`},
			{"a release name of 251 characters", assoc(strings.Repeat("r", 251), uuid),
				`{"detail":[{"type":"value_error","loc":["body","release_name"],"msg":"String should have at most 250 characters"}]}`},
		} {
			f.do("POST", releases, f.owner, tt.body).expect(t, http.StatusUnprocessableEntity, tt.want)
		}
		f.do("GET", releases, f.owner, nil).expect(t, http.StatusUnprocessableEntity,
			`{"detail":[{"type":"missing","loc":["query","proguard_uuid"],"msg":"Field required"}]}`)
		f.do("GET", releases+"?proguard_uuid="+uuid, f.outsider, nil).expect(t, http.StatusNotFound, `{"detail":"Not Found"}`)
		f.do("POST", releases, f.outsider, assoc("a", uuid)).expect(t, http.StatusNotFound, `{"detail":"Not Found"}`)
		f.do("POST", releases, f.token("owner@example.com", "project:read"), assoc("a", uuid)).
			expect(t, http.StatusForbidden, `{"detail":"Permission denied"}`)
	})

	t.Run("delete needs project:write, then removes the file once", func(t *testing.T) {
		path := "/api/0/projects/acme/web/files/dsyms/?id=" + created[0].ID
		f.do("DELETE", path, f.token("owner@example.com", "project:read", "project:releases"), nil).
			expect(t, http.StatusForbidden, `{"detail":"Permission denied"}`)
		f.do("DELETE", path, f.outsider, nil).expect(t, http.StatusNotFound, `{"detail":"Not Found"}`)
		writer := f.token("owner@example.com", "project:write")
		f.do("DELETE", path, writer, nil).expect(t, http.StatusNoContent, nil)
		f.do("DELETE", path, writer, nil).expect(t, http.StatusNotFound, `{"detail":"Not Found"}`)
		f.do("GET", unknown, f.owner, nil).expect(t, http.StatusOK, map[string]any{"missing": []string{sha1Hex(mapping)}})
		// The mapping's releases went with it.
		f.do("GET", releases+"?proguard_uuid="+uuid, f.owner, nil).expect(t, http.StatusOK, map[string]any{"releases": []string{}})
	})
}

// TestSupersedingNeedsTheDeleteScope uploads a debug file, then one with
// the same debug id and more features: with project:releases alone (which
// cannot delete debug files) both stay; with project:write the older one
// goes, as Sentry removes the files a new upload covers.
func TestSupersedingNeedsTheDeleteScope(t *testing.T) {
	f := newAssembleFixture(t)
	releaser := f.token("owner@example.com", "project:releases")
	writer := f.token("owner@example.com", "project:write")
	const module = "44221100554477668899AABBCCDDEEFF0"
	symtabOnly := []byte("MODULE Linux x86_64 " + module + " hello\nPUBLIC 1130 0 main\n")
	more := func(n int) []byte { // symtab, debug and unwind; n makes it new
		return fmt.Appendf(nil, "MODULE Linux x86_64 %s hello\nFILE 0 hello.c\nFUNC 1130 b 0 main\n1130 4 %d 0\nSTACK CFI INIT 1130 b .cfa: $rsp 8 +\n", module, n)
	}
	upload := func(token string, content []byte) {
		t.Helper()
		body, ct := dsymsZip(t, map[string][]byte{"hello.sym": content})
		f.doMultipart("POST", "/api/0/projects/acme/web/files/dsyms/", token, body, ct).expect(t, http.StatusCreated, nil)
	}
	listed := func() []string {
		t.Helper()
		res := f.do("GET", "/api/0/projects/acme/web/files/dsyms/?debug_id=44221100-5544-7766-8899-aabbccddeeff", f.owner, nil)
		res.expect(t, http.StatusOK, nil)
		var got []struct{ SHA1 string }
		json.Unmarshal(res.body, &got)
		var sums []string
		for _, d := range got {
			sums = append(sums, d.SHA1)
		}
		return sortedCopy(sums)
	}
	upload(releaser, symtabOnly)
	upload(releaser, more(1))
	if got, want := listed(), sortedCopy([]string{sha1Hex(symtabOnly), sha1Hex(more(1))}); !cmp.Equal(got, want) {
		t.Errorf("after a project:releases upload that covers the first: %v, want both %v", got, want)
	}
	upload(writer, more(2))
	if got, want := listed(), []string{sha1Hex(more(2))}; !cmp.Equal(got, want) {
		t.Errorf("after a project:write upload that covers both: %v, want the new one alone %v", got, want)
	}
}

// TestDsymUploadIsAllOrNothing sends a zip whose first member is a debug
// file and whose second cannot be inflated: the 400 stores nothing (the
// first member used to be stored before the second was read).
func TestDsymUploadIsAllOrNothing(t *testing.T) {
	f := newAssembleFixture(t)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	good, err := zw.CreateHeader(&zip.FileHeader{Name: "hello.sym", Method: zip.Store})
	if err != nil {
		t.Fatal(err)
	}
	good.Write(breakpadFile("55221100554477668899AABBCCDDEEFF0"))
	bad, err := zw.CreateHeader(&zip.FileHeader{Name: "broken.sym", Method: zip.Deflate})
	if err != nil {
		t.Fatal(err)
	}
	bad.Write(bytes.Repeat([]byte("MODULE "), 1000))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	// Damage the deflated member: its stream starts after its local
	// header (30 bytes and its name), which follows the first member.
	at := bytes.Index(data, []byte("broken.sym")) + len("broken.sym")
	for i := at + 2; i < at+12; i++ {
		data[i] = 0xff
	}
	body, ct := multipartBody(t, nil, []filePart{{"file", "symbols.zip", data}})
	res := f.doMultipart("POST", "/api/0/projects/acme/web/files/dsyms/", f.owner, body, ct)
	res.expect(t, http.StatusBadRequest, `{"detail":"The archive has a member that cannot be read"}`)
	if n := f.count(`SELECT count(*) FROM debug_files`); n != 0 {
		t.Errorf("%d debug files stored by the refused upload, want none", n)
	}
}
