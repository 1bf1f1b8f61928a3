package main

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// assembleBundle uploads b to acme and assembles it for its release, and
// waits until the assembly is done.
func assembleBundle(t *testing.T, s *errataServer, b bundle, version string) []string {
	t.Helper()
	chunks := uploadChunks(t, s, b.data, 256<<10)
	body := map[string]any{"checksum": sha1Hex(b.data), "chunks": chunks, "projects": []string{"web"}, "version": version}
	waitFor(t, 30*time.Second, "the assembly of "+version, func() bool {
		var st struct{ State string }
		status, out := s.api(t, "POST", "/api/0/organizations/acme/artifactbundle/assemble/", body)
		if json.Unmarshal(out, &st); status != http.StatusOK || st.State == "error" {
			t.Fatalf("assemble %s: %d %s", version, status, out)
		}
		return st.State == "ok"
	})
	return chunks
}

// downloadAll checks that every file of release version downloads as the
// bundle b has it.
func downloadAll(t *testing.T, s *errataServer, version string, b bundle) {
	t.Helper()
	var files []e2eFile
	if status := s.getJSON(t, "/api/0/organizations/acme/releases/"+version+"/files/?limit=100", &files); status != http.StatusOK || len(files) != len(b.files) {
		t.Fatalf("list files of %s: %d, %d files, want %d", version, status, len(files), len(b.files))
	}
	for _, f := range files {
		status, body := s.api(t, "GET", "/api/0/organizations/acme/releases/"+version+"/files/"+f.ID+"/?download=1", nil)
		if status != http.StatusOK || !bytes.Equal(body, b.files[f.Name]) {
			t.Errorf("download %s of %s: %d, %d bytes, want its %d bytes", f.Name, version, status, len(body), len(b.files[f.Name]))
		}
	}
}

// TestKilledDuringCollectionLosesNothing kills the server while its
// collector removes blobs, restarts it, and checks that the collection
// finishes, that every file of the release that stays downloads byte for
// byte, and that no blob row lost its bytes nor bytes their row.
func TestKilledDuringCollectionLosesNothing(t *testing.T) {
	t.Parallel()
	s := newErrata(t, map[string]string{"JOB_LEASE": "2s", "LOG_LEVEL": "warn", "BLOB_GRACE": "1ms"})
	s.spawn(t)
	setupAcme(t, s)
	kept, gone := newBundle(t, "1.0.0", 6, 300<<10), newBundle(t, "2.0.0", 6, 300<<10)
	assembleBundle(t, s, kept, "1.0.0")
	assembleBundle(t, s, gone, "2.0.0")
	if status, _ := s.api(t, "DELETE", "/api/0/organizations/acme/releases/2.0.0/", nil); status != http.StatusNoContent {
		t.Fatalf("delete 2.0.0: %d", status)
	}

	// Hold the collector at its first blob: with blob_data locked, it
	// waits in the transaction that removes the blob.
	ctx := context.Background()
	lock, err := pgx.Connect(ctx, s.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(ctx)
	tx, err := lock.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	if _, err := tx.Exec(ctx, `LOCK TABLE blob_data IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db(t).Exec(ctx, `INSERT INTO jobs (kind, payload) VALUES ('collect', '{}')`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the collector to wait for its lock", func() bool {
		return s.count(t, `SELECT count(*) FROM jobs WHERE kind = 'collect' AND state = 'running'`) == 1 &&
			s.count(t, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND application_name = 'errata' AND wait_event_type = 'Lock'`) == 1
	})
	s.kill(t)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	s.spawn(t)
	waitFor(t, 30*time.Second, "the collection to finish after the restart", func() bool {
		return s.count(t, `SELECT count(*) FROM jobs WHERE kind = 'collect' AND state IN ('queued', 'running')`) == 0
	})
	if n := s.count(t, `SELECT count(*) FROM jobs WHERE kind = 'collect' AND state = 'error'`); n != 0 {
		t.Errorf("%d collections ended in error", n)
	}
	downloadAll(t, s, "1.0.0", kept)
	for what, q := range map[string]string{
		"blobs without bytes":  `SELECT count(*) FROM blobs b WHERE NOT EXISTS (SELECT 1 FROM blob_data d WHERE d.key = b.sha1)`,
		"bytes without a blob": `SELECT count(*) FROM blob_data d WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.sha1 = d.key)`,
		"blobs nobody owns":    `SELECT count(*) FROM blobs b WHERE NOT EXISTS (SELECT 1 FROM blob_owners o WHERE o.sha1 = b.sha1)`,
		"files nothing names":  `SELECT count(*) FROM files f WHERE NOT EXISTS (SELECT 1 FROM release_files rf WHERE rf.file_id = f.id)`,
		"ownerships no file uses": `SELECT count(*) FROM blob_owners o WHERE NOT EXISTS (SELECT 1 FROM file_blobs fb
			WHERE fb.organization_id = o.organization_id AND fb.sha1 = o.sha1)`,
	} {
		if n := s.count(t, q); n != 0 {
			t.Errorf("%d %s after the collection", n, what)
		}
	}
}

