package diftest

import "runtime"

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
