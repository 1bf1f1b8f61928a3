package handlers

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"errata/store"
)

// TestNumericIDsFailWithTheDatabase checks that an organization named by
// its id answers 503 when the statement that resolves the id fails, not
// the 404 of an id that names nothing: a database in trouble must not read
// as "no such organization". The statement times out behind a lock on
// projects, which it reads and the organization's own handler does not.
func TestNumericIDsFailWithTheDatabase(t *testing.T) {
	a := newTestAPI(t)
	a.user("owner@example.com")
	org := a.org("acme", "owner@example.com")
	a.project("acme", "web")
	tok := a.token("owner@example.com")
	path := fmt.Sprintf("/api/0/organizations/%d/", org)
	a.do("GET", path, tok, nil).expect(t, http.StatusOK, nil)

	// The same server over a store whose statements give up after 300 ms.
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{URL: a.db, StatementTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	b := serveTestAPI(t, st, a.db)

	lock, err := pgx.Connect(ctx, a.db)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(ctx)
	tx, err := lock.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the lock is only held
	if _, err := tx.Exec(ctx, `LOCK TABLE projects IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	r := b.do("GET", path, tok, nil)
	if r.status != http.StatusServiceUnavailable {
		t.Errorf("GET %s while projects cannot be read: %d %s, want 503", path, r.status, r.body)
	}
}
