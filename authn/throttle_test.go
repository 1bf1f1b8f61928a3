package authn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"errata/store"
	"errata/store/storetest"
)

// TestRulesAreTheContract: the rules of docs/accounts.md, as written
// there.
func TestRulesAreTheContract(t *testing.T) {
	want := []Rule{
		{Name: "password_account", Limit: 5, Window: 5 * time.Minute, Failures: true},
		{Name: "password_address", Limit: 10, Window: time.Minute, Failures: true},
		{Name: "proof", Limit: 5, Window: 20 * time.Second, Failures: true},
		{Name: "proof_hourly", Limit: 20, Window: time.Hour, Failures: true},
		{Name: "reset_address", Limit: 3, Window: time.Hour},
		{Name: "reset_account", Limit: 3, Window: time.Hour},
		{Name: "invitations", Limit: 50, Window: 5 * time.Minute},
	}
	if diff := cmp.Diff(want, Rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
}

func TestBucketNames(t *testing.T) {
	long := strings.Repeat("a", 10000) + "@example.com"
	tests := []struct {
		name   string
		bucket Bucket
		want   string
	}{
		{"an address lower-cased and trimmed", PasswordFailuresPerAccount.For(" Ann@Example.COM "), "password_account:ann@example.com"},
		{"a user", ProofFailures.ForUser(42), "proof:user:42"},
		{"IPv4", PasswordFailuresPerAddress.ForAddr(netip.MustParseAddr("192.0.2.7")), "password_address:addr:192.0.2.7"},
		{"IPv4 mapped in IPv6 is IPv4", PasswordFailuresPerAddress.ForAddr(netip.MustParseAddr("::ffff:192.0.2.7")), "password_address:addr:192.0.2.7"},
		{"IPv6 counts with its /64", PasswordFailuresPerAddress.ForAddr(netip.MustParseAddr("2001:db8:1:2:aaaa::1%eth0")), "password_address:addr:2001:db8:1:2::/64"},
		{"no address", PasswordFailuresPerAddress.ForAddr(netip.Addr{}), "password_address:addr:unknown"},
		{"a long subject by its hash", ResetRequestsPerAccount.For(long), "reset_account:sha256:" + sha256Hex(strings.ToLower(long))},
		{"a NUL byte by its hash", ResetRequestsPerAccount.For("a\x00b"), "reset_account:sha256:" + sha256Hex("a\x00b")},
		{"not UTF-8 by its hash", ResetRequestsPerAccount.For("a\xffb"), "reset_account:sha256:" + sha256Hex("a\xffb")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.bucket.Name(); got != tt.want {
				t.Errorf("bucket %q, want %q", got, tt.want)
			}
		})
	}
	for _, r := range Rules {
		if n := len(r.For(long).Name()); n > store.MaxThrottleBucket {
			t.Errorf("rule %s makes a bucket of %d bytes", r.Name, n)
		}
	}
}