// TestStorageQuota sets ORG_STORAGE_QUOTA: an upload that would take the
// organization over it is refused with a clear 403 and stores nothing, on
// every path that stores bytes (chunks, release files, files/dsyms/), and
// chunks the organization already owns are still accepted.
func TestStorageQuota(t *testing.T) {
	t.Parallel()
	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn", "ORG_STORAGE_QUOTA": "1000", "MAX_BUNDLE_SIZE": "65536"})
	setupAcme(t, s)
	post := func(path, field, filename string, content []byte) (int, string) {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		w, _ := mw.CreateFormFile(field, filename)
		w.Write(content)
		mw.Close()
		r := send(http.DefaultClient, s, "POST", path, mw.FormDataContentType(), &body)
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.status, string(r.body)
	}
	upload := func(chunk []byte) (int, string) {
		return post("/api/0/organizations/acme/chunk-upload/", "file", sha1Hex(chunk), chunk)
	}
	const quotaBody = `{"detail":"The organization's storage quota is exceeded"}` + "\n"
	dsymsZip := func(name string, method uint16, content []byte) []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(content)
		zw.Close()
		return buf.Bytes()
	}
	stored := func() (blobs, files int) {
		return s.count(t, `SELECT count(*) FROM blob_owners`), s.count(t, `SELECT count(*) FROM files`)
	}
	first, second := bytes.Repeat([]byte("a"), 600), bytes.Repeat([]byte("b"), 600)
	if status, body := upload(first); status != http.StatusOK {
		t.Fatalf("600 bytes under a quota of 1000: %d %s", status, body)
	}
	status, body := upload(second)
	if want := `{"detail":"The organization's storage quota is exceeded"}`; status != http.StatusForbidden || body != want+"\n" {
		t.Errorf("600 more bytes: %d %s, want 403 %s", status, body, want)
	}
	if n := s.count(t, `SELECT count(*) FROM blob_owners`); n != 1 {
		t.Errorf("%d blobs owned after the refused upload, want 1", n)
	}
	if status, body := upload(first); status != http.StatusOK {
		t.Errorf("a chunk acme owns, again: %d %s, want 200", status, body)
	}

	// A release file and a debug file of 600 new bytes: refused alike,
	// and nothing of them stored (each stored 64 MiB past a quota of
	// 8 MiB before).
	if status, body := s.api(t, "POST", "/api/0/organizations/acme/releases/", map[string]any{"version": "1.0", "projects": []string{"web"}}); status != http.StatusCreated {
		t.Fatalf("create release: %d %s", status, body)
	}
	blobs, files := stored()
	status, body = post("/api/0/organizations/acme/releases/1.0/files/", "file", "app.js", second)
	if status != http.StatusForbidden || body != quotaBody {
		t.Errorf("a release file of 600 more bytes: %d %s, want 403 %s", status, body, quotaBody)
	}
	sym := append([]byte("MODULE Linux x86_64 66221100554477668899AABBCCDDEEFF0 hello\nPUBLIC 1130 0 main\n"), bytes.Repeat([]byte("\n"), 600)...)
	status, body = post("/api/0/projects/acme/web/files/dsyms/", "file", "symbols.zip", dsymsZip("hello.sym", zip.Store, sym))
	if status != http.StatusForbidden || body != quotaBody {
		t.Errorf("a debug file of 600 more bytes: %d %s, want 403 %s", status, body, quotaBody)
	}
	// A member that inflates past MAX_BUNDLE_SIZE is 413 before anything
	// is stored (a 66 KB zip inflated to 1 GiB before).
	status, body = post("/api/0/projects/acme/web/files/dsyms/", "file", "symbols.zip", dsymsZip("big.sym", zip.Deflate, make([]byte, 1<<20)))
	if status != http.StatusRequestEntityTooLarge {
		t.Errorf("a member that inflates to 1 MiB with MAX_BUNDLE_SIZE=65536: %d %s, want 413", status, body)
	}
	if b, f := stored(); b != blobs || f != files {
		t.Errorf("after the refused uploads: %d blobs owned and %d files, want %d and %d", b, f, blobs, files)
	}
}

