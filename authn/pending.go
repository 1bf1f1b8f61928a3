package authn

import (
	"context"
	"errors"
	"sync"
	"time"

	"errata/store"
)

// PendingSeedStore holds each user's freshly generated, not yet confirmed
// recovery-code seed for a limited time. The GET of recovery codes puts a
// seed, replacing any earlier one; the POST reads it, checks the submitted
// code against it and consumes it. Two implementations exist: PendingSeeds
// in the memory of one process, and DatabasePendingSeeds in PostgreSQL for
// replicas that share a database.
type PendingSeedStore interface {
	// Put holds seed for userID for the store's lifetime, replacing any
	// earlier seed of userID.
	Put(ctx context.Context, userID int64, seed string) error
	// Get returns the seed held for userID; ok is false when none is held
	// or it expired.
	Get(ctx context.Context, userID int64) (seed string, ok bool, err error)
	// Consume forgets the seed of userID when it is still seed and has not
	// expired, and reports whether this call did: of concurrent calls for
	// one seed exactly one reports true, and a newer seed that a concurrent
	// Put held stays.
	Consume(ctx context.Context, userID int64, seed string) (bool, error)
}

// PendingSeeds is the PendingSeedStore in the memory of one process: a
// restart forgets pending seeds, and another process never sees them.
type PendingSeeds struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[int64]pendingSeed
}

type pendingSeed struct {
	seed    string
	expires time.Time
}

// NewPendingSeeds returns an empty map whose entries live for ttl as told
// by now (time.Now when nil).
func NewPendingSeeds(ttl time.Duration, now func() time.Time) *PendingSeeds {
	if now == nil {
		now = time.Now
	}
	return &PendingSeeds{ttl: ttl, now: now, entries: map[int64]pendingSeed{}}
}

// Put holds seed for userID, replacing any earlier one, and sweeps the
// expired entries of every user so that the map never outgrows the users
// who asked for codes within one ttl.
func (p *PendingSeeds) Put(_ context.Context, userID int64, seed string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.sweep(now)
	p.entries[userID] = pendingSeed{seed: seed, expires: now.Add(p.ttl)}
	return nil
}

// Get returns the seed held for userID unless it expired.
func (p *PendingSeeds) Get(_ context.Context, userID int64) (string, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.entries[userID]
	if !ok || !p.now().Before(e.expires) {
		return "", false, nil
	}
	return e.seed, true, nil
}

// Consume forgets the seed of userID when it is still seed and reports
// whether it was also unexpired; a newer seed stays.
func (p *PendingSeeds) Consume(_ context.Context, userID int64, seed string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.entries[userID]
	if !ok || e.seed != seed {
		return false, nil
	}
	delete(p.entries, userID)
	return p.now().Before(e.expires), nil
}

func (p *PendingSeeds) sweep(now time.Time) {
	for id, e := range p.entries {
		if !now.Before(e.expires) {
			delete(p.entries, id)
		}
	}
}

// DatabasePendingSeeds is the PendingSeedStore in PostgreSQL, for replicas
// behind one load balancer: a GET on one and the POST on another see the
// same seed. A seed is never stored in clear: it is sealed with the
// SeedCipher of SECRET_KEY (so every replica needs the same secret) and
// bound to its user id, so a row copied to another user does not open.
// Expiry follows the clock of the replica that asks; expired rows are
// deleted in batches by each Put.
type DatabasePendingSeeds struct {
	st     *store.Store
	cipher *SeedCipher
	ttl    time.Duration
	now    func() time.Time
}

// NewDatabasePendingSeeds returns the pending seeds of st, encrypted under
// secret, that live for ttl as told by now (time.Now when nil).
func NewDatabasePendingSeeds(st *store.Store, secret string, ttl time.Duration, now func() time.Time) *DatabasePendingSeeds {
	if now == nil {
		now = time.Now
	}
	return &DatabasePendingSeeds{st: st, cipher: NewSeedCipher(secret), ttl: ttl, now: now}
}

// Put holds seed, sealed, for userID, replacing any earlier one, and
// deletes a batch of expired seeds.
func (p *DatabasePendingSeeds) Put(ctx context.Context, userID int64, seed string) error {
	now := p.now()
	return p.st.PutPendingSeed(ctx, userID, p.cipher.Seal(userID, seed), now.Add(p.ttl), now)
}

// Get returns the seed held for userID unless it expired. A row that does
// not open under this secret for this user is an error, not a missing seed:
// it means replicas with different secrets or a tampered row.
func (p *DatabasePendingSeeds) Get(ctx context.Context, userID int64) (string, bool, error) {
	seed, _, ok, err := p.get(ctx, userID)
	return seed, ok, err
}

// Consume deletes the seed of userID when it is still seed and has not
// expired. The delete compares the stored ciphertext that opened to seed,
// so a Put in between (a new ciphertext) or another Consume (no row) makes
// it delete nothing.
func (p *DatabasePendingSeeds) Consume(ctx context.Context, userID int64, seed string) (bool, error) {
	held, sealed, ok, err := p.get(ctx, userID)
	if err != nil || !ok || held != seed {
		return false, err
	}
	return p.st.DeletePendingSeed(ctx, userID, sealed, p.now())
}

// get returns the seed held for userID and its ciphertext as stored.
func (p *DatabasePendingSeeds) get(ctx context.Context, userID int64) (string, []byte, bool, error) {
	sealed, err := p.st.PendingSeed(ctx, userID, p.now())
	if errors.Is(err, store.ErrNotFound) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, err
	}
	seed, err := p.cipher.Open(userID, sealed)
	if err != nil {
		return "", nil, false, err
	}
	return seed, sealed, true, nil
}
