package store_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"errata/store"
	"errata/store/storetest"
)

// chunked cuts data into chunks of size.
func chunked(data []byte, size int) []store.Chunk {
	var chunks []store.Chunk
	for rest := data; len(rest) > 0; {
		c := rest[:min(size, len(rest))]
		rest = rest[len(c):]
		sum := sha1.Sum(c)
		chunks = append(chunks, store.Chunk{SHA1: hex.EncodeToString(sum[:]), Data: c})
	}
	return chunks
}

func saveAll(chunks []store.Chunk) func(func(store.Chunk, error) bool) {
	return func(yield func(store.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	}
}

func TestFileFromChunksReadsBack(t *testing.T) {
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
	data := make([]byte, 3*1000+17)
	rand.NewChaCha8([32]byte{3}).Read(data)
	chunks := chunked(data, 1000)
	if err := st.SaveChunks(ctx, user, "acme", saveAll(chunks)); err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(chunks))
	for i, c := range chunks {
		names[i] = c.SHA1
	}
	sum := sha1.Sum(data)

	if _, err := st.CreateFileFromChunks(ctx, org, hex.EncodeToString(make([]byte, 20)), names); !errors.Is(err, store.ErrChecksumMismatch) {
		t.Errorf("a wrong checksum: %v, want ErrChecksumMismatch", err)
	}
	if _, err := st.CreateFileFromChunks(ctx, org, hex.EncodeToString(sum[:]), append(names, hex.EncodeToString(make([]byte, 20)))); !errors.Is(err, store.ErrMissingChunks) {
		t.Errorf("a chunk never uploaded: %v, want ErrMissingChunks", err)
	}
	f, err := st.CreateFileFromChunks(ctx, org, hex.EncodeToString(sum[:]), names)
	if err != nil {
		t.Fatal(err)
	}
	again, err := st.CreateFileFromChunks(ctx, org, hex.EncodeToString(sum[:]), names)
	if err != nil || again.ID != f.ID {
		t.Errorf("the same file again: %+v %v, want file %d", again, err, f.ID)
	}
	if n := storetest.Count(t, db, `SELECT count(*) FROM blob_data`); n != len(chunks) {
		t.Errorf("%d blobs' bytes stored, want %d", n, len(chunks))
	}

	fr, err := st.OpenFile(ctx, org, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(fr)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes (%v), want the %d uploaded", len(got), err, len(data))
	}
	// Reads across blob boundaries, at the end, and past it.
	for _, r := range []struct{ off, n int }{{0, 1}, {995, 10}, {999, 2002}, {3000, 17}, {3010, 7}, {2400, 600}} {
		buf := make([]byte, r.n)
		n, err := fr.ReadAt(buf, int64(r.off))
		if err != nil || n != r.n || !bytes.Equal(buf, data[r.off:r.off+r.n]) {
			t.Errorf("ReadAt(%d, %d) = %d, %v", r.off, r.n, n, err)
		}
	}
	if n, err := fr.ReadAt(make([]byte, 10), int64(len(data)-5)); n != 5 || err != io.EOF {
		t.Errorf("ReadAt over the end = %d, %v, want 5, EOF", n, err)
	}
	if _, err := st.OpenFile(ctx, org+1, f.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the file from another organization: %v, want ErrNotFound", err)
	}
}
