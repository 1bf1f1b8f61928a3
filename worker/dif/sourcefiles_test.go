package dif

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// manifestFilesUnmarshal is manifestFiles as json.Unmarshal reads the
// manifest whole: the answer manifestFiles must give.
func manifestFilesUnmarshal(body []byte, keep func(name, path string) bool) (map[string]string, error) {
	var m struct {
		Files map[string]struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, f := range m.Files {
		if keep(name, f.Path) {
			out[name] = f.Path
		}
	}
	return out, nil
}

// checkManifestFiles fails t when manifestFiles reads body otherwise than
// json.Unmarshal does.
func checkManifestFiles(t *testing.T, body []byte) {
	t.Helper()
	keep := func(name, path string) bool { return path != "/skip" && name != "skip" }
	got, err := manifestFiles(body, keep)
	want, wantErr := manifestFilesUnmarshal(body, keep)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: error %v, json.Unmarshal's %v", body, err, wantErr)
	}
	if err == nil && !cmp.Equal(want, got) {
		t.Fatalf("%q: %q, json.Unmarshal read %q", body, got, want)
	}
}

// TestManifestFilesReadsAsUnmarshal: the manifest decoded one entry at a
// time gives the entries json.Unmarshal gives, and fails where it fails.
func TestManifestFilesReadsAsUnmarshal(t *testing.T) {
	for _, body := range []string{
		`{"debug_id":"x","files":{"files/_/a.c":{"type":"source","path":"/a.c"},"files/_/b.c":{"path":"/skip"}}}`,
		`{"FILES":{"a":{"PATH":"/a"}},"files":{"b":{"path":"/b"}}}`,
		`{"files":{"a":{"path":"/a"},"a":{"path":"/skip"}}}`,
		`{"files":{"a":{"path":"/a"}},"files":null}`,
		`{"files":{"a":null,"skip":{"path":"/s"}}}`,
		`null`, `{}`, `[]`, `{"files":[]}`, `{"files":{"a":"b"}}`, `{"files":{"a":{"path":5}}}`,
		`{"files":{}} {}`, `{"files":{}`, `{"other":[1,{"x":2}],"files":{"a":{"path":"/a","x":[]}}}`, ``,
	} {
		checkManifestFiles(t, []byte(body))
	}
}

// FuzzManifestFiles holds manifestFiles to json.Unmarshal for any manifest.
func FuzzManifestFiles(f *testing.F) {
	f.Add([]byte(`{"debug_id":"x","files":{"files/_/a.c":{"type":"source","path":"/a.c"}}}`))
	f.Add([]byte(`{"Files":{"a":{"path":"/skip"}},"files":null}`))
	f.Fuzz(func(t *testing.T, body []byte) { checkManifestFiles(t, body) })
}
