package store_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/store"
	"errata/store/s3"
	"errata/store/s3/s3test"
	"errata/store/storetest"
)

// blobBackend is one place where the bytes of blobs live.
type blobBackend struct {
	name string
	// open returns a store on a new database keeping its bytes there, the
	// database's URL and a count of the objects stored (nil for PostgreSQL).
	open func(t *testing.T) (*store.Store, string, func() int)
	srv  *s3test.Server
}

// blobBackends are PostgreSQL and a real S3-compatible server, each under
// the files, assembly and collector tests below.
func blobBackends(t *testing.T) []*blobBackend {
	t.Helper()
	srv := s3test.Start(t)
	n := 0
	return []*blobBackend{
		{name: "postgres", open: func(t *testing.T) (*store.Store, string, func() int) {
			st, db := storetest.NewWithURL(t)
			return st, db, nil
		}},
		{name: "s3", srv: srv, open: func(t *testing.T) (*store.Store, string, func() int) {
			t.Helper()
			n++
			bucket := "blobs-" + string(rune('a'+n%26)) + hex.EncodeToString([]byte{byte(n)})
			c := srv.Client(bucket)
			db := storetest.NewDatabase(t)
			st, err := store.Open(context.Background(), store.Config{URL: db, Blobs: c, BlobPrefix: "errata/"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(st.Close)
			return st, db, func() int { return countObjects(t, c) }
		}},
	}
}

// countObjects counts the objects of c's bucket, after making sure the
// server answers (a test may have stopped it).
func countObjects(t *testing.T, c *s3.Client) int {
	t.Helper()
	n := 0
	if err := c.List(context.Background(), "", "", func(key string, _ int64) error {
		if path.Base(key) != "errata-deployment" { // a deployment's claim on its prefix
			n++
		}
		return nil
	}); err != nil {
		t.Fatalf("list objects: %v", err)
	}
	return n
}

// uploadFile stores data as chunks of 1000 bytes for a new user and
// organization, and returns the organization and the chunks' names.
func uploadFile(t *testing.T, st *store.Store, data []byte) (org int64, user int64, names []string) {
	t.Helper()
	ctx := context.Background()
	user, err := st.CreateUser(ctx, "dev@example.com", "Dev")
	if err != nil {
		t.Fatal(err)
	}
	org, err = st.CreateOrganization(ctx, "acme", "Acme", "dev@example.com")
	if err != nil {
		t.Fatal(err)
	}
	chunks := chunked(data, 1000)
	if err := st.SaveChunks(ctx, user, "acme", saveAll(chunks)); err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		names = append(names, c.SHA1)
	}
	return org, user, names
}

func sha1Of(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// TestBlobStores assembles a file from chunks, reads it back in ranges
// and collects it, with the bytes in each place: the rows and the objects
// always agree.
func TestBlobStores(t *testing.T) {
	for _, b := range blobBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			st, db, objects := b.open(t)
			data := make([]byte, 3*1000+17)
			rand.NewChaCha8([32]byte{5}).Read(data)
			org, _, names := uploadFile(t, st, data)
			rows := storetest.Count(t, db, `SELECT count(*) FROM blobs`)
			if rows != 4 {
				t.Fatalf("%d blob rows, want 4", rows)
			}
			stored := storetest.Count(t, db, `SELECT count(*) FROM blob_data`)
			if objects != nil {
				if stored != 0 || objects() != rows {
					t.Errorf("%d objects and %d blob_data rows for %d blobs, want all as objects", objects(), stored, rows)
				}
			} else if stored != rows {
				t.Errorf("%d blob_data rows for %d blobs", stored, rows)
			}

			f, err := st.CreateFileFromChunks(ctx, org, sha1Of(data), names)
			if err != nil {
				t.Fatal(err)
			}
			fr, err := st.OpenFile(ctx, org, f.ID)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(fr)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read back %d bytes (%v), want the %d uploaded", len(got), err, len(data))
			}
			for _, r := range []struct{ off, n int }{{0, 1}, {995, 10}, {999, 2002}, {3010, 7}} {
				buf := make([]byte, r.n)
				n, err := fr.ReadAt(buf, int64(r.off))
				if err != nil || n != r.n || !bytes.Equal(buf, data[r.off:r.off+r.n]) {
					t.Errorf("ReadAt(%d, %d) = %d, %v", r.off, r.n, n, err)
				}
			}

			// Nothing refers to the file: with no grace, the collector
			// removes it, its ownerships and its blobs, bytes included.
			cs, err := st.Collect(ctx, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if cs.Blobs != 4 || cs.Bytes != int64(len(data)) {
				t.Errorf("collected %+v, want 4 blobs of %d bytes", cs, len(data))
			}
			if n := storetest.Count(t, db, `SELECT count(*) FROM blobs`); n != 0 {
				t.Errorf("%d blob rows left", n)
			}
			if objects != nil && objects() != 0 {
				t.Errorf("%d objects left", objects())
			}
		})
	}
}

