package store

import (
	"bytes"
	lru "container/list"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// DefaultSymbolCacheSize is the bytes of files the symbol routes keep
// unless told otherwise (SYMBOL_CACHE_SIZE).
const DefaultSymbolCacheSize = 64 << 20

// servedFileCache keeps the content of files that the symbol routes served
// (docs/symbol-server.md), on disk, keyed by their SHA-1, the least
// recently served first out, within max bytes together (SYMBOL_CACHE_SIZE,
// docs/configuration.md). It is none of the caches of parsed files that
// the resolution routes keep in memory. A file
// larger than a quarter of max is never kept: it is streamed from the
// blob store each time.
//
// A file is kept as a file of a private directory (0700) that the cache
// makes under parent when it first keeps one, so that each request opens
// a descriptor of its own and the HTTP server sends it with sendfile(2)
// from the page cache, without copying it through errata's memory. When
// the directory cannot be made (a read-only filesystem, parent empty) or
// a file cannot be written there (a full disk), the file is kept in
// memory instead, within the same max. close removes the directory.
type servedFileCache struct {
	mu     sync.Mutex
	max    int64
	used   int64
	order  *lru.List // of *cacheEntry, most recent first
	items  map[string]*lru.Element
	parent string
	dir    string // "" until made
	noDir  bool   // making it failed, or the cache is closed: memory only
	closed bool
}

type cacheEntry struct {
	key  string
	size int64
	data []byte // the content when kept in memory; nil when kept in dir
}

func newServedFileCache(max int64, parent string) *servedFileCache {
	if max <= 0 {
		return nil
	}
	return &servedFileCache{max: max, order: lru.New(), items: map[string]*lru.Element{}, parent: parent, noDir: parent == ""}
}

// stats returns the bytes and the number of files the cache keeps.
func (c *servedFileCache) stats() (bytes int64, entries int) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, len(c.items)
}

// fits reports whether a file of size bytes may be kept.
func (c *servedFileCache) fits(size int64) bool {
	return c != nil && size > 0 && size <= c.max/4
}

// open returns a reader of the file whose SHA-1 is key, nil when not
// kept. The caller closes it.
func (c *servedFileCache) open(key string) SymbolReader {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil
	}
	e := el.Value.(*cacheEntry)
	if e.data != nil {
		c.order.MoveToFront(el)
		return memoryFile{bytes.NewReader(e.data), e.data}
	}
	// Opened under the lock, so that no put removes it in between.
	f, err := os.Open(filepath.Join(c.dir, key))
	if err != nil {
		// Removed behind errata's back (a cleaner of the temporary
		// folder): read again from the blob store.
		c.remove(el)
		return nil
	}
	c.order.MoveToFront(el)
	return cachedFile{f, e.size}
}

// put keeps data as the content of the file whose SHA-1 is key, as fill
// does.
func (c *servedFileCache) put(key string, data []byte) {
	if r, err := c.fill(key, int64(len(data)), bytes.NewReader(data)); err == nil {
		r.Close()
	}
}

// fillBuffer is what fill holds of a file while it copies it to the
// cache's directory.
const fillBuffer = 256 << 10

// fill reads the size bytes of the file whose SHA-1 is key from src, keeps
// them unless the cache is closed, and returns a reader of them (the
// caller closes it). In the cache's directory the file is copied through a
// buffer of fillBuffer bytes, so that a request for a file not kept yet
// holds that buffer, not the file, and no lock while it copies; where the
// cache keeps files in memory (no directory, or the disk refused the
// file), it is read whole. An error is src's.
func (c *servedFileCache) fill(key string, size int64, src io.ReaderAt) (SymbolReader, error) {
	if dir := c.directory(); dir != "" {
		f, err := copyToTemp(dir, key, src, size)
		var werr *diskError
		switch {
		case err == nil:
			c.adopt(key, size, f.Name())
			return cachedFile{f, size}, nil
		case !errors.As(err, &werr):
			return nil, err
		}
	}
	data := make([]byte, size)
	if _, err := src.ReadAt(data, 0); err != nil {
		return nil, err
	}
	if c.fits(size) {
		c.mu.Lock()
		if _, ok := c.items[key]; !ok && !c.closed {
			c.insert(&cacheEntry{key: key, size: size, data: data})
		}
		c.mu.Unlock()
	}
	return memoryFile{bytes.NewReader(data), data}, nil
}

