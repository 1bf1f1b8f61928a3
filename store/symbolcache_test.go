package store

import (
	"bytes"
	"testing"
)

// TestSymbolCacheStaysWithinItsBytes: the least recently served file goes
// first, the total never passes the bound, and a file larger than a
// quarter of it is never kept.
func TestSymbolCacheStaysWithinItsBytes(t *testing.T) {
	c := newSymbolCache(400)
	data := func(b byte) []byte { return bytes.Repeat([]byte{b}, 100) }
	c.put("a", data('a'))
	c.put("b", data('b'))
	c.put("c", data('c'))
	c.put("d", data('d'))
	if c.get("a") == nil { // a is now the most recent
		t.Fatal("a was dropped while the cache had room")
	}
	c.put("e", data('e')) // drops b, the least recent
	if c.get("b") != nil || !bytes.Equal(c.get("a"), data('a')) || !bytes.Equal(c.get("e"), data('e')) {
		t.Errorf("after e: b %v, a %v, e %v; want b dropped", c.get("b") != nil, c.get("a") != nil, c.get("e") != nil)
	}
	if c.used > c.max {
		t.Errorf("%d bytes kept, more than %d", c.used, c.max)
	}
	c.put("big", bytes.Repeat([]byte{'x'}, 101))
	if c.get("big") != nil {
		t.Error("a file larger than a quarter of the cache was kept")
	}
	if newSymbolCache(0) != nil || newSymbolCache(0).fits(1) {
		t.Error("a cache of 0 bytes keeps files")
	}
}
