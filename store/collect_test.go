package store_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"errata/store"
	"errata/store/storetest"

	"github.com/jackc/pgx/v5"
)

// collectEnv is an organization acme with project web, on a store of its
// own database.
type collectEnv struct {
	st   *store.Store
	db   string
	user int64
	org  int64
}

func newCollectEnv(t *testing.T) collectEnv {
	t.Helper()
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	user, err := st.CreateUser(ctx, "dev@example.com", "Dev")
	if err != nil {
		t.Fatal(err)
	}
	org, err := st.CreateOrganization(ctx, "acme", "Acme", "dev@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateProject(ctx, store.Operator, "acme", store.NewProject{Slug: "web", Name: "Web"}); err != nil {
		t.Fatal(err)
	}
	return collectEnv{st, db, user, org}
}

// bundleOf is a zip of one member per content, stored or deflated.
func bundleOf(t *testing.T, contents map[string][]byte, method uint16) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, c := range contents {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(c)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// storeBundle uploads data as chunks of size and stores it as the bundle
// of release version, its members indexed the way the assembler does.
func (e collectEnv) storeBundle(t *testing.T, version string, data []byte, size int) error {
	t.Helper()
	ctx := context.Background()
	chunks := chunked(data, size)
	if err := e.st.SaveChunks(ctx, e.user, "acme", saveAll(chunks)); err != nil {
		return err
	}
	names := make([]string, len(chunks))
	for i, c := range chunks {
		names[i] = c.SHA1
	}
	sum := sha1.Sum(data)
	pf, err := e.st.CheckFile(ctx, e.org, hex.EncodeToString(sum[:]), names, store.FileOptions{})
	if err != nil {
		return err
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	b := store.Bundle{OrganizationID: e.org, File: pf, BundleID: hex.EncodeToString(sum[:]), Version: &version, Projects: []string{"web"}}
	for _, zf := range zr.File {
		off, _ := zf.DataOffset()
		rc, _ := zf.Open()
		content, _ := io.ReadAll(rc)
		s := sha1.Sum(content)
		b.Files = append(b.Files, store.BundleFile{Path: zf.Name, URL: "~/" + zf.Name, Start: off,
			CSize: int64(zf.CompressedSize64), Method: int16(zf.Method), Size: int64(len(content)), SHA1: hex.EncodeToString(s[:])})
	}
	return e.st.SaveBundle(ctx, b)
}

// download returns the content of every release file of version by name.
func (e collectEnv) download(t *testing.T, version string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	sc := store.ReleaseFileScope{UserID: e.user, OrgSlug: "acme", Version: version}
	files, _, err := e.st.ReleaseFiles(ctx, sc, store.ReleaseFileFilter{}, store.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, f := range files {
		var buf bytes.Buffer
		if err := e.st.WriteReleaseFile(ctx, sc, f.ID, func(store.ReleaseFile) io.Writer { return &buf }); err != nil {
			t.Fatalf("download %s of %s: %v", f.Name, version, err)
		}
		got[f.Name] = buf.Bytes()
	}
	return got
}

func TestStoredAndDeflatedMembersDownloadAsTheyWere(t *testing.T) {
	e := newCollectEnv(t)
	contents := map[string][]byte{"a.js": bytes.Repeat([]byte("console.log(1);\n"), 5000), "b.js.map": []byte(`{"version":3}`)}
	for _, m := range []struct {
		version string
		method  uint16
	}{{"stored", zip.Store}, {"deflated", zip.Deflate}} {
		// Chunks of 1000 bytes: members span blobs.
		if err := e.storeBundle(t, m.version, bundleOf(t, contents, m.method), 1000); err != nil {
			t.Fatal(err)
		}
		got := e.download(t, m.version)
		for name, want := range contents {
			if !bytes.Equal(got["~/"+name], want) {
				t.Errorf("%s %s: %d bytes, want its %d", m.version, name, len(got["~/"+name]), len(want))
			}
		}
	}
}

// TestTheSameBytesAreOneBlobButNoOrganizationSeesAnother's: two releases
// and two organizations upload the same bundle; it is stored once, and the
// second organization is told to upload every chunk until it has.
func TestTheSameBytesAreOneBlobButNoOrganizationSeesAnothers(t *testing.T) {
	ctx := context.Background()
	e := newCollectEnv(t)
	data := bundleOf(t, map[string][]byte{"a.js": bytes.Repeat([]byte("x"), 5000)}, zip.Store)
	if err := e.storeBundle(t, "1.0", data, 1000); err != nil {
		t.Fatal(err)
	}
	blobs := storetest.Count(t, e.db, `SELECT count(*) FROM blob_data`)
	if err := e.storeBundle(t, "2.0", data, 1000); err != nil {
		t.Fatal(err)
	}
	if n := storetest.Count(t, e.db, `SELECT count(*) FROM blob_data`); n != blobs {
		t.Errorf("a second release of the same bundle stored %d blobs, want none", n-blobs)
	}
	if n := storetest.Count(t, e.db, `SELECT count(*) FROM files`); n != 1 {
		t.Errorf("%d files for one bundle in two releases, want 1", n)
	}

	other, err := e.st.CreateUser(ctx, "rival@example.com", "Rival")
	if err != nil {
		t.Fatal(err)
	}
	rivalOrg, err := e.st.CreateOrganization(ctx, "rival", "Rival", "rival@example.com")
	if err != nil {
		t.Fatal(err)
	}
	chunks := chunked(data, 1000)
	names := make([]string, len(chunks))
	for i, c := range chunks {
		names[i] = c.SHA1
	}
	missing, err := e.st.MissingChunks(ctx, rivalOrg, names)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) != len(unique(names)) {
		t.Errorf("rival is missing %d chunks, want all %d: it must not learn that acme has them", len(missing), len(unique(names)))
	}
	sum := sha1.Sum(data)
	if _, err := e.st.CreateFileFromChunks(ctx, rivalOrg, hex.EncodeToString(sum[:]), names); err == nil {
		t.Error("rival made a file of chunks it never uploaded")
	}
	if err := e.st.SaveChunks(ctx, other, "rival", saveAll(chunks)); err != nil {
		t.Fatal(err)
	}
	if missing, _ := e.st.MissingChunks(ctx, rivalOrg, names); len(missing) != 0 {
		t.Errorf("after its upload rival misses %v", missing)
	}
	if n := storetest.Count(t, e.db, `SELECT count(*) FROM blob_data`); n != blobs {
		t.Errorf("rival's upload of the same bytes stored %d blobs, want none", n-blobs)
	}
	if n, want := storetest.Count(t, e.db, `SELECT count(*) FROM blob_owners`), 2*len(unique(names)); n != want {
		t.Errorf("%d ownerships, want %d (each organization owns each blob)", n, want)
	}
}

func unique(s []string) map[string]bool {
	m := map[string]bool{}
	for _, v := range s {
		m[v] = true
	}
	return m
}

// TestCollectorAgainstConcurrentUploadsAssembliesAndDeletes runs the
// collector in a loop, with a grace of three seconds, while releases are
// assembled, each from chunks partly shared with the others, and deleted.
// Nothing a release that stays refers to ever disappears, and no chunk is
// taken between its upload and its assembly; once the activity stops, one
// collection leaves no file, ownership or blob that nothing uses.
func TestCollectorAgainstConcurrentUploadsAssembliesAndDeletes(t *testing.T) {
	ctx := context.Background()
	e := newCollectEnv(t)
	shared := bytes.Repeat([]byte("shared vendor code\n"), 300)
	bundle := func(i int) []byte {
		return bundleOf(t, map[string][]byte{
			"vendor.js": shared,
			"app.js":    []byte(fmt.Sprintf("console.log(%d);\n", i)),
		}, zip.Store)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var once sync.Once
	halt := func() { once.Do(func() { close(stop); wg.Wait() }) }
	defer halt()
	wg.Add(1)
	collections, collected := 0, int64(0)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			st, err := e.st.Collect(ctx, 3*time.Second, 0)
			if err != nil {
				t.Errorf("collect: %v", err)
				return
			}
			collections++
			collected += st.Files
		}
	}()
	kept := map[string][]byte{}
	for i := range 60 {
		version := fmt.Sprintf("1.%d", i)
		data := bundle(i)
		if err := e.storeBundle(t, version, data, 512); err != nil {
			t.Fatalf("release %s: %v", version, err)
		}
		if i%3 == 0 {
			if err := e.st.DeleteRelease(ctx, e.user, "acme", "", version); err != nil {
				t.Fatalf("delete %s: %v", version, err)
			}
			continue
		}
		kept[version] = data
		for v := range kept {
			got := e.download(t, v)
			if !bytes.Equal(got["~/vendor.js"], shared) {
				t.Fatalf("after release %s, %s's vendor.js downloads as %d bytes", version, v, len(got["~/vendor.js"]))
			}
		}
	}
	halt()
	t.Logf("%d collections ran beside 60 assemblies and 20 deletes; %d files were collected meanwhile", collections, collected)
	for v, data := range kept {
		zr, _ := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		got := e.download(t, v)
		for _, zf := range zr.File {
			rc, _ := zf.Open()
			want, _ := io.ReadAll(rc)
			if !bytes.Equal(got["~/"+zf.Name], want) {
				t.Errorf("%s %s changed", v, zf.Name)
			}
		}
	}
	if _, err := e.st.Collect(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}
	for what, q := range map[string]string{
		"files nothing names":     `SELECT count(*) FROM files f WHERE NOT EXISTS (SELECT 1 FROM release_files rf WHERE rf.file_id = f.id)`,
		"ownerships no file uses": `SELECT count(*) FROM blob_owners o WHERE NOT EXISTS (SELECT 1 FROM file_blobs fb WHERE fb.organization_id = o.organization_id AND fb.sha1 = o.sha1)`,
		"blobs nobody owns":       `SELECT count(*) FROM blobs b WHERE NOT EXISTS (SELECT 1 FROM blob_owners o WHERE o.sha1 = b.sha1)`,
		"bytes without a blob":    `SELECT count(*) FROM blob_data d WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.sha1 = d.key)`,
	} {
		if n := storetest.Count(t, e.db, q); n != 0 {
			t.Errorf("%d %s after the last collection", n, what)
		}
	}
}

// TestGraceAndRetention: a chunk uploaded and not yet assembled survives a
// collection whose grace is longer than its age; a release file whose file
// nobody used for the retention is expired, and the rest stays.
func TestGraceAndRetention(t *testing.T) {
	ctx := context.Background()
	e := newCollectEnv(t)
	chunk := []byte("a chunk waiting for its assembly")
	if err := e.st.SaveChunks(ctx, e.user, "acme", saveAll(chunked(chunk, 1000))); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Collect(ctx, time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum(chunk)
	if missing, _ := e.st.MissingChunks(ctx, e.org, []string{hex.EncodeToString(sum[:])}); len(missing) != 0 {
		t.Error("a chunk an hour's grace should keep was collected")
	}

	for _, v := range []string{"old", "new"} {
		if err := e.storeBundle(t, v, bundleOf(t, map[string][]byte{v + ".js": []byte(v)}, zip.Store), 1000); err != nil {
			t.Fatal(err)
		}
	}
	storetest.Exec(t, e.db, `UPDATE files SET date_used = now() - interval '40 days'
		WHERE id IN (SELECT rf.file_id FROM release_files rf JOIN releases r ON r.id = rf.release_id WHERE r.version = 'old')`)
	st, err := e.st.Collect(ctx, 0, 30*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if st.Expired != 1 {
		t.Errorf("%d expired, want the old release's file", st.Expired)
	}
	if got := e.download(t, "old"); len(got) != 0 {
		t.Errorf("the old release still has %d files", len(got))
	}
	if got := e.download(t, "new"); !bytes.Equal(got["~/new.js"], []byte("new")) {
		t.Errorf("the new release's file: %q", got["~/new.js"])
	}
}

// TestCollectorKeepsDebugFiles stores a debug file and a file nothing uses,
// and collects with no grace: the unused file goes, the debug file's file
// and blob stay while the debug file exists, and go once it is deleted.
func TestCollectorKeepsDebugFiles(t *testing.T) {
	ctx := context.Background()
	e := newCollectEnv(t)
	sc := store.ProjectScope{UserID: e.user, OrgSlug: "acme", ProjectSlug: "web"}
	content := "MODULE Linux x86_64 33221100554477668899AABBCCDDEEFF1 hello\n"
	difs, err := e.st.CreateDebugFiles(ctx, sc, []store.DebugUpload{{Content: bytes.NewReader([]byte(content)), Objects: []store.DebugFileObject{{
		DebugID: "33221100-5544-7766-8899-aabbccddeeff-1", ObjectName: "hello", CPUName: "x86_64", FileFormat: "breakpad"}}}}, true)
	if err != nil || len(difs) != 1 {
		t.Fatalf("CreateDebugFiles: %v %v", difs, err)
	}
	if _, err := e.st.CreateFileFromReader(ctx, e.org, bytes.NewReader([]byte("unused"))); err != nil {
		t.Fatal(err)
	}
	st, err := e.st.Collect(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 1 || st.Blobs != 1 {
		t.Fatalf("collected %+v while the debug file exists, want the unused file and its blob", st)
	}
	var buf bytes.Buffer
	if err := e.st.WriteDebugFile(ctx, sc, difs[0].ID, func(store.DebugFile) io.Writer { return &buf }); err != nil || buf.String() != content {
		t.Fatalf("download after the collection: %q %v", buf.String(), err)
	}
	if err := e.st.DeleteDebugFile(ctx, sc, difs[0].ID); err != nil {
		t.Fatal(err)
	}
	if st, err = e.st.Collect(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}
	if st.Files != 1 || st.Blobs != 1 {
		t.Errorf("collected %+v after the delete, want the file and its blob", st)
	}
}

// TestProguardReleasesGoWithTheirMapping: the releases of a ProGuard
// mapping stay while a debug file of its UUID does (a new upload of the
// mapping replaces the old file and keeps them), and go with the last one,
// expired by the retention.
func TestProguardReleasesGoWithTheirMapping(t *testing.T) {
	ctx := context.Background()
	e := newCollectEnv(t)
	sc := store.ProjectScope{UserID: e.user, OrgSlug: "acme", ProjectSlug: "web"}
	const uuid = "12a2e4ee-8705-5f91-8369-3a5b10a48225"
	if err := e.st.AssociateProguardRelease(ctx, sc, "app@1.0", uuid); !errors.Is(err, store.ErrNoProguardMapping) {
		t.Fatalf("an association without the mapping: %v", err)
	}
	upload := func(content string) {
		t.Helper()
		difs, err := e.st.CreateDebugFiles(ctx, sc, []store.DebugUpload{{Content: strings.NewReader(content), Objects: []store.DebugFileObject{{
			DebugID: uuid, ObjectName: "proguard-mapping", CPUName: "any", FileFormat: "proguard"}}}}, true)
		if err != nil || len(difs) != 1 {
			t.Fatalf("CreateDebugFiles: %v %v", difs, err)
		}
	}
	releases := func() []string {
		t.Helper()
		names, err := e.st.ProguardReleases(ctx, sc, uuid)
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	upload("a.A -> a:\n")
	if err := e.st.AssociateProguardRelease(ctx, sc, "app@1.0", uuid); err != nil {
		t.Fatal(err)
	}
	if err := e.st.AssociateProguardRelease(ctx, sc, "app@1.0", uuid); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("the same association again: %v", err)
	}
	upload("b.B -> b:\n")
	if got := releases(); !slices.Equal(got, []string{"app@1.0"}) {
		t.Fatalf("releases after a new upload of the mapping: %v", got)
	}
	storetest.Exec(t, e.db, `UPDATE files SET date_used = now() - interval '40 days'
		WHERE id IN (SELECT file_id FROM debug_files)`)
	if st, err := e.st.Collect(ctx, 0, 30*24*time.Hour); err != nil || st.Expired == 0 {
		t.Fatalf("the collection: %+v %v", st, err)
	}
	if got := releases(); len(got) != 0 {
		t.Errorf("releases after the mapping expired: %v", got)
	}
}

// TestReconfirmedFilesSurviveRetention ages a debug file and a bundle past
// FILE_RETENTION_DAYS, then has each confirmed by the request that would
// upload it again (files/dsyms/, difs/assemble/ answered ok,
// artifactbundle/assemble/): each must count as used and survive the next
// collection. They kept their old date and were removed the next day.
func TestReconfirmedFilesSurviveRetention(t *testing.T) {
	ctx := context.Background()
	e := newCollectEnv(t)
	sc := store.ProjectScope{UserID: e.user, OrgSlug: "acme", ProjectSlug: "web"}
	const day = 24 * time.Hour
	age := func() {
		storetest.Exec(t, e.db, `UPDATE files SET date_used = now() - interval '2 days'`)
	}
	collect := func(what string) {
		t.Helper()
		if _, err := e.st.Collect(ctx, 0, day); err != nil {
			t.Fatal(err)
		}
		if n := storetest.Count(t, e.db, `SELECT count(*) FROM debug_files`); n != 1 {
			t.Errorf("after %s: %d debug files, want 1", what, n)
		}
		if got := e.download(t, "1.0"); !bytes.Equal(got["~/app.js"], []byte("app")) {
			t.Errorf("after %s: the bundle's file is %q", what, got["~/app.js"])
		}
	}

	content := []byte("MODULE Linux x86_64 77221100554477668899AABBCCDDEEFF0 hello\nPUBLIC 1130 0 main\n")
	upload := func() {
		t.Helper()
		difs, err := e.st.CreateDebugFiles(ctx, sc, []store.DebugUpload{{Content: bytes.NewReader(content), Objects: []store.DebugFileObject{{
			DebugID: "77221100-5544-7766-8899-aabbccddeeff", ObjectName: "hello", CPUName: "x86_64", FileFormat: "breakpad"}}}}, true)
		if err != nil || len(difs) != 1 {
			t.Fatalf("CreateDebugFiles: %v %v", difs, err)
		}
	}
	upload()
	bundle := bundleOf(t, map[string][]byte{"app.js": []byte("app")}, zip.Store)
	if err := e.storeBundle(t, "1.0", bundle, 1000); err != nil {
		t.Fatal(err)
	}
	bundleSum := sha1.Sum(bundle)
	reassemble := func() {
		t.Helper()
		chunks := chunked(bundle, 1000)
		names := make([]string, len(chunks))
		for i, c := range chunks {
			names[i] = c.SHA1
		}
		_, err := e.st.AssembleArtifactBundle(ctx, e.user, "acme", store.AssemblyRequest{
			Checksum: hex.EncodeToString(bundleSum[:]), Chunks: names, Projects: []string{"web"}})
		if err != nil {
			t.Fatal(err)
		}
	}

	age()
	upload()
	reassemble()
	collect("uploading both again")

	age()
	contentSum := sha1.Sum(content)
	sts, err := e.st.AssembleDifs(ctx, sc, []store.DifRequest{{Checksum: hex.EncodeToString(contentSum[:]), Name: "hello.sym",
		Chunks: []string{hex.EncodeToString(contentSum[:])}}}, false)
	if err != nil || len(sts) != 1 || sts[0].State != "ok" {
		t.Fatalf("difs/assemble of a stored file: %+v %v, want ok", sts, err)
	}
	reassemble()
	collect("an ok from difs/assemble and the bundle's assembly asked again")
}

// TestExpiryKeepsAFileBeingUsed: a debug file whose file an upload is
// marking used right now (its transaction holds the files row) is not
// expired by a collection that runs meanwhile, nor once the use commits.
func TestExpiryKeepsAFileBeingUsed(t *testing.T) {
	ctx := context.Background()
	e := newCollectEnv(t)
	sc := store.ProjectScope{UserID: e.user, OrgSlug: "acme", ProjectSlug: "web"}
	content := []byte("MODULE Linux x86_64 78221100554477668899AABBCCDDEEFF0 hello\nPUBLIC 1130 0 main\n")
	if _, err := e.st.CreateDebugFiles(ctx, sc, []store.DebugUpload{{Content: bytes.NewReader(content), Objects: []store.DebugFileObject{{
		DebugID: "78221100-5544-7766-8899-aabbccddeeff", ObjectName: "hello", CPUName: "x86_64", FileFormat: "breakpad"}}}}, true); err != nil {
		t.Fatal(err)
	}
	storetest.Exec(t, e.db, `UPDATE files SET date_used = now() - interval '2 days'`)
	conn, err := pgx.Connect(ctx, e.db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE files SET date_used = now()`); err != nil {
		t.Fatal(err)
	}
	// The collection runs while the use is not committed: it must neither
	// wait for it nor remove the file.
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := e.st.Collect(cctx, 0, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if n := storetest.Count(t, e.db, `SELECT count(*) FROM debug_files`); n != 1 {
		t.Fatalf("%d debug files while its file was being used, want 1", n)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Collect(ctx, 0, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if n := storetest.Count(t, e.db, `SELECT count(*) FROM debug_files`); n != 1 {
		t.Fatalf("%d debug files after the use committed, want 1", n)
	}
}
