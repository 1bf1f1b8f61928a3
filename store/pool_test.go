package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"errata/store"
	"errata/store/storetest"
)

// TestAFullPoolAnswersUnavailableQuickly: with every connection taken, a
// statement waits at most AcquireTimeout and fails with ErrUnavailable (a
// 503), rather than queueing until its context ends.
func TestAFullPoolAnswersUnavailableQuickly(t *testing.T) {
	ctx := context.Background()
	_, db := storetest.NewWithURL(t)
	st, err := store.Open(ctx, store.Config{URL: db, MaxConns: 1, AcquireTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	release := make(chan struct{})
	held := make(chan struct{})
	go func() {
		st.HoldConnectionForTest(ctx, held, release)
	}()
	<-held
	// The statement's own context would end long after the acquire
	// timeout: a pool that queued until the context ended would answer
	// its deadline instead of ErrUnavailable. No wall time is measured,
	// so a busy machine cannot fail the test.
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	err = st.Ping(waitCtx)
	cancel()
	close(release)
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a statement on a full pool: %v, want ErrUnavailable before its context ends", err)
	}
	if err := st.Ping(ctx); err != nil {
		t.Errorf("once the connection is free: %v", err)
	}
}
