package store_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"errata/store"
	"errata/store/storetest"
)

// replicas returns n Stores on one fresh database, as n replicas of the
// server have.
func replicas(t *testing.T, n int) []*store.Store {
	t.Helper()
	url := storetest.NewDatabase(t)
	stores := make([]*store.Store, n)
	for i := range stores {
		st, err := store.Open(context.Background(), store.Config{URL: url, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		stores[i] = st
	}
	return stores
}

// TestTakeThrottleExactUnderConcurrency: 50 takes at once of one bucket
// with room for 7, spread over ten replicas (each of which takes its turns
// in memory), record exactly 7.
func TestTakeThrottleExactUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	stores := replicas(t, 10)
	const takers, limit = 50, 7
	bucket := store.ThrottleBucket{Name: "test:race", Window: time.Minute, Limit: limit}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		allowed int
		refused int
		start   = make(chan struct{})
	)
	for i := range takers {
		st := stores[i%len(stores)]
		wg.Go(func() {
			<-start
			events, full, err := st.TakeThrottle(ctx, bucket)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("take: %v", err)
			case full == -1 && len(events) == 1 && events[0] > 0:
				allowed++
			case full == 0 && events == nil:
				refused++
			default:
				t.Errorf("take answered events %v, full %d", events, full)
			}
		})
	}
	close(start)
	wg.Wait()
	if allowed != limit || refused != takers-limit {
		t.Errorf("%d takes allowed and %d refused, want %d and %d", allowed, refused, limit, takers-limit)
	}
	if n, err := stores[0].ThrottleCount(ctx, bucket.Name, time.Minute); err != nil || n != limit {
		t.Errorf("count %d (%v), want %d", n, err, limit)
	}
}

// TestTakeThrottleSharedByReplicas: what one replica records, the other
// counts and is refused by.
func TestTakeThrottleSharedByReplicas(t *testing.T) {
	ctx := context.Background()
	stores := replicas(t, 2)
	a, b := stores[0], stores[1]
	bucket := store.ThrottleBucket{Name: "test:shared", Window: time.Minute, Limit: 3}
	for range 2 {
		if _, full, err := a.TakeThrottle(ctx, bucket); err != nil || full != -1 {
			t.Fatalf("take on a: full %d, %v", full, err)
		}
	}
	if n, err := b.ThrottleCount(ctx, bucket.Name, time.Minute); err != nil || n != 2 {
		t.Errorf("b counts %d (%v), want a's 2", n, err)
	}
	if _, full, err := b.TakeThrottle(ctx, bucket); err != nil || full != -1 {
		t.Fatalf("third take on b: full %d, %v", full, err)
	}
	if _, full, err := a.TakeThrottle(ctx, bucket); err != nil || full != 0 {
		t.Errorf("fourth take on a: full %d (%v), want refused", full, err)
	}
	if n, _ := a.ThrottleCount(ctx, "test:other", time.Minute); n != 0 {
		t.Errorf("another bucket counts %d", n)
	}
}

// TestTakeThrottleSeveralBuckets: a take of two buckets records in both,
// or, when one is full, in neither.
func TestTakeThrottleSeveralBuckets(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	burst := store.ThrottleBucket{Name: "test:burst", Window: time.Minute, Limit: 2}
	hourly := store.ThrottleBucket{Name: "test:hourly", Window: time.Hour, Limit: 3}
	for i := range 2 {
		events, full, err := st.TakeThrottle(ctx, burst, hourly)
		if err != nil || full != -1 || len(events) != 2 || events[0] == events[1] {
			t.Fatalf("take %d: events %v, full %d, %v", i, events, full, err)
		}
	}
	if _, full, err := st.TakeThrottle(ctx, hourly, burst); err != nil || full != 1 {
		t.Errorf("a take with the burst full: full %d (%v), want 1 (its index)", full, err)
	}
	if n, _ := st.ThrottleCount(ctx, hourly.Name, time.Hour); n != 2 {
		t.Errorf("the refused take recorded in the other bucket: %d events, want 2", n)
	}
	// One bucket named twice is locked once and counted in both places.
	if _, full, err := st.TakeThrottle(ctx, hourly, hourly); err != nil || full != -1 {
		t.Errorf("a take naming one bucket twice: full %d, %v", full, err)
	}
}

