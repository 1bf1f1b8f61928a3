package handlers

import "testing"

// TestSymbolCacheStaysWithinItsBudget drops the least recently used
// entries to make room, and keeps nothing larger than the whole budget.
func TestSymbolCacheStaysWithinItsBudget(t *testing.T) {
	c := NewSymbolCache(100)
	c.put("a", 1, 40)
	c.put("b", 2, 40)
	if _, ok := c.get("a"); !ok { // a is now the most recently used
		t.Fatal("a is not cached")
	}
	c.put("c", 3, 40) // drops b
	if _, ok := c.get("b"); ok {
		t.Error("b, the least recently used, is still cached")
	}
	for _, k := range []string{"a", "c"} {
		if _, ok := c.get(k); !ok {
			t.Errorf("%s is not cached", k)
		}
	}
	c.put("huge", 4, 101)
	if _, ok := c.get("huge"); ok {
		t.Error("an entry over the budget is cached")
	}
	c.put("a", 5, 60) // replaces a's 40 bytes: a and c fill the budget
	if v, ok := c.get("a"); !ok || v != 5 {
		t.Errorf("a = %v, %v after its replacement", v, ok)
	}
	if n, used, _ := c.stats(); n != 2 || used != 100 {
		t.Errorf("%d entries of %d bytes, want 2 of 100", n, used)
	}
	c.put("d", 6, 50) // drops c, then a
	if n, used, _ := c.stats(); n != 1 || used != 50 {
		t.Errorf("%d entries of %d bytes, want d's 50", n, used)
	}
	var none *SymbolCache
	none.put("x", 1, 1)
	if _, ok := none.get("x"); ok {
		t.Error("a nil cache kept something")
	}
}
