package symbolication

import "testing"

// TestMapCacheStaysWithinItsBudget drops the least recently used
// entries to make room, and keeps nothing larger than the whole budget.
func TestMapCacheStaysWithinItsBudget(t *testing.T) {
	c := NewMapCache(100)
	c.Put("a", 1, 40)
	c.Put("b", 2, 40)
	if _, ok := c.Get("a"); !ok { // a is now the most recently used
		t.Fatal("a is not cached")
	}
	c.Put("c", 3, 40) // drops b
	if _, ok := c.Get("b"); ok {
		t.Error("b, the least recently used, is still cached")
	}
	for _, k := range []string{"a", "c"} {
		if _, ok := c.Get(k); !ok {
			t.Errorf("%s is not cached", k)
		}
	}
	c.Put("huge", 4, 101)
	if _, ok := c.Get("huge"); ok {
		t.Error("an entry over the budget is cached")
	}
	c.Put("a", 5, 60) // replaces a's 40 bytes: a and c fill the budget
	if v, ok := c.Get("a"); !ok || v != 5 {
		t.Errorf("a = %v, %v after its replacement", v, ok)
	}
	if n, used, _ := c.Stats(); n != 2 || used != 100 {
		t.Errorf("%d entries of %d bytes, want 2 of 100", n, used)
	}
	c.Put("d", 6, 50) // drops c, then a
	if n, used, _ := c.Stats(); n != 1 || used != 50 {
		t.Errorf("%d entries of %d bytes, want d's 50", n, used)
	}
	var none *MapCache
	none.Put("x", 1, 1)
	if _, ok := none.Get("x"); ok {
		t.Error("a nil cache kept something")
	}
}
