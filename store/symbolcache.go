package store

import (
	lru "container/list"
	"sync"
)

// DefaultSymbolCacheSize is the bytes of files the symbol routes keep in
// memory unless told otherwise (SYMBOL_CACHE_SIZE).
const DefaultSymbolCacheSize = 64 << 20

// symbolCache keeps the content of files that the symbol routes served,
// keyed by their SHA-1, the least recently served first out, within max
// bytes together (SYMBOLS.md §9: bounded in bytes, a setting). A file
// larger than a quarter of max is never kept: it is streamed from the
// blob store each time.
type symbolCache struct {
	mu    sync.Mutex
	max   int64
	used  int64
	order *lru.List // of *cacheEntry, most recent first
	items map[string]*lru.Element
}

type cacheEntry struct {
	key  string
	data []byte
}

func newSymbolCache(max int64) *symbolCache {
	if max <= 0 {
		return nil
	}
	return &symbolCache{max: max, order: lru.New(), items: map[string]*lru.Element{}}
}

// fits reports whether a file of size bytes may be kept.
func (c *symbolCache) fits(size int64) bool {
	return c != nil && size > 0 && size <= c.max/4
}

// get returns the content of the file whose SHA-1 is key, nil when not
// kept.
func (c *symbolCache) get(key string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*cacheEntry).data
}

// put keeps data as the content of the file whose SHA-1 is key, dropping
// the least recently served files until it fits.
func (c *symbolCache) put(key string, data []byte) {
	if !c.fits(int64(len(data))) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; ok {
		return
	}
	for c.used+int64(len(data)) > c.max {
		last := c.order.Back()
		old := last.Value.(*cacheEntry)
		c.order.Remove(last)
		delete(c.items, old.key)
		c.used -= int64(len(old.data))
	}
	c.items[key] = c.order.PushFront(&cacheEntry{key: key, data: data})
	c.used += int64(len(data))
}
