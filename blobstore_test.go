package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"errata/store"
	"errata/store/s3"
	"errata/store/s3/s3test"
)

// s3Errata starts errata with its blobs in a bucket of a real versitygw,
// under the prefix blobs/.
func s3Errata(t *testing.T, env map[string]string) (*errataServer, *s3test.Server, *s3.Client) {
	t.Helper()
	srv := s3test.Start(t)
	c := srv.Client("errata")
	e := map[string]string{
		"BLOB_STORE":           "s3://errata/blobs",
		"S3_ENDPOINT":          srv.Endpoint(),
		"S3_REGION":            "us-east-1",
		"S3_ACCESS_KEY_ID":     srv.Key,
		"S3_SECRET_ACCESS_KEY": srv.Secret,
		"LOG_LEVEL":            "warn",
	}
	for k, v := range env {
		e[k] = v
	}
	return startErrata(t, e), srv, c
}

// objectsAgreeWithRows checks that the bucket holds one object per blob
// row, under the prefix, and that PostgreSQL holds none of the bytes.
func objectsAgreeWithRows(t *testing.T, s *errataServer, c *s3.Client) int {
	t.Helper()
	objects := 0
	err := c.List(context.Background(), "blobs/", "", func(key string, _ int64) error {
		if key != "blobs/errata-deployment" { // the deployment's claim on the prefix
			objects++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list objects: %v", err)
	}
	rows := s.count(t, `SELECT count(*) FROM blobs`)
	if objects != rows {
		t.Errorf("%d objects for %d blob rows", objects, rows)
	}
	if n := s.count(t, `SELECT count(*) FROM blob_data`); n != 0 {
		t.Errorf("%d blobs' bytes in PostgreSQL, want none with BLOB_STORE=s3", n)
	}
	return rows
}

// TestSentryCLIWithObjectStore uploads source maps with sentry-cli 2 and 3
// to errata keeping its blobs in S3, downloads them, and collects them.
func TestSentryCLIWithObjectStore(t *testing.T) {
	t.Parallel()
	s, _, c := s3Errata(t, nil)
	s.token = s.user(t, "dev@example.com", "project:releases,project:read,project:write,project:admin,org:read")
	s.cli(t, "admin", "create-org", "--slug", "acme", "--owner", "dev@example.com")
	s.cli(t, "admin", "create-project", "--org", "acme", "--slug", "web")
	want := []string{"~/app.min.js", "~/app.min.js.map"}
	for _, tc := range []struct{ env, version string }{{"SENTRY_CLI_2", "1.0.0"}, {"SENTRY_CLI_3", "2.0.0"}} {
		t.Run(tc.env, func(t *testing.T) {
			cli := newSentryCLI(t, tc.env, s, "acme").in(t.TempDir())
			writeApp(t, cli.home)
			cli.run(t, "sourcemaps", "upload", "--release", tc.version, ".").expect(t, 0)
			for _, f := range waitForFiles(t, s, tc.version, want) {
				status, body := s.api(t, "GET", "/api/0/organizations/acme/releases/"+tc.version+"/files/"+f.ID+"/?download=1", nil)
				onDisk, err := os.ReadFile(filepath.Join(cli.home, f.Name[2:]))
				if err != nil {
					t.Fatal(err)
				}
				if status != http.StatusOK || string(body) != string(onDisk) {
					t.Errorf("download %s: %d, %d bytes; want 200 and the %d bytes uploaded", f.Name, status, len(body), len(onDisk))
				}
			}
		})
	}
	if n := objectsAgreeWithRows(t, s, c); n == 0 {
		t.Fatal("no blob stored")
	}
	for _, v := range []string{"1.0.0", "2.0.0"} {
		if status, body := s.api(t, "DELETE", "/api/0/organizations/acme/releases/"+v+"/", nil); status != http.StatusNoContent {
			t.Fatalf("delete release %s: %d %s", v, status, body)
		}
	}
	out := s.cli(t, "admin", "collect", "--grace", "0s")
	t.Log(out)
	objectsAgreeWithRows(t, s, c)
}

// TestObjectStoreOutage stops the object store under a running errata:
// chunk uploads and downloads answer 503 (never 500), nothing
// acknowledged is lost, an assembly asked meanwhile completes once it is
// back, and the objects and the rows agree afterwards.
func TestObjectStoreOutage(t *testing.T) {
	s, srv, c := s3Errata(t, map[string]string{"LOG_LEVEL": "error"})
	setupAcme(t, s)
	client := &http.Client{Timeout: 30 * time.Second}
	first := newBundle(t, "1.0.0", 3, 40<<10)
	firstChunks := uploadChunks(t, s, first.data, 32<<10)
	assemble := func(b bundle, chunks []string, version string) (int, string) {
		status, body := s.api(t, "POST", "/api/0/organizations/acme/artifactbundle/assemble/",
			map[string]any{"checksum": sha1Hex(b.data), "chunks": chunks, "projects": []string{"web"}, "version": version})
		var st struct{ State string }
		json.Unmarshal(body, &st)
		return status, st.State
	}
	assemble(first, firstChunks, "1.0.0")
	waitFor(t, 20*time.Second, "the first assembly", func() bool {
		_, state := assemble(first, firstChunks, "1.0.0")
		return state == "ok"
	})
	var files []e2eFile
	if status := s.getJSON(t, "/api/0/organizations/acme/releases/1.0.0/files/", &files); status != http.StatusOK || len(files) != 3 {
		t.Fatalf("files of 1.0.0: %d %v", status, files)
	}
	download := func(f e2eFile) result {
		return send(client, s, "GET", "/api/0/organizations/acme/releases/1.0.0/files/"+f.ID+"/?download=1", "", nil)
	}
	// The chunks of a second bundle are uploaded before the outage, its
	// assembly asked during it.
	second := newBundle(t, "2.0.0", 2, 30<<10)
	secondChunks := uploadChunks(t, s, second.data, 32<<10)
	blobsBefore := objectsAgreeWithRows(t, s, c)

	srv.Stop()
	more := newBundle(t, "3.0.0", 1, 20<<10)
	t.Run("a chunk upload answers 503", func(t *testing.T) {
		start := time.Now()
		r := sendChunks(client, s, more.data)
		if r.status != http.StatusServiceUnavailable || string(r.body) != unavailableBody+"\n" && string(r.body) != unavailableBody {
			t.Errorf("chunk upload: %s, want 503 %s", r, unavailableBody)
		}
		if d := time.Since(start); d > maxOutageLatency {
			t.Errorf("chunk upload took %s", d)
		}
	})
	t.Run("a download answers 503", func(t *testing.T) {
		r := download(files[0])
		if r.status != http.StatusServiceUnavailable {
			t.Errorf("download: %s, want 503", r)
		}
	})
	t.Run("an assembly asked meanwhile is no 500", func(t *testing.T) {
		status, state := assemble(second, secondChunks, "2.0.0")
		if status >= 500 && status != http.StatusServiceUnavailable {
			t.Errorf("assemble: %d %s", status, state)
		}
	})
	srv.Restart()

	waitFor(t, 30*time.Second, "the second assembly once the object store is back", func() bool {
		_, state := assemble(second, secondChunks, "2.0.0")
		return state == "ok"
	})
	var secondFiles []struct{ Name, SHA1 string }
	if status := s.getJSON(t, "/api/0/organizations/acme/releases/2.0.0/files/", &secondFiles); status != http.StatusOK || len(secondFiles) != len(second.files) {
		t.Errorf("files of 2.0.0: %d %v", status, secondFiles)
	}
	for _, f := range secondFiles {
		if f.SHA1 != sha1Hex(second.files[f.Name]) {
			t.Errorf("file %s of 2.0.0 has SHA-1 %s, want %s", f.Name, f.SHA1, sha1Hex(second.files[f.Name]))
		}
	}
	for _, f := range files {
		r := download(f)
		if r.status != http.StatusOK || sha1Hex(r.body) != sha1Hex(first.files[f.Name]) {
			t.Errorf("download %s after the outage: %s", f.Name, r)
		}
	}
	if r := sendChunks(client, s, more.data); r.status != http.StatusOK {
		t.Errorf("chunk upload after the outage: %s", r)
	}
	if n := objectsAgreeWithRows(t, s, c); n <= blobsBefore {
		t.Errorf("%d blobs after the outage, want more than the %d before", n, blobsBefore)
	}
}

// sendChunks posts data as one chunk to acme's chunk upload.
func sendChunks(client *http.Client, s *errataServer, data []byte) result {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		w, _ := mw.CreateFormFile("file", sha1Hex(data))
		w.Write(data)
		mw.Close()
		pw.Close()
	}()
	return send(client, s, "POST", "/api/0/organizations/acme/chunk-upload/", mw.FormDataContentType(), pr)
}

// TestMigrateBlobsCommand moves the blobs of a running deployment from
// PostgreSQL to S3 with `errata admin migrate-blobs`, serves them from
// there, and moves them back.
func TestMigrateBlobsCommand(t *testing.T) {
	t.Parallel()
	s := startErrata(t, map[string]string{"LOG_LEVEL": "warn"})
	setupAcme(t, s)
	b := newBundle(t, "1.0.0", 3, 30<<10)
	chunks := uploadChunks(t, s, b.data, 32<<10)
	assemble := map[string]any{"checksum": sha1Hex(b.data), "chunks": chunks, "projects": []string{"web"}, "version": "1.0.0"}
	waitFor(t, 20*time.Second, "the assembly", func() bool {
		var st struct{ State string }
		_, body := s.api(t, "POST", "/api/0/organizations/acme/artifactbundle/assemble/", assemble)
		json.Unmarshal(body, &st)
		return st.State == "ok"
	})
	blobs := s.count(t, `SELECT count(*) FROM blobs`)
	checkDownloads := func(t *testing.T) {
		t.Helper()
		var files []e2eFile
		if status := s.getJSON(t, "/api/0/organizations/acme/releases/1.0.0/files/", &files); status != http.StatusOK || len(files) != len(b.files) {
			t.Fatalf("files: %d %v", status, files)
		}
		for _, f := range files {
			status, body := s.api(t, "GET", "/api/0/organizations/acme/releases/1.0.0/files/"+f.ID+"/?download=1", nil)
			if status != http.StatusOK || sha1Hex(body) != sha1Hex(b.files[f.Name]) {
				t.Errorf("download %s: %d, %d bytes", f.Name, status, len(body))
			}
		}
	}
	srv := s3test.Start(t)
	c := srv.Client("moved")
	for k, v := range map[string]string{
		"S3_ENDPOINT": srv.Endpoint(), "S3_ACCESS_KEY_ID": srv.Key, "S3_SECRET_ACCESS_KEY": srv.Secret,
	} {
		s.env[k] = v
	}
	// countObjects counts the objects of blobs (the deployment's claim on
	// the prefix is not one).
	countObjects := func() int {
		n := 0
		err := c.List(context.Background(), "", "", func(key string, _ int64) error {
			if !strings.HasSuffix(key, "/errata-deployment") {
				n++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	out := s.cli(t, "admin", "migrate-blobs", "--to", "s3://moved/errata")
	if !strings.Contains(out, fmt.Sprintf("copied %d blobs", blobs)) || countObjects() != blobs {
		t.Errorf("first run: %q, %d objects; want %d blobs copied", out, countObjects(), blobs)
	}
	// Run again (as after an interruption), now removing the source.
	out = s.cli(t, "admin", "migrate-blobs", "--to", "s3://moved/errata/", "--remove-source")
	if !strings.Contains(out, fmt.Sprintf("copied 0 blobs (0 bytes) to s3://moved/errata/, each checked; %d were there already; %d removed", blobs, blobs)) {
		t.Errorf("second run: %q", out)
	}
	if n := s.count(t, `SELECT count(*) FROM blob_data`); n != 0 {
		t.Errorf("%d blobs' bytes left in PostgreSQL", n)
	}

	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	s.env["BLOB_STORE"] = "s3://moved/errata"
	s.serve(t)
	checkDownloads(t)
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}

	// Where the blobs are, however it is spelled, is refused before
	// anything is removed (s3://moved//errata was taken for another place
	// and --remove-source removed every object).
	for _, to := range []string{"s3://moved/errata", "s3://moved//errata", "s3://moved/errata//"} {
		var stderr strings.Builder
		err := run(context.Background(), []string{"admin", "migrate-blobs", "--to", to, "--remove-source"}, s.getenv, io.Discard, &stderr)
		if err == nil || !strings.Contains(err.Error(), "already") {
			t.Errorf("migrating to %s, where the blobs are: %v", to, err)
		}
		if n := countObjects(); n != blobs {
			t.Fatalf("after migrating to %s: %d objects, want %d", to, n, blobs)
		}
	}
	out = s.cli(t, "admin", "migrate-blobs", "--to", "postgres", "--remove-source")
	if !strings.Contains(out, fmt.Sprintf("copied %d blobs", blobs)) || countObjects() != 0 {
		t.Errorf("back to PostgreSQL: %q, %d objects left", out, countObjects())
	}
	if _, err := c.Stat(context.Background(), "errata/errata-deployment"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the deployment's claim on the prefix, once every blob left it: %v, want it removed", err)
	}
	s.env["BLOB_STORE"] = "postgres"
	s.serve(t)
	checkDownloads(t)
}

// TestServeChecksTheBucket starts errata with a wrong secret and with a
// missing bucket: it refuses to start, and says why without the secret.
func TestServeChecksTheBucket(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	srv.Client("errata")
	// A bucket whose prefix another deployment claimed: its collector and
	// this one's would each remove the other's objects as orphans.
	other := srv.Client("claimed")
	if err := other.Put(context.Background(), "errata-deployment", strings.NewReader("another-deployment"), 18); err != nil {
		t.Fatal(err)
	}
	db := newErrata(t, nil).env["DATABASE_URL"]
	for _, tc := range []struct{ name, bucket, secret, want string }{
		{"a wrong secret", "errata", "wrong-" + srv.Secret[:6], "SignatureDoesNotMatch"},
		{"a missing bucket", "missing", srv.Secret, "NoSuchBucket"},
		{"another deployment's prefix", "claimed", srv.Secret, "belongs to another deployment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{
				"DATABASE_URL": db, "ADDR": "127.0.0.1:0", "SECRET_KEY": testSecretKey, "PUBLIC_URL": "http://errata.test", "LOG_LEVEL": "error",
				"BLOB_STORE": "s3://" + tc.bucket, "S3_ENDPOINT": srv.Endpoint(),
				"S3_ACCESS_KEY_ID": srv.Key, "S3_SECRET_ACCESS_KEY": tc.secret,
			}
			var logs strings.Builder
			err := run(context.Background(), []string{"serve"}, func(k string) string { return env[k] }, &logs, &logs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("serve: %v, want an error with %s", err, tc.want)
			}
			if all := err.Error() + logs.String(); strings.Contains(all, tc.secret) || strings.Contains(all, srv.Secret) {
				t.Errorf("the error or the log shows the secret: %v\n%s", err, logs.String())
			}
		})
	}
}

// TestBadBlobStore starts errata with BLOB_STORE values it cannot use.
func TestBadBlobStore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, value, want string }{
		{"another scheme", "gs://bucket", `BLOB_STORE: "gs://bucket" is not postgres or s3://BUCKET[/PREFIX]`},
		{"a bad bucket", "s3://Bad_Bucket", `BLOB_STORE: bucket name "Bad_Bucket": want lower-case letters, digits, '-' and '.'`},
		{"no keys", "s3://bucket", "BLOB_STORE is s3: S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must both be set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"DATABASE_URL": "postgres://unused", "SECRET_KEY": testSecretKey, "PUBLIC_URL": "http://errata.test", "BLOB_STORE": tc.value}
			err := run(context.Background(), []string{"serve"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
			if err == nil || err.Error() != tc.want {
				t.Errorf("serve: %v, want %s", err, tc.want)
			}
		})
	}
}

// TestServeStartsWithTheObjectStoreDown starts errata while its object
// store does not answer: it starts, uploads answer 503, and they succeed
// once the store is back.
func TestServeStartsWithTheObjectStoreDown(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	srv.Client("errata")
	srv.Stop()
	s := startErrata(t, map[string]string{
		"BLOB_STORE": "s3://errata", "S3_ENDPOINT": srv.Endpoint(),
		"S3_ACCESS_KEY_ID": srv.Key, "S3_SECRET_ACCESS_KEY": srv.Secret, "LOG_LEVEL": "error",
	})
	setupAcme(t, s)
	client := &http.Client{Timeout: 30 * time.Second}
	data := []byte("a chunk uploaded while the object store is down")
	if r := sendChunks(client, s, data); r.status != http.StatusServiceUnavailable {
		t.Errorf("upload with the store down: %s, want 503", r)
	}
	srv.Restart()
	if r := sendChunks(client, s, data); r.status != http.StatusOK {
		t.Errorf("upload once it is back: %s, want 200", r)
	}
}
