package worker

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"errata/store"
	"errata/store/storetest"
)

// benchBundleSize is the size of the bundle BenchmarkAssemble assembles.
const benchBundleSize = 100 << 20

// BenchmarkAssemble assembles, in process, a bundle of 100 MiB uploaded as
// 8 MiB chunks: 50 members of 2 MiB of random bytes, stored uncompressed.
// Each run makes a release of its own. The sha1 sub-benchmark hashes the
// same bytes, the floor of any assembly. Run it with -benchtime 3x: each
// run writes 100 MiB to the database.
func BenchmarkAssemble(b *testing.B) {
	ctx := context.Background()
	st := storetest.New(b)
	user, err := st.CreateUser(ctx, "dev@example.com", "Dev")
	if err != nil {
		b.Fatal(err)
	}
	org, err := st.CreateOrganization(ctx, "acme", "Acme", "dev@example.com")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := st.CreateProject(ctx, store.Operator, "acme", store.NewProject{Slug: "web", Name: "Web"}); err != nil {
		b.Fatal(err)
	}

	var buf bytes.Buffer
	buf.WriteString("SYSB\x02\x00\x00\x00")
	zw := zip.NewWriter(&buf)
	const member = 2 << 20
	files := map[string]any{}
	for i := range benchBundleSize / member {
		files[fmt.Sprintf("files/_/_/bundle-%02d.js", i)] = map[string]any{"url": fmt.Sprintf("~/bundle-%02d.js", i)}
	}
	m, _ := json.Marshal(map[string]any{"org": "acme", "files": files})
	w, _ := zw.Create("manifest.json")
	w.Write(m)
	content := make([]byte, member)
	rng := rand.NewChaCha8([32]byte{})
	for i := range benchBundleSize / member {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("files/_/_/bundle-%02d.js", i), Method: zip.Store})
		if err != nil {
			b.Fatal(err)
		}
		rng.Read(content)
		w.Write(content)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	bundle := buf.Bytes()

	var chunks []store.Chunk
	var names []string
	for rest := bundle; len(rest) > 0; {
		n := min(8<<20, len(rest))
		sum := sha1.Sum(rest[:n])
		chunks = append(chunks, store.Chunk{SHA1: hex.EncodeToString(sum[:]), Data: rest[:n]})
		names = append(names, chunks[len(chunks)-1].SHA1)
		rest = rest[n:]
	}
	err = st.SaveChunks(ctx, user, "acme", func(yield func(store.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	sum := sha1.Sum(bundle)
	a := &Assembler{Store: st, Log: quietLog(), Limits: AssembleLimits{MaxBundleSize: 512 << 20}}

	b.Run("assemble", func(b *testing.B) {
		b.SetBytes(int64(len(bundle)))
		for i := 0; b.Loop(); i++ {
			payload, _ := json.Marshal(store.AssemblyJob{
				OrganizationID: org, OrgSlug: "acme", Version: new(fmt.Sprintf("bench-%d", i)),
				Projects: []string{"web"}, Checksum: hex.EncodeToString(sum[:]), Chunks: names,
			})
			if err := a.Run(ctx, payload); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sha1", func(b *testing.B) {
		b.SetBytes(int64(len(bundle)))
		for b.Loop() {
			sha1.Sum(bundle)
		}
	})
}
