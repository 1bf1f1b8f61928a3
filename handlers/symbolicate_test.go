package handlers

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"errata/authn"
	"errata/handlers/symbolication"
	"errata/store"
	"errata/worker"
	"errata/worker/dif"
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
			up := store.DebugUpload{Content: bytes.NewReader(data), Objects: worker.DebugFileObjects(objs, tc.file, bytes.NewReader(data), int64(len(data)))}
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