// TestCancelThrottle: a cancelled event no longer counts, and cancelling
// takes back that event alone.
func TestCancelThrottle(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	bucket := store.ThrottleBucket{Name: "test:cancel", Window: time.Minute, Limit: 2}
	if _, _, err := st.TakeThrottle(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	second, _, err := st.TakeThrottle(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, full, _ := st.TakeThrottle(ctx, bucket); full != 0 {
		t.Fatalf("a third take: full %d, want refused", full)
	}
	if err := st.CancelThrottle(ctx, second...); err != nil {
		t.Fatal(err)
	}
	if n, _ := st.ThrottleCount(ctx, bucket.Name, time.Minute); n != 1 {
		t.Errorf("%d events after a cancel, want the first one", n)
	}
	if _, full, _ := st.TakeThrottle(ctx, bucket); full != -1 {
		t.Errorf("a take after a cancel: full %d, want allowed", full)
	}
	if err := st.CancelThrottle(ctx, second...); err != nil {
		t.Errorf("cancelling an event twice: %v", err)
	}
	if err := st.CancelThrottle(ctx); err != nil {
		t.Errorf("cancelling nothing: %v", err)
	}
	if n, _ := st.ThrottleCount(ctx, bucket.Name, time.Minute); n != 2 {
		t.Errorf("%d events, want 2", n)
	}
}

// TestTakeThrottleWindowPasses: events older than the window no longer
// count.
func TestTakeThrottleWindowPasses(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	bucket := store.ThrottleBucket{Name: "test:window", Window: time.Second, Limit: 2}
	for range 2 {
		if _, full, err := st.TakeThrottle(ctx, bucket); err != nil || full != -1 {
			t.Fatalf("take: full %d, %v", full, err)
		}
	}
	if _, full, _ := st.TakeThrottle(ctx, bucket); full != 0 {
		t.Fatalf("a third take within the window: full %d, want refused", full)
	}
	time.Sleep(1100 * time.Millisecond)
	if _, full, err := st.TakeThrottle(ctx, bucket); err != nil || full != -1 {
		t.Errorf("a take after the window: full %d (%v), want allowed", full, err)
	}
	if n, _ := st.ThrottleCount(ctx, bucket.Name, time.Second); n != 1 {
		t.Errorf("%d events in the window, want 1", n)
	}
}

// TestSweepThrottle: a sweep removes old events in batches of the size
// asked, and leaves the recent ones.
func TestSweepThrottle(t *testing.T) {
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	storetest.Exec(t, db, `
		INSERT INTO throttle_events (bucket, at)
		SELECT 'test:old', now() - interval '2 hours' FROM generate_series(1, 5)`)
	if _, _, err := st.TakeThrottle(ctx, store.ThrottleBucket{Name: "test:new", Window: time.Hour, Limit: 1}); err != nil {
		t.Fatal(err)
	}
	var swept []int
	for {
		n, err := st.SweepThrottle(ctx, time.Hour, 2)
		if err != nil {
			t.Fatal(err)
		}
		swept = append(swept, n)
		if n < 2 {
			break
		}
	}
	if len(swept) != 3 || swept[0] != 2 || swept[1] != 2 || swept[2] != 1 {
		t.Errorf("batches swept %v, want [2 2 1]", swept)
	}
	if n := storetest.Count(t, db, `SELECT count(*) FROM throttle_events`); n != 1 {
		t.Errorf("%d events left, want the recent one", n)
	}
}

// TestTakeThrottleRefusesBadBuckets: a bucket name beyond the table's
// bound, an empty one or no bucket at all is an error, not a database
// error.
func TestTakeThrottleRefusesBadBuckets(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	for name, buckets := range map[string][]store.ThrottleBucket{
		"too long":  {{Name: strings.Repeat("a", store.MaxThrottleBucket+1), Window: time.Minute, Limit: 1}},
		"empty":     {{Name: "", Window: time.Minute, Limit: 1}},
		"no window": {{Name: "test:x", Limit: 1}},
		"none":      nil,
	} {
		if _, _, err := st.TakeThrottle(ctx, buckets...); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	long := store.ThrottleBucket{Name: strings.Repeat("a", store.MaxThrottleBucket), Window: time.Minute, Limit: 1}
	if _, full, err := st.TakeThrottle(ctx, long); err != nil || full != -1 {
		t.Errorf("a bucket of the longest name: full %d, %v", full, err)
	}
}
