package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestOrgTurnsOrderOneOrganizationOnly: while a request of an organization
// holds its turn, another of the same organization waits (and gives up
// when its context ends), one of another organization does not.
func TestOrgTurnsOrderOneOrganizationOnly(t *testing.T) {
	var turns orgTurns
	ctx := context.Background()
	release, err := turns.take(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	other, err := turns.take(ctx, 2)
	if err != nil {
		t.Fatalf("another organization's turn: %v", err)
	}
	other()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := turns.take(short, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second request of the organization: %v, want it to wait until its context ends", err)
	}
	got := make(chan error, 1)
	go func() {
		r, err := turns.take(ctx, 1)
		if err == nil {
			r()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("took the turn while it was held: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	if err := <-got; err != nil {
		t.Fatalf("after the release: %v", err)
	}
	if len(turns.slots) != 0 {
		t.Errorf("%d organizations remembered after every request left", len(turns.slots))
	}
}
