package handlers

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"errata/store"
	"errata/worker"
)

// assembleFiles gives acme the release version linked to project web with
// files (url -> content), through the real assembler.
func (f assembleFixture) assembleFiles(t *testing.T, version string, files map[string]string) {
	t.Helper()
	bundle := testBundle(t, "acme", version, files)
	sum := f.uploadChunk(t, bundle)
	payload, _ := json.Marshal(store.AssemblyJob{
		OrganizationID: 1, OrgSlug: "acme", Version: &version, Projects: []string{"web"},
		Checksum: sum, Chunks: []string{sum},
	})
	a := &worker.Assembler{Store: f.st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := a.Run(context.Background(), payload); err != nil {
		t.Fatalf("assemble %s: %v", version, err)
	}
}

// fileID finds the id of the file name of a release.
func (f assembleFixture) fileID(t *testing.T, version, name string) string {
	t.Helper()
	res := f.do("GET", "/api/0/organizations/acme/releases/"+version+"/files/", f.owner, nil)
	var files []struct{ ID, Name string }
	json.Unmarshal(res.body, &files)
	for _, rf := range files {
		if rf.Name == name {
			return rf.ID
		}
	}
	t.Fatalf("release %s has no file %s: %s", version, name, res.body)
	return ""
}

func TestReleaseFileReads(t *testing.T) {
	f := newAssembleFixture(t)
	f.project("acme", "api")
	f.assembleFiles(t, "1.0", map[string]string{"~/app.min.js": "x()", "~/app.min.js.map": "{}"})
	id := f.fileID(t, "1.0", "~/app.min.js")
	org := "/api/0/organizations/acme/releases/1.0/files/"
	proj := "/api/0/projects/acme/web/releases/1.0/files/"

	tests := []struct {
		name   string
		path   string
		token  string
		status int
		golden string
		want   string
	}{
		{"the organization list shows the files", org, f.owner, 200, "file_list", ""},
		{"the project list shows the same files", proj, f.owner, 200, "file_list", ""},
		{"a project the release is not linked to has none", "/api/0/projects/acme/api/releases/1.0/files/", f.owner, 200, "", `[]`},
		{"a release that does not exist has none", "/api/0/organizations/acme/releases/9.9/files/", f.owner, 200, "", `[]`},
		{"an outsider sees none", org, f.outsider, 200, "", `[]`},
		{"a single file", org + id + "/", f.owner, 200, "file_get", ""},
		{"a single file on the project route", proj + id + "/", f.owner, 200, "file_get", ""},
		{"a file of a project the release is not linked to is 404", "/api/0/projects/acme/api/releases/1.0/files/" + id + "/", f.owner, 404, "", `{"detail":"Not Found"}`},
		{"a file of another release is 404", "/api/0/organizations/acme/releases/2.0/files/" + id + "/", f.owner, 404, "", `{"detail":"Not Found"}`},
		{"an outsider's get is 404", org + id + "/", f.outsider, 404, "", `{"detail":"Not Found"}`},
		{"an unknown id is 404", org + "999999/", f.owner, 404, "", `{"detail":"Not Found"}`},
		{"a file id that is not a number is 422", org + "abc/", f.owner, 422, "file_bad_id", ""},
		{"a version with a control character is 422", "/api/0/organizations/acme/releases/a%0Ab/files/", f.owner, 422, "file_bad_version", ""},
		{"a token without project:releases is 403", org, f.token("owner@example.com", "project:write"), 403, "", `{"detail":"Permission denied"}`},
		{"no token is 401", org, "", 401, "", `{"detail":"Unauthorized"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.do("GET", tt.path, tt.token, nil)
			if tt.want != "" {
				res.expect(t, tt.status, tt.want)
				return
			}
			res.expect(t, tt.status, nil)
			res.golden(t, tt.golden)
		})
	}

	t.Run("download streams the bytes", func(t *testing.T) {
		res := f.do("GET", org+id+"/?download=1", f.owner, nil)
		if res.status != 200 || string(res.body) != "x()" {
			t.Fatalf("download = %d %q, want 200 \"x()\"", res.status, res.body)
		}
		if ct := res.header.Get("Content-Type"); ct != "application/octet-stream" {
			t.Errorf("Content-Type = %q", ct)
		}
	})
	t.Run("an outsider's download is 404", func(t *testing.T) {
		f.do("GET", org+id+"/?download=1", f.outsider, nil).expect(t, 404, `{"detail":"Not Found"}`)
	})
	t.Run("the list pages with Sentry's Link header", func(t *testing.T) {
		res := f.do("GET", org+"?limit=1", f.owner, nil)
		var files []any
		json.Unmarshal(res.body, &files)
		if len(files) != 1 || res.header.Get("X-Hits") != "2" ||
			!strings.Contains(res.header.Get("Link"), `rel="next"; results="true"`) {
			t.Errorf("page = %s, X-Hits %q, Link %q", res.body, res.header.Get("X-Hits"), res.header.Get("Link"))
		}
	})
}

func TestReleaseFileDelete(t *testing.T) {
	f := newAssembleFixture(t)
	f.assembleFiles(t, "1.0", map[string]string{"~/app.min.js": "x()", "~/app.min.js.map": "{}"})
	id := f.fileID(t, "1.0", "~/app.min.js")
	mapID := f.fileID(t, "1.0", "~/app.min.js.map")
	org := "/api/0/organizations/acme/releases/1.0/files/"

	steps := []struct {
		name   string
		path   string
		token  string
		status int
	}{
		{"an outsider's delete is 404", org + id + "/", f.outsider, 404},
		{"a token without project:releases is 403", org + id + "/", f.token("owner@example.com", "project:admin"), 403},
		{"the owner's delete is 204", org + id + "/", f.owner, 204},
		{"deleting again is 404", org + id + "/", f.owner, 404},
		{"the project route deletes too", "/api/0/projects/acme/web/releases/1.0/files/" + mapID + "/", f.owner, 204},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			res := f.do("DELETE", s.path, s.token, nil)
			if res.status != s.status {
				t.Fatalf("status = %d, want %d: %s", res.status, s.status, res.body)
			}
			if s.status == 204 && len(res.body) != 0 {
				t.Errorf("204 with a body %q", res.body)
			}
		})
	}
	if names := f.fileNames(t, "1.0"); len(names) != 0 {
		t.Errorf("files left: %q", names)
	}
}

func TestReleaseFileUpload(t *testing.T) {
	f := newAssembleFixture(t)
	f.assembleFiles(t, "1.0", map[string]string{"~/a.js": "a"})
	org := "/api/0/organizations/acme/releases/1.0/files/"
	content := []byte("console.log('hi')\n")

	tests := []struct {
		name   string
		path   string
		token  string
		fields [][2]string
		files  []filePart
		status int
		golden string
	}{
		{"a file with name, dist and headers is 201", org, f.owner,
			[][2]string{{"name", "~/hi.js"}, {"dist", "web"}, {"header", "Sourcemap: hi.js.map"}, {"header", "X-Note:1"}},
			[]filePart{{"file", "hi.js", content}}, 201, "file_upload"},
		{"the name defaults to the file name", "/api/0/projects/acme/web/releases/1.0/files/", f.owner,
			nil, []filePart{{"file", "plain.js", content}}, 201, "file_upload_default_name"},
		{"the same name and dist again is 409", org, f.owner,
			[][2]string{{"name", "~/hi.js"}, {"dist", "web"}},
			[]filePart{{"file", "hi.js", content}}, 409, "file_upload_conflict"},
		{"no file is 422", org, f.owner, [][2]string{{"name", "~/x.js"}}, nil, 422, "file_upload_missing"},
		{"a header without a colon is 422", org, f.owner, [][2]string{{"header", "nocolon"}},
			[]filePart{{"file", "y.js", content}}, 422, ""},
		{"a release that does not exist is 404", "/api/0/organizations/acme/releases/9.9/files/", f.owner,
			nil, []filePart{{"file", "z.js", content}}, 404, ""},
		{"an outsider is 404", org, f.outsider, nil, []filePart{{"file", "z.js", content}}, 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, ct := multipartBody(t, tt.fields, tt.files)
			res := f.doMultipart("POST", tt.path, tt.token, body, ct)
			res.expect(t, tt.status, nil)
			if tt.golden != "" {
				res.golden(t, tt.golden)
			}
		})
	}
	t.Run("the uploaded content downloads back", func(t *testing.T) {
		id := f.fileID(t, "1.0", "~/hi.js")
		res := f.do("GET", org+id+"/?download=1", f.owner, nil)
		if string(res.body) != string(content) {
			t.Errorf("download = %q, want %q", res.body, content)
		}
	})
}

func TestReleaseDeleteRemovesFileContent(t *testing.T) {
	f := newAssembleFixture(t)
	f.assembleFiles(t, "1.0", map[string]string{"~/app.min.js": "x()", "~/app.min.js.map": "{}"})
	f.assembleFiles(t, "2.0", map[string]string{"~/app.min.js": "y()"})
	counts := func() [4]int {
		return [4]int{f.count(`SELECT count(*) FROM release_files`), f.count(`SELECT count(*) FROM files`),
			f.count(`SELECT count(*) FROM blobs`), f.count(`SELECT count(*) FROM blob_data`)}
	}
	before := counts()
	f.do("DELETE", "/api/0/organizations/acme/releases/1.0/", f.owner, nil).expect(t, 204, nil)
	// The content goes with the collector: each release's bundle is one
	// file of one blob here.
	if _, err := f.st.Collect(context.Background(), 0, 0); err != nil {
		t.Fatal(err)
	}
	after := counts()
	if want := [4]int{before[0] - 2, before[1] - 1, before[2] - 1, before[3] - 1}; after != want {
		t.Errorf("release_files, files, blobs, blob_data = %v after the delete and a collection, want %v (before %v)", after, want, before)
	}
	if names := f.fileNames(t, "2.0"); len(names) != 1 {
		t.Errorf("the other release lost its files: %q", names)
	}
	id := f.fileID(t, "2.0", "~/app.min.js")
	if res := f.do("GET", "/api/0/organizations/acme/releases/2.0/files/"+id+"/?download=1", f.owner, nil); string(res.body) != "y()" {
		t.Errorf("the other release's file downloads as %q after the collection", res.body)
	}
}