// TestObjectStoreDown stops the object store during an upload, an
// assembly, a download and a collection: each fails with ErrUnavailable,
// stores nothing half-way and loses nothing, and once the server is back
// the rows and the objects agree.
func TestObjectStoreDown(t *testing.T) {
	ctx := context.Background()
	b := blobBackends(t)[1]
	st, db, objects := b.open(t)
	data := make([]byte, 2*1000+5)
	rand.NewChaCha8([32]byte{6}).Read(data)
	org, user, names := uploadFile(t, st, data)
	f, err := st.CreateFileFromChunks(ctx, org, sha1Of(data), names)
	if err != nil {
		t.Fatal(err)
	}
	agree := func(t *testing.T, wantBlobs int) {
		t.Helper()
		b.srv.Restart()
		rows := storetest.Count(t, db, `SELECT count(*) FROM blobs`)
		if n := objects(); rows != wantBlobs || n != rows {
			t.Errorf("%d blob rows and %d objects, want %d of each", rows, n, wantBlobs)
		}
	}

	t.Run("upload", func(t *testing.T) {
		b.srv.Stop()
		more := make([]byte, 1500)
		rand.NewChaCha8([32]byte{7}).Read(more)
		err := st.SaveChunks(ctx, user, "acme", saveAll(chunked(more, 1000)))
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("upload: %v, want ErrUnavailable", err)
		}
		agree(t, 3)
	})
	t.Run("assembly", func(t *testing.T) {
		other := append([]byte{}, data[:1000]...)
		other = append(other, data[:1000]...)
		b.srv.Stop()
		_, err := st.CreateFileFromChunks(ctx, org, sha1Of(other), []string{names[0], names[0]})
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("assembly: %v, want ErrUnavailable", err)
		}
		agree(t, 3)
		if n := storetest.Count(t, db, `SELECT count(*) FROM files`); n != 1 {
			t.Errorf("%d files, want the first one only", n)
		}
	})
	t.Run("download", func(t *testing.T) {
		fr, err := st.OpenFile(ctx, org, f.ID)
		if err != nil {
			t.Fatal(err)
		}
		b.srv.Stop()
		if _, err := io.ReadAll(fr); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("download: %v, want ErrUnavailable", err)
		}
		agree(t, 3)
		fr, err = st.OpenFile(ctx, org, f.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(fr); err != nil || !bytes.Equal(got, data) {
			t.Errorf("download once back: %d bytes, %v", len(got), err)
		}
	})
	t.Run("collection", func(t *testing.T) {
		b.srv.Stop()
		if _, err := st.Collect(ctx, 0, 0); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("collect: %v, want ErrUnavailable", err)
		}
		// The rows of blobs whose bytes could not be removed stay.
		agree(t, 3)
		if _, err := st.Collect(ctx, 0, 0); err != nil {
			t.Fatalf("collect once back: %v", err)
		}
		agree(t, 0)
	})
}

