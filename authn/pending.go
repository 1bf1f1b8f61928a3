package authn

import (
	"sync"
	"time"
)

// PendingSeeds holds each user's freshly generated, not yet confirmed
// recovery-code seed for a limited time. It lives in memory only: a restart
// forgets pending seeds, and the user asks for new codes.
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
func (p *PendingSeeds) Put(userID int64, seed string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.sweep(now)
	p.entries[userID] = pendingSeed{seed: seed, expires: now.Add(p.ttl)}
}

// Get returns the seed held for userID unless it expired.
func (p *PendingSeeds) Get(userID int64) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.entries[userID]
	if !ok || !p.now().Before(e.expires) {
		return "", false
	}
	return e.seed, true
}

// Remove forgets the seed of userID when it is still seed; a newer seed that
// a concurrent request put there stays.
func (p *PendingSeeds) Remove(userID int64, seed string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.entries[userID]; ok && e.seed == seed {
		delete(p.entries, userID)
	}
}

// Sweep removes every expired entry.
func (p *PendingSeeds) Sweep() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sweep(p.now())
}

// Len returns the number of entries held, expired or not.
func (p *PendingSeeds) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.entries)
}

func (p *PendingSeeds) sweep(now time.Time) {
	for id, e := range p.entries {
		if !now.Before(e.expires) {
			delete(p.entries, id)
		}
	}
}
