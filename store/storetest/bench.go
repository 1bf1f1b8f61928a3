package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/jackc/pgx/v5"

	"errata/store"
)

// BenchDatabaseName is the database of the benchmarks.
const BenchDatabaseName = "errata_bench"

// Bench is the benchmarks' database and the rows of the seed that they
// ask for.
type Bench struct {
	URL     string
	Org     string // the organization of 50 000 releases
	Owner   string // the email of its owner
	Release string // its newest release with two projects, deploys and 100 files
	// Deep is the key of the 25 000th release of Org, newest first, and
	// DeepNext the id of the release that follows it: the first of the
	// page after row 25 000.
	Deep     store.Key
	DeepNext int64
}

// BenchDatabase returns the benchmarks' database on DATABASE_URL's server:
// migrated and filled by testdata/bench/seed.sql. Unlike the databases of
// tests it is kept afterwards, so that the next benchmark, wrk and pgbench
// see the same rows; it is made again when schema.sql or the seed changed.
// Benchmarks that add rows remove them.
func BenchDatabase(tb testing.TB) Bench {
	tb.Helper()
	url := benchDatabase(tb)
	ctx := context.Background()
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatalf("connect to %s: %v", BenchDatabaseName, err)
	}
	defer db.Close(ctx)
	bench := Bench{URL: url, Org: "bench", Owner: "bench@errata.localhost"}
	err = db.QueryRow(ctx, `
		SELECT r.version FROM releases r JOIN organizations o ON o.id = r.organization_id
		WHERE o.slug = $1
		  AND (SELECT count(*) FROM release_projects rp WHERE rp.release_id = r.id) = 2
		  AND EXISTS (SELECT 1 FROM deploys d WHERE d.release_id = r.id)
		  AND (SELECT count(*) FROM release_files rf WHERE rf.release_id = r.id) = 100
		ORDER BY r.date_created DESC, r.id DESC LIMIT 1`, bench.Org).Scan(&bench.Release)
	if err != nil {
		tb.Fatalf("the seed has no release with projects, deploys and files: %v", err)
	}
	err = db.QueryRow(ctx, `
		SELECT r.date_created, r.id, lead(r.id) OVER (ORDER BY r.date_created DESC, r.id DESC)
		FROM releases r JOIN organizations o ON o.id = r.organization_id
		WHERE o.slug = $1 ORDER BY r.date_created DESC, r.id DESC OFFSET 24999 LIMIT 1`, bench.Org).
		Scan(&bench.Deep.Created, &bench.Deep.ID, &bench.DeepNext)
	if err != nil {
		tb.Fatalf("the seed has fewer than 25 001 releases: %v", err)
	}
	return bench
}

// benchDatabase makes the benchmarks' database unless it is there, and
// returns its URL.
func benchDatabase(tb testing.TB) string {
	tb.Helper()
	ctx := context.Background()
	admin := AdminURL(tb)
	_, file, _, _ := runtime.Caller(0)
	seed, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "testdata", "bench", "seed.sql"))
	if err != nil {
		tb.Fatalf("read the seed: %v", err)
	}
	schema := Schema(tb)
	sum := sha256.Sum256([]byte(schema + "\x00" + string(seed)))
	mark := "errata bench " + hex.EncodeToString(sum[:8])

	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("connect to DATABASE_URL: %v", err)
	}
	defer conn.Close(ctx)
	// Benchmarks of several packages may start at once; one seeds.
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(4243)`); err != nil {
		tb.Fatalf("lock: %v", err)
	}
	defer conn.Exec(ctx, `SELECT pg_advisory_unlock(4243)`) //nolint:errcheck
	var current *string
	err = conn.QueryRow(ctx, `
		SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1`,
		BenchDatabaseName).Scan(&current)
	url := withDatabaseURL(admin, BenchDatabaseName)
	if err == nil && current != nil && *current == mark {
		return url
	}
	tb.Logf("seeding %s (about ten seconds)", BenchDatabaseName)
	for _, sql := range []string{
		`DROP DATABASE IF EXISTS ` + BenchDatabaseName + ` WITH (FORCE)`,
		`CREATE DATABASE ` + BenchDatabaseName + ` TEMPLATE template0`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			tb.Fatalf("%s: %v", sql, err)
		}
	}
	st, err := store.Open(ctx, store.Config{URL: url})
	if err != nil {
		tb.Fatalf("open %s: %v", BenchDatabaseName, err)
	}
	err = st.Migrate(ctx, schema)
	st.Close()
	if err != nil {
		tb.Fatalf("migrate %s: %v", BenchDatabaseName, err)
	}
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatalf("connect to %s: %v", BenchDatabaseName, err)
	}
	defer db.Close(ctx)
	for _, sql := range []string{string(seed), `VACUUM ANALYZE`} {
		if _, err := db.Exec(ctx, sql); err != nil {
			tb.Fatalf("seed %s: %v", BenchDatabaseName, err)
		}
	}
	if _, err := conn.Exec(ctx, `COMMENT ON DATABASE `+BenchDatabaseName+` IS '`+mark+`'`); err != nil {
		tb.Fatalf("mark %s: %v", BenchDatabaseName, err)
	}
	return url
}
