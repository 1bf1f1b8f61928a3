package store

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// read returns the content the cache keeps for key, nil when none.
func read(t *testing.T, c *servedFileCache, key string) []byte {
	t.Helper()
	r := c.open(key)
	if r == nil {
		return nil
	}
	defer r.Close()
	data, err := io.ReadAll(io.NewSectionReader(r, 0, r.Size()))
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	return data
}

// TestServedFileCacheStaysWithinItsBytes: the least recently served file goes
// first, the total never passes the bound (in the directory's files as
// well as in the count), and a file larger than a quarter of it is never
// kept; alike in a directory, and in memory where no directory can be
// made.
func TestServedFileCacheStaysWithinItsBytes(t *testing.T) {
	for _, where := range []string{"directory", "memory"} {
		t.Run(where, func(t *testing.T) {
			parent := t.TempDir()
			if where == "memory" {
				parent = filepath.Join(parent, "missing") // MkdirTemp fails there
			}
			c := newServedFileCache(400, parent)
			defer c.close()
			data := func(b byte) []byte { return bytes.Repeat([]byte{b}, 100) }
			c.put("a", data('a'))
			c.put("b", data('b'))
			c.put("c", data('c'))
			c.put("d", data('d'))
			if read(t, c, "a") == nil { // a is now the most recent
				t.Fatal("a was dropped while the cache had room")
			}
			c.put("e", data('e')) // drops b, the least recent
			if read(t, c, "b") != nil || !bytes.Equal(read(t, c, "a"), data('a')) || !bytes.Equal(read(t, c, "e"), data('e')) {
				t.Errorf("after e: b %v, a %v, e %v; want b dropped", read(t, c, "b") != nil, read(t, c, "a") != nil, read(t, c, "e") != nil)
			}
			if c.used > c.max {
				t.Errorf("%d bytes kept, more than %d", c.used, c.max)
			}
			c.put("big", bytes.Repeat([]byte{'x'}, 101))
			if read(t, c, "big") != nil {
				t.Error("a file larger than a quarter of the cache was kept")
			}
			if b, n := c.stats(); b != 400 || n != 4 {
				t.Errorf("stats: %d bytes in %d files, want 400 in 4 (a, c, d, e)", b, n)
			}
			if where == "memory" {
				if c.dir != "" {
					t.Errorf("a directory %s where none can be made", c.dir)
				}
				return
			}
			files, _ := os.ReadDir(c.dir)
			var onDisk int64
			for _, f := range files {
				fi, _ := f.Info()
				onDisk += fi.Size()
			}
			if len(files) != 4 || onDisk > c.max {
				t.Errorf("%d files of %d bytes in the directory, want 4 within %d", len(files), onDisk, c.max)
			}
		})
	}
	if newServedFileCache(0, "") != nil || newServedFileCache(0, "").fits(1) {
		t.Error("a cache of 0 bytes keeps files")
	}
	if b, n := newServedFileCache(0, "").stats(); b != 0 || n != 0 {
		t.Errorf("a cache of 0 bytes: stats %d bytes in %d files", b, n)
	}
}

// TestServedFileCacheDirectory: the files are kept in a private directory
// made under the parent, each reader opens a descriptor of its own (an
// io.ReadSeeker whose offset no other reader moves), a file removed behind
// the cache's back is read again rather than failing, and close removes
// the directory.
func TestServedFileCacheDirectory(t *testing.T) {
	parent := t.TempDir()
	c := newServedFileCache(1<<20, parent)
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("a directory made before any file was kept: %v", entries)
	}
	content := []byte("0123456789")
	c.put("k", content)
	fi, err := os.Stat(c.dir)
	if err != nil || filepath.Dir(c.dir) != parent || fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory %s under %s: %v, %v; want 0700", c.dir, parent, fi, err)
	}
	r1, r2 := c.open("k"), c.open("k")
	if _, ok := r1.(memoryFile); ok {
		t.Fatal("kept in memory, not in the directory")
	}
	s1, ok := r1.(io.ReadSeeker)
	if !ok {
		t.Fatalf("%T is no io.ReadSeeker", r1)
	}
	head := make([]byte, 4)
	io.ReadFull(s1, head)
	rest, _ := io.ReadAll(r2.(io.Reader))
	if string(head) != "0123" || !bytes.Equal(rest, content) {
		t.Errorf("first reader read %q, second %q; want 0123 and the whole file", head, rest)
	}
	r1.Close()
	r2.Close()

	os.Remove(filepath.Join(c.dir, "k"))
	if r := c.open("k"); r != nil {
		t.Error("a file removed from the directory is still served")
	}
	c.put("k", content)
	if !bytes.Equal(read(t, c, "k"), content) {
		t.Error("a file removed from the directory is not kept again")
	}

	dir := c.dir
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the directory is left after close: %v", err)
	}
	c.put("k2", content)
	if _, err := os.Stat(dir); !os.IsNotExist(err) || read(t, c, "k2") != nil {
		t.Error("a closed cache keeps files")
	}
}

// patternReader is a file of size bytes that exists only as it is read.
type patternReader struct{ size int64 }

func (p patternReader) ReadAt(b []byte, off int64) (int, error) {
	if off+int64(len(b)) > p.size {
		return 0, io.ErrUnexpectedEOF
	}
	for i := range b {
		b[i] = byte(off + int64(i))
	}
	return len(b), nil
}

// TestServedFileCacheFillsThroughABuffer: a file kept in the directory is
// copied there through fillBuffer bytes, not read whole into memory (each
// request for a file not kept yet held the whole file, up to a quarter of
// the cache's bound), and reads back as it was.
func TestServedFileCacheFillsThroughABuffer(t *testing.T) {
	const size = 16 << 20
	c := newServedFileCache(4*size, t.TempDir())
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := c.fill("k", size, patternReader{size})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := after.TotalAlloc - before.TotalAlloc; got > 2*fillBuffer {
		t.Errorf("filling a file of %d bytes allocated %d bytes, want at most %d", size, got, 2*fillBuffer)
	}
	want := make([]byte, size)
	patternReader{size}.ReadAt(want, 0)
	if !bytes.Equal(read(t, c, "k"), want) {
		t.Error("the file kept is not the file read")
	}
	if _, err := c.fill("bad", 10, patternReader{5}); err == nil {
		t.Error("a file that cannot be read was kept")
	}
	if read(t, c, "bad") != nil {
		t.Error("a file that could not be read is served")
	}
}
