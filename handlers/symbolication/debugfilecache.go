package symbolication

import (
	"container/list"
	"context"
	"errors"
	"sync"

	"errata/store"
	"errata/worker/dif"
)

// DefaultDebugFileCacheBytes is the default of DEBUG_FILE_CACHE_BYTES: the
// parsed debug files that native resolutions keep in memory, 64 MiB as
// dif.Resolver.Size counts them, and what one native request may hold of
// them (Bound), so that the cache, a parse and the runtime's collection
// stay within 256 MB of growth.
const DefaultDebugFileCacheBytes = 64 << 20

// EntryOverhead is what an entry counts beside its resolver's bytes: all
// that an entry remembering a file's failure counts.
const EntryOverhead = 256

// DebugFileCache keeps parsed debug files (their resolvers, or why they could
// not be read) by the SHA-1 of their content, the least recently used
// going first when their sizes together pass the bound. A file parsed by
// one request is waited for by the others that want it; it is counted, and
// may be evicted, only once parsed.
//
// Files are parsed one at a time per organization and two at a time in
// all: an organization's second parse waits for its first, never for a
// slot that another organization's miss needs.
type DebugFileCache struct {
	max int64
	// parse bounds the files read at once, one per organization and two
	// in all, so that what reading holds (the DWARF sections of each)
	// stays within a few budgets. A DWARF resolver parses a unit later,
	// when an address first falls in it: one unit at a time per file,
	// what it keeps counted by Recount.
	parse *Slots[int64]

	mu      sync.Mutex
	bytes   int64
	entries map[string]*list.Element // of *debugFileEntry, parsed and counted
	lru     list.List                // of entries, most recently used first
	// parsing holds the files waiting to be parsed or being parsed, in
	// no list: never evicted (another parse of one would hold it twice),
	// counted once parsed.
	parsing map[string]*debugFileEntry
}

type debugFileEntry struct {
	key string
	// started is closed when a request begins to parse the file: until
	// then, each request that wants it waits for its own slots, and the
	// first to hold them parses it for all.
	started chan struct{}
	wanted  int           // requests waiting for slots to parse it; c.mu guards it
	ready   chan struct{} // closed once res/err are set
	res     *dif.Resolver
	err     error
	// retry tells the waiters that the parse ended for a reason of the
	// request that ran it, not of the file's: they parse it themselves.
	retry bool
	size  int64
}

// NewDebugFileCache returns a cache of at most maxBytes of parsed files; a
// file larger than maxBytes is parsed for each request and not kept.
func NewDebugFileCache(maxBytes int64) *DebugFileCache {
	return &DebugFileCache{max: maxBytes, parse: NewSlots[int64](1, 2), entries: map[string]*list.Element{}, parsing: map[string]*debugFileEntry{}}
}

// Bound is the cache's bound, and what one native request may hold of
// parsed files (its Budget): a resolver larger is neither kept nor held.
func (c *DebugFileCache) Bound() int64 { return c.max }

// AcquireParse waits for the parse slots of the organization org, as a
// parse of a whole file does: a DWARF unit parsed on first use
// (dif.NewWork) runs in them, so that one organization's lazy parses take
// one of the process's parse slots at most. release gives them back.
func (c *DebugFileCache) AcquireParse(ctx context.Context, org int64) (release func(), err error) {
	return c.parse.Acquire(ctx, org, nil)
}

// Stats reports the bytes and the entries the cache holds.
func (c *DebugFileCache) Stats() (bytes int64, entries int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes, len(c.entries)
}

// errStarted is the answer of the parse slots once another request began
// the parse.
var errStarted = errStopped

