package main

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"errata/store/storetest"
)

// migrateProcesses is how many `errata migrate` processes each round of
// TestConcurrentMigrates starts at once, and migrateRounds how many rounds
// it runs on each kind of database.
const (
	migrateProcesses = 8
	migrateRounds    = 20
	trafficClients   = 1 // the clients that send the replica requests meanwhile
)

// TestConcurrentMigrates starts migrateProcesses `errata migrate`
// processes at once (this test binary as the program, built with the race
// detector when the test is), migrateRounds times, on three kinds of
// database: an empty one; one made by the main of schema version 4, with a
// debug file whose section table the migration reads; and one made by the
// previous main (testdata/schema_v5.sql) that a replica serves, with
// requests that write, while the migrates run, as in a rolling start.
// Every migrate must succeed (a deadlock is a failure, however it is
// reported), and the schema ends as one migrate alone leaves it.
func TestConcurrentMigrates(t *testing.T) {
	t.Parallel()
	want := schemaOf(t, storetest.NewDatabase(t))
	elf, err := os.ReadFile("worker/dif/testdata/tiny.elf")
	if err != nil {
		t.Fatal(err)
	}
	// An ELF debug file stored before errata read section tables at
	// assembly: each round's migrates read it, side by side.
	withDebugFile := func(t *testing.T, schemaFile string) string {
		db := oldDatabase(t, schemaFile, "")
		sum := sha1.Sum(elf)
		storetest.Exec(t, db, `
			WITH blob AS (INSERT INTO blobs (sha1, size) VALUES ($1, $2)),
				bytes AS (INSERT INTO blob_data (key, data) VALUES ($1, $3)),
				owner AS (INSERT INTO blob_owners (organization_id, sha1) VALUES (1, $1)),
				file AS (INSERT INTO files (id, organization_id, size, sha1) VALUES (1, 1, $2, $1)),
				part AS (INSERT INTO file_blobs (file_id, position, organization_id, sha1, start) VALUES (1, 0, 1, $1, 0))
			INSERT INTO debug_files (project_id, file_id, checksum, debug_id, code_id, object_name, cpu_name, file_format, data)
			VALUES (1, 1, $1, 'b644071b-511e-55db-ac27-1ee28d84d991', '1b0744b61e51db55ac271ee28d84d991a2cfc6fa',
				'tiny', 'x86_64', 'elf', '{"type": "exe", "features": ["symtab"]}')`,
			hex.EncodeToString(sum[:]), len(elf), elf)
		return db
	}

	// The three kinds run side by side: each round's migrates wait for
	// each other far more than they work.
	t.Run("on an empty database", func(t *testing.T) {
		t.Parallel()
		migrateRoundsOn(t, want, func(t *testing.T) string { return storetest.NewEmptyDatabase(t) }, nil)
	})
	t.Run("on a database of schema version 4", func(t *testing.T) {
		t.Parallel()
		migrateRoundsOn(t, want, func(t *testing.T) string {
			return withDebugFile(t, "testdata/schema_v4.sql")
		}, func(t *testing.T, db string) {
			if n := storetest.Count(t, db, `SELECT count(*) FROM debug_files WHERE sections IS NULL`); n != 0 {
				t.Errorf("%d debug files without a section table after the migrates, want 0", n)
			}
		})
	})
	t.Run("on a database of the previous main that a replica serves", func(t *testing.T) {
		t.Parallel()
		db := withDebugFile(t, "testdata/schema_v5.sql")
		s := newErrata(t, map[string]string{"DATABASE_URL": db, "LOG_LEVEL": "warn"})
		s.spawn(t)
		s.token = s.cli(t, "admin", "create-token", "--email", "dev@example.com", "--scopes", "org:admin,project:releases,project:write")
		stop := writeTraffic(t, s)
		migrateRoundsOn(t, want, func(*testing.T) string { return db }, nil)
		if n := stop(); n == 0 {
			t.Error("the replica answered no request while the migrates ran")
		}
	})
}

// migrateRoundsOn runs the rounds of TestConcurrentMigrates on the database
// that newDB makes for each, then checks its schema against want and calls
// check, when not nil.
func migrateRoundsOn(t *testing.T, want string, newDB func(*testing.T) string, check func(t *testing.T, db string)) {
	t.Helper()
	failed := 0
	for round := range migrateRounds {
		db := newDB(t)
		start := time.Now()
		outs := make([]string, migrateProcesses)
		errs := make([]error, migrateProcesses)
		var wg sync.WaitGroup
		for i := range migrateProcesses {
			wg.Go(func() { outs[i], errs[i] = migrateProcess(t, db) })
		}
		wg.Wait()
		bad := 0
		for i, err := range errs {
			if err != nil {
				bad++
				t.Errorf("round %d: migrate %d: %v\n%s", round, i, err, outs[i])
			}
		}
		if bad > 0 {
			failed++
		}
		if got := schemaOf(t, db); got != want {
			t.Errorf("round %d: the schema after %d migrates at once (-want +got):\n%s", round, migrateProcesses, cmp.Diff(want, got))
		}
		if check != nil {
			check(t, db)
		}
		t.Logf("round %d: %d migrates in %s, %d failed", round, migrateProcesses, time.Since(start).Round(time.Millisecond), bad)
	}
	t.Logf("%d of %d rounds had a failed migrate", failed, migrateRounds)
}

// migrateProcess runs `errata migrate` on db as a process of its own and
// returns what it wrote.
func migrateProcess(t *testing.T, db string) (string, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "migrate")
	cmd.Env = []string{childEnv + "=1", "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir(), "DATABASE_URL=" + db}
	out, err := cmd.CombinedOutput()
	if err == nil && !strings.Contains(string(out), "migrated to schema version") {
		err = fmt.Errorf("it did not say it migrated")
	}
	return string(out), err
}

// writeTraffic sends s, from trafficClients clients, requests that write
// (releases created with their projects, and updated) until the returned
// stop, which says how many s answered with a 2xx.
func writeTraffic(t *testing.T, s *errataServer) (stop func() int) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for w := range trafficClients {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				version := fmt.Sprintf("w%d-%d", w, i)
				status, body := s.api(t, "POST", "/api/0/organizations/acme/releases/", map[string]any{"version": version, "projects": []string{"web"}})
				if status == http.StatusCreated {
					status, body = s.api(t, "PUT", "/api/0/organizations/acme/releases/"+version+"/", map[string]any{"ref": "main"})
				}
				if status/100 != 2 {
					t.Errorf("the replica answered %d %s while the migrates ran", status, body)
					time.Sleep(50 * time.Millisecond)
					continue
				}
				mu.Lock()
				ok++
				mu.Unlock()
			}
		})
	}
	return func() int {
		close(done)
		wg.Wait()
		return ok
	}
}

// schemaOf describes the schema of db: its columns, indexes and
// constraints, the versions it records and the rows of deployment.
func schemaOf(t *testing.T, db string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var b strings.Builder
	for _, q := range []string{
		`SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
		 FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, column_name`,
		`SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname`,
		`SELECT conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
		 FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY conrelid::regclass::text, conname`,
		`SELECT 'version ' || version FROM errata_schema ORDER BY version`,
		`SELECT count(*) || ' deployment rows' FROM deployment`,
	} {
		rows, err := conn.Query(context.Background(), q)
		if err != nil {
			t.Fatalf("schema of the database: %v", err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			b.WriteString(line + "\n")
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
	}
	return b.String()
}
