package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"errata/store"
	"errata/store/storetest"
)

// queryInt returns the one number that query answers on the database at
// url.
func queryInt(t *testing.T, url, query string) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// countPendingSeeds returns the number of rows of pending seeds.
func countPendingSeeds(t *testing.T, url string) int64 {
	t.Helper()
	return queryInt(t, url, `SELECT count(*) FROM pending_recovery_seeds`)
}

func TestPendingSeeds(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

	t.Run("a put sweeps a bounded batch of expired seeds, oldest first", func(t *testing.T) {
		st, url := storetest.NewWithURL(t)
		const expired = store.PendingSeedSweepBatch + 50
		storetest.Exec(t, url, `
			INSERT INTO users (email) SELECT 'user' || g || '@example.com' FROM generate_series(1, $1) g`, expired+1)
		for id := int64(1); id <= expired; id++ {
			// Seed id expires at base + id seconds; none has expired at base.
			if err := st.PutPendingSeed(ctx, id, []byte{byte(id)}, base.Add(time.Duration(id)*time.Second), base); err != nil {
				t.Fatal(err)
			}
		}
		if n := countPendingSeeds(t, url); n != expired {
			t.Fatalf("%d rows before the sweep, want %d", n, expired)
		}
		later := base.Add(time.Hour)
		if err := st.PutPendingSeed(ctx, expired+1, []byte{1}, later.Add(time.Minute), later); err != nil {
			t.Fatal(err)
		}
		if n := countPendingSeeds(t, url); n != expired-store.PendingSeedSweepBatch+1 {
			t.Errorf("%d rows after one put, want %d", n, expired-store.PendingSeedSweepBatch+1)
		}
		if oldest := queryInt(t, url, `SELECT min(user_id) FROM pending_recovery_seeds`); oldest != store.PendingSeedSweepBatch+1 {
			t.Errorf("the oldest row left is of user %d, want %d", oldest, store.PendingSeedSweepBatch+1)
		}
		n, err := st.SweepPendingSeeds(ctx, later, store.PendingSeedSweepBatch)
		if err != nil || n != 50 {
			t.Errorf("SweepPendingSeeds = %d, %v; want the 50 left", n, err)
		}
		if n := countPendingSeeds(t, url); n != 1 {
			t.Errorf("%d rows after the sweep, want the live one", n)
		}
	})

	t.Run("a delete of a replaced seed deletes nothing", func(t *testing.T) {
		st, url := storetest.NewWithURL(t)
		id, err := st.CreateUser(ctx, "ann@example.com", "")
		if err != nil {
			t.Fatal(err)
		}
		expires := base.Add(time.Minute)
		for _, sealed := range []string{"old", "new"} {
			if err := st.PutPendingSeed(ctx, id, []byte(sealed), expires, base); err != nil {
				t.Fatal(err)
			}
		}
		if ok, err := st.DeletePendingSeed(ctx, id, []byte("old"), base); ok || err != nil {
			t.Errorf("delete of the replaced seed = %v, %v; want false", ok, err)
		}
		if ok, err := st.DeletePendingSeed(ctx, id, []byte("new"), expires); ok || err != nil {
			t.Errorf("delete of an expired seed = %v, %v; want false", ok, err)
		}
		if ok, err := st.DeletePendingSeed(ctx, id, []byte("new"), base); !ok || err != nil {
			t.Errorf("delete of the held seed = %v, %v; want true", ok, err)
		}
		if n := countPendingSeeds(t, url); n != 0 {
			t.Errorf("%d rows left, want 0", n)
		}
	})

	t.Run("a seed of a missing user is not found", func(t *testing.T) {
		st := storetest.New(t)
		if err := st.PutPendingSeed(ctx, 42, []byte("x"), base.Add(time.Minute), base); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("PutPendingSeed = %v, want ErrNotFound", err)
		}
		if _, err := st.PendingSeed(ctx, 42, base); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("PendingSeed = %v, want ErrNotFound", err)
		}
	})

	t.Run("a database without the table is not migrated", func(t *testing.T) {
		st, url := storetest.NewWithURL(t)
		if err := st.CheckPendingSeeds(ctx); err != nil {
			t.Fatalf("CheckPendingSeeds on a migrated database: %v", err)
		}
		storetest.Exec(t, url, `DROP TABLE pending_recovery_seeds`)
		if err := st.CheckPendingSeeds(ctx); !errors.Is(err, store.ErrNotMigrated) {
			t.Errorf("CheckPendingSeeds = %v, want ErrNotMigrated", err)
		}
	})
}
