package worker

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"errata/store"
	"errata/store/storetest"
)

// assembleEnv is a database with a user who owns the organization "acme"
// (project "web") and is a member of nothing else; "other" is an
// organization of another user.
type assembleEnv struct {
	st   *store.Store
	db   *pgx.Conn
	url  string
	user int64
	org  int64
}

func newAssembleEnv(t *testing.T) *assembleEnv {
	t.Helper()
	ctx := context.Background()
	url := storetest.NewDatabase(t)
	st, err := store.Open(ctx, store.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	e := &assembleEnv{st: st, db: db, url: url}
	if e.user, err = st.CreateUser(ctx, "dev@example.com", "Dev"); err != nil {
		t.Fatal(err)
	}
	if e.org, err = st.CreateOrganization(ctx, "acme", "Acme", "dev@example.com"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateProject(ctx, store.Operator, "acme", store.NewProject{Slug: "web", Name: "Web"}); err != nil {
		t.Fatal(err)
	}
	return e
}

// upload stores data as chunks of at most size bytes and returns the
// bundle's checksum and chunk names.
func (e *assembleEnv) upload(t *testing.T, data []byte, size int) (string, []string) {
	t.Helper()
	var chunks []store.Chunk
	for rest := data; len(rest) > 0; {
		n := min(size, len(rest))
		sum := sha1.Sum(rest[:n])
		chunks = append(chunks, store.Chunk{SHA1: hex.EncodeToString(sum[:]), Data: rest[:n]})
		rest = rest[n:]
	}
	err := e.st.SaveChunks(context.Background(), e.user, "acme", func(yield func(store.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum(data)
	names := make([]string, len(chunks))
	for i, c := range chunks {
		names[i] = c.SHA1
	}
	return hex.EncodeToString(sum[:]), names
}

// count returns the rows of table (a literal of the test).
func (e *assembleEnv) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// storedFile is a release file as the test reads it back.
type storedFile struct {
	Release, Name string
	Dist          *string
	Headers       map[string]string
	Content       string
}

func (e *assembleEnv) files(t *testing.T) []storedFile {
	t.Helper()
	rows, err := e.db.Query(context.Background(), `
		SELECT r.version, rf.name, rf.dist, rf.headers, rf.id
		FROM release_files rf JOIN releases r ON r.id = rf.release_id ORDER BY r.version, rf.name`)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (storedFile, error) {
		var f storedFile
		var id int64
		err := row.Scan(&f.Release, &f.Name, &f.Dist, &f.Headers, &id)
		ids = append(ids, id)
		return f, err
	})
	if err != nil {
		t.Fatal(err)
	}
	// The content is what a download streams.
	for i, f := range out {
		var buf strings.Builder
		sc := store.ReleaseFileScope{UserID: e.user, OrgSlug: "acme", Version: f.Release}
		err := e.st.WriteReleaseFile(context.Background(), sc, ids[i], func(store.ReleaseFile) io.Writer { return &buf })
		if err != nil {
			t.Fatalf("download %s: %v", f.Name, err)
		}
		out[i].Content = buf.String()
	}
	return out
}

// bundle is the description of a test bundle.
type bundle struct {
	sysb     bool
	manifest any               // encoded as JSON unless it is a string
	members  map[string]string // name -> content, besides manifest.json
	order    []string          // members in this order first
}

// goodBundle is a valid bundle of release 1.0 of acme with two files.
func goodBundle() bundle {
	return bundle{
		sysb: true,
		manifest: map[string]any{
			"org": "acme", "release": "1.0", "dist": "web",
			"files": map[string]any{
				"files/_/_/app.min.js":     map[string]any{"url": "~/app.min.js", "type": "minified_source", "headers": map[string]string{"Sourcemap": "app.min.js.map"}},
				"files/_/_/app.min.js.map": map[string]any{"url": "~/app.min.js.map", "type": "source_map", "headers": map[string]string{}},
			},
		},
		members: map[string]string{
			"files/_/_/app.min.js":     "console.log(1)\n//# sourceMappingURL=app.min.js.map\n",
			"files/_/_/app.min.js.map": `{"version":3,"sources":["app.js"],"mappings":"AAAA"}`,
		},
	}
}

func (b bundle) bytes(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if b.sysb {
		buf.WriteString("SYSB\x02\x00\x00\x00")
	}
	zw := zip.NewWriter(&buf)
	if b.manifest != nil {
		m, ok := b.manifest.(string)
		if !ok {
			enc, err := json.Marshal(b.manifest)
			if err != nil {
				t.Fatal(err)
			}
			m = string(enc)
		}
		w, err := zw.Create("manifest.json")
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, m)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range b.members {
			if !slices.Contains(b.order, n) && !yield(n) {
				return
			}
		}
	})
	for _, name := range append(slices.Clone(b.order), names...) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, b.members[name])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func job(e *assembleEnv, checksum string, chunks []string, version *string) json.RawMessage {
	b, _ := json.Marshal(store.AssemblyJob{
		OrganizationID: e.org, OrgSlug: "acme", Version: version,
		Projects: []string{"web"}, Checksum: checksum, Chunks: chunks,
	})
	return b
}

func ptr[T any](v T) *T { return &v }

func testAssembler(e *assembleEnv, limits AssembleLimits) *Assembler {
	return &Assembler{Store: e.st, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Limits: limits}
}

func TestAssembleStoresTheManifestFiles(t *testing.T) {
	dist := ptr("web")
	want := []storedFile{
		{Release: "1.0", Name: "~/app.min.js", Dist: dist, Headers: map[string]string{"Sourcemap": "app.min.js.map"},
			Content: "console.log(1)\n//# sourceMappingURL=app.min.js.map\n"},
		{Release: "1.0", Name: "~/app.min.js.map", Dist: dist, Headers: map[string]string{},
			Content: `{"version":3,"sources":["app.js"],"mappings":"AAAA"}`},
	}
	tests := []struct {
		name    string
		bundle  func() bundle
		version *string
	}{
		{"a SYSB bundle of the request's release", goodBundle, ptr("1.0")},
		{"a plain zip", func() bundle { b := goodBundle(); b.sysb = false; return b }, ptr("1.0")},
		{"a bundle that names its release", goodBundle, nil},
		{"a manifest without release, the request's", func() bundle {
			b := goodBundle()
			delete(b.manifest.(map[string]any), "release")
			return b
		}, ptr("1.0")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newAssembleEnv(t)
			sum, chunks := e.upload(t, tt.bundle().bytes(t), 100)
			a := testAssembler(e, AssembleLimits{})
			for run := range 2 { // the second run must change nothing
				if err := a.Run(context.Background(), job(e, sum, chunks, tt.version)); err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
				if diff := cmp.Diff(want, e.files(t)); diff != "" {
					t.Errorf("run %d: files (-want +got):\n%s", run, diff)
				}
				// The bundle is one stored file, made of the uploaded
				// chunks; its members are rows that point into it.
				if n := e.count(t, "files"); n != 1 {
					t.Errorf("run %d: %d stored files, want 1", run, n)
				}
				if n, want := e.count(t, "file_blobs"), len(chunks); n != want {
					t.Errorf("run %d: %d file blobs, want %d", run, n, want)
				}
			}
			var linked int
			e.db.QueryRow(context.Background(), `SELECT count(*) FROM release_projects`).Scan(&linked)
			if linked != 1 {
				t.Errorf("release linked to %d projects, want 1", linked)
			}
		})
	}
}

func TestAssembleRejectsHostileBundles(t *testing.T) {
	bomb := strings.Repeat("\x00", 3<<20) // deflates to a few KiB
	tests := []struct {
		name    string
		bundle  func() bundle
		limits  AssembleLimits
		tamper  func(e *assembleEnv, sum string, chunks []string) (string, []string)
		version *string
		want    string // in the error
	}{
		{name: "wrong checksum", bundle: goodBundle,
			tamper: func(_ *assembleEnv, _ string, c []string) (string, []string) {
				return strings.Repeat("0", 40), c
			},
			want: "Checksum mismatch"},
		{name: "missing chunk", bundle: goodBundle,
			tamper: func(_ *assembleEnv, s string, c []string) (string, []string) {
				return s, append(c, strings.Repeat("a", 40))
			},
			want: "chunks of the bundle are missing"},
		{name: "chunks in the wrong order", bundle: goodBundle,
			tamper: func(_ *assembleEnv, s string, c []string) (string, []string) {
				slices.Reverse(c)
				return s, c
			},
			want: "Checksum mismatch"},
		{name: "manifest of another organization", bundle: func() bundle {
			b := goodBundle()
			b.manifest.(map[string]any)["org"] = "other"
			return b
		}, want: `organization "other" is not "acme"`},
		{name: "manifest of another release", bundle: goodBundle, version: ptr("2.0"),
			want: `release "1.0" is not "2.0"`},
		{name: "no release anywhere", bundle: func() bundle {
			b := goodBundle()
			delete(b.manifest.(map[string]any), "release")
			return b
		}, version: nil, want: "names no release"},
		{name: "member name with ..", bundle: func() bundle {
			b := goodBundle()
			b.members["files/../../etc/passwd"] = "x"
			return b
		}, want: "unsafe name"},
		{name: "absolute member name", bundle: func() bundle {
			b := goodBundle()
			b.members["/etc/passwd"] = "x"
			return b
		}, want: "unsafe name"},
		{name: "manifest entry with ..", bundle: func() bundle {
			b := goodBundle()
			b.manifest.(map[string]any)["files"].(map[string]any)["../x"] = map[string]any{"url": "~/x"}
			return b
		}, want: "unsafe member"},
		{name: "zip bomb over the limit", bundle: func() bundle {
			b := goodBundle()
			b.members["files/_/_/bomb.js"] = bomb
			b.manifest.(map[string]any)["files"].(map[string]any)["files/_/_/bomb.js"] = map[string]any{"url": "~/bomb.js"}
			return b
		}, limits: AssembleLimits{MaxUncompressedSize: 1 << 20}, want: "uncompresses to more than the limit"},
		{name: "too many members", bundle: goodBundle, limits: AssembleLimits{MaxMembers: 2},
			want: "more than the limit of 2"},
		{name: "bundle over the size limit", bundle: goodBundle, limits: AssembleLimits{MaxBundleSize: 200},
			want: "larger than the limit of 200 bytes"},
		{name: "missing manifest", bundle: func() bundle {
			b := goodBundle()
			b.manifest = nil
			return b
		}, want: "no manifest.json"},
		{name: "malformed manifest", bundle: func() bundle {
			b := goodBundle()
			b.manifest = `{"org": "acme", "files": [`
			return b
		}, want: "manifest is malformed"},
		{name: "member listed but absent", bundle: func() bundle {
			b := goodBundle()
			delete(b.members, "files/_/_/app.min.js.map")
			return b
		}, want: `lists "files/_/_/app.min.js.map", which the bundle lacks`},
		{name: "not a zip", bundle: func() bundle { return bundle{} }, want: "not a zip archive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newAssembleEnv(t)
			data := tt.bundle().bytes(t)
			if tt.name == "not a zip" {
				data = []byte("SYSB\x02\x00\x00\x00this is not a zip archive")
			}
			sum, chunks := e.upload(t, data, 100)
			if tt.tamper != nil {
				sum, chunks = tt.tamper(e, sum, chunks)
			}
			version := tt.version
			if version == nil && tt.name != "no release anywhere" && tt.name != "missing manifest" {
				version = ptr("1.0")
			}
			err := testAssembler(e, tt.limits).Run(context.Background(), job(e, sum, chunks, version))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
			if _, ok := errors.AsType[permanentError](err); !ok {
				t.Errorf("err = %v is not permanent", err)
			}
			for _, table := range []string{"files", "file_blobs", "release_files", "releases"} {
				if n := e.count(t, table); n != 0 {
					t.Errorf("%d rows in %s, want none", n, table)
				}
			}
		})
	}
}

func TestAssembleWaitsForChunksOfTheReleaseEndpoint(t *testing.T) {
	e := newAssembleEnv(t)
	data := goodBundle().bytes(t)
	sum := sha1.Sum(data)
	payload, _ := json.Marshal(store.AssemblyJob{
		OrganizationID: e.org, OrgSlug: "acme", Version: ptr("1.0"), Projects: []string{},
		Checksum: hex.EncodeToString(sum[:]), Chunks: []string{hex.EncodeToString(sum[:])},
		WaitForChunks: true,
	})
	a := testAssembler(e, AssembleLimits{})
	err := a.Run(context.Background(), payload)
	if _, perm := errors.AsType[permanentError](err); err == nil || perm {
		t.Fatalf("err = %v, want a retryable error", err)
	}
	e.upload(t, data, len(data))
	if err := a.Run(context.Background(), payload); err != nil {
		t.Fatalf("after the upload: %v", err)
	}
	if n := len(e.files(t)); n != 2 {
		t.Errorf("%d files, want 2", n)
	}
}
