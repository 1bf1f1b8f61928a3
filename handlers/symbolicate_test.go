package handlers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/authn"
	"errata/handlers/symbolication"
	"errata/store"
	"errata/worker/dif"
	"errata/worker/ingest"
)

// TestDebugFileCacheCountsParsedUnits: after a resolution, the cache holds
// the bytes its resolvers hold, the units that the frames fell in parsed
// included, for a Mach-O as for an ELF file (a Mach-O's entry is kept by
// its SHA-1 and debug id).
func TestDebugFileCacheCountsParsedUnits(t *testing.T) {
	a := newTestAPI(t)
	owner := a.user("owner@example.com")
	a.org("acme", "owner@example.com")
	a.project("acme", "web")
	tok := a.token("owner@example.com", "project:read")
	c := symbolication.NewDebugFileCache(symbolication.DefaultDebugFileCacheBytes)
	d := Deps{Store: a.st, Auth: &authn.Authenticator{Store: a.st}, Log: a.lg, Now: time.Now, SecretKey: "test-secret", DebugFileCache: c}
	srv := httptest.NewServer(serve(d, routes(d)))
	t.Cleanup(srv.Close)
	a.srv = srv

	for _, tc := range []struct {
		file, typ, addr string
	}{
		{"dwarf4.elf", "elf", "0x11a0"},
		{"dwarf-macho.dsym", "macho", "0x1000005a0"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			data, err := os.ReadFile("../worker/dif/testdata/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := dif.ReadUpload(bytes.NewReader(data), int64(len(data)), tc.file, "")
			if err != nil || len(objs) != 1 {
				t.Fatalf("%d objects, %v", len(objs), err)
			}
			up := store.DebugUpload{Content: bytes.NewReader(data), Objects: ingest.DebugFileObjects(objs, tc.file, bytes.NewReader(data), int64(len(data)))}
			if _, err := a.st.CreateDebugFiles(context.Background(), store.ProjectScope{UserID: owner, OrgSlug: "acme", ProjectSlug: "web"}, []store.DebugUpload{up}, false); err != nil {
				t.Fatal(err)
			}
			r := a.do("POST", "/api/0/projects/acme/web/symbolicate/", tok, map[string]any{
				"modules":     []map[string]any{{"type": tc.typ, "debug_id": objs[0].DebugID, "image_addr": "0x0", "image_size": 1 << 40}},
				"stacktraces": []map[string]any{{"frames": []map[string]any{{"instruction_addr": tc.addr}}}},
			})
			if r.status != http.StatusOK || !strings.Contains(string(r.body), `"status":"symbolicated"`) {
				t.Fatalf("%d %s", r.status, r.body)
			}
			held := c.Held()
			if b, _ := c.Stats(); b != held {
				t.Errorf("the cache counts %d bytes, its resolvers hold %d", b, held)
			}
		})
	}
}

// symbolicateNativeFixture serves errata with acme/web, whose debug files
// hold dwarf4.elf (testdata of worker/dif), uploaded through files/dsyms/.
type symbolicateNativeFixture struct {
	*testAPI
	tok     string // project:read
	debugID string // dwarf4.elf's
}

func newSymbolicateNativeFixture(t *testing.T) symbolicateNativeFixture {
	t.Helper()
	a := newTestAPI(t)
	a.user("owner@example.com")
	a.org("acme", "owner@example.com")
	a.project("acme", "web")
	data, err := os.ReadFile("../worker/dif/testdata/dwarf4.elf")
	if err != nil {
		t.Fatal(err)
	}
	body, ct := dsymsZip(t, map[string][]byte{"dwarf4.elf": data})
	r := a.doMultipart("POST", "/api/0/projects/acme/web/files/dsyms/", a.token("owner@example.com"), body, ct)
	var files []struct {
		DebugID string `json:"debugId"`
	}
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &files) != nil || len(files) != 1 {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	return symbolicateNativeFixture{testAPI: a, tok: a.token("owner@example.com", "project:read"), debugID: files[0].DebugID}
}

