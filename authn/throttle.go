package authn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"errata/store"
)

// Rule is a throttling rule (docs/accounts.md, Throttling): at most Limit
// events per subject in any Window. Events are kept in PostgreSQL, so
// replicas share them.
type Rule struct {
	Name   string
	Limit  int
	Window time.Duration
	// Failures is set when the rule counts failures only: an attempt that
	// succeeds takes its events back (Attempt.Succeeded). Otherwise every
	// attempt counts.
	Failures bool
}

// The rules of sign-in, each decided here alone. Which answer a refusal
// gets is the handler's: 400 too_many_login_attempts for
// PasswordFailuresPerAccount, 429 for the others.
var (
	// PasswordFailuresPerAccount: 5 wrong passwords per 5 minutes for an
	// account (its address, lower-cased, whether or not an account has it).
	// Once full, the right password is refused too until the window
	// passes; a success does not clear the count.
	PasswordFailuresPerAccount = Rule{Name: "password_account", Limit: 5, Window: 5 * time.Minute, Failures: true}
	// PasswordFailuresPerAddress: 10 wrong passwords per minute from one
	// client address.
	PasswordFailuresPerAddress = Rule{Name: "password_address", Limit: 10, Window: time.Minute, Failures: true}
	// ProofFailures and ProofFailuresHourly: 5 failures per 20 seconds and
	// 20 per hour for a user proving who they are again: a second factor
	// at sign-in, or a reauthentication by password or code. Take both
	// together (ProofFailuresOf).
	ProofFailures       = Rule{Name: "proof", Limit: 5, Window: 20 * time.Second, Failures: true}
	ProofFailuresHourly = Rule{Name: "proof_hourly", Limit: 20, Window: time.Hour, Failures: true}
	// ResetRequestsPerAddress and ResetRequestsPerAccount: 3 password
	// reset requests per hour from one client address and for one account
	// address; every request counts.
	ResetRequestsPerAddress = Rule{Name: "reset_address", Limit: 3, Window: time.Hour}
	ResetRequestsPerAccount = Rule{Name: "reset_account", Limit: 3, Window: time.Hour}
	// InvitationsPerInviter: 50 invitations per 5 minutes from one user.
	InvitationsPerInviter = Rule{Name: "invitations", Limit: 50, Window: 5 * time.Minute}
)

// Rules is every rule above. Their events are swept once older than the
// longest window among them.
var Rules = []Rule{
	PasswordFailuresPerAccount, PasswordFailuresPerAddress,
	ProofFailures, ProofFailuresHourly,
	ResetRequestsPerAddress, ResetRequestsPerAccount,
	InvitationsPerInviter,
}

// maxSubject is the longest subject kept as it is in a bucket's name; a
// longer one is kept as its SHA-256, so that no input makes a name longer
// than a rule's name and 72 bytes.
const maxSubject = 64

// Bucket is a rule applied to one subject: the events of that rule and
// subject count together.
type Bucket struct {
	rule Rule
	name string
}

// For is the bucket of the rule for subject: an email address, say. The
// subject is trimmed and lower-cased; one that is long, not UTF-8 or holds
// a NUL byte is named by its SHA-256 instead.
func (r Rule) For(subject string) Bucket {
	s := strings.TrimSpace(subject)
	if utf8.ValidString(s) {
		s = strings.ToLower(s)
	}
	if len(s) > maxSubject || !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		sum := sha256.Sum256([]byte(s))
		s = "sha256:" + hex.EncodeToString(sum[:])
	}
	return Bucket{rule: r, name: r.Name + ":" + s}
}

// ForUser is the bucket of the rule for the user of id userID.
func (r Rule) ForUser(userID int64) Bucket {
	return r.For("user:" + strconv.FormatInt(userID, 10))
}

