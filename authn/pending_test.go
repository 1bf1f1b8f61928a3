package authn

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"errata/store"
	"errata/store/storetest"
)

// pendingTTL is the lifetime of the pending seeds under test.
const pendingTTL = 300 * time.Second

// testClock is a clock the test moves; the stores read it concurrently.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// seedStoreUnderTest is one PendingSeedStore for the shared tests: users
// are four ids it accepts, and held counts the seeds it keeps, expired or
// not.
type seedStoreUnderTest struct {
	seeds PendingSeedStore
	users []int64
	held  func(t *testing.T) int
}

// openSeedStore returns a fresh store whose seeds live pendingTTL on clock.
type openSeedStore func(t *testing.T, clock *testClock) seedStoreUnderTest

func openMemorySeeds(t *testing.T, clock *testClock) seedStoreUnderTest {
	p := NewPendingSeeds(pendingTTL, clock.Now)
	return seedStoreUnderTest{seeds: p, users: []int64{1, 2, 3, 4}, held: func(*testing.T) int { return p.held() }}
}

const pendingSecret = "pending-secret"

func openDatabaseSeeds(t *testing.T, clock *testClock) seedStoreUnderTest {
	st, url := storetest.NewWithURL(t)
	conn := connect(t, url)
	return seedStoreUnderTest{
		seeds: NewDatabasePendingSeeds(st, pendingSecret, pendingTTL, clock.Now),
		users: createUsers(t, st, 4),
		held: func(t *testing.T) int {
			var n int
			if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pending_recovery_seeds`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		},
	}
}

// createUsers creates n users and returns their ids.
func createUsers(t *testing.T, st *store.Store, n int) []int64 {
	t.Helper()
	var ids []int64
	for i := range n {
		id, err := st.CreateUser(context.Background(), fmt.Sprintf("user%d@example.com", i), "")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// connect returns a connection to the database at url for checks of its
// rows.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestPendingSeeds(t *testing.T) {
	testPendingSeedStore(t, openMemorySeeds)
}

// held is the number of entries p holds, expired or not.
func (p *PendingSeeds) held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.entries)
}

func TestDatabasePendingSeeds(t *testing.T) {
	testPendingSeedStore(t, openDatabaseSeeds)
	ctx := context.Background()

	t.Run("the seed is encrypted at rest and bound to its user", func(t *testing.T) {
		st, url := storetest.NewWithURL(t)
		users := createUsers(t, st, 2)
		p := NewDatabasePendingSeeds(st, pendingSecret, pendingTTL, nil)
		seed := NewRecoverySeed()
		if err := p.Put(ctx, users[0], seed); err != nil {
			t.Fatal(err)
		}
		conn := connect(t, url)
		var row []byte
		if err := conn.QueryRow(ctx, `
			SELECT seed_encrypted FROM pending_recovery_seeds WHERE user_id = $1`, users[0]).Scan(&row); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(row), seed) || strings.Contains(fmt.Sprintf("%x", row), seed) {
			t.Fatal("the row holds the seed in clear")
		}
		if got, err := NewSeedCipher(pendingSecret).Open(users[0], row); err != nil || got != seed {
			t.Errorf("the row opens to %q, %v; want the seed", got, err)
		}
		if err := p.Put(ctx, users[1], NewRecoverySeed()); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `
			UPDATE pending_recovery_seeds SET seed_encrypted = $2 WHERE user_id = $1`, users[1], row); err != nil {
			t.Fatal(err)
		}
		if got, ok, err := p.Get(ctx, users[1]); err == nil {
			t.Errorf("a row copied to another user gives %q, %v; want an error", got, ok)
		}
		if ok, err := p.Consume(ctx, users[1], seed); ok || err == nil {
			t.Errorf("Consume of a copied row = %v, %v; want false and an error", ok, err)
		}
	})

	t.Run("a replica with another secret cannot open the seed", func(t *testing.T) {
		st := storetest.New(t)
		users := createUsers(t, st, 1)
		if err := NewDatabasePendingSeeds(st, pendingSecret, pendingTTL, nil).Put(ctx, users[0], NewRecoverySeed()); err != nil {
			t.Fatal(err)
		}
		if _, _, err := NewDatabasePendingSeeds(st, "other", pendingTTL, nil).Get(ctx, users[0]); err == nil {
			t.Error("Get under another secret succeeded")
		}
	})

	t.Run("two replicas share the seeds", func(t *testing.T) {
		url := storetest.NewDatabase(t)
		var replicas [2]*DatabasePendingSeeds
		var users []int64
		for i := range replicas {
			st, err := store.Open(ctx, store.Config{URL: url})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(st.Close)
			if i == 0 {
				users = createUsers(t, st, 1)
			}
			replicas[i] = NewDatabasePendingSeeds(st, pendingSecret, pendingTTL, nil)
		}
		a, b, user := replicas[0], replicas[1], users[0]

		// Concurrent GETs on both replicas: each Put succeeds, the last wins
		// on both, and one row is left.
		seeds := make([]string, 20)
		errs := make([]error, len(seeds))
		var wg sync.WaitGroup
		for i := range seeds {
			seeds[i] = NewRecoverySeed()
			wg.Go(func() { errs[i] = replicas[i%2].Put(ctx, user, seeds[i]) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("Put %d: %v", i, err)
			}
		}
		onA, okA, errA := a.Get(ctx, user)
		onB, okB, errB := b.Get(ctx, user)
		if !okA || !okB || errA != nil || errB != nil || onA != onB || !slices.Contains(seeds, onA) {
			t.Fatalf("after concurrent puts A holds %q, %v, %v and B %q, %v, %v; want one of the seeds on both",
				onA, okA, errA, onB, okB, errB)
		}

		// A GET on A, the POST on B.
		seed := NewRecoverySeed()
		if err := a.Put(ctx, user, seed); err != nil {
			t.Fatal(err)
		}
		if ok, err := b.Consume(ctx, user, seed); !ok || err != nil {
			t.Fatalf("Consume on B = %v, %v; want true", ok, err)
		}
		if _, ok, err := a.Get(ctx, user); ok || err != nil {
			t.Errorf("A still holds a seed after B consumed it (%v)", err)
		}
	})
}

// testPendingSeedStore runs the tests that every PendingSeedStore passes,
// each on a fresh store from open.
func testPendingSeedStore(t *testing.T, open openSeedStore) {
	ctx := context.Background()
	// expectHeld checks what Get says of user.
	expectHeld := func(t *testing.T, s seedStoreUnderTest, user int64, want string) {
		t.Helper()
		got, ok, err := s.seeds.Get(ctx, user)
		if err != nil {
			t.Fatalf("Get(%d): %v", user, err)
		}
		if want == "" && ok {
			t.Errorf("Get(%d) = %q, want none held", user, got)
		}
		if want != "" && (!ok || got != want) {
			t.Errorf("Get(%d) = %q, %v; want %q", user, got, ok, want)
		}
	}
	put := func(t *testing.T, s seedStoreUnderTest, user int64, seed string) {
		t.Helper()
		if err := s.seeds.Put(ctx, user, seed); err != nil {
			t.Fatalf("Put(%d): %v", user, err)
		}
	}
	consume := func(t *testing.T, s seedStoreUnderTest, user int64, seed string, want bool) {
		t.Helper()
		got, err := s.seeds.Consume(ctx, user, seed)
		if err != nil || got != want {
			t.Errorf("Consume(%d, %q) = %v, %v; want %v", user, seed, got, err, want)
		}
	}
	tests := []struct {
		name string
		run  func(t *testing.T, s seedStoreUnderTest, clock *testClock)
	}{
		{"nothing is held at first", func(t *testing.T, s seedStoreUnderTest, clock *testClock) {
			expectHeld(t, s, s.users[0], "")
			consume(t, s, s.users[0], "a", false)
		}},
		{"a seed is held within its lifetime", func(t *testing.T, s seedStoreUnderTest, clock *testClock) {
			put(t, s, s.users[0], "a")
			clock.advance(pendingTTL - time.Second)
			expectHeld(t, s, s.users[0], "a")
		}},
		{"a seed is gone at the end of its lifetime", func(t *testing.T, s seedStoreUnderTest, clock *testClock) {
			put(t, s, s.users[0], "a")
			clock.advance(pendingTTL)
			expectHeld(t, s, s.users[0], "")
			consume(t, s, s.users[0], "a", false)
		}},
		{"a new put replaces the seed and restarts its lifetime", func(t *testing.T, s seedStoreUnderTest, clock *testClock) {
			put(t, s, s.users[0], "a")
			clock.advance(pendingTTL / 2)
			put(t, s, s.users[0], "b")
			clock.advance(pendingTTL - time.Second)
			expectHeld(t, s, s.users[0], "b")
			consume(t, s, s.users[0], "a", false)
			expectHeld(t, s, s.users[0], "b")
			consume(t, s, s.users[0], "b", true)
		}},
		{"a seed is consumed once", func(t *testing.T, s seedStoreUnderTest, clock *testClock) {
			put(t, s, s.users[0], "a")
			consume(t, s, s.users[0], "a", true)
			consume(t, s, s.users[0], "a", false)
			expectHeld(t, s, s.users[0], "")
		}},
		{"another seed consumes nothing", func(t *testing.T, s seedStoreUnderTest, clock *testClock) {
			put(t, s, s.users[0], "a")
			consume(t, s, s.users[0], "x", false)
			expectHeld(t, s, s.users[0], "a")
		}},
		{"of concurrent consumes exactly one wins", func(t *testing.T, s seedStoreUnderTest, clock *testClock) {
			seed := NewRecoverySeed()
			put(t, s, s.users[0], seed)
			won := make([]bool, 16)
			errs := make([]error, len(won))
			var wg sync.WaitGroup
			for i := range won {
				wg.Go(func() { won[i], errs[i] = s.seeds.Consume(ctx, s.users[0], seed) })
			}
			wg.Wait()
			n := 0
			for i := range won {
				if errs[i] != nil {
					t.Errorf("Consume %d: %v", i, errs[i])
				}
				if won[i] {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d of %d concurrent consumes won, want 1", n, len(won))
			}
		}},
		{"users do not see each other's seeds", func(t *testing.T, s seedStoreUnderTest, clock *testClock) {
			put(t, s, s.users[0], "a")
			expectHeld(t, s, s.users[1], "")
			consume(t, s, s.users[1], "a", false)
			put(t, s, s.users[1], "b")
			expectHeld(t, s, s.users[0], "a")
			consume(t, s, s.users[1], "b", true)
			expectHeld(t, s, s.users[0], "a")
		}},
		{"a put sweeps the expired seeds of every user", func(t *testing.T, s seedStoreUnderTest, clock *testClock) {
			put(t, s, s.users[0], "a")
			put(t, s, s.users[1], "b")
			clock.advance(pendingTTL / 2)
			put(t, s, s.users[2], "c")
			clock.advance(pendingTTL / 2)
			put(t, s, s.users[3], "d")
			if n := s.held(t); n != 2 {
				t.Errorf("%d seeds held, want 2 (the expired two swept)", n)
			}
			expectHeld(t, s, s.users[2], "c")
			expectHeld(t, s, s.users[3], "d")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &testClock{now: time.Now()}
			tt.run(t, open(t, clock), clock)
		})
	}
}