// request is a body of one elf module of the fixture's debug id at 0 and
// frames at addrs.
func (f symbolicateNativeFixture) request(addrs ...string) map[string]any {
	var frames []map[string]any
	for _, a := range addrs {
		frames = append(frames, map[string]any{"instruction_addr": a})
	}
	return map[string]any{
		"modules":     []map[string]any{{"type": "elf", "debug_id": f.debugID, "image_addr": "0x0", "image_size": 1 << 20, "code_file": "/usr/bin/dwarf4"}},
		"stacktraces": []map[string]any{{"frames": frames}},
	}
}

const symbolicatePath = "/api/0/projects/acme/web/symbolicate/"

// TestSymbolicateResolvesAStoredDebugFile resolves a crashing frame and a
// return address through the project's stored ELF file, says which file
// served the module, and answers an address outside every module as
// unknown_image.
func TestSymbolicateResolvesAStoredDebugFile(t *testing.T) {
	f := newSymbolicateNativeFixture(t)
	r := f.do("POST", symbolicatePath, f.tok, f.request("0x11a0", "0x11a1", "0x200000"))
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var got struct {
		Status      string `json:"status"`
		Stacktraces []struct {
			Frames []struct {
				Status          string `json:"status"`
				OriginalIndex   int    `json:"original_index"`
				InstructionAddr string `json:"instruction_addr"`
				Function        string `json:"function"`
				Filename        string `json:"filename"`
				Lineno          int    `json:"lineno"`
			} `json:"frames"`
		} `json:"stacktraces"`
		Modules []struct {
			DebugStatus string `json:"debug_status"`
			Candidates  []struct {
				ObjectName string `json:"object_name"`
				Status     string `json:"status"`
			} `json:"candidates"`
		} `json:"modules"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil || len(got.Stacktraces) != 1 || len(got.Modules) != 1 {
		t.Fatalf("%v: %s", err, r.body)
	}
	var frames []string
	for _, fr := range got.Stacktraces[0].Frames {
		frames = append(frames, fmt.Sprintf("%d %s %s %s %s:%d", fr.OriginalIndex, fr.InstructionAddr, fr.Status, fr.Function, fr.Filename, fr.Lineno))
	}
	// The crashing frame at 0x11a0, then a return address one byte
	// after the same call: both inlined twice into compute.
	want := []string{
		"0 0x11a0 symbolicated square util.h:4", "0 0x11a0 symbolicated sum crash.c:11", "0 0x11a0 symbolicated compute crash.c:18",
		"1 0x11a1 symbolicated square util.h:4", "1 0x11a1 symbolicated sum crash.c:11", "1 0x11a1 symbolicated compute crash.c:18",
		"2 0x200000 unknown_image  :0",
	}
	if diff := cmp.Diff(want, frames); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
	m := got.Modules[0]
	if got.Status != "completed" || m.DebugStatus != "found" || len(m.Candidates) != 1 || m.Candidates[0].ObjectName != "dwarf4.elf" || m.Candidates[0].Status != "ok" {
		t.Errorf("status %s, module %+v", got.Status, m)
	}
}

// TestSymbolicateAuthorizes answers a request without a token 401, one
// whose token lacks a project scope 403, and one of a user who is no
// member of the organization 404, before it reads the body.
func TestSymbolicateAuthorizes(t *testing.T) {
	f := newSymbolicateNativeFixture(t)
	f.user("stranger@example.com")
	f.org("other", "stranger@example.com")
	for _, tc := range []struct {
		name   string
		token  string
		status int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"no project scope", f.token("owner@example.com", "org:read"), http.StatusForbidden},
		{"not a member", f.token("stranger@example.com", "project:read"), http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := f.do("POST", symbolicatePath, tc.token, f.request("0x11a0")); r.status != tc.status {
				t.Errorf("%d %s, want %d", r.status, r.body, tc.status)
			}
		})
	}
}

// TestResolutionOfAStrangerIsNotFoundBeforeItsBody: on each resolution
// route, a request of a caller who does not see the project is 404 before
// its body is read (startResolution), so that a slow client of another
// organization neither holds nor waits for the organization's slots.
func TestResolutionOfAStrangerIsNotFoundBeforeItsBody(t *testing.T) {
	f := newSymbolicateNativeFixture(t)
	f.user("stranger@example.com")
	f.org("other", "stranger@example.com")
	tok := f.token("stranger@example.com", "project:read")
	for _, route := range []string{"symbolicate", "symbolicate-js", "symbolicate-jvm"} {
		t.Run(route, func(t *testing.T) {
			c, err := net.Dial("tcp", strings.TrimPrefix(f.srv.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			// One byte of a body of 1 MiB, the rest never sent.
			fmt.Fprintf(c, "POST /api/0/projects/acme/web/%s/ HTTP/1.1\r\nHost: errata\r\n"+
				"Authorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{",
				route, tok, 1<<20)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("no answer while the body is still to come: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("%d, want 404", resp.StatusCode)
			}
		})
	}
}

// TestSymbolicateValidates refuses a body that does not parse (400) and
// each value the route does not take (422, naming where it is), before any
// file is read.
func TestSymbolicateValidates(t *testing.T) {
	f := newSymbolicateNativeFixture(t)
	module := func(k string, v any) map[string]any {
		m := map[string]any{"type": "elf", "debug_id": f.debugID, "image_addr": "0x0"}
		m[k] = v
		return map[string]any{"modules": []any{m}, "stacktraces": []any{}}
	}
	frame := func(k string, v any) map[string]any {
		fr := map[string]any{"instruction_addr": "0x11a0"}
		fr[k] = v
		body := f.request()
		body["stacktraces"] = []any{map[string]any{"frames": []any{fr}}}
		return body
	}
	many := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"instruction_addr": "0x11a0"}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		body   any
		status int
		loc    string // of the 422's first entry, as JSON
	}{
		{"not JSON", "{", http.StatusBadRequest, ""},
		{"not an object", "[]", http.StatusBadRequest, ""},
		{"a type of the wrong kind", map[string]any{"modules": "elf"}, http.StatusUnprocessableEntity, `["body","modules"]`},
		{"an unknown module type", module("type", "wasm"), http.StatusUnprocessableEntity, `["body","modules",0,"type"]`},
		{"a debug id that is none", module("debug_id", "x"), http.StatusUnprocessableEntity, `["body","modules",0,"debug_id"]`},
		{"an image address that is none", module("image_addr", "0xzz"), http.StatusUnprocessableEntity, `["body","modules",0,"image_addr"]`},
		{"an image size that is none", module("image_size", "-1"), http.StatusUnprocessableEntity, `["body","modules",0,"image_size"]`},
		{"501 modules", map[string]any{"modules": make([]any, 501)}, http.StatusUnprocessableEntity, `["body","modules"]`},
		{"5,001 frames", map[string]any{"stacktraces": []any{map[string]any{"frames": many(5001)}}}, http.StatusUnprocessableEntity, `["body","stacktraces"]`},
		{"a frame address that is none", frame("instruction_addr", "nowhere"), http.StatusUnprocessableEntity, `["body","stacktraces",0,"frames",0,"instruction_addr"]`},
		{"a module index past the modules", frame("addr_mode", "rel:1"), http.StatusUnprocessableEntity, `["body","stacktraces",0,"frames",0,"addr_mode"]`},
		{"an unknown addr_mode", frame("addr_mode", "segment"), http.StatusUnprocessableEntity, `["body","stacktraces",0,"frames",0,"addr_mode"]`},
		{"an unknown frame order", map[string]any{"options": map[string]any{"frame_order": "up"}}, http.StatusUnprocessableEntity, `["body","options","frame_order"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do("POST", symbolicatePath, f.tok, tc.body)
			if r.status != tc.status {
				t.Fatalf("%d %s, want %d", r.status, r.body, tc.status)
			}
			if tc.loc == "" {
				return
			}
			var got struct {
				Detail []struct {
					Loc json.RawMessage `json:"loc"`
				} `json:"detail"`
			}
			if err := json.Unmarshal(r.body, &got); err != nil || len(got.Detail) == 0 {
				t.Fatalf("%s: %v", r.body, err)
			}
			if diff := cmp.Diff(tc.loc, string(got.Detail[0].Loc)); diff != "" {
				t.Errorf("loc (-want +got):\n%s", diff)
			}
		})
	}
}
