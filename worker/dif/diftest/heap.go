package diftest

import (
	"runtime"
	"testing"
)

// HeapAlloc returns the bytes the heap holds after two collections: the
// tests that hold a reader's charged size to what it really holds read it
// before and after building several copies.
func HeapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// CheckHeld builds n copies of a reader's parsed file with parse (the
// size it reports and what keeps it alive) and checks that the sizes
// together are at least what the heap holds for them and at most twice
// that: a cache charged with the size holds what its bound says.
func CheckHeld(t testing.TB, n int, parse func() (size int, held any)) {
	t.Helper()
	kept := make([]any, n)
	before := HeapAlloc()
	charged := 0
	for i := range kept {
		size, v := parse()
		kept[i] = v
		charged += size
	}
	held := HeapAlloc() - before
	runtime.KeepAlive(kept)
	t.Logf("%d copies: charged %d, held %d", n, charged, held)
	if uint64(charged) < held || uint64(charged) > 2*held {
		t.Errorf("charged %d bytes for %d held, want between the held and twice that", charged, held)
	}
}
