package symbolication

import (
	"context"
	"testing"
	"testing/synctest"
)

// TestSlotsBoundOrganizationsAndAll: of slots of one per organization and
// two in all, an organization's second caller waits for its first, a
// third organization waits for one of all, and a caller whose context
// ends stops waiting holding nothing.
func TestSlotsBoundOrganizationsAndAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSlots[string](1, 2)
		ctx := t.Context()
		relA, err := s.Acquire(ctx, "a", nil)
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		a2 := make(chan error, 1)
		go func() {
			_, err := s.Acquire(cctx, "a", nil)
			a2 <- err
		}()
		relB, err := s.Acquire(ctx, "b", nil)
		if err != nil {
			t.Fatal(err)
		}
		c := make(chan func(), 1)
		go func() {
			rel, _ := s.Acquire(ctx, "c", nil)
			c <- rel
		}()
		synctest.Wait()
		if len(a2) != 0 || len(c) != 0 {
			t.Fatal("a second caller of a, or a caller of c over the two of all, got a slot")
		}
		cancel()
		if err := <-a2; err != context.Canceled {
			t.Errorf("a canceled wait: %v", err)
		}
		relB()
		relC := <-c
		relA()
		relC()
		if len(s.orgs) != 0 || len(s.total) != 0 {
			t.Errorf("after every release, %d organizations and %d slots are held", len(s.orgs), len(s.total))
		}
	})
}
