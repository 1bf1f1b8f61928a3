package symbolication

import (
	"container/list"
	"context"
	"sync"
	"time"

	"errata/store"
)

// DefaultMapCacheBytes is the budget of the MapCache when
// SYMBOLICATE_CACHE_BYTES is not set: 64 MiB of parsed maps and mappings,
// as their parsers measure them, and so 64 MiB that one JavaScript or JVM
// request may hold (EntryBound), so that the cache, a request of each
// organization and the runtime's collection stay within 256 MB of growth.
const DefaultMapCacheBytes = 64 << 20

// MapCache keeps the parsed files of the JavaScript and JVM engines
// (source maps, the sourceMappingURL of minified files, original sources,
// ProGuard mappings) in memory,
// keyed by what they are and the SHA-1 of the stored file, so that a
// second request over the same file parses nothing. It holds at most its
// budget of bytes, as each entry reports its size, and drops the least
// recently used entries first. It is safe for concurrent use; a nil
// *MapCache keeps nothing.
type MapCache struct {
	mu      sync.Mutex
	budget  int64
	used    int64
	hits    int64
	order   *list.List // front: most recently used
	entries map[string]*list.Element
	touched map[int64]time.Time // stored files recently counted as used, by id
}

type mapCacheEntry struct {
	key   string
	value any
	size  int64
}

// NewMapCache returns a cache of at most budget bytes; 0 or less keeps
// nothing.
func NewMapCache(budget int64) *MapCache {
	return &MapCache{budget: budget, order: list.New(), entries: map[string]*list.Element{}}
}

// EntryBound is the most bytes one entry may take, the cache's budget,
// and what one request of the JavaScript or JVM engine may hold (its
// Budget). The engines parse a file within it; one that would take more
// is refused (its frames answer as a malformed file's) and the refusal is
// kept as a small entry under the file's SHA-1, so that no request parses
// it again. A nil cache's is DefaultMapCacheBytes.
func (c *MapCache) EntryBound() int64 {
	if c == nil {
		return DefaultMapCacheBytes
	}
	return c.budget
}

// Get returns the value cached under key.
func (c *MapCache) Get(key string) (any, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	c.hits++
	return e.Value.(*mapCacheEntry).value, true
}

// Put caches value of size bytes under key, unless it alone is over the
// budget, dropping the least recently used entries to make room.
func (c *MapCache) Put(key string, value any, size int64) {
	if c == nil || size < 0 || size > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.used -= e.Value.(*mapCacheEntry).size
		c.order.Remove(e)
		delete(c.entries, key)
	}
	for c.used+size > c.budget {
		last := c.order.Back()
		old := last.Value.(*mapCacheEntry)
		c.order.Remove(last)
		delete(c.entries, old.key)
		c.used -= old.size
	}
	c.entries[key] = c.order.PushFront(&mapCacheEntry{key: key, value: value, size: size})
	c.used += size
}

// Stats returns the entries and bytes held and how many lookups found
// their entry.
func (c *MapCache) Stats() (entries int, bytes, hits int64) {
	if c == nil {
		return 0, 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.used, c.hits
}

// touchEvery is how often a cached file is counted as used again; the
// store itself records a use at most once an hour.
const touchEvery = 10 * time.Minute

// Touch records that f, whose parsed content came from the cache, was
// used (store.TouchSourceFile), at most once every touchEvery per file, so
// that warm requests write nothing. A nil cache touches every time.
func (c *MapCache) Touch(ctx context.Context, st *store.Store, f store.SourceFile) {
	if c != nil {
		now := time.Now()
		c.mu.Lock()
		if c.touched == nil || len(c.touched) > 100_000 {
			c.touched = map[int64]time.Time{}
		}
		last, ok := c.touched[f.FileID()]
		if ok && now.Sub(last) < touchEvery {
			c.mu.Unlock()
			return
		}
		c.touched[f.FileID()] = now
		c.mu.Unlock()
	}
	st.TouchSourceFile(ctx, f)
}
