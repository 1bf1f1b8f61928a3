package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"errata/store"
	"errata/store/storetest"
)

// TestAJobThatEndsItsWorkerEveryTimeIsGivenUp: a job whose lease ran out in
// its last attempt (its worker died each time) ends in error instead of
// being claimed again forever; one with attempts left is claimed again.
func TestAJobThatEndsItsWorkerEveryTimeIsGivenUp(t *testing.T) {
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	storetest.Exec(t, db, `
		INSERT INTO jobs (kind, state, attempts, max_attempts, locked_by, locked_until)
		VALUES ('assemble', 'running', 3, 3, 'dead', now() - interval '1 second'),
		       ('assemble', 'running', 1, 3, 'dead', now() - interval '1 second')`)
	j, err := st.ClaimJob(ctx, "alive", []string{"assemble"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if j.Attempts != 2 {
		t.Errorf("claimed the job of attempt %d, want the one with attempts left (now 2)", j.Attempts)
	}
	if _, err := st.ClaimJob(ctx, "alive", []string{"assemble"}, time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a second claim: %v, want ErrNotFound", err)
	}
	var state, lastError string
	row := storetest.Pool(t, db).QueryRow(ctx, `SELECT state, last_error FROM jobs WHERE attempts = 3`)
	if err := row.Scan(&state, &lastError); err != nil {
		t.Fatal(err)
	}
	if state != "error" || !strings.Contains(lastError, "given up") {
		t.Errorf("the job out of attempts is %s (%q), want error", state, lastError)
	}
}
