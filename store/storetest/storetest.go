// Package storetest gives tests a real, freshly migrated PostgreSQL
// database of their own, so that tests run in parallel without seeing each
// other's rows.
//
// It reads DATABASE_URL (./dev.sh test sets it to a throwaway cluster),
// migrates a template database once per schema.sql content, and creates one
// database per test from that template, dropped when the test ends.
package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"errata/store"
)

// Schema returns the text of schema.sql at the root of the module.
func Schema(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "schema.sql"))
	if err != nil {
		t.Fatalf("read schema.sql: %v", err)
	}
	return string(b)
}

// AdminURL is DATABASE_URL; tests fail without it rather than skip.
func AdminURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		t.Fatal("DATABASE_URL is not set: run the tests with ./dev.sh test, which starts PostgreSQL")
	}
	return u
}

var templates sync.Map // template name -> *sync.Once-guarded error

type templateResult struct {
	once sync.Once
	err  error
}

// NewDatabase creates an empty migrated database for t and returns its URL.
// It is dropped when t ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	return newDatabase(t, true)
}

// NewEmptyDatabase creates a database with no schema at all, for tests of
// migration itself.
func NewEmptyDatabase(t testing.TB) string {
	t.Helper()
	return newDatabase(t, false)
}

func newDatabase(t testing.TB, migrated bool) string {
	t.Helper()
	ctx := context.Background()
	admin := AdminURL(t)
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to DATABASE_URL: %v", err)
	}
	defer conn.Close(ctx)

	tmpl := "template0"
	if migrated {
		schema := Schema(t)
		sum := sha256.Sum256([]byte(schema))
		tmpl = "errata_tmpl_" + hex.EncodeToString(sum[:6])
		v, _ := templates.LoadOrStore(tmpl, &templateResult{})
		tr := v.(*templateResult)
		tr.once.Do(func() { tr.err = makeTemplate(ctx, conn, admin, tmpl, schema) })
		if tr.err != nil {
			t.Fatalf("template database: %v", tr.err)
		}
	}
	b := make([]byte, 6)
	rand.Read(b)
	name := "errata_test_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, tmpl)); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	url := withDatabaseURL(admin, name)
	if migrated {
		// A clone of the template has the template's deployment id: each
		// database gets its own, as each migrated database has.
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatalf("connect to %s: %v", name, err)
		}
		_, err = c.Exec(ctx, `UPDATE deployment SET id = gen_random_uuid()::text`)
		c.Close(ctx)
		if err != nil {
			t.Fatalf("a deployment id of its own for %s: %v", name, err)
		}
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			t.Logf("drop %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name)); err != nil {
			t.Logf("drop %s: %v", name, err)
		}
	})
	return url
}

// makeTemplate creates and migrates the template database tmpl unless
// another test process did. A session advisory lock orders processes.
func makeTemplate(ctx context.Context, conn *pgx.Conn, admin, tmpl, schema string) error {
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(4242)`); err != nil {
		return err
	}
	defer conn.Exec(ctx, `SELECT pg_advisory_unlock(4242)`) //nolint:errcheck
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, tmpl).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	building := tmpl + "_building"
	if _, err := conn.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s`, building)); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE template0`, building)); err != nil {
		return err
	}
	st, err := store.Open(ctx, store.Config{URL: withDatabaseURL(admin, building)})
	if err != nil {
		return err
	}
	err = st.Migrate(ctx, schema)
	st.Close()
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s RENAME TO %s`, building, tmpl))
	return err
}

// withDatabaseURL returns admin with its database replaced by name.
func withDatabaseURL(admin, name string) string {
	u, err := url.Parse(admin)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		// A key=value connection string.
		return admin + " dbname=" + name
	}
	u.Path = "/" + name
	return u.String()
}

// New returns a Store on a fresh migrated database of t's own.
func New(t testing.TB) *store.Store {
	t.Helper()
	st, _ := NewWithURL(t)
	return st
}

// NewWithURL is New that also returns the database's URL, for tests that
// reach the database directly.
func NewWithURL(t testing.TB) (*store.Store, string) {
	t.Helper()
	u := NewDatabase(t)
	st, err := store.Open(context.Background(), store.Config{URL: u})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(st.Close)
	return st, u
}

// Exec runs one SQL statement on the database at url, for test set-ups that
// no store method offers (ties in timestamps, an inactive user).
func Exec(t testing.TB, url, sql string, args ...any) {
	t.Helper()
	conn := connect(t, url)
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("exec %q: %v", sql, err)
	}
}

// Count runs a query of one number (SELECT count(*) ...) on the database at
// url, for checks of what a test left behind.
func Count(t testing.TB, url, sql string, args ...any) int {
	t.Helper()
	conn := connect(t, url)
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("query %q: %v", sql, err)
	}
	return n
}

func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return conn
}