// procStatus reads a field of /proc/pid/status, in bytes.
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), field+":")
	if !ok {
		t.Fatalf("/proc/%d/status has no %s", pid, field)
	}
	kb, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return kb << 10
}

// TestZipDirectoryBomb uploads, in about 30 KB, a bundle of 248 MiB whose
// end record describes a central directory of millions of records: 31
// times one gzipped chunk of 8 MiB of directory records, then the end
// record. The assembly must end in error before reading the directory,
// and the server's peak RSS must stay far below what the directory would
// cost (1.35 GB before the check): it may grow by 64 MiB during the
// assembly. The test measures the server binary as shipped
// (spawnShipped), whose RSS grew by less than 1 MB there: a margin of
// more than 60 times.
func TestZipDirectoryBomb(t *testing.T) {
	t.Parallel()
	s := newErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	s.spawnShipped(t)
	setupAcme(t, s)
	const chunkSize, copies = 8 << 20, 31
	record := make([]byte, 46)
	binary.LittleEndian.PutUint32(record, 0x02014b50)
	bomb := bytes.Repeat(record, chunkSize/46+1)[:chunkSize]
	eocd := make([]byte, 22)
	binary.LittleEndian.PutUint32(eocd, 0x06054b50)
	// It counts 5000 records, under the member limit, in a directory of
	// 248 MiB: millions of records that archive/zip would build entries of.
	binary.LittleEndian.PutUint16(eocd[8:], 5000)
	binary.LittleEndian.PutUint16(eocd[10:], 5000)
	binary.LittleEndian.PutUint32(eocd[12:], chunkSize*copies)

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, c := range [][]byte{bomb, eocd} {
		w, _ := mw.CreateFormFile("file_gzip", sha1Hex(c))
		zw := gzip.NewWriter(w)
		zw.Write(c)
		zw.Close()
	}
	mw.Close()
	t.Logf("the upload: %d bytes", body.Len())
	r := send(http.DefaultClient, s, "POST", "/api/0/organizations/acme/chunk-upload/", mw.FormDataContentType(), &body)
	if r.err != nil || r.status != http.StatusOK {
		t.Fatalf("chunk upload: %s", r)
	}

	h := sha1.New()
	var chunks []string
	for range copies {
		h.Write(bomb)
		chunks = append(chunks, sha1Hex(bomb))
	}
	h.Write(eocd)
	chunks = append(chunks, sha1Hex(eocd))
	assemble := map[string]any{"checksum": hex.EncodeToString(h.Sum(nil)), "chunks": chunks, "projects": []string{"web"}, "version": "1.0.0"}

	pid := s.proc.Process.Pid
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Fatalf("reset the peak RSS: %v", err)
	}
	before := procStatus(t, pid, "VmRSS")
	var st struct {
		State  string
		Detail *string
	}
	waitFor(t, 60*time.Second, "the assembly of the bomb to end", func() bool {
		status, out := s.api(t, "POST", "/api/0/organizations/acme/artifactbundle/assemble/", assemble)
		if json.Unmarshal(out, &st); status != http.StatusOK {
			t.Fatalf("assemble: %d %s", status, out)
		}
		return st.State == "error" || st.State == "ok"
	})
	peak := procStatus(t, pid, "VmHWM")
	t.Logf("server RSS before the assembly %.1f MB, peak during it %.1f MB", float64(before)/1e6, float64(peak)/1e6)
	if st.State != "error" || st.Detail == nil || !strings.Contains(*st.Detail, "zip directory") {
		t.Errorf("the bomb's assembly: %s %q, want an error about the zip directory", st.State, deref(st.Detail))
	}
	if peak-before > 64<<20 {
		t.Errorf("the server's RSS grew by %.1f MB during the assembly, want under 64 MiB", float64(peak-before)/1e6)
	}
	if n := s.count(t, `SELECT count(*) FROM files`); n != 0 {
		t.Errorf("%d files stored for the bomb", n)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestConfirmedFilesOutliveRetention runs the server's collector every
// 300 ms with FILE_RETENTION_DAYS=1 and ages two debug files by two days.
// One is uploaded again, one is confirmed by difs/assemble (ok): both
// count as used and survive, while a third, aged and left alone, is
// removed, which shows that collections ran. Before, the server answered
// ok and the next collection removed the file.
func TestConfirmedFilesOutliveRetention(t *testing.T) {
	t.Parallel()
	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn", "FILE_RETENTION_DAYS": "1", "COLLECT_INTERVAL": "300ms"})
	setupAcme(t, s)
	sym := func(module string) []byte {
		return []byte("MODULE Linux x86_64 " + module + " hello\nPUBLIC 1130 0 main\n")
	}
	reuploaded, confirmed, left := sym("91221100554477668899AABBCCDDEEFF0"), sym("92221100554477668899AABBCCDDEEFF0"), sym("93221100554477668899AABBCCDDEEFF0")
	for _, f := range [][]byte{reuploaded, confirmed, left} {
		if r := postDsyms(t, s, zipOf(t, "hello.sym", f)); r.status != http.StatusCreated {
			t.Fatalf("upload: %s", r)
		}
	}
	s.db(t).Exec(t.Context(), `UPDATE files SET date_used = now() - interval '2 days'`) //nolint:errcheck // checked below
	if n := s.count(t, `SELECT count(*) FROM files WHERE date_used > now() - interval '1 day'`); n != 0 {
		t.Fatalf("%d files still young after ageing them", n)
	}
	if r := postDsyms(t, s, zipOf(t, "hello.sym", reuploaded)); r.status != http.StatusCreated {
		t.Fatalf("the upload again: %s", r)
	}
	if state, detail := assembleDif(t, s, "hello.sym", confirmed); state != "ok" {
		t.Fatalf("difs/assemble of a stored file: %s %s, want ok", state, detail)
	}
	checksums := func() []string {
		var got []string
		rows, err := s.db(t).Query(t.Context(), `SELECT checksum FROM debug_files ORDER BY checksum`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var c string
			rows.Scan(&c)
			got = append(got, c)
		}
		return got
	}
	waitFor(t, 20*time.Second, "the collector to expire the file left alone", func() bool {
		return !slices.Contains(checksums(), sha1Hex(left))
	})
	want := []string{sha1Hex(reuploaded), sha1Hex(confirmed)}
	slices.Sort(want)
	if got := checksums(); !slices.Equal(got, want) {
		t.Errorf("debug files after the collections: %v, want the two confirmed %v", got, want)
	}
}
