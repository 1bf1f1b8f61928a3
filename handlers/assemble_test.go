package handlers

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/store"
	"errata/worker"
)

// testBundle returns a SYSB bundle of org and release holding files, a map
// from url to content; the script ~/app.min.js gets a Sourcemap header.
func testBundle(t *testing.T, org, release string, files map[string]string) []byte {
	t.Helper()
	entries := map[string]any{}
	var buf bytes.Buffer
	buf.WriteString("SYSB\x02\x00\x00\x00")
	zw := zip.NewWriter(&buf)
	for url, content := range files {
		member := "files/_/_/" + strings.TrimPrefix(url, "~/")
		headers := map[string]string{}
		if url == "~/app.min.js" {
			headers["Sourcemap"] = "app.min.js.map"
		}
		entries[member] = map[string]any{"url": url, "type": "source", "headers": headers}
		w, err := zw.Create(member)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, content)
	}
	m := map[string]any{"org": org, "files": entries}
	if release != "" {
		m["release"] = release
	}
	w, err := zw.Create("manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	json.NewEncoder(w).Encode(m)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sha1Hex is the SHA-1 of b in hex.
func sha1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// startWorker runs the real assembler on the test's database until the
// test ends. Nothing notifies it: it finds jobs by polling.
func (a *testAPI) startWorker() {
	a.t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := worker.New(a.st, log, worker.Config{PollInterval: 20 * time.Millisecond})
	w.Handle(store.AssembleJobKind, (&worker.Assembler{Store: a.st, Log: log}).Run)
	w.Handle(store.DifAssembleJobKind, (&worker.DifAssembler{Store: a.st, Log: log}).Run)
	w.Start()
	a.t.Cleanup(func() { w.Shutdown(context.Background()) })
}

// assembleFixture is an organization acme with a project web, an owner with
// a token, and an outsider with a token of its own organization.
type assembleFixture struct {
	*testAPI
	owner, outsider string
}

func newAssembleFixture(t *testing.T) assembleFixture {
	a := newTestAPI(t)
	a.user("owner@example.com")
	a.user("outsider@example.com")
	a.org("acme", "owner@example.com")
	a.project("acme", "web")
	a.org("other", "outsider@example.com")
	return assembleFixture{a, a.token("owner@example.com"), a.token("outsider@example.com")}
}

// uploadChunk posts data as one raw chunk to acme.
func (f assembleFixture) uploadChunk(t *testing.T, data []byte) string {
	t.Helper()
	sum := sha1Hex(data)
	body, ct := multipartBody(t, nil, []filePart{{"file", sum, data}})
	f.doMultipart("POST", "/api/0/organizations/acme/chunk-upload/", f.owner, body, ct).expect(t, http.StatusOK, nil)
	return sum
}

// pollBundle asks for the artifact bundle's state until it is final.
func (f assembleFixture) pollBundle(t *testing.T, body any) response {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		res := f.do("POST", "/api/0/organizations/acme/artifactbundle/assemble/", f.owner, body)
		var st struct{ State string }
		json.Unmarshal(res.body, &st)
		if st.State != "created" && st.State != "assembling" {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("assembly still %s", st.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fileNames lists the names of a release's files as the API shows them.
func (f assembleFixture) fileNames(t *testing.T, version string) []string {
	t.Helper()
	res := f.do("GET", "/api/0/organizations/acme/releases/"+version+"/files/", f.owner, nil)
	if res.status != http.StatusOK {
		t.Fatalf("list: %d %s", res.status, res.body)
	}
	var files []struct{ Name string }
	json.Unmarshal(res.body, &files)
	names := []string{}
	for _, rf := range files {
		names = append(names, rf.Name)
	}
	return names
}

func TestReleaseAssemble(t *testing.T) {
	f := newAssembleFixture(t)
	f.startWorker()
	bundle := testBundle(t, "acme", "1.0", map[string]string{"~/app.min.js": "x()", "~/app.min.js.map": "{}"})
	sum := sha1Hex(bundle)
	path := "/api/0/organizations/acme/releases/1.0/assemble/"

	t.Run("ok before the chunks exist, then the files appear once they are uploaded", func(t *testing.T) {
		f.do("POST", path, f.owner, map[string]any{"checksum": sum, "chunks": []string{sum}}).
			golden(t, "assemble_release_ok")
		f.uploadChunk(t, bundle)
		f.do("POST", path, f.owner, map[string]any{"checksum": sum, "chunks": []string{sum}}).
			expect(t, http.StatusOK, `{"state":"ok","missingChunks":[]}`)
		want := []string{"~/app.min.js", "~/app.min.js.map"}
		for deadline := time.Now().Add(15 * time.Second); ; {
			got := f.fileNames(t, "1.0")
			if len(got) == 2 {
				if diff := cmp.Diff(want, sortedCopy(got)); diff != "" {
					t.Fatalf("files (-want +got):\n%s", diff)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("files = %q after 15s", got)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	tests := []struct {
		name   string
		path   string
		token  string
		body   any
		status int
		golden string
	}{
		{"missing fields are 422", path, f.owner, map[string]any{}, 422, "assemble_missing_fields"},
		{"a checksum that is not SHA-1 hex is 422", path, f.owner,
			map[string]any{"checksum": "xyz", "chunks": []string{sum, "nope"}}, 422, "assemble_bad_checksum"},
		{"chunks of the wrong type are 422", path, f.owner,
			map[string]any{"checksum": sum, "chunks": "abc"}, 422, ""},
		{"an organization of others is 404", "/api/0/organizations/other/releases/1.0/assemble/", f.owner,
			map[string]any{"checksum": sum, "chunks": []string{sum}}, 404, ""},
		{"an outsider is 404", path, f.outsider,
			map[string]any{"checksum": sum, "chunks": []string{sum}}, 404, ""},
		{"a token without the scopes is 403", path, f.token("owner@example.com", "org:read"),
			map[string]any{"checksum": sum, "chunks": []string{sum}}, 403, ""},
		{"no token is 401", path, "", map[string]any{"checksum": sum, "chunks": []string{sum}}, 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.do("POST", tt.path, tt.token, tt.body)
			res.expect(t, tt.status, nil)
			if tt.golden != "" {
				res.golden(t, tt.golden)
			}
		})
	}
}

func TestArtifactBundleAssemble(t *testing.T) {
	f := newAssembleFixture(t)
	f.startWorker()
	path := "/api/0/organizations/acme/artifactbundle/assemble/"

	t.Run("not_found lists the missing chunks, then created, then ok", func(t *testing.T) {
		bundle := testBundle(t, "acme", "", map[string]string{"~/app.min.js": "x()", "~/app.min.js.map": "{}"})
		sum := sha1Hex(bundle)
		body := map[string]any{"checksum": sum, "chunks": []string{sum}, "projects": []string{"web"}, "version": "2.0"}
		res := f.do("POST", path, f.owner, body)
		res.expect(t, http.StatusOK, map[string]any{"state": "not_found", "missingChunks": []string{sum}, "detail": nil})
		f.uploadChunk(t, bundle)
		res = f.do("POST", path, f.owner, body)
		var st struct{ State string }
		json.Unmarshal(res.body, &st)
		if st.State != "created" && st.State != "assembling" && st.State != "ok" {
			t.Fatalf("state after the upload = %s", res.body)
		}
		f.pollBundle(t, body).golden(t, "assemble_bundle_ok")
		if diff := cmp.Diff([]string{"~/app.min.js", "~/app.min.js.map"}, sortedCopy(f.fileNames(t, "2.0"))); diff != "" {
			t.Errorf("files (-want +got):\n%s", diff)
		}
	})

	tests := []struct {
		name   string
		bundle []byte
		body   func(sum string) map[string]any
		golden string
	}{
		{"a bundle of another organization ends in error",
			testBundle(t, "other", "3.0", map[string]string{"~/a.js": "a"}),
			func(sum string) map[string]any { return map[string]any{"checksum": sum, "chunks": []string{sum}} },
			"assemble_bundle_other_org"},
		{"a bundle without release ends in error",
			testBundle(t, "acme", "", map[string]string{"~/b.js": "b"}),
			func(sum string) map[string]any { return map[string]any{"checksum": sum, "chunks": []string{sum}} },
			"assemble_bundle_no_release"},
		{"a wrong checksum ends in error",
			testBundle(t, "acme", "4.0", map[string]string{"~/c.js": "c"}),
			func(sum string) map[string]any {
				return map[string]any{"checksum": strings.Repeat("0", 40), "chunks": []string{sum}}
			},
			"assemble_bundle_checksum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum := f.uploadChunk(t, tt.bundle)
			f.pollBundle(t, tt.body(sum)).golden(t, tt.golden)
		})
	}

	t.Run("an outsider is 404", func(t *testing.T) {
		sum := strings.Repeat("a", 40)
		f.do("POST", path, f.outsider, map[string]any{"checksum": sum, "chunks": []string{sum}}).
			expect(t, http.StatusNotFound, `{"detail":"Not Found"}`)
	})
}