// ForAddr is the bucket of the rule for a client address (ClientAddr). An
// IPv6 address counts with its /64, the least a subscriber is given, so
// that one client cannot escape the rule by walking its own network.
func (r Rule) ForAddr(a netip.Addr) Bucket {
	a = a.Unmap().WithZone("")
	switch {
	case !a.IsValid():
		return r.For("addr:unknown")
	case a.Is6():
		p, _ := a.Prefix(64)
		return r.For("addr:" + p.String())
	}
	return r.For("addr:" + a.String())
}

// Name is the bucket's name in the store.
func (b Bucket) Name() string { return b.name }

// Rule is the bucket's rule.
func (b Bucket) Rule() Rule { return b.rule }

// ProofFailuresOf is the buckets of a user's failures to prove who they
// are: ProofFailures and ProofFailuresHourly, taken together.
func ProofFailuresOf(userID int64) []Bucket {
	return []Bucket{ProofFailures.ForUser(userID), ProofFailuresHourly.ForUser(userID)}
}

// sweepEvery is how many attempts a process makes between two sweeps of
// old events, and sweepBatch the most events one sweep removes.
const (
	sweepEvery = 64
	sweepBatch = 1000
)

// Throttle applies rules, with their events in the store. The zero value
// with a Store is ready.
type Throttle struct {
	Store *store.Store
	// attempts counts this process's attempts; every sweepEvery-th one
	// sweeps a batch of old events, and so does the next one when that
	// batch was full, so sweeping keeps pace with the events made.
	attempts  atomic.Uint64
	sweepNext atomic.Bool
}

// Attempt is one attempt counted in some buckets: allowed, its events
// recorded in each, or refused, with nothing recorded.
type Attempt struct {
	t       *Throttle
	buckets []Bucket
	events  []int64
	refused int // index in buckets of the full one, or -1
}

// Attempt counts one attempt in every bucket of buckets, or refuses it
// when one of them is full: then nothing is recorded, so that refused
// attempts do not prolong the refusal. Among attempts at once, from any
// replica, no bucket ever passes its limit.
func (t *Throttle) Attempt(ctx context.Context, buckets ...Bucket) (*Attempt, error) {
	take := make([]store.ThrottleBucket, len(buckets))
	for i, b := range buckets {
		take[i] = store.ThrottleBucket{Name: b.name, Window: b.rule.Window, Limit: b.rule.Limit}
	}
	events, full, err := t.Store.TakeThrottle(ctx, take...)
	if err != nil {
		return nil, err
	}
	t.sweep(ctx)
	return &Attempt{t: t, buckets: buckets, events: events, refused: full}, nil
}

// Refused reports whether the attempt was refused, and by which rule (the
// first full one, in the order Attempt was given its buckets).
func (a *Attempt) Refused() (Rule, bool) {
	if a.refused < 0 {
		return Rule{}, false
	}
	return a.buckets[a.refused].rule, true
}

// Succeeded takes back the attempt's events in the buckets of rules that
// count failures only: the right password is no failure. It clears no
// earlier event, and does nothing for a refused attempt.
func (a *Attempt) Succeeded(ctx context.Context) error {
	var cancel []int64
	for i, e := range a.events {
		if a.buckets[i].rule.Failures {
			cancel = append(cancel, e)
		}
	}
	a.events = nil
	return a.t.Store.CancelThrottle(ctx, cancel...)
}

// sweep removes a batch of events older than the longest rule's window,
// on every sweepEvery-th attempt. It is best effort: an error leaves the
// events to a later sweep, and the attempt stands.
func (t *Throttle) sweep(ctx context.Context) {
	if t.attempts.Add(1)%sweepEvery != 0 && !t.sweepNext.Swap(false) {
		return
	}
	var longest time.Duration
	for _, r := range Rules {
		longest = max(longest, r.Window)
	}
	n, err := t.Store.SweepThrottle(ctx, longest, sweepBatch)
	if err == nil && n == sweepBatch {
		t.sweepNext.Store(true)
	}
}