// directory returns the cache's directory, made on first use; "" when the
// cache keeps files in memory or is closed.
func (c *servedFileCache) directory() string {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir == "" && !c.noDir {
		dir, err := os.MkdirTemp(c.parent, "errata-symbols-")
		if err != nil {
			c.noDir = true
		}
		c.dir = dir
	}
	if c.noDir || c.closed {
		return ""
	}
	return c.dir
}

// diskError is a failure to write the cache's directory, as opposed to
// one to read the file being kept.
type diskError struct{ err error }

func (e *diskError) Error() string { return "served-file cache: " + e.err.Error() }

// copyToTemp copies size bytes of src to a new file of dir, through a
// buffer of fillBuffer bytes, and returns it open at its start.
func copyToTemp(dir, key string, src io.ReaderAt, size int64) (*os.File, error) {
	f, err := os.CreateTemp(dir, key+".*.part")
	if err != nil {
		return nil, &diskError{err}
	}
	fail := func(err error) (*os.File, error) {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	buf := make([]byte, min(size, fillBuffer))
	for off := int64(0); off < size; {
		n := int(min(int64(len(buf)), size-off))
		if _, err := src.ReadAt(buf[:n], off); err != nil {
			return fail(err)
		}
		if _, err := f.Write(buf[:n]); err != nil {
			return fail(&diskError{err})
		}
		off += int64(n)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fail(&diskError{err})
	}
	return f, nil
}

// adopt keeps the file tmp of the cache's directory, size bytes, as the
// file whose SHA-1 is key; a descriptor open on tmp reads on whatever
// becomes of it.
func (c *servedFileCache) adopt(key string, size int64, tmp string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; ok || c.closed || !c.fits(size) {
		os.Remove(tmp)
		return
	}
	if err := os.Rename(tmp, filepath.Join(c.dir, key)); err != nil {
		os.Remove(tmp)
		return
	}
	c.insert(&cacheEntry{key: key, size: size})
}

// insert adds e, dropping the least recently served files until it fits.
// The caller holds the lock.
func (c *servedFileCache) insert(e *cacheEntry) {
	for c.used+e.size > c.max {
		c.remove(c.order.Back())
	}
	c.items[e.key] = c.order.PushFront(e)
	c.used += e.size
}

// remove drops the entry el, and its file. The caller holds the lock.
func (c *servedFileCache) remove(el *lru.Element) {
	e := el.Value.(*cacheEntry)
	c.order.Remove(el)
	delete(c.items, e.key)
	c.used -= e.size
	if e.data == nil {
		os.Remove(filepath.Join(c.dir, e.key))
	}
}

// close drops every file and removes the directory; the cache keeps
// nothing afterwards. A descriptor still open reads on until it is
// closed.
func (c *servedFileCache) close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.items, c.used = map[string]*lru.Element{}, 0
	c.order.Init()
	if c.dir == "" {
		return nil
	}
	return os.RemoveAll(c.dir)
}

// memoryFile is a symbol file served from memory: Bytes gives its
// content, to be written in one call (never to be changed).
type memoryFile struct {
	*bytes.Reader
	data []byte
}

// Bytes returns the content of the file.
func (m memoryFile) Bytes() []byte { return m.data }

// Close does nothing: the content stays in the cache.
func (memoryFile) Close() error { return nil }

// cachedFile is a symbol file kept in the cache directory, open on a
// descriptor of its own: its offset is its reader's, and an *os.File
// that the HTTP server copies to a TCP connection goes with sendfile(2).
type cachedFile struct {
	*os.File
	size int64
}

// Size returns the size of the file.
func (f cachedFile) Size() int64 { return f.size }
