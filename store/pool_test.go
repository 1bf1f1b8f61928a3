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
	start := time.Now()
	err = st.Ping(ctx)
	took := time.Since(start)
	close(release)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("a statement on a full pool: %v, want ErrUnavailable", err)
	}
	if took > 2*time.Second {
		t.Errorf("it took %s, want about the acquire timeout", took)
	}
	if err := st.Ping(ctx); err != nil {
		t.Errorf("once the connection is free: %v", err)
	}
}
