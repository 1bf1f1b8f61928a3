package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"errata/store/s3/s3test"
	"errata/store/storetest"
)

// BenchmarkBlobStores uploads a 64 MiB bundle as 8 MiB chunks to a server
// keeping its blobs in PostgreSQL, then to one keeping them in versitygw,
// and times the assembly and the download of every file of the release,
// beside sha1sum over the same bytes.
func BenchmarkBlobStores(b *testing.B) {
	bin, _, _ := benchBinary(b, releaseBuildFlags...)
	srv := s3test.Start(b)
	srv.Client("bench")
	type result struct {
		store                     string
		upload, assemble, sh, get time.Duration
		size, got                 int64
	}
	var results []result
	for _, where := range []string{"postgres", "s3"} {
		db := storetest.NewDatabase(b)
		env := []string{"MAX_BUNDLE_SIZE=" + fmt.Sprint(512*mib), "LOG_LEVEL=warn"}
		if where == "s3" {
			env = append(env, "BLOB_STORE=s3://bench/"+where, "S3_ENDPOINT="+srv.Endpoint(),
				"S3_ACCESS_KEY_ID="+srv.Key, "S3_SECRET_ACCESS_KEY="+srv.Secret)
		}
		getenv := func(k string) string {
			for _, kv := range append([]string{"DATABASE_URL=" + db}, env...) {
				if v, ok := strings.CutPrefix(kv, k+"="); ok {
					return v
				}
			}
			return ""
		}
		admin := func(args ...string) string {
			var out strings.Builder
			if err := run(context.Background(), append([]string{"admin"}, args...), getenv, &out, io.Discard); err != nil {
				b.Fatalf("admin %v: %v", args, err)
			}
			return strings.TrimSpace(out.String())
		}
		admin("create-user", "--email", "bench@errata.localhost")
		admin("create-org", "--slug", "bench", "--owner", "bench@errata.localhost")
		admin("create-project", "--org", "bench", "--slug", "project-01")
		token := admin("create-token", "--email", "bench@errata.localhost", "--scopes", "project:releases,project:read,project:write,org:read")
		s := benchStart(b, bin, db, env...)

		path := filepath.Join(b.TempDir(), "bundle")
		checksum := benchBundle(b, path, "bench", "1.0.0", 64*mib)
		fi, _ := os.Stat(path)
		r := result{store: where, size: fi.Size()}
		start := time.Now()
		chunks := benchUpload(b, s.base, "bench", token, path)
		r.upload = time.Since(start)
		r.assemble = benchAssemble(b, s.base, "bench", token, checksum, chunks)
		r.sh = sha1sumTime(b, path, checksum)

		var files []struct{ ID string }
		status, body := benchGet(b, s.base, "/api/0/organizations/bench/releases/1.0.0/files/?per_page=100", token)
		if err := json.Unmarshal(body, &files); status != http.StatusOK || err != nil || len(files) == 0 {
			b.Fatalf("files: %d %v %s", status, err, body)
		}
		start = time.Now()
		for _, f := range files {
			req, _ := http.NewRequest("GET", s.base+"/api/0/organizations/bench/releases/1.0.0/files/"+f.ID+"/?download=1", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if err != nil || res.StatusCode != http.StatusOK {
				b.Fatalf("download: %d %v", res.StatusCode, err)
			}
			r.got += n
		}
		r.get = time.Since(start)
		results = append(results, r)
	}

	fmt.Printf("\n### Blob stores: a 64 MiB bundle as 8 MiB chunks, its assembly and the download of its files\n\n")
	fmt.Println("| blobs in | upload MiB/s | assembly | assembly MiB/s | sha1sum MiB/s | download MiB/s |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	for _, r := range results {
		rate := func(n int64, d time.Duration) float64 { return float64(n) / mib / d.Seconds() }
		fmt.Printf("| %s | %.0f | %.2f s | %.0f | %.0f | %.0f |\n", r.store, rate(r.size, r.upload),
			r.assemble.Seconds(), rate(r.size, r.assemble), rate(r.size, r.sh), rate(r.got, r.get))
		b.ReportMetric(rate(r.size, r.assemble), "assembly-MiB/s-"+r.store)
		b.ReportMetric(rate(r.got, r.get), "download-MiB/s-"+r.store)
	}
	fmt.Println()
}
