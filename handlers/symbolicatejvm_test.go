package handlers

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSymbolicateJVMRemapsThroughAnUploadedMapping uploads an R8 mapping
// as sentry-cli 2.x does and remaps a frame, an exception and a frame the
// mapping does not know, with the error of a UUID the project lacks; a
// second request finds the mapping in the cache.
func TestSymbolicateJVMRemapsThroughAnUploadedMapping(t *testing.T) {
	f := newSymbolicateJSFixture(t)
	upload := proguardZip(t)
	tok := f.token("dev@acme.io", "project:releases", "project:write")
	if r := f.doMultipart("POST", "/api/0/projects/acme/web/files/dsyms/", tok, upload.data, upload.contentType); r.status != http.StatusCreated {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	body := map[string]any{
		"exceptions": []any{map[string]any{"type": "a", "module": "a"}, map[string]any{"type": "Boom", "module": "x"}},
		"stacktraces": []any{map[string]any{"frames": []any{
			map[string]any{"module": "a.a", "function": "a", "lineno": 3, "filename": "SourceFile", "index": 7},
			map[string]any{"module": "java.lang.Thread", "function": "run", "lineno": 9},
		}}},
		"modules": []any{map[string]any{"type": "proguard", "uuid": "12A2E4EE87055F9183693A5B10A48225"}, map[string]any{"type": "proguard", "uuid": matrixDebugID}},
	}
	want := `{"exceptions":[{"type":"MainActivity","module":"com.example"},{"type":"Boom","module":"x"}],` +
		`"stacktraces":[{"frames":[{"function":"onCreate","module":"com.example.MainActivity","filename":"MainActivity.java","abs_path":"MainActivity.java","lineno":15,"original_index":7},` +
		`{"function":"run","module":"java.lang.Thread","filename":null,"abs_path":null,"lineno":9,"original_index":1}]}],` +
		`"errors":[{"uuid":"` + matrixDebugID + `","type":"missing"}]}` + "\n"
	for i := range 2 {
		r := f.do("POST", "/api/0/projects/acme/web/symbolicate-jvm/", f.tok, body)
		if diff := cmp.Diff(want, string(r.body)); r.status != http.StatusOK || diff != "" {
			t.Fatalf("request %d: %d (-want +got):\n%s", i+1, r.status, diff)
		}
	}
	if _, _, hits := f.cache.Stats(); hits != 1 {
		t.Errorf("%d cache hits, want the second request's 1", hits)
	}
	for name, bad := range map[string]any{
		"a UUID that is not one": map[string]any{"modules": []any{map[string]any{"uuid": "x"}}},
		"an unknown frame order": map[string]any{"options": map[string]any{"frame_order": "down"}},
		"frames of a wrong type": map[string]any{"stacktraces": []any{map[string]any{"frames": []any{map[string]any{"lineno": "1"}}}}},
	} {
		if r := f.do("POST", "/api/0/projects/acme/web/symbolicate-jvm/", f.tok, bad); r.status != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d %s, want 422", name, r.status, r.body)
		}
	}
}