// FuzzBucketName: whatever the subject, a bucket's name is UTF-8 without
// NUL, within the store's bound, and space around the subject names the
// same bucket.
func FuzzBucketName(f *testing.F) {
	for _, s := range []string{"ann@example.com", " ANN@example.com", "\x00", "\xff", strings.Repeat("é", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, subject string) {
		name := PasswordFailuresPerAccount.For(subject).Name()
		if len(name) > store.MaxThrottleBucket || strings.IndexByte(name, 0) >= 0 || !strings.HasPrefix(name, "password_account:") {
			t.Errorf("subject %q makes bucket %q", subject, name)
		}
		if again := PasswordFailuresPerAccount.For(" " + subject + "\t").Name(); again != name {
			t.Errorf("subject %q makes %q, and with space around %q", subject, name, again)
		}
	})
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// throttleEnv is a database with two Throttles on it, as two replicas of
// the server have.
func throttleEnv(t *testing.T) (a, b *Throttle, st *store.Store, url string) {
	t.Helper()
	st, url = storetest.NewWithURL(t)
	other, err := store.Open(context.Background(), store.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	return &Throttle{Store: st}, &Throttle{Store: other}, st, url
}

// attempt makes one attempt and reports the rule that refused it, or "".
func attempt(t *testing.T, th *Throttle, buckets ...Bucket) (*Attempt, string) {
	t.Helper()
	a, err := th.Attempt(context.Background(), buckets...)
	if err != nil {
		t.Fatal(err)
	}
	r, refused := a.Refused()
	if refused != (r.Name != "") {
		t.Fatalf("Refused answered %+v, %v", r, refused)
	}
	return a, r.Name
}

// TestAttemptTwoRulesTogether: a burst rule and an hourly rule taken
// together, as ProofFailuresOf takes them (with short windows): refused
// when either is full, and a refused attempt counts in neither.
func TestAttemptTwoRulesTogether(t *testing.T) {
	ctx := context.Background()
	a, b, st, _ := throttleEnv(t)
	burst := Rule{Name: "t_burst", Limit: 2, Window: time.Second, Failures: true}
	long := Rule{Name: "t_long", Limit: 3, Window: time.Hour, Failures: true}
	both := []Bucket{burst.ForUser(1), long.ForUser(1)}
	var got []string
	for _, th := range []*Throttle{a, b, a} {
		_, refused := attempt(t, th, both...)
		got = append(got, refused)
	}
	time.Sleep(1100 * time.Millisecond) // the burst's window passes
	for _, th := range []*Throttle{b, a} {
		_, refused := attempt(t, th, both...)
		got = append(got, refused)
	}
	_, other := attempt(t, a, burst.ForUser(2), long.ForUser(2))
	got = append(got, other)
	if diff := cmp.Diff([]string{"", "", "t_burst", "", "t_long", ""}, got); diff != "" {
		t.Errorf("refusals (-want +got):\n%s", diff)
	}
	if n, _ := st.ThrottleCount(ctx, long.ForUser(1).Name(), time.Hour); n != 3 {
		t.Errorf("the hourly rule counts %d, want the 3 allowed attempts", n)
	}
}

// TestAttemptSucceeded: a success takes back its own events of the rules
// that count failures, not those of rules that count every attempt, and
// not earlier failures.
func TestAttemptSucceeded(t *testing.T) {
	ctx := context.Background()
	a, b, st, _ := throttleEnv(t)
	failures := Rule{Name: "t_failures", Limit: 3, Window: time.Minute, Failures: true}
	requests := Rule{Name: "t_requests", Limit: 3, Window: time.Minute}
	buckets := []Bucket{failures.For("ann@example.com"), requests.For("ann@example.com")}
	attempt(t, a, buckets...) // a failure
	ok, _ := attempt(t, b, buckets...)
	if err := ok.Succeeded(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ok.Succeeded(ctx); err != nil {
		t.Errorf("a second Succeeded: %v", err)
	}
	count := func(b Bucket) int {
		n, err := st.ThrottleCount(ctx, b.Name(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(buckets[0]); n != 1 {
		t.Errorf("failures: %d, want the earlier failure alone", n)
	}
	if n := count(buckets[1]); n != 2 {
		t.Errorf("requests: %d, want both attempts", n)
	}
	refused, name := attempt(t, a, requests.For("ann@example.com"))
	if name != "" {
		t.Fatalf("third request refused by %s", name)
	}
	if _, name := attempt(t, b, requests.For("ANN@example.com")); name != "t_requests" {
		t.Errorf("fourth request refused by %q, want t_requests", name)
	}
	if err := refused.Succeeded(ctx); err != nil || count(buckets[1]) != 3 {
		t.Errorf("Succeeded on a rule that counts every attempt took it back (%v)", err)
	}
}

// TestAttemptSweeps: every sweepEvery-th attempt removes events older
// than the longest rule's window.
func TestAttemptSweeps(t *testing.T) {
	a, _, _, url := throttleEnv(t)
	storetest.Exec(t, url, `
		INSERT INTO throttle_events (bucket, at)
		SELECT 'old:' || i, now() - interval '61 minutes' FROM generate_series(1, 5) i`)
	many := Rule{Name: "t_many", Limit: 2 * sweepEvery, Window: time.Minute}
	for range sweepEvery - 1 {
		attempt(t, a, many.For("x"))
	}
	if n := storetest.Count(t, url, `SELECT count(*) FROM throttle_events WHERE bucket LIKE 'old:%'`); n != 5 {
		t.Fatalf("%d old events before the sweeping attempt, want 5", n)
	}
	attempt(t, a, many.For("x"))
	if n := storetest.Count(t, url, `SELECT count(*) FROM throttle_events WHERE bucket LIKE 'old:%'`); n != 0 {
		t.Errorf("%d old events left after %d attempts", n, sweepEvery)
	}
	if n := storetest.Count(t, url, `SELECT count(*) FROM throttle_events WHERE bucket = 't_many:x'`); n != sweepEvery {
		t.Errorf("%d recent events, want %d", n, sweepEvery)
	}
}