// TestMigrateBlobs moves blobs from PostgreSQL to S3 and back: resumable,
// each copy checked, and the files read the same from either place.
func TestMigrateBlobs(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	c := srv.Client("migrate")
	pg, db := storetest.NewWithURL(t)
	data := make([]byte, 5*1000+3)
	rand.NewChaCha8([32]byte{8}).Read(data)
	org, _, names := uploadFile(t, pg, data)
	f, err := pg.CreateFileFromChunks(ctx, org, sha1Of(data), names)
	if err != nil {
		t.Fatal(err)
	}
	readFile := func(t *testing.T, st *store.Store) []byte {
		t.Helper()
		fr, err := st.OpenFile(ctx, org, f.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(fr)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	// A first run that stops half-way (its context ends after 2 blobs).
	cctx, cancel := context.WithCancel(ctx)
	done := 0
	_, err = pg.MigrateBlobs(cctx, c, "p/", false, func(string, store.MigrateStats) {
		if done++; done == 2 {
			cancel()
		}
	})
	if err == nil {
		t.Fatal("the interrupted run did not fail")
	}
	r, err := pg.MigrateBlobs(ctx, c, "p/", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Copied+r.Present != 6 || r.Present < 2 || r.Removed != 6 {
		t.Errorf("second run: %+v, want 6 blobs, 2 or more there already, 6 removed", r)
	}
	if n := countObjects(t, c); n != 6 {
		t.Errorf("%d objects, want 6", n)
	}
	if n := storetest.Count(t, db, `SELECT count(*) FROM blob_data`); n != 0 {
		t.Errorf("%d blob_data rows left", n)
	}
	s3st, err := store.Open(ctx, store.Config{URL: db, Blobs: c, BlobPrefix: "p/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s3st.Close()
	if !bytes.Equal(readFile(t, s3st), data) {
		t.Error("the file read from S3 differs")
	}

	// The same bucket and folder under another name of the server (a
	// spelling no comparison of settings could see through) is refused
	// before anything is copied or removed.
	alias := srv.Config("migrate")
	alias.Endpoint = strings.Replace(alias.Endpoint, "127.0.0.1", "localhost", 1)
	if alias.Endpoint == srv.Endpoint() {
		t.Fatalf("the test server's endpoint %s is not on 127.0.0.1", srv.Endpoint())
	}
	same, err := s3.New(alias)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s3st.MigrateBlobs(ctx, same, "p/", true, nil); !errors.Is(err, store.ErrSameStore) {
		t.Errorf("migrating onto the store itself: %v, want ErrSameStore", err)
	}
	if n := countObjects(t, c); n != 6 {
		t.Errorf("%d objects after migrating onto the store itself, want the 6 blobs and no probe", n)
	}

	// A damaged object is not taken for a copy: back to PostgreSQL, it is
	// found bad at the source and the run stops.
	if err := c.Put(ctx, "p/"+names[1], bytes.NewReader([]byte("damaged")), 7); err != nil {
		t.Fatal(err)
	}
	if _, err := s3st.MigrateBlobs(ctx, nil, "", false, nil); !errors.Is(err, store.ErrBadBlob) {
		t.Errorf("migrating a damaged blob: %v, want ErrBadBlob", err)
	}
	if err := c.Put(ctx, "p/"+names[1], bytes.NewReader(data[1000:2000]), 1000); err != nil {
		t.Fatal(err)
	}
	r, err = s3st.MigrateBlobs(ctx, nil, "", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Copied+r.Present != 6 || r.Removed != 6 {
		t.Errorf("back to PostgreSQL: %+v", r)
	}
	if n := countObjects(t, c); n != 0 {
		t.Errorf("%d objects left", n)
	}
	if !bytes.Equal(readFile(t, pg), data) {
		t.Error("the file read from PostgreSQL differs")
	}
}

// TestCollectorRemovesOrphanObjects leaves objects that no blob row names
// (an upload that failed between its object and its row): the collector
// removes them, and keeps the blobs' objects and the keys not its own.
func TestCollectorRemovesOrphanObjects(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	c := srv.Client("orphans")
	db := storetest.NewDatabase(t)
	st, err := store.Open(ctx, store.Config{URL: db, Blobs: c, BlobPrefix: "errata/"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	data := make([]byte, 2500)
	rand.NewChaCha8([32]byte{9}).Read(data)
	org, _, names := uploadFile(t, st, data)
	if _, err := st.CreateFileFromChunks(ctx, org, sha1Of(data), names); err != nil {
		t.Fatal(err)
	}
	orphan := []byte("nobody's")
	for key, b := range map[string][]byte{
		"errata/" + sha1Of(orphan):    orphan, // an upload's object without its row
		"errata/README":               []byte("not a blob"),
		"elsewhere/" + sha1Of(orphan): orphan, // outside the prefix
	} {
		if err := c.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := st.Collect(ctx, time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cs.Orphans != 1 {
		t.Errorf("collected %+v, want 1 orphan", cs)
	}
	var keys []string
	c.List(ctx, "", "", func(key string, _ int64) error { keys = append(keys, key); return nil })
	want := []string{"elsewhere/" + sha1Of(orphan), "errata/README", "errata/errata-deployment"}
	for _, n := range names {
		want = append(want, "errata/"+n)
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
}

// TestDeploymentsDoNotShareAPrefix points two deployments (two databases)
// at one bucket prefix: the first claims it, and the second's collector
// refuses to sweep it rather than remove the first's objects, which its
// own database does not name. Another prefix of the bucket is fine.
func TestDeploymentsDoNotShareAPrefix(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	c := srv.Client("shared")
	open := func(prefix string) *store.Store {
		st, err := store.Open(ctx, store.Config{URL: storetest.NewDatabase(t), Blobs: c, BlobPrefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		return st
	}
	first, second := open("errata/"), open("errata/")
	data := make([]byte, 2500)
	rand.NewChaCha8([32]byte{10}).Read(data)
	org, _, names := uploadFile(t, first, data)
	if _, err := first.CreateFileFromChunks(ctx, org, sha1Of(data), names); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Collect(ctx, time.Hour, 0); err != nil {
		t.Fatalf("the first deployment's collection: %v", err)
	}
	before := countObjects(t, c)
	if _, err := second.Collect(ctx, 0, 0); !errors.Is(err, store.ErrSharedPrefix) {
		t.Errorf("the second deployment's collection under the same prefix: %v, want ErrSharedPrefix", err)
	}
	if err := second.ClaimBlobPrefix(ctx); !errors.Is(err, store.ErrSharedPrefix) {
		t.Errorf("the second deployment's claim: %v, want ErrSharedPrefix", err)
	}
	if n := countObjects(t, c); n != before {
		t.Errorf("%d objects after the second deployment's collection, want the %d there were", n, before)
	}
	if err := open("other/").ClaimBlobPrefix(ctx); err != nil {
		t.Errorf("a third deployment under another prefix: %v", err)
	}
	if err := first.ClaimBlobPrefix(ctx); err != nil {
		t.Errorf("the first deployment again: %v", err)
	}
}