// Get returns the resolver of the file whose SHA-1 is key, parsing it with
// load, as a parse of the organization org, when the cache does not hold
// it. parsed reports whether this call parsed it.
//
// The requests that want a file not yet parsed each wait for their own
// organization's slot and a slot of all; the first to hold them parses it
// and the others wait for that parse, so that none waits in another
// organization's queue. A request waiting for another's parse parses the
// file itself when that one ends for a reason of its request's (canceled,
// its parse budget spent, its file deleted), never failing for it.
func (c *DebugFileCache) Get(ctx context.Context, org int64, key string, load func() (*dif.Resolver, error)) (res *dif.Resolver, parsed bool, err error) {
	for {
		c.mu.Lock()
		var e *debugFileEntry
		if el, ok := c.entries[key]; ok {
			c.lru.MoveToFront(el)
			e = el.Value.(*debugFileEntry)
		} else if e = c.parsing[key]; e == nil {
			e = &debugFileEntry{key: key, started: make(chan struct{}), ready: make(chan struct{})}
			c.parsing[key] = e
		}
		e.wanted++
		c.mu.Unlock()

		var release func()
		err := errStarted
		select {
		case <-e.started:
		default:
			release, err = c.parse.Acquire(ctx, org, e.started)
		}
		c.mu.Lock()
		e.wanted--
		first := err == nil && !isClosed(e.started)
		if first {
			close(e.started)
		}
		if err != nil && err != errStarted && e.wanted == 0 && !isClosed(e.started) && c.parsing[key] == e {
			delete(c.parsing, key) // nobody else wants it
		}
		c.mu.Unlock()
		switch {
		case first:
			return c.parseFile(ctx, e, release, load)
		case err == nil:
			release() // another began while this one took its slots
		case err != errStarted:
			return nil, false, err
		}
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
		if !e.retry {
			return e.res, false, e.err
		}
	}
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// parseFile parses the file of e with load, holding the slots that release
// gives back, and keeps it unless it failed for a reason not the file's.
func (c *DebugFileCache) parseFile(ctx context.Context, e *debugFileEntry, release func(), load func() (*dif.Resolver, error)) (res *dif.Resolver, parsed bool, err error) {
	func() {
		// A reader that panics fails this file, not the waiters
		// forever: the panic goes on once they are released.
		defer func() {
			release()
			if p := recover(); p != nil {
				e.err = errors.New("reading the file failed")
				c.mu.Lock()
				delete(c.parsing, e.key)
				c.mu.Unlock()
				close(e.ready)
				panic(p)
			}
		}()
		e.res, e.err = load()
	}()

	// Not the file's fault (this request's cancellation or budget, its
	// record deleted meanwhile, the blob store out of reach): not kept,
	// the next request tries again, and a waiter parses it now unless the
	// blob store failed. Else the resolver, or the file's own failure (it
	// stays malformed), is kept. The entry is settled before the waiters
	// are released, so that one that parses again finds it gone.
	unavailable := errors.Is(e.err, store.ErrUnavailable)
	notTheFile := e.err != nil && (ctx.Err() != nil || errors.Is(e.err, context.Canceled) ||
		errors.Is(e.err, context.DeadlineExceeded) || errors.Is(e.err, ErrBudget) ||
		errors.Is(e.err, store.ErrNotFound) || unavailable)
	c.mu.Lock()
	delete(c.parsing, e.key)
	if notTheFile {
		e.retry = !unavailable
	} else {
		el := c.lru.PushFront(e)
		c.entries[e.key] = el
		c.count(el)
	}
	c.mu.Unlock()
	close(e.ready)
	return e.res, true, e.err
}

// Recount counts again what the resolver of the file whose SHA-1 is key
// holds: a DWARF resolver parses a unit the first time an address falls
// in it, after the cache took it in (and drops its sections once every
// unit is parsed). The least recently used entries make room, as for a
// new one.
func (c *DebugFileCache) Recount(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok && el.Value.(*debugFileEntry).size > 0 {
		c.count(el)
	}
}

// count sets el's size to what its entry holds now, and drops the least
// recently used entries while the cache holds more than its bound (el
// itself first when it alone is larger); c.mu is held.
func (c *DebugFileCache) count(el *list.Element) {
	e := el.Value.(*debugFileEntry)
	size := int64(EntryOverhead)
	if e.res != nil {
		size += e.res.Size()
	}
	c.bytes += size - e.size
	e.size = size
	if e.size > c.max {
		c.remove(el)
	}
	for c.bytes > c.max && c.lru.Len() > 0 {
		c.remove(c.lru.Back())
	}
}

// remove drops el; c.mu is held.
func (c *DebugFileCache) remove(el *list.Element) {
	e := el.Value.(*debugFileEntry)
	if c.entries[e.key] == el {
		delete(c.entries, e.key)
	}
	c.lru.Remove(el)
	c.bytes -= e.size
}

// Held returns the bytes the resolvers of the cached files hold now, each
// with what an entry itself counts: what Stats reports once every entry is
// counted again (Recount).
func (c *DebugFileCache) Held() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	held := int64(0)
	for _, el := range c.entries {
		held += el.Value.(*debugFileEntry).res.Size() + EntryOverhead
	}
	return held
}
