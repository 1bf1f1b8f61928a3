package symbolication

import (
	"context"
	"errors"
	"sync"
)

// Slots bound the work of one kind running at once: perOrg per
// organization (or whatever K keys, as a token for the uploads' bound)
// and total in all, so that one organization holds at most perOrg of the
// total and another's work finds a slot. A caller waits
// for its organization's slot first, then for one of all, and holds
// nothing while it waits (no body read, no file open): waiting ends with
// its context. The DebugFileCache's parses, the debuginfod sources that
// are inflated and the resolution requests each have their own; the
// uploads of a token (handlers' bodyLimiter) take their token's alone.
type Slots[K comparable] struct {
	total  chan struct{}
	perOrg int

	mu   sync.Mutex
	orgs map[K]*orgSlots
}

// orgSlots are the slots of one organization and how many callers hold
// or wait for them.
type orgSlots struct {
	slots chan struct{}
	users int // guarded by Slots.mu
}

// NewSlots returns slots of perOrg per organization and total in all
// (each at least 1).
func NewSlots[K comparable](perOrg, total int) *Slots[K] {
	return &Slots[K]{total: make(chan struct{}, max(total, 1)), perOrg: max(perOrg, 1), orgs: map[K]*orgSlots{}}
}

// errStopped is Acquire's answer when stop was closed first.
var errStopped = errors.New("symbolication: stopped while waiting for a slot")

// Acquire waits for one of org's slots, then for one of all, and returns
// the function that gives both back. It stops, holding nothing, with
// ctx's error when ctx ends first, and with errStopped when stop (which
// may be nil) is closed first.
func (s *Slots[K]) Acquire(ctx context.Context, org K, stop <-chan struct{}) (release func(), err error) {
	releaseOrg, err := s.AcquireOrg(ctx, org, stop)
	if err != nil {
		return nil, err
	}
	releaseAll, err := s.AcquireAll(ctx, stop)
	if err != nil {
		releaseOrg()
		return nil, err
	}
	return func() {
		releaseAll()
		releaseOrg()
	}, nil
}

// AcquireOrg waits for one of org's slots alone, for a caller that must
// read something (a request's body) before it takes one of all: its slow
// client then holds only a slot of its own organization; or for a bound
// per key alone. It stops as Acquire does.
func (s *Slots[K]) AcquireOrg(ctx context.Context, org K, stop <-chan struct{}) (release func(), err error) {
	s.mu.Lock()
	o := s.orgs[org]
	if o == nil {
		o = &orgSlots{slots: make(chan struct{}, s.perOrg)}
		s.orgs[org] = o
	}
	o.users++
	s.mu.Unlock()
	leave := func() {
		s.mu.Lock()
		if o.users--; o.users == 0 {
			delete(s.orgs, org)
		}
		s.mu.Unlock()
	}
	select {
	case o.slots <- struct{}{}:
	case <-stop:
		leave()
		return nil, errStopped
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
	return func() {
		<-o.slots
		leave()
	}, nil
}

// AcquireAll waits for one of the slots of all, which a caller takes
// holding one of its organization's (AcquireOrg). It stops as Acquire
// does.
func (s *Slots[K]) AcquireAll(ctx context.Context, stop <-chan struct{}) (release func(), err error) {
	select {
	case s.total <- struct{}{}:
	case <-stop:
		return nil, errStopped
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return func() { <-s.total }, nil
}
